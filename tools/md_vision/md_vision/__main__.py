"""``md-vision``: the MCP stdio server. ``--help`` explains everything without starting it.

Nothing here imports the MCP SDK until the flags are valid and the server is about to run.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NoReturn

from md_vision import __version__

if TYPE_CHECKING:
    from md_vision.settings import Settings

DESCRIPTION = """\
MCP stdio server with two read-only tools for markdown documentation:

  index_md(uri)                    heading index of a file, folder or URL: start line, image count
                                   and size of every section
  read_md_with_images(uri, section?, line_range?, max_images=10)
                                   the source text of a file, section or line range with the images
                                   it references inlined as image blocks

It speaks MCP on stdin/stdout, so you normally do not run it by hand: your MCP client starts it."""

EPILOG = """\
Access (both flags are required and may be repeated; --flag VALUE and --flag=VALUE both work):
  --allow-path DIR       local files must resolve (symlinks followed) inside one of these folders;
                         relative paths in requests are taken from the first one
  --allow-domain VALUE   all: any public http(s) host; none: no URLs at all; HOST: that host and
                         its subdomains (example.com allows docs.example.com, not badexample.com).
                         A host you name may be a local one (e.g. 127.0.0.1 or intranet.lan);
                         loopback, private and cloud-metadata addresses are refused otherwise.
                         `*` (quoted) means all, `*.example.com` means example.com; an unquoted *
                         that the shell expanded into file names is refused at start.

Sizes accept k/M/G suffixes (decimal): --max-response-bytes 4M.

MCP client configuration (e.g. claude_desktop_config.json):
  {"mcpServers": {"md-vision": {"command": "uvx",
      "args": ["--from", "docab", "md-vision", "--allow-path", "/abs/path/docs", "--allow-domain", "none"]}}}

Try it on the bundled samples:
  md-vision --allow-path "$(python -c 'import md_vision, os; print(os.path.dirname(md_vision.__file__))')/samples" --allow-domain none
"""

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)[bB]?\s*$")
_MULTIPLIER = {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}


class FlagError(Exception):
    pass


def _parse_number(flag: str, raw: str, kind: type, minimum: float) -> float | int:
    match = _SIZE.match(raw) if kind is int else None
    try:
        if match:
            value: float | int = int(float(match.group(1)) * _MULTIPLIER[match.group(2).lower()])
        else:
            value = kind(raw)
    except ValueError:
        raise FlagError(f"{flag} expects a number, got {raw!r}") from None
    if value < minimum:
        raise FlagError(f"{flag} must be at least {minimum:g}, got {raw!r}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise FlagError(message)


def build_parser() -> argparse.ArgumentParser:
    from md_vision.settings import LIMIT_FLAGS, Limits

    parser = _Parser(
        prog="md-vision",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument(
        "--allow-path",
        action="append",
        default=[],
        metavar="DIR",
        help="folder the server may read (repeatable; at least one)",
    )
    parser.add_argument(
        "--allow-domain",
        action="append",
        default=[],
        metavar="all|none|HOST",
        help="hosts the server may fetch (repeatable; at least one)",
    )
    parser.add_argument(
        "--relative-paths",
        action="store_true",
        help="show local paths in results relative to the first --allow-path folder (for sandboxed "
        "agents that should not see where their files live)",
    )
    parser.add_argument(
        "--raw-data-uris",
        action="store_true",
        help="keep embedded data: URIs in the text of reads (by default each long one is a short "
        "placeholder naming the image block that shows it; _meta gives the original)",
    )
    limits = parser.add_argument_group("limits (defaults in brackets)")
    defaults = Limits()
    for item in LIMIT_FLAGS:
        default = getattr(defaults, item.attribute)
        shown = f"{default:,}" if isinstance(default, int) else f"{default:g}"
        limits.add_argument(
            item.flag, dest=item.attribute, metavar="N", default=None, help=f"{item.help} [{shown}]"
        )
    parser.add_argument("-V", "--version", action="version", version=f"md-vision {__version__}")
    return parser


def parse_settings(argv: Sequence[str]) -> Settings:
    """Flags to :class:`~md_vision.settings.Settings`; raises FlagError with a start-up message."""
    from md_vision.settings import LIMIT_FLAGS, Limits, Settings, shell_expansion_error

    args, extra = build_parser().parse_known_args(list(argv))
    local_names = _working_folder_names()
    if extra:
        # `--allow-domain *` expanded by the shell leaves the second and later file names as stray
        # arguments.
        stray = [value for value in extra if not value.startswith("-")]
        expanded = shell_expansion_error([*args.allow_domain[-1:], *stray], local_names) if stray else None
        if args.allow_domain and expanded is not None:
            raise FlagError(expanded)
        raise FlagError(f"unrecognized arguments: {' '.join(extra)}")
    if not args.allow_path:
        raise FlagError(
            "--allow-path is required: name at least one folder the server may read, e.g. --allow-path ~/docs"
        )
    if not args.allow_domain:
        raise FlagError(
            "--allow-domain is required: use `--allow-domain none` for local files only, `--allow-domain all` "
            "for any public host, or name hosts, e.g. --allow-domain raw.githubusercontent.com"
        )
    limits = Limits()
    for item in LIMIT_FLAGS:
        raw = getattr(args, item.attribute)
        if raw is not None:
            value = _parse_number(item.flag, raw, item.kind, item.minimum)
            # The field is named by a string: mypy cannot tie it to its type. LIMIT_FLAGS gives each
            # flag its field's kind (tests/md_vision/test_mcp.py holds them together).
            limits = replace(limits, **{item.attribute: value})  # type: ignore[arg-type]
    try:
        return Settings.build(
            allow_paths=args.allow_path,
            allow_domains=args.allow_domain,
            limits=limits,
            relative_paths=args.relative_paths,
            local_names=local_names,
            raw_data_uris=args.raw_data_uris,
        )
    except ValueError as exc:
        raise FlagError(str(exc)) from None


def _working_folder_names() -> frozenset[str]:
    """The entries of the working folder: what an unquoted ``*`` expands to."""
    try:
        return frozenset(os.listdir(os.getcwd()))
    except OSError:
        return frozenset()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C while starting (imports take a moment): no traceback
        return 130


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not {"-h", "--help", "-V", "--version"} & set(argv):
        _exit_quietly_on_signals()
    try:
        settings = parse_settings(argv)
    except FlagError as exc:
        print(f"md-vision: error: {exc}\nRun `md-vision --help` for usage.", file=sys.stderr)
        return 2
    from md_vision.parser import ParserUnavailable, check_parser

    try:
        check_parser()  # a broken install fails here, not on the first request
    except ParserUnavailable as exc:
        print(f"md-vision: error: {exc}", file=sys.stderr)
        return 1
    from md_vision.server import serve

    return serve(settings)


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
