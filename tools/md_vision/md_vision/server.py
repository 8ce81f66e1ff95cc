"""The MCP face: two read-only tools over :class:`md_vision.service.MdVision`.

Every failure becomes a ``CallToolResult(is_error=True)`` with the service's message; nothing
else (no traceback, no OS error text) reaches the client.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ContentBlock, ImageContent, TextContent, ToolAnnotations
from pydantic import Field

from md_vision import __version__
from md_vision.folder import start_forkserver_deaf_to_ctrl_c
from md_vision.service import ImageBlock, IndexResult, MdVision, ReadResult, ToolFailure
from md_vision.settings import Settings

META_KEY = "io.github.docab/md-vision"
TOKENS_HELP = "Text budget in tokens (0: the server's, 25,000 by default)"

INSTRUCTIONS = """\
Read markdown documentation with its images. Typical flow: call index_md on a file, folder or URL
to see each heading with its start line, image count and size; then call read_md_with_images with
`section` (a heading from the index, e.g. "## Setup"; later duplicates read "## Setup (2)") or
`line_range` to read just that part, with its images inlined in place."""

READ_DESCRIPTION = """\
Read a markdown file or http(s) URL and return its text with the images it references inlined as
image blocks, in document order (each image follows the line that references it, after a short
"Image: <resolved path or URL>" line).

- `section`: a heading to read, as index_md shows it ("## Setup"; the second "## Notes" is
  "## Notes (2)"); the `#` marker, case and spacing are optional. The section runs to the next
  heading of the same or a higher level. Frontmatter is left out of section reads.
- `line_range`: [start, end], 1-based and inclusive; used when `section` is absent or not found
  (the result then says so).
- `max_images`: images to inline (0-50, default 10); the rest stay as markdown in the text.
The text is the file's own source, unchanged. An image that cannot be shown becomes a one-line
placeholder with the reason. Images are scaled or re-encoded when needed to keep the whole result
within the response size limit, and the line before each image says so. Over max_tokens, the text
stops at a line end and a note gives the rest's line_range."""

INDEX_DESCRIPTION = """\
Index the headings of a markdown file, an http(s) URL, or a folder (searched recursively for .md
and .markdown files, in sorted order; hidden folders, node_modules and .gitignore'd files are
skipped). For each file: <file path="..." lines=N chars=M>, the YAML frontmatter if any, then a
tsv block with heading, line_start, n_images and char_count (counts include subsections).
Use the headings or line numbers with read_md_with_images. Over max_tokens, it comes in pages: pass
back the cursor its note gives."""

ANNOTATIONS = ToolAnnotations(
    title=None,
    read_only_hint=True,
    destructive_hint=False,
    idempotent_hint=True,
    open_world_hint=True,
)

log = logging.getLogger("md_vision")


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def read_result_to_mcp(result: ReadResult) -> CallToolResult:
    """The read as MCP blocks, with ``_meta[META_KEY]``: source, lines, heading, image counts, the
    role of each block, ``elided`` (for each ``data-uri`` block, its index and the URI it stands
    for: the ``source`` blocks with these in place are the exact source) and ``next_line_range``."""
    content: list[ContentBlock] = []
    elided: list[dict[str, object]] = []
    for number, block in enumerate(result.blocks):
        if isinstance(block, ImageBlock):
            content.append(ImageContent(type="image", data=block.base64, mime_type=block.mime_type))
        else:
            content.append(TextContent(type="text", text=block.text))
            if block.role == "data-uri":
                elided.append({"block": number, "text": block.original})
    meta = {
        META_KEY: {
            "source": result.source,
            "first_line": result.first_line,
            "last_line": result.last_line,
            "heading": result.heading,
            "images_inlined": result.images_inlined,
            "images_skipped": result.images_skipped,
            "images_failed": result.images_failed,
            "roles": [
                block.role if not isinstance(block, ImageBlock) else "image" for block in result.blocks
            ],
            "elided": elided,
            "next_line_range": list(result.next_line_range) if result.next_line_range else None,
        }
    }
    return CallToolResult(content=content, is_error=False, _meta=meta)


def index_result_to_mcp(result: IndexResult) -> CallToolResult:
    """The index text; ``_meta[META_KEY]["next_cursor"]`` repeats the next page's cursor (MCP's
    ``nextCursor``) for programs."""
    return CallToolResult(
        content=[TextContent(type="text", text=result.text)],
        is_error=False,
        _meta={META_KEY: {"next_cursor": result.next_cursor}},
    )


def build_server(settings: Settings, vision: MdVision | None = None) -> MCPServer:
    """An MCPServer with both tools, sandboxed by ``settings``."""
    vision = vision or MdVision(settings)
    app = MCPServer("md-vision", version=__version__, instructions=INSTRUCTIONS)

    @app.tool(name="read_md_with_images", description=READ_DESCRIPTION, annotations=ANNOTATIONS)
    async def read_md_with_images(
        uri: Annotated[
            str,
            Field(
                description="Markdown file path (absolute, or relative to the first allowed directory) or http(s) URL"
            ),
        ],
        section: Annotated[
            str | None, Field(description='Heading to read, e.g. "## Setup" or "## Notes (2)"')
        ] = None,
        line_range: Annotated[
            list[int] | None,
            Field(min_length=2, max_length=2, description="[start, end]: 1-based inclusive line range"),
        ] = None,
        max_images: Annotated[int, Field(ge=0, le=50, description="Images to inline (0-50)")] = 10,
        max_tokens: Annotated[int, Field(ge=0, description=TOKENS_HELP)] = 0,
    ) -> CallToolResult:
        try:
            result = await vision.read(
                uri,
                section=section,
                line_range=line_range,
                max_images=max_images,
                max_tokens=max_tokens or None,
            )
        except ToolFailure as exc:
            return _error(str(exc))
        except Exception:
            log.exception("read_md_with_images failed")
            return _error(
                "md-vision hit an internal error while reading this document; the server log has details."
            )
        return read_result_to_mcp(result)

    @app.tool(name="index_md", description=INDEX_DESCRIPTION, annotations=ANNOTATIONS)
    async def index_md(
        uri: Annotated[str, Field(description="Markdown file, folder, or http(s) URL")],
        cursor: Annotated[str, Field(description="From the previous page's note")] = "",
        max_tokens: Annotated[int, Field(ge=0, description=TOKENS_HELP)] = 0,
    ) -> CallToolResult:
        try:
            result = await vision.index(uri, cursor=cursor or None, max_tokens=max_tokens or None)
        except ToolFailure as exc:
            return _error(str(exc))
        except Exception:
            log.exception("index_md failed")
            return _error("md-vision hit an internal error while indexing; the server log has details.")
        return index_result_to_mcp(result)

    return app


def serve(settings: Settings) -> int:
    """Run the stdio server until the client disconnects (0), or Ctrl-C (130) or SIGTERM (143)
    stop it; either way the folder workers are stopped and nothing is printed."""
    from docab_mcpguard import run_until_stopped

    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="md-vision: %(levelname)s %(message)s"
    )
    vision = MdVision(settings)

    def start() -> None:  # runs once the signal handlers are in place
        # Folder parsers start while the client connects; starting the forkserver takes about
        # half a second, which the handshake does not wait for.
        if settings.limits.index_workers > 1:
            start_forkserver_deaf_to_ctrl_c()
            threading.Thread(target=vision.warm_up, name="md-vision-warm-up", daemon=True).start()
        build_server(settings, vision).run()

    try:
        # A worker process still starting when the server exits would print a traceback:
        # the workers are stopped, and waited for, on every way out.
        return run_until_stopped(start, on_stop=lambda: vision.close_parsers(wait=True))
    finally:
        vision.close_parsers(wait=True)
