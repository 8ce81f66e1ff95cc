"""``markfetch``: no arguments (or only the server's flags: ``--allow-host``, ``--allow-path``,
``--[no-]structured-output``) start the MCP stdio server; a URL runs the CLI.

stderr is for fatal errors only (a bad setting at start, a crash); the CLI adds its one
``[code] message`` line on failure. Per-request events (httpx's request log, trafilatura's
warnings, the MCP SDK's request log) are never written: :func:`quiet_logging` runs first.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence


def quiet_logging() -> None:
    """Route logging and Python warnings to stderr at CRITICAL only, before anything logs.

    Installing a handler first also turns the MCP SDK's own set-up (INFO to stderr) into a no-op.
    """
    logging.captureWarnings(True)
    logging.basicConfig(
        level=logging.CRITICAL, stream=sys.stderr, format="markfetch: %(levelname)s %(message)s"
    )
    logging.getLogger().setLevel(logging.CRITICAL)
    # markfetch's own records go to the MCP client only (docab_mcpguard.serving), never to stderr.
    logging.getLogger("markfetch").propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C while starting (imports take a moment): no traceback
        return 130


def build_server_parser() -> argparse.ArgumentParser:
    """The flags markfetch takes when it serves MCP (the fetch command's are in :mod:`markfetch.cli`)."""
    from docab_mcpguard.access import add_flags
    from markfetch.config import ACCESS

    parser = argparse.ArgumentParser(prog="markfetch", add_help=False, allow_abbrev=False)
    add_flags(parser, ACCESS, hosts_help="hosts that may be internal", paths_help="savePath folders")
    return parser


def server_flags(args: Sequence[str]) -> argparse.Namespace | None:
    """The server's flags when ``args`` holds nothing else (then markfetch serves MCP), else None."""
    if not args or any(arg in ("-h", "--help", "-V", "--version") for arg in args):
        return (
            None
            if args
            else argparse.Namespace(allow_host=[], allow_path=[], structured_output=None, max_message_mb=None)
        )
    try:
        parsed, extra = build_server_parser().parse_known_args(list(args))
    except SystemExit:
        return None
    return None if extra else parsed


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    quiet_logging()
    serving = server_flags(args)
    if serving is None:
        from markfetch.cli import main as cli_main

        return cli_main(args)
    _exit_quietly_on_signals()
    from markfetch.errors import ConfigError

    try:
        from markfetch.server import run
    except ModuleNotFoundError as exc:  # pragma: no cover - a broken install
        print(f"markfetch: cannot start the MCP server: the package {exc.name!r} is missing", file=sys.stderr)
        return 2
    from docab_mcpguard import run_until_stopped

    def serve() -> None:
        run(serving.allow_host, serving.allow_path, serving.structured_output, serving.max_message_mb)

    try:
        # EOF, Ctrl-C and SIGTERM all end it quietly.
        return run_until_stopped(serve)
    except ConfigError as exc:
        print(f"markfetch: {exc}", file=sys.stderr)
        return 2


def _exit_quietly_on_signals() -> None:
    """Until the server installs its own handlers, Ctrl-C or SIGTERM during start-up ends the
    process at once and silently: an interrupt inside an import can surface as some other error,
    with a traceback (pydantic, for one, reports it as a SchemaError)."""

    def leave(signum: int, _frame: object) -> None:
        os._exit(130 if signum == signal.SIGINT else 143)

    signal.signal(signal.SIGINT, leave)
    signal.signal(signal.SIGTERM, leave)


if __name__ == "__main__":
    sys.exit(main())
