"""``markfetch``: no arguments start the MCP stdio server; any argument runs the CLI.

stderr is for fatal errors only (a bad setting at start, a crash); the CLI adds its one
``[code] message`` line on failure. Per-request events (httpx's request log, trafilatura's
warnings, the MCP SDK's request log) are never written: :func:`quiet_logging` runs first.
"""

from __future__ import annotations

import logging
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


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    quiet_logging()
    if args:
        from markfetch.cli import main as cli_main

        return cli_main(args)
    from markfetch.errors import ConfigError

    try:
        from markfetch.server import run
    except ModuleNotFoundError as exc:  # pragma: no cover - a broken install
        print(f"markfetch: cannot start the MCP server: the package {exc.name!r} is missing", file=sys.stderr)
        return 2
    try:
        run()
    except ConfigError as exc:
        print(f"markfetch: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
