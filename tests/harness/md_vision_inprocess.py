"""The real md-vision tools in-process, behind the harness's Tool protocol (for fast policy tests).

The same service the stdio server runs (``md_vision.service.MdVision``), its results converted by
the server's own ``read_result_to_mcp`` and the harness's own ``convert_result``: what the agent
loop gets is what it gets over stdio, minus the process. The stdio path is tested by the demo.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from docab.agent.toolbox.mcp_session import convert_result
from docab.messages import ToolResult, ToolSpec
from md_vision.server import index_result_to_mcp, read_result_to_mcp
from md_vision.service import MdVision, ToolFailure
from md_vision.settings import Settings

_SCHEMAS = {
    "read_md_with_images": {
        "type": "object",
        "properties": {
            "uri": {"type": "string"},
            "section": {"type": "string"},
            "line_range": {"type": "array", "items": {"type": "integer"}},
            "max_images": {"type": "integer"},
        },
        "required": ["uri"],
    },
    "index_md": {"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]},
}


class InProcessMdVisionTool:
    def __init__(self, vision: MdVision, name: str) -> None:
        self.vision = vision
        self.spec = ToolSpec(name, f"md-vision {name}", _SCHEMAS[name])

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            if self.spec.name == "read_md_with_images":
                return convert_result(read_result_to_mcp(await self.vision.read(**arguments)))
            return convert_result(index_result_to_mcp(await self.vision.index(**arguments)))
        except ToolFailure as exc:
            return ToolResult.error(str(exc))


@contextlib.asynccontextmanager
async def md_vision_tools(root: Path) -> AsyncIterator[list[InProcessMdVisionTool]]:
    """md-vision over ``root`` as the harness configs start it (workspace only, relative paths)."""
    settings = Settings.build(allow_paths=[root], allow_domains=["none"], relative_paths=True)
    async with MdVision(settings) as vision:
        yield [
            InProcessMdVisionTool(vision, "index_md"),
            InProcessMdVisionTool(vision, "read_md_with_images"),
        ]
