"""``docab merge SHARD_DIR... --out RUN_DIR``: join the shards of one run into one run folder."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = """\
Join run folders made with --shard i/N (or any runs of the same config) into one: records are
united by (arm, question, epoch) with duplicates dropped, transcripts and images copied, and the
manifest lists the parts. The parts must share one config hash. Shards must make up the whole
run, each once: a missing or repeated shard is refused unless --allow-partial, and the report of
a partial merge names the shards it lacks (merging a late shard into the output later completes it).

example:
  docab merge results/my-run.shard-1-of-2 results/my-run.shard-2-of-2 --out results/my-run
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "merge",
        help="join sharded runs into one run folder",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("parts", nargs="+", type=Path, help="run folders to join")
    parser.add_argument("--out", type=Path, required=True, help="the merged run folder (created)")
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="merge even when shards are missing or given twice (the report says which are missing)",
    )
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from docab.log.merge import merge_runs

    # A MergeError is printed as one line by docab.cli.main.
    result = merge_runs(args.parts, args.out, allow_partial=args.allow_partial)
    print(
        f"{args.out}: {result.records} records from {len(args.parts)} parts"
        + (f" ({result.duplicates} duplicates dropped)" if result.duplicates else "")
    )
    for warning in result.warnings:
        print(f"warning: {warning}")
    return 0
