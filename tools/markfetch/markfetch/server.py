"""The MCP face: one tool, ``fetch_markdown(url, savePath?, raw?)``, over stdio.

The markdown travels in ``content[0].text`` only, never in ``structuredContent`` (several clients
forward only the structured part to the model when both exist). Failures come back as
``isError`` results whose text is the ``[code] message`` line; nothing is printed on stdout but
MCP frames, and nothing on stderr while serving.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from docab_mcpguard import PathPolicy
from markfetch import __version__
from markfetch.config import Settings, load_settings, write_roots
from markfetch.errors import ConfigError, ErrorCode, MarkfetchError
from markfetch.service import Markfetch, sandboxed_save_path, save_in_sandbox

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
    "savePath to write a large document to a file instead of returning it."
)


def _text(text: str, *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


def build_server(service: Markfetch, write_policy: PathPolicy) -> MCPServer:
    """The MCP server over ``service``; ``savePath`` writes are confined to ``write_policy``."""
    app = MCPServer("markfetch", version=__version__, instructions=INSTRUCTIONS)

    @app.tool(
        name="fetch_markdown",
        description=DESCRIPTION,
        annotations=ToolAnnotations(
            title="Fetch a web page as markdown",
            read_only_hint=False,  # savePath writes a file
            # overwrite: true replaces an existing file, so the tool can destroy data; without it
            # a save only ever adds a file.
            destructive_hint=True,
            idempotent_hint=True,  # the same call again changes nothing more (or is refused)
            open_world_hint=True,
        ),
    )
    async def fetch_markdown(
        url: Annotated[
            str,
            Field(
                min_length=1,
                max_length=8192,
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
                    "folder and the server's working folder; MARKFETCH_ALLOWED_WRITE_ROOTS replaces them). "
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
    ) -> CallToolResult:
        try:
            target = (
                sandboxed_save_path(savePath, write_policy, overwrite=overwrite)
                if savePath is not None
                else None
            )
            document = await service.document(url, raw=raw)
            if target is None:
                return _text(document)
            written = save_in_sandbox(document, target, write_policy, overwrite=overwrite)
            # No thousands separator: clients parse this line (the reference's `^Saved (\d+) bytes`).
            return _text(f"Saved {written} bytes to {savePath}")
        except MarkfetchError as exc:
            return _text(str(exc), is_error=True)
        except Exception as exc:  # a bug: still one line with a code, never a traceback for the model
            return _text(
                f"[{ErrorCode.NETWORK_ERROR.value}] unexpected internal error ({type(exc).__name__})",
                is_error=True,
            )

    return app


def server_from_env(env: Mapping[str, str] | None = None) -> tuple[MCPServer, Markfetch]:
    """Build the server from the environment; raises ConfigError on bad values."""
    env = os.environ if env is None else env
    settings: Settings = load_settings(env)
    try:
        policy = PathPolicy.from_dirs(write_roots(env), what="MARKFETCH_ALLOWED_WRITE_ROOTS entry")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    service = Markfetch(settings)
    return build_server(service, policy), service


def run() -> None:
    app, _service = server_from_env()
    app.run()
