"""The contract every tool meets: filesystem tools and MCP tools look the same to the agent loop."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from docab.messages import ToolResult, ToolSpec


@runtime_checkable
class Tool(Protocol):
    spec: ToolSpec

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        """Run the tool. Failures come back as ``ToolResult.error(...)``, never as exceptions."""
        ...
