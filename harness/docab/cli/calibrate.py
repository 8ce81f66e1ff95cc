"""``docab calibrate``: check the report's intervals, tests and gate by simulation."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import TYPE_CHECKING, Any

from docab.cli.errors import CommandError

if TYPE_CHECKING:
    from docab.report.calibration import CellResult

HELP = """\
Simulate paired A/B runs with a known truth and run each through the report's own statistics and
gate, then print, per number of documents and within-document correlation (ICC) of the paired
differences:

  - the false-positive rate of every interval and test the report prints, and of the gate with
    all five metrics gated at zero thresholds, when the arms do not differ (target: 4-6 %; the
    gate at most 5 %);
  - the coverage of the accuracy and F1 intervals when B is better by --effect (target 94-96 %),
    and the power to detect that difference;
  - the same for two methods the report does not use, to show why: plain McNemar (ignores
    documents) and the percentile cluster bootstrap.

Documents carry 2-20 questions (about 8 on average, unequal: the hard case). The model of a run is
documented in docab.report.calibration. Each rate is over --runs simulated runs; its Monte Carlo
standard error is about 0.5 points at 2,000 runs.

examples:
  docab calibrate                       # 30, 80, 130 documents x ICC 0.1, 0.3; 2,000 runs each
  docab calibrate --runs 500 --documents 30
  docab calibrate --format json > calibration.json
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="check the report's intervals, tests and gate by simulation (false positives, coverage, power)",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--runs", type=_positive_int, default=2000, help="simulated runs per cell and truth (default: 2000)"
    )
    parser.add_argument(
        "--documents",
        type=_int_list,
        default=[30, 80, 130],
        metavar="N,N",
        help="documents per run (default: 30,80,130)",
    )
    parser.add_argument(
        "--icc",
        type=_float_list,
        default=[0.1, 0.3],
        metavar="R,R",
        help="ICCs of the differences (default: 0.1,0.3)",
    )
    parser.add_argument(
        "--discordance",
        type=float,
        default=0.3,
        help="share of answers differing between arms (default: 0.3)",
    )
    parser.add_argument(
        "--effect",
        type=float,
        default=0.10,
        help="true accuracy difference for coverage and power (default: 0.10)",
    )
    parser.add_argument(
        "--effect-share",
        type=float,
        default=1.0,
        metavar="SHARE",
        help="share of documents the effect lives in (default: 1, spread over all; e.g. 0.1 for a tool "
        "that helps on a tenth of documents)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(func=main)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def _int_list(text: str) -> list[int]:
    values = [_positive_int(part) for part in text.split(",") if part.strip()]
    if not values or min(values) < 2:
        raise argparse.ArgumentTypeError(
            "give document counts of 2 or more, comma-separated (e.g. 30,80,130)"
        )
    return values


def _float_list(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not values or not all(0 < v < 1 for v in values):
        raise argparse.ArgumentTypeError("each ICC must be between 0 and 1 (e.g. 0.1,0.3)")
    return values


def main(args: argparse.Namespace) -> int:
    import numpy as np

    from docab.report.calibration import Design, run_cell

    try:
        designs = [
            Design(
                count,
                icc,
                discordance=args.discordance,
                difference=args.effect,
                effect_share=args.effect_share,
            )
            for count in args.documents
            for icc in args.icc
        ]
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    results: list[CellResult] = []
    with _progress(len(designs) * 2 * args.runs, quiet=args.quiet or args.format == "json") as advance:
        for design in designs:
            results.append(
                run_cell(design, runs=args.runs, rng=rng, effect=args.effect, progress=lambda _: advance())
            )
    elapsed = time.perf_counter() - started
    machine = (
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.1f}"
        if hasattr(os, "getloadavg")
        else platform.machine()
    )
    if args.format == "json":
        print(json.dumps(_as_json(results, args, elapsed, machine), indent=2))
        return 0
    lines = _tables(results, args)
    lines.append(
        f"{args.runs:,} simulated runs per cell and truth, seed {args.seed}, discordance {args.discordance:.0%}, "
        + (f"effect in {args.effect_share:.0%} of documents, " if args.effect_share < 1 else "")
        + f"effect {args.effect * 100:+.0f} points; {elapsed:.0f} s on {machine}."
    )
    print("\n".join(lines))
    return 0


def _pct(rate: float) -> str:
    return f"{rate * 100:.1f}"


def _tables(results: list[CellResult], args: argparse.Namespace) -> list[str]:
    fp_keys = [
        "accuracy difference",
        "clustered McNemar",
        "F1 difference",
        "evidence recall difference",
        "token ratio",
        "latency ratio",
        "arm accuracy",
        "gate",
    ]
    fp_head = [
        "docs",
        "ICC",
        "Acc B−A",
        "clust. McNemar",
        "F1 B−A",
        "recall B−A",
        "tokens ×",
        "latency ×",
        "arm Acc",
        "gate (Holm)",
    ]
    fp_rows = [
        [str(r.design.documents), f"{r.design.icc:g}", *[_pct(r.false_positive[k].rate) for k in fp_keys]]
        for r in results
    ]
    effect = f"{args.effect * 100:+.0f} points"
    cov_head = ["docs", "ICC", "coverage Acc", "coverage F1", "power Acc", "power clust. McNemar", "power F1"]
    cov_rows = [
        [
            str(r.design.documents),
            f"{r.design.icc:g}",
            _pct(r.coverage["accuracy difference"].rate),
            _pct(r.coverage["F1 difference"].rate),
            _pct(r.power["accuracy difference"].rate),
            _pct(r.power["clustered McNemar"].rate),
            _pct(r.power["F1 difference"].rate),
        ]
        for r in results
    ]
    not_head = [
        "docs",
        "ICC",
        "plain McNemar false +",
        "percentile bootstrap false +",
        "percentile bootstrap coverage",
    ]
    not_rows = [
        [
            str(r.design.documents),
            f"{r.design.icc:g}",
            _pct(r.false_positive["plain McNemar"].rate),
            _pct(r.false_positive["percentile bootstrap"].rate),
            _pct(r.coverage["percentile bootstrap"].rate),
        ]
        for r in results
    ]
    table = _markdown if args.format == "markdown" else _plain
    return [
        "False-positive rate (%) with no true difference: every interval and test the report prints "
        "(target 4-6; the gate at most 5; arm Acc: the arm's interval missing its true accuracy)",
        *table(fp_head, fp_rows),
        "",
        f"Coverage (%) of the true difference and power (%) with B better by {effect} (target coverage 94-96)",
        *table(cov_head, cov_rows),
        "",
        "Methods the report does not use, for comparison (%): plain McNemar ignores documents; the "
        "percentile cluster bootstrap is too narrow with few documents",
        *table(not_head, not_rows),
        "",
    ]


def _plain(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    out = ["  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True))]
    out += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return out


def _markdown(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" for _ in head) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def _as_json(
    results: list[CellResult], args: argparse.Namespace, elapsed: float, machine: str
) -> dict[str, Any]:
    def tallies(part: dict[str, Any]) -> dict[str, Any]:
        return {
            k: {"rate": t.rate, "runs": t.runs, "se": t.standard_error} for k, t in part.items() if t.runs
        }

    return {
        "runs": args.runs,
        "seed": args.seed,
        "discordance": args.discordance,
        "effect_share": args.effect_share,
        "effect": args.effect,
        "seconds": elapsed,
        "machine": machine,
        "cells": [
            {
                "documents": r.design.documents,
                "icc": r.design.icc,
                "false_positive": tallies(r.false_positive),
                "coverage": tallies(r.coverage),
                "power": tallies(r.power),
            }
            for r in results
        ],
    }


class _progress:
    """A progress bar on stderr when it is a terminal, else a line per 10 %."""

    def __init__(self, total: int, *, quiet: bool) -> None:
        self.total, self.quiet, self.done = total, quiet, 0
        self._bar: Any = None

    def __enter__(self) -> Any:
        if not self.quiet and sys.stderr.isatty():
            from rich.progress import Progress

            self._bar = Progress(transient=True)
            self._bar.start()
            self._task = self._bar.add_task("simulating", total=self.total)
        return self.advance

    def advance(self) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.advance(self._task)
        elif not self.quiet and self.done % max(1, self.total // 10) == 0:
            print(
                f"docab calibrate: {self.done * 100 // self.total} % of {self.total:,} runs", file=sys.stderr
            )

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
