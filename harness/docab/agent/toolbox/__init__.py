"""Tools the agent can call: built-in filesystem tools and MCP tools, all behind one protocol."""

from docab.agent.toolbox.base import Tool

__all__ = ["Tool"]
