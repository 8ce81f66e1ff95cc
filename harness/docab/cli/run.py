"""``docab run CONFIG``: run an A/B configuration; re-running the same command resumes it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the run's modules load only when a command runs, so --help stays fast
    from docab.config import RunConfig
    from docab.runner.launch import RunRequest

HELP = """\
Run every question of a config's dataset through every arm (the same model, different tools),
writing results/<run-id>/: manifest.json, records.jsonl (one line per arm, question and epoch,
flushed as each sample finishes) and transcripts/.

Re-running the same command resumes: recorded samples are skipped, nothing is duplicated, and a
killed run loses only the samples that were in flight.

examples:
  docab run harness/docab/configs/mmlongbench-openai.toml --limit 20
  docab run my.toml --shard 1/4          # on machine 1 of 4; then: docab merge results/my.shard-*
  docab run demo                          # a shipped config, by name
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run an A/B configuration (resumable)",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "config", help="a TOML run config, or the name of a shipped one (harness/docab/configs/)"
    )
    add_run_options(parser)
    parser.set_defaults(func=main)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, metavar="N", help="run only the first N questions")
    parser.add_argument(
        "--concurrency", type=int, metavar="K", help="samples in flight (default: the config's)"
    )
    parser.add_argument(
        "--epochs", type=int, metavar="E", help="runs per question and arm (default: the config's)"
    )
    parser.add_argument(
        "--shard", metavar="i/N", help="run shard i of N (split by question); merge with docab merge"
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=Path("results"),
        metavar="DIR",
        help="results folder (default: results)",
    )
    parser.add_argument(
        "--out", type=Path, metavar="RUN_DIR", help="the run folder (default: RESULTS/<run name>)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress display")


def parse_shard(text: str) -> tuple[int, int]:
    """``--shard i/N`` (1 <= i <= N) as (i, N); raises CommandError worded for the flag."""
    from docab.cli.errors import CommandError

    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise CommandError(f"--shard must look like 1/4 (shard i of N), got {text!r}") from None
    if not sep or n < 1 or not 1 <= i <= n:
        raise CommandError(f"--shard must be i/N with 1 <= i <= N, got {text!r}")
    return i, n


def check_counts(args: argparse.Namespace, *names: str) -> None:
    """Each of the flags ``names`` (``limit``, ``concurrency``, ``epochs``) at least 1 when given."""
    from docab.cli.errors import CommandError

    for name in names:
        value = getattr(args, name)
        if value is not None and value < 1:
            raise CommandError(f"--{name} must be at least 1, got {value}")


def request_from(args: argparse.Namespace, config: RunConfig) -> RunRequest:
    """The run the flags ask for, checked and worded for the flags before the library sees them."""
    from docab.runner.launch import RunRequest

    shard = parse_shard(args.shard) if args.shard else None
    check_counts(args, "limit", "concurrency", "epochs")
    return RunRequest(
        config=config,
        results_dir=args.results,
        run_dir=args.out,
        limit=args.limit,
        concurrency=args.concurrency,
        epochs=args.epochs,
        shard=shard,
        quiet=args.quiet,
    )


def main(args: argparse.Namespace) -> int:
    from docab.cli.summary import launch_and_report
    from docab.config import load_config

    return launch_and_report(request_from(args, load_config(args.config)))
