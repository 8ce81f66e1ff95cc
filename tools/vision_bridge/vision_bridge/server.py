"""The MCP face: three read-only tools over :class:`~vision_bridge.service.VisionService`.

Each tool returns a ``CallToolResult`` built from a :class:`~vision_bridge.service.ToolOutcome`:
one text block (the answer, or ``[vision_error] <cause>: ...`` with ``is_error``), ``_meta``
carrying the token report under ``io.github.docab/usage`` and details under
``io.github.docab/vision``, and the answer and usage again as ``structuredContent`` (declared by
an output schema), unless the server runs with ``--no-structured-output`` for clients that would
then show the model only the structured part. The conventions shared with the other docab servers
(titles, icon, argument errors, roots, progress, logging) come from :mod:`docab_mcpguard.serving`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from pydantic import Field

from docab_mcpguard import PathPolicy
from docab_mcpguard.access import DEFAULT_MAX_MESSAGE_BYTES
from docab_mcpguard.serving import (
    CallNotes,
    ClientRoots,
    ConventionalServer,
    ServerContext,
    StructuredOutput,
    svg_icon,
    tool_annotations,
)
from vision_bridge import __version__
from vision_bridge.config import ACCESS
from vision_bridge.service import MAX_COMPARE, MIN_COMPARE, ToolOutcome, VisionService

TITLE = "vision-bridge: eyes for text-only models"
WEBSITE = "https://github.com/docab/docab/tree/main/tools/vision_bridge"
ICON = svg_icon(
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" '
    'fill="#6e40c9"/><path d="M3 16c4-6 9-9 13-9s9 3 13 9c-4 6-9 9-13 9s-9-3-13-9z" fill="#fff"/>'
    '<circle cx="16" cy="16" r="5" fill="#6e40c9"/><circle cx="16" cy="16" r="2" fill="#fff"/></svg>'
)
TITLES = {
    "analyze_image": "Describe an image",
    "ocr_image": "Read the text in an image",
    "compare_images": "Compare images",
}


class Usage(StructuredOutput):
    """What the vision model spent on the answer (zero tokens for a cached answer)."""

    provider: str
    model: str
    input_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int
    reasoning_tokens: int
    calls: int
    from_cache: bool
    latency_s: float


class VisionOutput(StructuredOutput):
    answer: str
    usage: Usage


INSTRUCTIONS = """\
A vision sidecar: it lets a model that cannot see images read and describe them by asking a \
vision model. Call it only when you cannot view images yourself (or to read the system \
clipboard's image). Images: a local file path, an http(s) URL, a data:image/...;base64 URL, or \
the word "clipboard". Prefer ocr_image for text, analyze_image for everything else, \
compare_images for 2-4 images side by side. Ask a specific question in prompt: the answer is all \
you will know about the image."""

_IMAGE_HELP = (
    "The image: a local file path (png, jpg, jpeg, gif, webp, bmp) inside the server's allowed folders, "
    "an http(s) URL, a data:image/...;base64,... URL, or 'clipboard' for the system clipboard's image."
)
_PRECONDITION = (
    "Call only when you cannot see images yourself; a model with vision should look at the image directly."
)
_OFFLINE = (
    "UNAVAILABLE on this server: it runs offline Tesseract OCR without a vision model, so this tool only "
    "returns an error explaining that. Use ocr_image to read text. "
)


def to_result(outcome: ToolOutcome, *, structured: bool = False) -> CallToolResult:
    """The outcome as an MCP result; with ``structured``, the answer and usage as
    ``structuredContent`` too (never on an error)."""
    content: dict[str, object] | None = None
    if structured and not outcome.is_error:
        report = outcome.usage
        usage = Usage(
            provider=report.provider,
            model=report.model,
            **report.usage.to_dict(),
            calls=report.calls,
            from_cache=report.from_cache,
            latency_s=round(report.latency_s, 4),
        )
        content = VisionOutput(answer=outcome.text, usage=usage).model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=outcome.text)],
        is_error=outcome.is_error,
        _meta=outcome.meta,
        structured_content=content,
    )


def _quietly(action: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        with contextlib.suppress(Exception):  # a failed warm-up only means a slower first call
            action()

    return run


def build_server(
    service: VisionService,
    *,
    follow_roots: bool = False,
    structured_output: bool = True,
    url_images: bool = True,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> ConventionalServer:
    """The server over ``service``. ``follow_roots``: no folders were configured, so a client's MCP
    roots (when it declares some) are the folders local images may come from."""
    offline = "analyze" not in service.backend.tasks
    unavailable = _OFFLINE if offline else ""
    roots = ClientRoots(ACCESS) if follow_roots else None

    @asynccontextmanager
    async def lifespan(_app: object) -> AsyncIterator[None]:
        # The provider SDKs take seconds to import: do it beside the handshake, not in the first
        # call. A daemon thread, so that a server told to stop never waits for an import.
        def warm_up() -> None:
            _quietly(service.backend.warm_up)()
            _quietly(service.decoder.warm_up)()

        threading.Thread(target=warm_up, name="vision-bridge-warm-up", daemon=True).start()
        try:
            yield None
        finally:
            await service.aclose()

    # log_level: the SDK would otherwise install its own INFO logging in a process that embeds us.
    app = ConventionalServer(
        "vision-bridge",
        title=TITLE,
        version=__version__,
        instructions=INSTRUCTIONS,
        website_url=WEBSITE,
        icon=ICON,
        loggers=("vision_bridge",),
        lifespan=lifespan,
        log_level="WARNING",
        max_message_bytes=max_message_bytes,
        message_setting=ACCESS.max_message.spelled(),
    )
    if roots is not None:
        app.follow_roots(roots)

    def steps(notes: CallNotes) -> Callable[[float, float | None, str], None]:
        """Each step of a call is reported (a handful, each worth naming: no rate limit)."""

        def report(done: float, total: float | None, message: str) -> None:
            notes.progress(done, total, message, always=True)

        return report

    async def allowed(ctx: ServerContext) -> PathPolicy | InputRequiredResult | None:
        """The folders for this call: the client's roots on a server started without any (None:
        the configured or default folders)."""
        if roots is None:
            return None
        return await roots.current(ctx)

    # Open world: a provider's API, or image URLs; offline OCR of local files reaches neither.
    open_world = not offline or url_images

    async def analyze_image(
        ctx: Context,
        image: Annotated[str, Field(description=_IMAGE_HELP)],
        prompt: Annotated[
            str | None,
            Field(description="What to ask about the image. Default: 'Describe this image in detail.'"),
        ] = None,
    ) -> Annotated[CallToolResult, VisionOutput] | InputRequiredResult:
        paths = await allowed(ctx)
        if isinstance(paths, InputRequiredResult):
            return paths
        async with app.reporting(ctx) as notes:
            outcome = await service.analyze(image, prompt, paths=paths, progress=steps(notes))
        return to_result(outcome, structured=structured_output)

    async def ocr_image(
        ctx: Context,
        image: Annotated[str, Field(description=_IMAGE_HELP)],
        languages: Annotated[
            str | None,
            Field(
                description="Languages of the text as a hint, comma-separated ISO codes, e.g. 'en' or 'zh,en'."
            ),
        ] = None,
        format: Annotated[
            Literal["plain", "markdown", "json"], Field(description="Output format (default plain).")
        ] = "plain",
    ) -> Annotated[CallToolResult, VisionOutput] | InputRequiredResult:
        paths = await allowed(ctx)
        if isinstance(paths, InputRequiredResult):
            return paths
        async with app.reporting(ctx) as notes:
            outcome = await service.ocr(image, languages, format, paths=paths, progress=steps(notes))
        return to_result(outcome, structured=structured_output)

    async def compare_images(
        ctx: Context,
        images: Annotated[
            list[str],
            Field(
                min_length=MIN_COMPARE,
                max_length=MAX_COMPARE,
                description=f"{MIN_COMPARE} to {MAX_COMPARE} images, each given as for analyze_image.",
            ),
        ],
        prompt: Annotated[
            str | None,
            Field(
                description="What to compare. Default: 'Compare these images and describe their "
                "differences and similarities.'"
            ),
        ] = None,
    ) -> Annotated[CallToolResult, VisionOutput] | InputRequiredResult:
        paths = await allowed(ctx)
        if isinstance(paths, InputRequiredResult):
            return paths
        async with app.reporting(ctx) as notes:
            outcome = await service.compare(images, prompt, paths=paths, progress=steps(notes))
        return to_result(outcome, structured=structured_output)

    descriptions = {
        "analyze_image": (
            f"{unavailable}Describe or answer a question about one image, using a vision model. {_PRECONDITION} "
            "Returns the model's answer as text."
        ),
        "ocr_image": (
            "Read the text in an image (OCR). "
            + (
                "This server runs offline Tesseract: no API, no data leaves the machine; it reads printed "
                "text, not handwriting or layout semantics. "
                if offline
                else f"{_PRECONDITION} "
            )
            + "format: plain (text with its layout), markdown (headings, lists, tables), or json "
            '({"blocks": [{"type", "text"}]}).'
        ),
        "compare_images": (
            f"{unavailable}Compare {MIN_COMPARE} to {MAX_COMPARE} images in one vision-model call "
            f"(they are labelled Image 1, Image 2, ...). {_PRECONDITION}"
        ),
    }
    for name, function in (
        ("analyze_image", analyze_image),
        ("ocr_image", ocr_image),
        ("compare_images", compare_images),
    ):
        app.add_tool(
            function,
            name=name,
            title=TITLES[name],
            description=descriptions[name],
            annotations=tool_annotations(
                TITLES[name], read_only=True, destructive=False, idempotent=True, open_world=open_world
            ),
            structured_output=structured_output,
        )
    return app
