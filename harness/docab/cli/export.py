"""``docab export``: a run as one flat table (parquet, CSV or JSON lines) for pandas, R or a sheet."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docab.cli.errors import CommandError

if TYPE_CHECKING:
    from docab.report.summary import RunData

HELP = """\
Write a run as one flat table: --level records gives one row per record (arm, question, epoch),
with tokens per role, tool calls per tool and evidence recall as columns; --level questions gives
one row per arm and question, epochs averaged (the unit the report pairs). Several folders (shards)
are merged as by docab report, with the same --reruns-as-epochs.

The default output is RUN_DIR/<level>.<format>, except JSON lines: RUN_DIR/<level>.flat.jsonl
(records.jsonl is the run's own log; export never writes over the run's records.jsonl or
manifest.json, even when -o names them). Parquet keeps list columns (pages read, evidence
pages) as lists, CSV writes them as JSON text. Every column has a fixed type (docab.report.frames:
RECORDS_SCHEMA, QUESTIONS_SCHEMA), so the parquet files of different runs concatenate; tokens per
role are tokens_agent, tokens_tool_side and tokens_extractor.

--format inspect writes one Inspect AI eval log per arm (RUN_DIR/inspect/<arm>-<id>.eval, the
arm's name made safe for a file name and the log's eval id, or into the folder -o names): messages
and tool calls from the transcripts, scores, tokens per model (the extractor's too) and per role,
timing and the record of each sample, so `inspect view --log-dir RUN_DIR/inspect` shows the run and docab report
or docab compare read the logs back. It needs the inspect-ai package.

examples:
  docab export results/demo                              # results/demo/records.parquet
  docab export results/demo --format jsonl               # results/demo/records.flat.jsonl
  docab export results/demo --format inspect             # results/demo/inspect/fs-<id>.eval, ...
  docab export results/demo --level questions --format csv -o questions.csv
  python -c "import pandas as pd; print(pd.read_parquet('results/demo/records.parquet').groupby('arm').score.mean())"
"""

FORMATS = ("parquet", "csv", "jsonl", "inspect")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write a run as a flat table (parquet, CSV, JSON lines) for pandas and friends",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="results/<run-id>/ folder(s)"
    )
    parser.add_argument(
        "--level", choices=("records", "questions"), default="records", help="rows (default: records)"
    )
    parser.add_argument("--format", choices=FORMATS, default="parquet", help="file format (default: parquet)")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE",
        help="where to write (default: in RUN_DIR); with --format inspect, a folder",
    )
    parser.add_argument(
        "--reruns-as-epochs",
        action="store_true",
        help="with several folders: a question seen again in a later folder is a further epoch of it "
        "(reruns of one config), not a duplicate (resumed shards); as docab report",
    )
    parser.set_defaults(func=run_export)


def run_export(args: argparse.Namespace) -> int:
    if args.format == "inspect" and args.level != "records":
        raise CommandError("--format inspect writes every record (one sample per record); drop --level")
    import json

    from docab.report.frames import arrow_table, questions_frame, records_frame
    from docab.report.outcomes import question_outcomes
    from docab.report.summary import ReportError, load_run

    try:
        run = load_run(*args.run_dirs, reruns_as_epochs=args.reruns_as_epochs)
    except ReportError as exc:
        raise CommandError(str(exc)) from None
    for warning in run.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.format == "inspect":
        return _export_inspect(args, run)
    if args.level == "records":
        frame = records_frame(run.records)
    else:
        frame = questions_frame(question_outcomes(run.records))
    target = args.output or args.run_dirs[0] / _default_name(args.level, args.format)
    _refuse_run_files(target, args.run_dirs)
    try:
        if args.format == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(arrow_table(frame, level=args.level), target)
        elif args.format == "csv":
            flat = frame.copy()
            for column in flat.columns:
                if flat[column].map(lambda v: isinstance(v, list | dict)).any():
                    flat[column] = flat[column].map(json.dumps)
            flat.to_csv(target, index=False)
        else:
            frame.to_json(target, orient="records", lines=True)
    except OSError as exc:
        raise CommandError(f"could not write {target}: {exc.strerror or exc}") from None
    print(f"wrote {target} ({len(frame)} rows, {len(frame.columns)} columns)", file=sys.stderr)
    return 0


def _default_name(level: str, fmt: str) -> str:
    # records.jsonl is the run's own append-only log: a flat export by that name would replace it.
    return f"{level}.flat.jsonl" if fmt == "jsonl" else f"{level}.{fmt}"


def _refuse_run_files(target: Path, run_dirs: list[Path]) -> None:
    """No export may replace a file a run is made of (its records or manifest)."""
    from docab.log.store import MANIFEST, RECORDS

    own = {(folder / name).resolve() for folder in run_dirs for name in (RECORDS, MANIFEST)}
    if target.resolve() in own:
        raise CommandError(
            f"{target} is a file of the run itself; export to another file "
            f"(the default is {_default_name('records', 'jsonl')} for JSON lines)"
        )


def _export_inspect(args: argparse.Namespace, run: RunData) -> int:
    from docab.errors import DocabError
    from docab.interchange import require_inspect_ai

    out_dir = args.output or args.run_dirs[0] / "inspect"
    try:
        require_inspect_ai("--format inspect")
        from docab.interchange.inspect_files import write_run_logs

        written, problems = write_run_logs(run.sources, run.manifest, run.records, out_dir)
    except DocabError as exc:
        raise CommandError(str(exc)) from None
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    print(f"open them with: inspect view --log-dir {out_dir}", file=sys.stderr)
    return 0
