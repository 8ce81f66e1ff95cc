"""``docab``: the command line of the benchmark and the A/B harness.

Each command lives in its own module exposing ``register(subparsers)``; the module list below is
the only place that knows them all. Modules import their heavy dependencies inside the command
function, so ``docab --help`` stays fast and works without the ``harness`` extra.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from docab.errors import DocabError

COMMAND_MODULES: tuple[str, ...] = (
    "docab.cli.run",
    "docab.cli.demo",
    "docab.cli.merge",
    "docab.cli.mmlongbench",
    "docab.cli.findability",
    "docab.cli.webextract",
    "docab.cli.report",
    "docab.cli.export",
    "docab.cli.view",
    "docab.cli.calibrate",
    "docab.cli.cache",
    "docab.cli.plan",
)

EPILOG = """\
Start here:
  docab demo                 run the built-in suite A/B with the offline baseline policy
  docab run CONFIG.toml      run an A/B configuration (see harness/docab/configs/)
  docab view RUN_DIR         browse a run's questions and transcripts in a browser
  docab plan RUN_DIR         project a pilot run (--limit 40) to the full run: cost, time, detectable effect

Every command has its own --help.
"""


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import PackageNotFoundError, version

    try:
        package_version = version("docab")
    except PackageNotFoundError:  # running from a source tree without installing
        package_version = "unknown"
    parser = argparse.ArgumentParser(
        prog="docab",
        description="Measure whether MCP document tools help LLM agents answer questions about long documents.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"docab {package_version}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        try:
            code = _run(argv)
        except SystemExit as exit_:  # argparse's --help and usage errors
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
        sys.stdout.flush()  # inside the try, so a closed pipe is caught here and not at exit
        return code
    except BrokenPipeError:
        # The reader went away (`docab ... | head`): not worth a traceback. Point stdout at devnull
        # so the interpreter's final flush does not raise again; 141 is the shell's SIGPIPE status.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _command_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            chosen: argparse.ArgumentParser = action.choices[command]
            return chosen
    return parser


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # worded by the command's own parser, so the usage shown is the command's
        _command_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(unknown)}")
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as typed, for a command to repeat
    handler = getattr(args, "func", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except DocabError as exc:
        print(f"docab {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except ModuleNotFoundError as exc:
        print(
            f"docab {args.command}: error: the Python package {exc.name!r} is missing; "
            "reinstall the harness with its dependencies: pip install docab (uv run installs them for you)",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print(f"docab {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
