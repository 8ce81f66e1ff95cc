"""``markfetch``: no arguments start the MCP stdio server; any argument runs the CLI."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
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
