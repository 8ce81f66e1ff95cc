"""``docab demo``: the built-in suite, A/B, with the offline policy; no API key needed."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = """\
Run the project end to end on any machine, offline: builds the built-in suite and its converted
corpus on first use, runs both arms (filesystem tools only, and filesystem tools plus the
md-vision MCP server) with baseline/keyword — a deterministic keyword policy that is a floor for
the pipeline, not a model — writes results/demo/ and prints the summary.

Re-running resumes (an unchanged demo has nothing left to do and prints the summary again).
Exits 1 when a sample ends in an error or timeout (a broken installation, not a wrong answer).
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the built-in suite A/B with the offline baseline policy",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=Path("results"),
        metavar="DIR",
        help="results folder (default: results)",
    )
    parser.add_argument("--concurrency", type=int, metavar="K", help="samples in flight (default: 4)")
    parser.add_argument(
        "--limit", type=int, metavar="N", help="run N questions spread over the documents (seeded)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from docab.cli.run import check_counts
    from docab.cli.summary import launch_and_report
    from docab.config import load_config
    from docab.runner.launch import RunRequest

    check_counts(args, "concurrency", "limit")
    request = RunRequest(
        config=load_config("demo"),
        results_dir=args.results,
        limit=args.limit,
        concurrency=args.concurrency,
        quiet=args.quiet,
    )
    return launch_and_report(request, command="docab demo")
