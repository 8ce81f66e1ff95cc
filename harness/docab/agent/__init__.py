"""The agent: the tool loop, its neutral messages, the answer protocol, evidence tracking, the
output budget, and the agent's own tools (filesystem tools and MCP sessions, in ``toolbox``)."""
