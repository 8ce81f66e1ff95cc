"""The MCP face: two read-only tools over :class:`md_vision.service.MdVision`, the allowed
markdown files as resources, and two prompts.

Every failure becomes a ``CallToolResult(is_error=True)`` with the service's message; nothing
else (no traceback, no OS error text) reaches the client. The conventions shared with the other
docab servers (titles, icon, argument errors, roots, progress, logging) come from
:mod:`docab_mcpguard.serving`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping
from typing import Annotated, Any

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    ContentBlock,
    GetPromptResult,
    ImageContent,
    InputRequiredResult,
    ListResourcesResult,
    PaginatedRequestParams,
    PromptMessage,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    TextContent,
    TextResourceContents,
)
from pydantic import ConfigDict, Field

from docab_mcpguard import PathPolicy
from docab_mcpguard.errors import clipped
from docab_mcpguard.serving import (
    ClientRoots,
    ConventionalServer,
    PromptSpec,
    ServerContext,
    StructuredOutput,
    log_to_stderr,
    svg_icon,
    tool_annotations,
)
from md_vision import __version__
from md_vision.folder import start_forkserver_deaf_to_ctrl_c
from md_vision.index import FileProblem
from md_vision.resources import PAGE_SIZE, ResourceFailure, list_page, read_resource
from md_vision.results import ImageBlock, IndexResult, ReadResult, TextBlock, ToolFailure
from md_vision.service import MdVision
from md_vision.settings import ACCESS, Settings

META_KEY = "io.github.docab/md-vision"
TITLE = "md-vision: markdown with its images"
WEBSITE = "https://github.com/docab/docab/tree/main/tools/md_vision"
ICON = svg_icon(
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" '
    'fill="#24292f"/><path d="M5 23V9h3.5l3.5 5 3.5-5H19v14h-3.5v-8.5L12 19l-3.5-4.5V23z" fill="#fff"/>'
    '<path d="M21 16h6l-3 5z" fill="#fff"/><circle cx="24" cy="11" r="2.5" fill="#f2cc60"/></svg>'
)
READ_TITLE = "Read markdown with its images"
INDEX_TITLE = "Index markdown headings"
NO_PATHS_REMEDY = (
    f"start md-vision with {ACCESS.paths.spelled('DIR')}, or use an MCP client that declares roots"
)
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

log = logging.getLogger("md_vision")


def _untyped_items(schema: dict[str, Any]) -> None:
    """The columns' JSON schema: arrays, each naming its items' type in a ``$comment`` (see
    :class:`HeadingColumns`)."""
    schema.pop("title", None)
    schema.pop("description", None)
    for value in schema.get("properties", {}).values():
        if isinstance(value, dict):
            value.pop("title", None)
            items = value.pop("items", None)
            if isinstance(items, dict) and "type" in items:
                value["$comment"] = f"items: {items['type']}"


class HeadingColumns(StructuredOutput):
    """The headings of one file as columns: heading ``i`` is item ``i`` of each array (the index's
    ``heading``, ``line_start``, ``n_images`` and ``char_count``; the counts cover the section,
    subsections included).

    Columns, not an object per heading, and the schema types each column as an array whose items'
    type it names in a ``$comment`` (a note validators skip): a client validates the structure of a
    file, not every heading, so the structured form of a large index costs about what its text
    does (``tests/perf/md_vision_structured.py``: an object per heading cost the client 5 s of
    validation on 37,000 headings, typed items 2.4 s). The server's own model types every item."""

    model_config = ConfigDict(json_schema_extra=_untyped_items)

    heading: list[str] = Field(default_factory=list)
    line: list[int] = Field(default_factory=list)
    images: list[int] = Field(default_factory=list)
    chars: list[int] = Field(default_factory=list)


class IndexedFile(StructuredOutput):
    path: str
    lines: int = 0
    chars: int = 0
    headings: HeadingColumns = Field(default_factory=HeadingColumns)
    error: str = ""  # why the file could not be indexed
    indexed_lines: int = 0  # > 0: only lines 1..indexed_lines were indexed (too many headings and images)


class IndexOutput(StructuredOutput):
    files: list[IndexedFile]
    next_cursor: str = ""


class ReadOutput(StructuredOutput):
    source: str
    first_line: int
    last_line: int
    heading: str = ""
    images_inlined: int = 0
    images_skipped: int = 0
    images_failed: int = 0
    next_line_range: list[int] = Field(default_factory=list)


def index_output(result: IndexResult) -> IndexOutput:
    """The index page as structure: each file with the heading rows this page shows."""
    files: list[IndexedFile] = []
    for entry, rows in zip(result.entries, result.shown_rows(), strict=True):
        if isinstance(entry, FileProblem):
            files.append(IndexedFile(path=entry.path, error=entry.reason))
            continue
        files.append(
            IndexedFile(
                path=entry.path or "",
                lines=entry.line_count,
                chars=entry.char_count,
                headings=HeadingColumns(
                    heading=[row.heading for row in rows],
                    line=[row.line_start for row in rows],
                    images=[row.image_count for row in rows],
                    chars=[row.char_count for row in rows],
                ),
                indexed_lines=entry.structure_end.line if entry.structure_end else 0,
            )
        )
    return IndexOutput(files=files, next_cursor=result.next_cursor or "")


def read_output(result: ReadResult) -> ReadOutput:
    return ReadOutput(
        source=result.source,
        first_line=result.first_line,
        last_line=result.last_line,
        heading=result.heading or "",
        images_inlined=result.images_inlined,
        images_skipped=result.images_skipped,
        images_failed=result.images_failed,
        next_line_range=list(result.next_line_range) if result.next_line_range else [],
    )


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def read_result_to_mcp(result: ReadResult, *, structured: bool = False) -> CallToolResult:
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
    return CallToolResult(
        content=content,
        is_error=False,
        _meta=meta,
        structured_content=read_output(result).model_dump(mode="json") if structured else None,
    )


def index_result_to_mcp(result: IndexResult, *, structured: bool = False) -> CallToolResult:
    """The index text; ``_meta[META_KEY]["next_cursor"]`` repeats the next page's cursor (MCP's
    ``nextCursor``) for programs; with ``structured``, the rows as ``structuredContent``."""
    return CallToolResult(
        content=[TextContent(type="text", text=result.text)],
        is_error=False,
        _meta={META_KEY: {"next_cursor": result.next_cursor}},
        structured_content=index_output(result).model_dump(mode="json") if structured else None,
    )


class MdVisionServer(ConventionalServer):
    """The server, with its resources: the allowed markdown files (see :mod:`md_vision.resources`)."""

    def __init__(self, vision: MdVision, roots: ClientRoots | None) -> None:
        super().__init__(
            "md-vision",
            title=TITLE,
            version=__version__,
            instructions=INSTRUCTIONS,
            website_url=WEBSITE,
            icon=ICON,
            loggers=("md_vision",),
            max_message_bytes=vision.settings.max_message_bytes,
            message_setting=ACCESS.max_message.spelled(),
        )
        self.vision = vision
        self.client_roots = roots
        if roots is not None:
            self.follow_roots(roots)
            self.on_roots_changed(self._tell_resources_changed)
        self._lowlevel_server.add_request_handler(
            "resources/list", PaginatedRequestParams, self._list_resources
        )
        self._lowlevel_server.add_request_handler(
            "resources/read", ReadResourceRequestParams, self._read_resource
        )

    async def run_stdio_async(self) -> None:
        # The resource list follows the client's roots: say that it may change.
        options = self._lowlevel_server.create_initialization_options(
            NotificationOptions(resources_changed=self.client_roots is not None)
        )
        await self.serve_stdio(options)

    async def allow(self, ctx: ServerContext) -> InputRequiredResult | None:
        """Make the client's roots the allowed folders (a server started without --allow-path);
        an InputRequiredResult to return when they must be asked for first (protocol 2026-07-28)."""
        if self.client_roots is None:
            return None
        current = await self.client_roots.current(ctx)
        if isinstance(current, InputRequiredResult):
            return current
        self.vision.use_paths(current if current is not None else PathPolicy((), remedy=NO_PATHS_REMEDY))
        return None

    async def _tell_resources_changed(self, ctx: ServerRequestContext[Any]) -> None:
        await ctx.session.send_resource_list_changed()

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams
    ) -> ListResourcesResult:
        if self.client_roots is not None:
            current = await self.client_roots.current(Context(request_context=ctx, mcp_server=self))
            if isinstance(current, InputRequiredResult):  # 2026-07-28: listing cannot ask; use what is known
                current = self.client_roots.last_known()
            self.vision.use_paths(current if current is not None else PathPolicy((), remedy=NO_PATHS_REMEDY))
        settings = self.vision.settings
        try:
            page = await asyncio.to_thread(list_page, settings, params.cursor, PAGE_SIZE)
        except ResourceFailure as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        return ListResourcesResult(
            resources=[
                Resource(
                    uri=item.uri,
                    name=item.name,
                    mime_type="text/markdown",
                    size=item.size,
                    description="markdown file; index_md lists its headings, read_md_with_images reads it",
                )
                for item in page.resources
            ],
            next_cursor=page.next_cursor,
        )

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult | InputRequiredResult:
        if self.client_roots is not None:
            asking = Context(request_context=ctx, mcp_server=self, input_params=params)
            current = await self.client_roots.current(asking)
            if isinstance(current, InputRequiredResult):
                # 2026-07-28: a read asks for the roots as a call does; the roots of an earlier
                # call may be wider than the client's roots now.
                return current
            self.vision.use_paths(current if current is not None else PathPolicy((), remedy=NO_PATHS_REMEDY))
        try:
            _path, text = await asyncio.to_thread(read_resource, self.vision.settings, str(params.uri))
        except ResourceFailure as exc:
            raise MCPError(
                code=INVALID_PARAMS, message=str(exc), data={"uri": clipped(str(params.uri))}
            ) from None
        return ReadResourceResult(
            contents=[TextResourceContents(uri=str(params.uri), text=text, mime_type="text/markdown")]
        )


def build_server(settings: Settings, vision: MdVision | None = None) -> MdVisionServer:
    """The MCP server with both tools, the resources and the prompts, sandboxed by ``settings``."""
    vision = vision or MdVision(settings)
    roots = ClientRoots(ACCESS) if settings.follow_roots else None
    app = MdVisionServer(vision, roots)
    read_only = tool_annotations(
        READ_TITLE, read_only=True, destructive=False, idempotent=True, open_world=settings.hosts.allows_urls
    )

    async def read_md_with_images(
        ctx: Context,
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
    ) -> Annotated[CallToolResult, ReadOutput] | InputRequiredResult:
        asked = await app.allow(ctx)
        if asked is not None:
            return asked
        async with app.reporting(ctx):
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
            log.debug(
                "read %s lines %d-%d: %d image(s) inlined",
                result.source,
                result.first_line,
                result.last_line,
                result.images_inlined,
            )
            return read_result_to_mcp(result, structured=settings.structured_output)

    async def index_md(
        ctx: Context,
        uri: Annotated[str, Field(description="Markdown file, folder, or http(s) URL")],
        cursor: Annotated[str, Field(description="From the previous page's note")] = "",
        max_tokens: Annotated[int, Field(ge=0, description=TOKENS_HELP)] = 0,
    ) -> Annotated[CallToolResult, IndexOutput] | InputRequiredResult:
        asked = await app.allow(ctx)
        if asked is not None:
            return asked
        async with app.reporting(ctx) as notes:
            try:
                result = await vision.index(
                    uri, cursor=cursor or None, max_tokens=max_tokens or None, progress=notes.progress
                )
            except ToolFailure as exc:
                return _error(str(exc))
            except Exception:
                log.exception("index_md failed")
                return _error("md-vision hit an internal error while indexing; the server log has details.")
            if len(result.entries) > 1:
                log.info("indexed %s: %d file(s) on this page", uri, len(result.entries))
            return index_result_to_mcp(result, structured=settings.structured_output)

    app.add_tool(
        read_md_with_images,
        name="read_md_with_images",
        title=READ_TITLE,
        description=READ_DESCRIPTION,
        annotations=read_only,
        structured_output=settings.structured_output,
    )
    app.add_tool(
        index_md,
        name="index_md",
        title=INDEX_TITLE,
        description=INDEX_DESCRIPTION,
        annotations=read_only.model_copy(update={"title": INDEX_TITLE}),
        structured_output=settings.structured_output,
    )
    _add_prompts(app)
    return app


OUTLINE = PromptSpec(
    "outline",
    "Outline a markdown document or folder",
    "Put the heading index of a markdown file, folder or URL into the conversation (each heading with "
    "its line, image count and size), to choose what to read.",
    (("uri", "Markdown file, folder, or http(s) URL", True),),
)
SECTION = PromptSpec(
    "read_section",
    "Read a section with its images",
    "Put one section of a markdown document (or the whole file) into the conversation as its source "
    "text with the images it references.",
    (
        ("uri", "Markdown file path or http(s) URL", True),
        ("section", 'Heading to read, e.g. "## Setup" (default: the whole file)', False),
    ),
)


def _add_prompts(app: MdVisionServer) -> None:
    vision = app.vision

    async def outline(
        arguments: Mapping[str, str], ctx: ServerContext
    ) -> GetPromptResult | InputRequiredResult:
        asked = await app.allow(ctx)
        if asked is not None:
            return asked
        try:
            result = await vision.index(arguments["uri"])
        except ToolFailure as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        text = (
            f"Here is the heading index of {arguments['uri']} (md-vision). Each row gives a heading, the "
            "line it starts on, how many images its section holds and its size in characters. Use it to "
            "choose the sections to read.\n\n" + result.text
        )
        return GetPromptResult(
            description=f"Outline of {arguments['uri']}",
            messages=[PromptMessage(role="user", content=TextContent(type="text", text=text))],
        )

    async def read_section(
        arguments: Mapping[str, str], ctx: ServerContext
    ) -> GetPromptResult | InputRequiredResult:
        asked = await app.allow(ctx)
        if asked is not None:
            return asked
        section = arguments.get("section") or None
        try:
            result = await vision.read(arguments["uri"], section=section)
        except ToolFailure as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        messages: list[PromptMessage] = []
        for block in result.blocks:
            content: TextContent | ImageContent
            if isinstance(block, ImageBlock):
                content = ImageContent(type="image", data=block.base64, mime_type=block.mime_type)
            else:
                assert isinstance(block, TextBlock)
                content = TextContent(type="text", text=block.text)
            messages.append(PromptMessage(role="user", content=content))
        where = f"{section} in {result.source}" if section else result.source
        return GetPromptResult(
            description=f"{where}, lines {result.first_line}-{result.last_line}", messages=messages
        )

    app.add_prompt_renderer(OUTLINE, outline)
    app.add_prompt_renderer(SECTION, read_section)


def serve(settings: Settings) -> int:
    """Run the stdio server until the client disconnects (0), or Ctrl-C (130) or SIGTERM (143)
    stop it; either way the folder workers are stopped and nothing is printed."""
    from docab_mcpguard import run_until_stopped

    log_to_stderr("md-vision", logging.WARNING)
    vision = MdVision(settings)

    def start() -> None:  # runs once the signal handlers are in place
        # Folder parsers start while the client connects; starting the forkserver takes about
        # half a second, which the handshake does not wait for. With one worker no process starts
        # here: the first SVG render starts the forkserver (md_vision.sandbox).
        if settings.limits.index_workers > 1:
            start_forkserver_deaf_to_ctrl_c()
            vision.expect_warm_up()
            threading.Thread(target=vision.warm_up, name="md-vision-warm-up", daemon=True).start()
        build_server(settings, vision).run()

    try:
        # A worker process still starting when the server exits would print a traceback:
        # the workers are stopped, and waited for, on every way out.
        return run_until_stopped(start, on_stop=lambda: vision.close_parsers(wait=True))
    finally:
        vision.close_parsers(wait=True)
