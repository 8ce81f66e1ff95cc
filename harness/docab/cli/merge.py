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
The parts must have been run on the same data, as a resumed run must: a question or converted
document two parts both used (or a part and the output's run) whose recorded digests differ (gold
answer, answer format, evidence, text, or the document converted again) is refused, naming how many
and which, unless --accept-data-change. Parts covering different questions or documents merge; the
merged manifest records the data of them all.

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
    parser.add_argument(
        "--accept-data-change",
        action="store_true",
        help="merge even though parts recorded different contents for the same questions or documents "
        "(each sample keeps its score; the manifest's merged_from says what differed)",
    )
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from docab.log.merge import merge_runs

    # A MergeError is printed as one line by docab.cli.main.
    result = merge_runs(
        args.parts, args.out, allow_partial=args.allow_partial, accept_data_change=args.accept_data_change
    )
    print(
        f"{args.out}: {result.records} records from {len(args.parts)} parts"
        + (f" ({result.duplicates} duplicates dropped)" if result.duplicates else "")
    )
    for warning in result.warnings:
        print(f"warning: {warning}")
    return 0
