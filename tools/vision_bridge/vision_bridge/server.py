"""The MCP face: three read-only tools over :class:`~vision_bridge.service.VisionService`.

Each tool returns a ``CallToolResult`` built from a :class:`~vision_bridge.service.ToolOutcome`:
one text block (the answer, or ``[vision_error] <cause>: ...`` with ``is_error``), and ``_meta``
carrying the token report under ``io.github.docab/usage`` and details under
``io.github.docab/vision``. No structured content: some clients then drop the text.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from vision_bridge import __version__
from vision_bridge.service import MAX_COMPARE, MIN_COMPARE, ToolOutcome, VisionService

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

ANNOTATIONS = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)


def to_result(outcome: ToolOutcome) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=outcome.text)],
        is_error=outcome.is_error,
        _meta=outcome.meta,
    )


def _quietly(action: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        with contextlib.suppress(Exception):  # a failed warm-up only means a slower first call
            action()

    return run


def build_server(service: VisionService) -> MCPServer:
    offline = "analyze" not in service.backend.tasks
    unavailable = _OFFLINE if offline else ""

    @asynccontextmanager
    async def lifespan(_app: MCPServer) -> AsyncIterator[None]:
        # The provider SDKs take seconds to import: do it beside the handshake, not in the first
        # call. A daemon thread, so that a server told to stop never waits for an import.
        threading.Thread(
            target=_quietly(service.backend.warm_up), name="vision-bridge-warm-up", daemon=True
        ).start()
        try:
            yield None
        finally:
            await service.aclose()

    # log_level: the SDK would otherwise install its own INFO logging in a process that embeds us.
    app = MCPServer(
        "vision-bridge",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level="WARNING",
    )

    @app.tool(
        name="analyze_image",
        description=(
            f"{unavailable}Describe or answer a question about one image, using a vision model. {_PRECONDITION} "
            "Returns the model's answer as text."
        ),
        annotations=ANNOTATIONS,
    )
    async def analyze_image(
        image: Annotated[str, Field(description=_IMAGE_HELP)],
        prompt: Annotated[
            str | None,
            Field(description="What to ask about the image. Default: 'Describe this image in detail.'"),
        ] = None,
    ) -> CallToolResult:
        return to_result(await service.analyze(image, prompt))

    @app.tool(
        name="ocr_image",
        description=(
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
        annotations=ANNOTATIONS,
    )
    async def ocr_image(
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
    ) -> CallToolResult:
        return to_result(await service.ocr(image, languages, format))

    @app.tool(
        name="compare_images",
        description=(
            f"{unavailable}Compare {MIN_COMPARE} to {MAX_COMPARE} images in one vision-model call "
            f"(they are labelled Image 1, Image 2, ...). {_PRECONDITION}"
        ),
        annotations=ANNOTATIONS,
    )
    async def compare_images(
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
    ) -> CallToolResult:
        return to_result(await service.compare(images, prompt))

    return app
