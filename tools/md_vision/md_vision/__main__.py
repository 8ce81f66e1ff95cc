"""``md-vision``: the MCP stdio server. ``--help`` explains everything without starting it.

Nothing here imports the MCP SDK until the flags are valid and the server is about to run.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from collections.abc import Mapping, Sequence
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
Access (the same words as a flag and as an environment variable; flags win; both --flag VALUE and
--flag=VALUE work):
  --allow-host VALUE     required, repeatable (env MD_VISION_ALLOW_HOSTS, comma-separated; the
                         JavaScript server's --allow-domain is the same flag). all: any public
                         http(s) host; none: no URLs at all; HOST: that host and its subdomains
                         (example.com allows docs.example.com, not badexample.com). A host you
                         name may be a local one (e.g. 127.0.0.1 or intranet.lan); loopback,
                         private and cloud-metadata addresses are refused otherwise. `*` (quoted)
                         means all, `*.example.com` means example.com; an unquoted * that the
                         shell expanded into file names is refused at start.
  --allow-path DIR       repeatable (env MD_VISION_ALLOW_PATHS, absolute folders separated by
                         ':'): local files must resolve (symlinks followed) inside one of these
                         folders; relative paths in requests are taken from the first one.
                         Without it the server takes its folders from the client's MCP roots
                         (and follows their changes); a client without roots can then read no
                         local file.
  --no-structured-output (env MD_VISION_STRUCTURED_OUTPUT=0) no outputSchema or structuredContent,
                         only the text blocks: for clients that show the model only the
                         structured part of a result when there is one.

Sizes accept k/M/G suffixes (decimal): --max-response-bytes 4M.

MCP client configuration (e.g. claude_desktop_config.json):
  {"mcpServers": {"md-vision": {"command": "uvx",
      "args": ["md-vision", "--allow-path", "/abs/path/docs", "--allow-host", "none"]}}}

md-vision speaks MCP on stdin and stdout and prints nothing of its own: try it through a client,
e.g. the MCP Inspector on the bundled samples (run from the environment md-vision is installed in):
  npx @modelcontextprotocol/inspector --cli md-vision --allow-path \
    "$(python -c 'import md_vision, os; print(os.path.dirname(md_vision.__file__))')/samples" \
    --allow-host none --method tools/list
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
    from docab_mcpguard.access import add_flags
    from md_vision.settings import ACCESS, LIMIT_FLAGS, Limits

    parser = _Parser(
        prog="md-vision",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    add_flags(
        parser,
        ACCESS,
        hosts_help="hosts the server may fetch: all, none or host names (at least one)",
        paths_help="folder the server may read (without it: the client's MCP roots)",
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


def parse_settings(argv: Sequence[str], env: Mapping[str, str] | None = None) -> Settings:
    """Flags (and the MD_VISION_* variables of ``env``, default the process's) to
    :class:`~md_vision.settings.Settings`; raises FlagError with a start-up message."""
    from docab_mcpguard.access import (
        SettingError,
        flag_values,
        given,
        message_cap,
        shell_expansion_error,
        switch,
    )
    from md_vision.settings import ACCESS, LIMIT_FLAGS, Limits, Settings

    env = os.environ if env is None else env
    args, extra = build_parser().parse_known_args(list(argv))
    hosts_flags = flag_values(ACCESS.hosts, args)
    local_names = _working_folder_names()
    if extra:
        # `--allow-host *` expanded by the shell leaves the second and later file names as stray
        # arguments.
        stray = [value for value in extra if not value.startswith("-")]
        used = [(name, values) for name, values in hosts_flags.items() if values]
        if stray and used:
            flag, values = used[-1]
            expanded = shell_expansion_error([*values[-1:], *stray], local_names, flag=flag)
            if expanded is not None:
                raise FlagError(expanded)
        raise FlagError(f"unrecognized arguments: {' '.join(extra)}")
    try:
        hosts = given(ACCESS.hosts, hosts_flags, env, separator=",")
        paths = given(ACCESS.paths, flag_values(ACCESS.paths, args), env, separator=os.pathsep)
        structured = switch(ACCESS.structured_output, args.structured_output, env)
        max_message_bytes = message_cap(ACCESS.max_message, args.max_message_mb, env)
    except SettingError as exc:
        raise FlagError(str(exc)) from None
    if hosts is None:
        raise FlagError(
            f"{ACCESS.hosts.flag} is required (or {ACCESS.hosts.variable}; --allow-domain is the same "
            f"flag): use `{ACCESS.hosts.flag} none` for local files only, `{ACCESS.hosts.flag} all` for "
            f"any public host, or name hosts, e.g. {ACCESS.hosts.flag} raw.githubusercontent.com"
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
            allow_paths=(),
            limits=limits,
            relative_paths=args.relative_paths,
            local_names=local_names,
            raw_data_uris=args.raw_data_uris,
            structured_output=structured,
            max_message_bytes=max_message_bytes,
            paths_given=paths,
            hosts_given=hosts,
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
