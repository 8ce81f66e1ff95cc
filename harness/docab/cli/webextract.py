"""``docab webextract``: extraction quality and speed on web-extraction benchmarks (dev and validation parts)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docab.cli.errors import CommandError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from docab_benchmark.webextract.data import Page, PageSet
    from docab_benchmark.webextract.extractors import Extractor
    from docab_benchmark.webextract.runner import ExtractorResult

HELP = "score markfetch and baseline extractors on web-extraction benchmarks"
DESCRIPTION = """\
Run markfetch's extraction and baseline extractors over one or more extraction benchmark folders
and print precision, recall and F1 with the article-extraction benchmark's own metric (4-token
shingles, per-page P/R averaged), plus milliseconds per page. Markdown outputs are scored on the
text they render to.

Three layouts are read: the article-extraction benchmark's (html/<sha256>.html.gz +
ground-truth.json), the web-content-extraction benchmark's (ground-truth/NNNN.json with
"with"/"without" sentences + html/NNNN.html.gz, or a checkout of its repository) and WCXB's (the
same files under dev/ and test/). Where pages have them, "must" is the share of must-contain
sentences kept and "must-not" the share of boilerplate sentences let through (lower is better).
Each set gets tables of its own; the title says who wrote its ground truth.

Every set is split into two stable parts, fixed before anyone looks: dev (to develop on) and
validation (to check on; never read page by page). WCXB's parts are its publisher's dev and
held-out test sets; elsewhere a hash of each page's key decides. Both are shown, and the gap
between them: a rule fitted to the dev pages shows up as a gap. Where pages are labelled with a
type (article, forum, product, ...), a table gives each type's F1.

A second table gives each extractor's F1 minus plain trafilatura markdown's on the same pages,
with a 95 % paired bootstrap interval over pages: how far the margin could move on another
draw of pages like these."""
EPILOG = """\
examples:
  docab webextract --data ../shared/data/article-extraction-dev
  docab webextract --data ../shared/data/article-extraction-dev --data ~/web-content-extraction-benchmark
  docab webextract --data ~/wcxb --split validation   # WCXB's held-out test set only
  docab webextract --data DIR --extractors markfetch,trafilatura-markdown --repeat 3
  docab webextract --data DIR --split validation --json results/webextract.json
"""

PARTS = ("dev", "validation")


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
        "--data",
        required=True,
        action="append",
        metavar="PATH",
        help="a benchmark folder (repeatable: each set gets its own tables)",
    )
    parser.add_argument(
        "--extractors",
        default=",".join(DEFAULT_EXTRACTORS),
        metavar="NAMES",
        help=f"comma-separated, from: {', '.join(EXTRACTORS)} (default: all)",
    )
    parser.add_argument(
        "--split",
        choices=("dev", "validation", "A", "B", "all"),
        default="all",
        help="score only one part: dev (= A) or validation (= B) (default: all)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="only the first N pages of each set (of each of WCXB's dev and test sets; quick checks)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="time each call N times, keep the fastest"
    )
    parser.add_argument(
        "--json", metavar="FILE", help="also write the results as JSON to FILE ('-' for stdout)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from docab_benchmark.webextract.data import DataError, load_set
    from docab_benchmark.webextract.extractors import EXTRACTORS

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
    wanted = {"A": "dev", "B": "validation"}.get(args.split, args.split)
    sets: list[PageSet] = []
    for folder in args.data:  # every folder is checked before any extraction starts
        try:
            page_set = load_set(folder, limit=args.limit)
        except DataError as exc:
            raise CommandError(str(exc)) from None
        if wanted != "all":
            page_set = dataclasses.replace(page_set, pages=[p for p in page_set.pages if p.part == wanted])
        if not page_set.pages:
            raise CommandError(f"no pages to score in {folder}")
        sets.append(page_set)

    from rich.console import Console

    console = Console(stderr=args.json == "-")
    console.width = max(console.width, 170)  # the tables need room even when piped
    payloads = [_score_set(console, page_set, [EXTRACTORS[n] for n in names], args) for page_set in sets]
    console.print(
        f"time × is relative to {_baseline_name()}; machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()} (timings are noisy on a shared machine)"
    )
    if args.json:
        payload = {
            "split": args.split,
            "repeat": args.repeat,
            "machine": {
                "cpu": platform.machine(),
                "cores": os.cpu_count(),
                "python": platform.python_version(),
            },
            "sets": payloads,
        }
        text = json.dumps(payload, indent=2)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


def _baseline_name() -> str:
    from docab_benchmark.webextract.extractors import TIME_BASELINE

    return TIME_BASELINE


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _score_set(
    console: Console, page_set: PageSet, extractors: list[Extractor], args: argparse.Namespace
) -> dict[str, Any]:
    """Extract, score and print one set; its JSON payload."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    from docab_benchmark.webextract.runner import evaluate, part_figures

    pages = page_set.pages
    with Progress(
        TextColumn(f"[bold]extracting {page_set.folder.name}"),
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

    parts = {name: [p.key for p in pages if p.part == name] for name in PARTS}
    sentences = any(p.must_contain or p.must_not_contain for p in pages)
    baseline = next((r for r in results if r.extractor.name == _baseline_name()), None)
    title = (
        f"{page_set.layout} benchmark ({page_set.ground_truth}): {len(pages)} pages from {page_set.folder} "
        f"(dev {len(parts['dev'])}, validation {len(parts['validation'])})"
    )
    if page_set.unpaired:
        shown = ", ".join(page_set.unpaired[:5]) + (" …" if len(page_set.unpaired) > 5 else "")
        title += f"; {len(page_set.unpaired)} ground-truth file(s) without their HTML left out: {shown}"
    if page_set.duplicates:
        title += (
            f"; {len(page_set.duplicates)} dev file(s) also in test/ counted once, in validation "
            "(as the publisher's metadata files them)"
        )
    table = Table(title=title, title_justify="left")
    columns = ["extractor", "F1", "P dev", "R dev", "F1 dev", "P val", "R val", "F1 val", "gap"]
    if sentences:
        columns += ["must dev", "must val", "must-not dev", "must-not val"]
    for column in [*columns, "ms/page", "time ×"]:
        table.add_column(column, justify="left" if column == "extractor" else "right")
    rows: list[dict[str, Any]] = []
    for result in results:
        whole = part_figures(result, list(result.counts))
        by_part = {name: part_figures(result, keys) for name, keys in parts.items() if keys}
        dev, val = by_part.get("dev"), by_part.get("validation")
        gap = dev.f1 - val.f1 if dev and val else None
        ratio = result.ms_per_page / baseline.ms_per_page if baseline and baseline.ms_per_page else None
        rows.append(
            {
                "extractor": result.extractor.name,
                "label": result.extractor.label,
                **dataclasses.asdict(whole),
                "parts": {name: dataclasses.asdict(figures) for name, figures in by_part.items()},
                "generalisation_gap_f1": gap,
                "ms_per_page": result.ms_per_page,
                "time_ratio_vs_" + _baseline_name(): ratio,
                "failures": len(result.failures),
            }
        )
        cells = [result.extractor.name, f"[bold]{whole.f1:.3f}"]
        for figures in (dev, val):
            cells += (
                ["-"] * 3
                if figures is None
                else [f"{figures.precision:.3f}", f"{figures.recall:.3f}", f"[bold]{figures.f1:.3f}"]
            )
        cells.append("-" if gap is None else f"{gap:+.3f}")
        if sentences:
            cells += [
                _rate(dev.must if dev else None),
                _rate(val.must if val else None),
                _rate(dev.must_not if dev else None),
                _rate(val.must_not if val else None),
            ]
        cells += [f"{result.ms_per_page:.0f}", "-" if ratio is None else f"{ratio:.2f}"]
        table.add_row(*cells)
    console.print(table)
    for result in results:
        console.print(f"  {result.extractor.name}: {result.extractor.label}")
    if baseline is not None and len(results) > 1:
        console.print()
        console.print(_difference_table(results, baseline, parts, rows))
    types = sorted({p.page_type for p in pages if p.page_type})
    by_type: dict[str, Any] = {}
    if len(types) > 1:
        console.print()
        table, by_type = _page_type_table(results, pages, types)
        console.print(table)
    console.print()
    return {
        "data": str(page_set.folder.resolve()),
        "layout": page_set.layout,
        "ai_ground_truth": page_set.ai_ground_truth,
        "pages": len(pages),
        "unpaired": list(page_set.unpaired),
        "parts": {name: len(keys) for name, keys in parts.items()},
        "results": rows,
        "by_page_type": by_type,
    }


def _page_type_table(
    results: list[ExtractorResult], pages: list[Page], types: list[str]
) -> tuple[Table, dict[str, Any]]:
    """F1 of every extractor on each labelled page type, dev and validation apart; and the same
    figures for the JSON payload (type -> extractor -> part -> figures)."""
    from rich.table import Table

    from docab_benchmark.webextract.runner import part_figures

    table = Table(title="F1 by page type (pages: dev / validation)", title_justify="left")
    table.add_column("page type")
    table.add_column("pages", justify="right")
    for result in results:
        for part in ("dev", "val"):
            table.add_column(f"{result.extractor.name} {part}", justify="right")
    payload: dict[str, Any] = {}
    for page_type in types:
        keys = {part: [p.key for p in pages if p.page_type == page_type and p.part == part] for part in PARTS}
        cells = [page_type, f"{len(keys['dev'])} / {len(keys['validation'])}"]
        payload[page_type] = {}
        for result in results:
            figures = {part: part_figures(result, k) for part, k in keys.items() if k}
            payload[page_type][result.extractor.name] = {
                part: dataclasses.asdict(f) for part, f in figures.items()
            }
            cells += [f"{figures[part].f1:.3f}" if part in figures else "-" for part in PARTS]
        table.add_row(*cells)
    return table, payload


def _difference_table(
    results: list[ExtractorResult],
    baseline: ExtractorResult,
    parts: dict[str, list[str]],
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
    for column in ("extractor", "all", "dev", "validation"):
        table.add_column(column, justify="left" if column == "extractor" else "right", no_wrap=True)
    groups = {"all": list(baseline.counts), **parts}
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
