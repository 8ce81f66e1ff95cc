"""``docab webextract``: extraction quality and speed on the article-extraction benchmark."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docab.cli.errors import CommandError

if TYPE_CHECKING:
    from rich.table import Table

    from docab_benchmark.webextract.runner import ExtractorResult

HELP = "score markfetch and baseline extractors on the article-extraction benchmark"
DESCRIPTION = """\
Run markfetch's extraction and baseline extractors over the article-extraction benchmark
(html/<sha256>.html.gz + ground-truth.json) and print precision, recall and F1 with the
benchmark's own metric (4-token shingles, per-page P/R averaged), plus milliseconds per page.
Markdown outputs are scored on the text they render to.

The pages are split into two stable halves, A and B (by hash): develop on one, check on the
other; both are shown so that tuning to one half shows up as a gap.

A second table gives each extractor's F1 minus plain trafilatura markdown's on the same pages,
with a 95 % paired bootstrap interval over pages: how far the margin could move on another
draw of pages like these."""
EPILOG = """\
examples:
  docab webextract --data ../shared/data/article-extraction-dev
  docab webextract --data DIR --extractors markfetch,trafilatura-markdown --repeat 3
  docab webextract --data DIR --json results/webextract.json
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from docab_benchmark.webextract.extractors import DEFAULT_EXTRACTORS, EXTRACTORS

    parser = subparsers.add_parser(
        "webextract",
        help=HELP,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data", required=True, metavar="PATH", help="benchmark folder (html/ and ground-truth.json)"
    )
    parser.add_argument(
        "--extractors",
        default=",".join(DEFAULT_EXTRACTORS),
        metavar="NAMES",
        help=f"comma-separated, from: {', '.join(EXTRACTORS)} (default: all)",
    )
    parser.add_argument(
        "--split", choices=("A", "B", "all"), default="all", help="score only one half (default: all)"
    )
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N pages (quick checks)")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="time each call N times, keep the fastest"
    )
    parser.add_argument(
        "--json", metavar="FILE", help="also write the results as JSON to FILE ('-' for stdout)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from docab_benchmark.webextract.data import DataError, load_pages
    from docab_benchmark.webextract.extractors import EXTRACTORS, TIME_BASELINE
    from docab_benchmark.webextract.runner import evaluate

    names = [n.strip() for n in args.extractors.split(",") if n.strip()]
    unknown = [n for n in names if n not in EXTRACTORS]
    if unknown or not names:
        raise CommandError(
            f"unknown extractor(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(EXTRACTORS)}"
        )
    if args.limit is not None and args.limit < 1:
        raise CommandError("--limit must be at least 1")
    if args.repeat < 1:
        raise CommandError("--repeat must be at least 1")
    try:
        pages = load_pages(args.data, limit=args.limit)
    except DataError as exc:
        raise CommandError(str(exc)) from None
    if args.split != "all":
        pages = [p for p in pages if p.split == args.split]
    if not pages:
        raise CommandError(f"no pages to score in {args.data}")
    extractors = [EXTRACTORS[n] for n in names]

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    console = Console(stderr=args.json == "-")
    console.width = max(console.width, 112)  # the tables need room even when piped
    with Progress(
        TextColumn("[bold]extracting"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("pages", total=len(pages))
        results = evaluate(
            pages, extractors, repeat=args.repeat, on_page=lambda _page: progress.advance(task)
        )

    splits = {name: [p.key for p in pages if p.split == name] for name in ("A", "B")}
    baseline = next((r for r in results if r.extractor.name == TIME_BASELINE), None)
    table = Table(title=f"Article extraction: {len(pages)} pages from {args.data}", title_justify="left")
    for column in ("extractor", "precision", "recall", "F1", "F1 (A)", "F1 (B)", "ms/page", "time ×"):
        table.add_column(column, justify="left" if column == "extractor" else "right")
    rows = []
    for result in results:
        scores = result.scores()
        by_split = {name: result.scores(keys).f1 if keys else None for name, keys in splits.items()}
        ratio = result.ms_per_page / baseline.ms_per_page if baseline and baseline.ms_per_page else None
        rows.append(
            {
                "extractor": result.extractor.name,
                "label": result.extractor.label,
                "precision": scores.precision,
                "recall": scores.recall,
                "f1": scores.f1,
                "f1_by_split": by_split,
                "ms_per_page": result.ms_per_page,
                "time_ratio_vs_" + TIME_BASELINE: ratio,
                "failures": len(result.failures),
            }
        )
        table.add_row(
            result.extractor.name,
            f"{scores.precision:.3f}",
            f"{scores.recall:.3f}",
            f"[bold]{scores.f1:.3f}",
            "-" if by_split["A"] is None else f"{by_split['A']:.3f}",
            "-" if by_split["B"] is None else f"{by_split['B']:.3f}",
            f"{result.ms_per_page:.0f}",
            "-" if ratio is None else f"{ratio:.2f}",
        )
    console.print(table)
    for result in results:
        console.print(f"  {result.extractor.name}: {result.extractor.label}")
    console.print(
        f"time × is relative to {TIME_BASELINE}; machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()} (timings are noisy on a shared machine)"
    )
    if baseline is not None and len(results) > 1:
        console.print()
        console.print(_difference_table(results, baseline, splits, rows))
    if args.json:
        payload = {
            "data": str(Path(args.data).resolve()),
            "pages": len(pages),
            "split": args.split,
            "repeat": args.repeat,
            "machine": {
                "cpu": platform.machine(),
                "cores": os.cpu_count(),
                "python": platform.python_version(),
            },
            "results": rows,
        }
        text = json.dumps(payload, indent=2)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


def _difference_table(
    results: list[ExtractorResult],
    baseline: ExtractorResult,
    splits: dict[str, list[str]],
    rows: list[dict[str, Any]],
) -> Table:
    """F1 of each extractor minus the baseline's on the same pages, with paired intervals; the
    figures also go into each extractor's JSON row."""
    from rich.table import Table

    from docab_benchmark.webextract.metric import paired_f1_difference

    name = baseline.extractor.name
    table = Table(
        title=f"F1 minus {name}'s on the same pages [95 % paired bootstrap interval over pages]",
        title_justify="left",
    )
    for column in ("extractor", "all", "A", "B"):
        table.add_column(column, justify="left" if column == "extractor" else "right", no_wrap=True)
    groups = {"all": list(baseline.counts), **splits}
    for result, row in zip(results, rows, strict=True):
        if result is baseline:
            continue
        cells, differences = [], {}
        for group, keys in groups.items():
            keys = [k for k in keys if k in result.counts and k in baseline.counts]
            if not keys:
                cells.append("-")
                continue
            diff = paired_f1_difference([result.counts[k] for k in keys], [baseline.counts[k] for k in keys])
            differences[group] = {
                "estimate": diff.estimate,
                "low": diff.low,
                "high": diff.high,
                "pages": diff.pages,
            }
            cells.append(f"{diff.estimate:+.3f} [{diff.low:+.3f},{diff.high:+.3f}]")
        row["f1_difference_vs_" + name] = differences
        table.add_row(result.extractor.name, *cells)
    return table
