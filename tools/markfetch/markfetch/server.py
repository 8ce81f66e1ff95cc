"""The MCP face: one tool, ``fetch_markdown(url, savePath?, raw?, overwrite?)``, and a ``fetch``
prompt, over stdio.

The markdown travels in ``content[0].text``; the document's title, final URL and extraction
method in ``structuredContent`` (declared by an output schema) beside it. Clients that then show
the model only the structured part would lose the document: for them the server runs with
``--no-structured-output`` (``MARKFETCH_STRUCTURED_OUTPUT=0``), the reference's shape, text only.
Failures come back as ``isError`` results whose text is the ``[code] message`` line; nothing is
printed on stdout but MCP frames, and nothing on stderr while serving (log messages go to the
client, through MCP logging).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    PromptMessage,
    TextContent,
)
from pydantic import Field

from docab_mcpguard import PathPolicy
from docab_mcpguard.access import DEFAULT_MAX_MESSAGE_BYTES
from docab_mcpguard.serving import (
    ConventionalServer,
    PromptSpec,
    ServerContext,
    StructuredOutput,
    svg_icon,
    tool_annotations,
)
from markfetch import __version__
from markfetch.config import ACCESS, Settings, load_settings, write_policy
from markfetch.errors import ConfigError, ErrorCode, MarkfetchError
from markfetch.service import Document, Markfetch, sandboxed_save_path, save_in_sandbox

log = logging.getLogger("markfetch")

TITLE = "markfetch: web pages as clean markdown"
TOOL_TITLE = "Fetch a web page as markdown"
WEBSITE = "https://github.com/docab/docab/tree/main/tools/markfetch"
ICON = svg_icon(
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" '
    'fill="#0b5cad"/><circle cx="16" cy="16" r="9" fill="none" stroke="#fff" stroke-width="2"/>'
    '<path d="M7 16h18M16 7c-4 5-4 13 0 18M16 7c4 5 4 13 0 18" fill="none" stroke="#fff" '
    'stroke-width="1.6"/></svg>'
)


class FetchOutput(StructuredOutput):
    title: str
    url: str  # the final URL, after redirects
    method: str  # reader, full-body or raw
    bytes: int  # of the markdown (or raw text)
    saved_to: str = ""  # the savePath written, when one was given


INSTRUCTIONS = (
    "markfetch fetches a public web page and returns its main content (the reader view) as clean "
    "markdown: headings, lists, tables, fenced code with languages, absolute links. Use it to read "
    "articles, documentation and blog posts. Errors start with a [code]."
)
DESCRIPTION = (
    "Fetch an http(s) URL and return its main article content as markdown (title as '#' heading, "
    "links absolute, code fenced with its language). Redirects are followed; loopback, private and "
    "cloud-metadata addresses are refused. Non-HTML responses give [unsupported_content_type] "
    "unless raw is true; pages with no readable text give [extraction_failed]. The whole document "
    "or an error: a document over the size limit gives [too_large], never a truncated one; use "
    "savePath to write a large document to a file instead of returning it. A page nested too deep "
    "to parse whole ends with a note that the rest of it is missing."
)


def _text(text: str, *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


def _result(text: str, document: Document, saved_to: str, *, structured: bool) -> CallToolResult:
    output = FetchOutput(
        title=document.title,
        url=document.url,
        method=document.method,
        bytes=len(document.text.encode("utf-8")),
        saved_to=saved_to,
    )
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=output.model_dump(mode="json") if structured else None,
    )


MAX_URL_CHARS = 8192  # of the tool's url and the prompt's

FETCH_PROMPT = PromptSpec(
    "fetch",
    "Fetch a web page",
    "Fetch a URL and extract its contents as markdown",
    (("url", "URL to fetch", True),),
)


def build_server(
    service: Markfetch,
    write_policy: PathPolicy,
    *,
    structured_output: bool = True,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> ConventionalServer:
    """The MCP server over ``service``; ``savePath`` writes are confined to ``write_policy``."""
    app = ConventionalServer(
        "markfetch",
        title=TITLE,
        version=__version__,
        instructions=INSTRUCTIONS,
        website_url=WEBSITE,
        icon=ICON,
        loggers=("markfetch",),
        max_message_bytes=max_message_bytes,
        message_setting=ACCESS.max_message.spelled(),
    )

    async def fetch_markdown(
        ctx: Context,
        url: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_URL_CHARS,
                # A URL's shape is checked by the schema, as the reference does: "not-a-url" is an
                # invalid argument, not a failed fetch.
                pattern=r"^[A-Za-z][A-Za-z0-9+.\-]*://\S+$",
                description="Absolute http(s) URL of the page. No cookies or credentials are sent.",
            ),
        ],
        savePath: Annotated[
            str | None,
            Field(
                description=(
                    "Absolute file path to write the output to instead of returning it; the result is then "
                    "a short confirmation. Must lie inside the allowed write roots (default: the temp "
                    "folder and the server's working folder; --allow-path / MARKFETCH_ALLOW_PATHS replaces them). "
                    "The folder must exist. An existing file is an error ([save_failed]) unless overwrite "
                    "is true. Errors never touch the file."
                )
            ),
        ] = None,
        raw: Annotated[
            bool,
            Field(
                description=(
                    "Return the response body as text, without extraction and without the HTML-only check "
                    "(for JSON, XML, plain text or page source)."
                )
            ),
        ] = False,
        overwrite: Annotated[
            bool,
            Field(
                description=(
                    "With savePath: replace the file if it exists. Default false: an existing file is "
                    "left untouched and the call fails before fetching."
                )
            ),
        ] = False,
    ) -> Annotated[CallToolResult, FetchOutput]:
        async with app.reporting(ctx) as notes:
            try:
                target = (
                    sandboxed_save_path(savePath, write_policy, overwrite=overwrite)
                    if savePath is not None
                    else None
                )
                document = await service.fetch_document(url, raw=raw, progress=notes.progress)
                log.info("fetched %s (%s, %d characters)", document.url, document.method, len(document.text))
                if target is None:
                    return _result(document.text, document, "", structured=structured_output)
                written = save_in_sandbox(document.text, target, write_policy, overwrite=overwrite)
                notes.progress(3, 3, f"saved {written:,} bytes to {savePath}")
                # No thousands separator: clients parse this line (the reference's `^Saved (\d+) bytes`).
                return _result(
                    f"Saved {written} bytes to {savePath}",
                    document,
                    savePath or "",
                    structured=structured_output,
                )
            except MarkfetchError as exc:
                log.info("%s", exc)
                return _text(str(exc), is_error=True)
            except Exception as exc:  # a bug: still one line with a code, never a traceback for the model
                log.error("unexpected failure fetching %s (%s)", url, type(exc).__name__)
                return _text(
                    f"[{ErrorCode.NETWORK_ERROR.value}] unexpected internal error ({type(exc).__name__})",
                    is_error=True,
                )

    app.add_tool(
        fetch_markdown,
        name="fetch_markdown",
        title=TOOL_TITLE,
        description=DESCRIPTION,
        annotations=tool_annotations(
            TOOL_TITLE,
            read_only=False,  # savePath writes a file
            # overwrite: true replaces an existing file, so the tool can destroy data; without it
            # a save only ever adds a file.
            destructive=True,
            idempotent=True,  # the same call again changes nothing more (or is refused)
            open_world=True,
        ),
        structured_output=structured_output,
    )

    async def fetch_prompt(
        arguments: Mapping[str, str], ctx: ServerContext
    ) -> GetPromptResult | InputRequiredResult:
        """As the reference fetch server's prompt: the page as a user message, or the failure."""
        url = arguments["url"]
        if len(url) > MAX_URL_CHARS:  # what the tool's schema says of its url, the prompt checks here
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"the fetch prompt's url is {len(url):,} characters long; at most {MAX_URL_CHARS:,}",
            )
        async with app.reporting(ctx) as notes:
            try:
                document = await service.fetch_document(url, progress=notes.progress)
            except MarkfetchError as exc:
                return GetPromptResult(
                    description=f"Failed to fetch {url}",
                    messages=[PromptMessage(role="user", content=TextContent(type="text", text=str(exc)))],
                )
        return GetPromptResult(
            description=f"Contents of {url}",
            messages=[PromptMessage(role="user", content=TextContent(type="text", text=document.text))],
        )

    app.add_prompt_renderer(FETCH_PROMPT, fetch_prompt)
    return app


def server_from_env(
    env: Mapping[str, str] | None = None,
    *,
    host_flags: Sequence[str] = (),
    path_flags: Sequence[str] = (),
    structured_output: bool | None = None,
    max_message_mb: float | None = None,
) -> tuple[ConventionalServer, Markfetch]:
    """Build the server from the environment and the flags; raises ConfigError on bad values."""
    from docab_mcpguard.access import SettingError, message_cap, switch
    from markfetch.config import ACCESS

    env = os.environ if env is None else env
    settings: Settings = load_settings(env, host_flags=host_flags)
    policy = write_policy(env, flags=path_flags)
    try:
        structured = switch(ACCESS.structured_output, structured_output, env)
        max_message_bytes = message_cap(ACCESS.max_message, max_message_mb, env)
    except SettingError as exc:
        raise ConfigError(str(exc)) from None
    service = Markfetch(settings)
    app = build_server(service, policy, structured_output=structured, max_message_bytes=max_message_bytes)
    return app, service


def run(
    host_flags: Sequence[str] = (),
    path_flags: Sequence[str] = (),
    structured_output: bool | None = None,
    max_message_mb: float | None = None,
) -> None:
    from markfetch.sandbox import kill_forkserver, start_forkserver

    app, service = server_from_env(
        host_flags=host_flags,
        path_flags=path_flags,
        structured_output=structured_output,
        max_message_mb=max_message_mb,
    )
    # The extraction workers' forkserver starts now, deaf to Ctrl-C, and imports the extractor
    # while the client connects; a worker is ready before the first page, most often.
    start_forkserver()
    _kill_workers_on_signals()
    service.warm_up()
    try:
        app.run()  # end of input cancels the calls in flight, which kills their workers
    finally:
        service.extraction.close()
        kill_forkserver()


def _kill_workers_on_signals() -> None:
    """Before the handlers in place (docab_mcpguard.run_until_stopped: leave at once, quietly) end
    the server on Ctrl-C or SIGTERM, kill the extraction workers' forkserver, and so the workers:
    the server leaves without its clean-up, and a forkserver still importing the extractor would
    outlive it for seconds. Only a kill there: a handler must not wait for a lock."""
    import signal

    from markfetch.sandbox import kill_forkserver

    for signum in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(signum)
        if not callable(previous):
            continue

        def handler(number: int, frame: object, previous: Any = previous) -> None:
            kill_forkserver(reap=False)
            previous(number, frame)

        signal.signal(signum, handler)
