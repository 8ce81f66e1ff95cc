"""The command-line face: ``markfetch URL [-o PATH] [--raw]``.

stdout carries the document and nothing else (with ``-o`` it stays empty and a one-line
confirmation goes to stderr); on failure stderr gets the same ``[code] message`` line the MCP
tool returns and the exit status is 1. The CLI has no write sandbox: the person at the shell is
the security boundary. The MCP SDK is never imported here.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from markfetch import __version__
from markfetch.errors import ConfigError, ErrorCode, MarkfetchError

EXIT_FAILED = 1  # the fetch, the extraction or the save failed: "[code] message" on stderr
EXIT_USAGE = 2  # bad arguments or a bad MARKFETCH_* variable

DESCRIPTION = """\
Fetch a web page and print its main content (the reader view) as markdown.
Run with no arguments to start the MCP stdio server instead (or with only the server's flags:
--allow-host HOST, --allow-path DIR for savePath, --no-structured-output)."""

EPILOG = """\
examples:
  markfetch https://example.com/article              print markdown to stdout
  markfetch https://example.com/article -o page.md   save it to a file
  markfetch --raw https://api.github.com/repos/python/cpython   the body as text (JSON, XML, source)

errors are one line on stderr, "[code] message", with exit status 1; the codes are
network_error, http_error, timeout, unsupported_content_type, extraction_failed, too_large,
save_failed (save_forbidden exists only in the MCP server's write sandbox).

environment: MARKFETCH_TIMEOUT_MS (30000: the fetch), MARKFETCH_EXTRACT_TIMEOUT_MS (30000: the
extraction, in a worker process killed at the deadline), MARKFETCH_EXTRACT_MEMORY_MB (2048),
MARKFETCH_EXTRACT_WORKERS (min(2, CPUs)), MARKFETCH_MAX_BYTES (5000000), MARKFETCH_USER_AGENT
(a Chrome UA), MARKFETCH_ACCEPT_LANGUAGE, MARKFETCH_PROXY_URL, MARKFETCH_ALLOW_HOSTS (hosts that
may reach loopback/private addresses; the flag --allow-host wins), MARKFETCH_CACHE_TTL (seconds,
0 = off), MARKFETCH_CACHE_DIR, MARKFETCH_CACHE_MAX_MB (256: expired entries pruned, then the
oldest). The MCP server also reads MARKFETCH_ALLOW_PATHS (--allow-path:
folders savePath may write in), MARKFETCH_STRUCTURED_OUTPUT (--no-structured-output) and
MARKFETCH_MAX_MESSAGE_MB (--max-message-mb: the largest JSON-RPC message read, default 16).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="markfetch",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("url", metavar="URL", help="absolute http(s) URL of the page")
    parser.add_argument(
        "-o", "--output", metavar="PATH", help="write the document to PATH (relative to the current folder)"
    )
    parser.add_argument("--raw", action="store_true", help="return the body as text, without extraction")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="a host that may be on a loopback or private address, e.g. localhost (repeatable; "
        "env MARKFETCH_ALLOW_HOSTS; any public host is allowed anyway)",
    )
    parser.add_argument("-V", "--version", action="version", version=__version__)  # bare, as the reference
    return parser


async def _run(
    url: str, *, raw: bool, output: Path | None, env: Mapping[str, str], hosts: Sequence[str] = ()
) -> tuple[str, int | None]:
    from markfetch.config import load_settings
    from markfetch.service import Markfetch, save_document

    settings = load_settings(env, host_flags=hosts)
    async with Markfetch(settings) as service:
        if not raw:
            service.warm_up()  # the extraction worker starts while the page downloads
        document = await service.document(url, raw=raw)
    if output is None:
        return document, None
    return document, save_document(document, output)


def main(
    argv: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    args = build_parser().parse_args(argv)
    output = Path(os.path.abspath(os.path.expanduser(args.output))) if args.output else None
    if not args.raw:
        from markfetch.sandbox import start_forkserver

        start_forkserver()  # from the main thread, deaf to Ctrl-C (the CLI reports it itself)
    try:
        return _fetch(args, output, env, stdout, stderr)
    finally:
        if not args.raw:
            from markfetch.sandbox import kill_forkserver

            kill_forkserver()  # and so the extraction worker: no process outlives the command


def _fetch(
    args: argparse.Namespace,
    output: Path | None,
    env: Mapping[str, str] | None,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    try:
        document, written = asyncio.run(
            _run(
                args.url,
                raw=args.raw,
                output=output,
                env=os.environ if env is None else env,
                hosts=args.allow_host,
            )
        )
    except ConfigError as exc:
        print(f"markfetch: {exc}", file=stderr)
        return EXIT_USAGE
    except MarkfetchError as exc:
        print(str(exc), file=stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("markfetch: interrupted", file=stderr)
        return 130
    except Exception as exc:  # a bug: still one line with a code, never a traceback
        print(
            f"[{ErrorCode.NETWORK_ERROR.value}] markfetch: unexpected internal error "
            f"({type(exc).__name__}); please report it with the URL",
            file=stderr,
        )
        return EXIT_FAILED
    if written is None:
        stdout.write(document)
        stdout.flush()
    else:
        print(f"Saved {written} bytes to {output}", file=stderr)  # no separator: `^Saved (\d+) bytes`
    return 0
