"""``docab report`` and ``docab compare``: the faces of ``harness.report``.

Heavy imports (numpy, scipy, rich, matplotlib) happen inside the handlers, so ``docab --help``
stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness.errors import CommandError

FORMATS = ("table", "markdown", "json")

REPORT_HELP = """\
Summarise a run: per arm (accuracy and F1 with document-clustered 95 % intervals, errors, limits,
tokens by role, cache reads, latency, tool calls, evidence recall), every arm against the reference
arm (paired cluster bootstrap, McNemar, Wilcoxon, cost ratios, the minimum detectable effect), and
breakdowns by evidence source, evidence pages, document type and answer format.

Writes RUN_DIR/report.md and RUN_DIR/summary.json (unless --no-write) and, with --plots,
PNG plots into RUN_DIR/plots/. Several folders (shards of one run) are merged.

examples:
  docab report results/demo
  docab report results/mmlb-openai --format markdown --plots
  docab report results/shard-1 results/shard-2 --format json
"""

COMPARE_HELP = """\
Compare two arms question by question: two arms of one run, or one arm from each of two runs
(for example a new version of a tool against a baseline run). Exits 1 when --fail-on-drop is given
and accuracy or F1 fell by more than that many points with the 95 % interval excluding zero.

examples:
  docab compare results/demo                       # the run's first two arms
  docab compare results/demo --a fs --b fs+md-vision
  docab compare results/baseline results/new --a fs+md-vision --fail-on-drop 2
"""


def register(subparsers: Any) -> None:
    report = subparsers.add_parser(
        "report",
        help="summarise a run: per-arm metrics, paired A/B statistics, breakdowns, plots",
        description=REPORT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument(
        "run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="results/<run-id>/ folder(s)"
    )
    report.add_argument("--format", choices=FORMATS, default="table", help="what to print (default: table)")
    report.add_argument("--plots", action="store_true", help="also draw PNG plots into RUN_DIR/plots/")
    report.add_argument(
        "--reference", metavar="ARM", help="the arm others are compared with (default: the first)"
    )
    report.add_argument(
        "--no-write", action="store_true", help="print only; write no report.md or summary.json"
    )
    _statistics_options(report)
    report.set_defaults(func=run_report)

    compare = subparsers.add_parser(
        "compare",
        help="compare two arms (of one run or of two runs) with paired statistics; a CI gate",
        description=COMPARE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    compare.add_argument("run_a", type=Path, metavar="RUN_A", help="the run holding arm A (the reference)")
    compare.add_argument(
        "run_b", type=Path, nargs="?", metavar="RUN_B", help="the run holding arm B (default: RUN_A)"
    )
    compare.add_argument(
        "--a", dest="arm_a", metavar="ARM", help="arm A (default: the run's first or only arm)"
    )
    compare.add_argument(
        "--b", dest="arm_b", metavar="ARM", help="arm B (default: the second arm, or arm A's name in RUN_B)"
    )
    compare.add_argument("--format", choices=FORMATS, default="table", help="what to print (default: table)")
    compare.add_argument(
        "--fail-on-drop",
        type=float,
        metavar="POINTS",
        help="exit 1 if accuracy or F1 of B fell by more than POINTS percentage points, interval excluding 0",
    )
    _statistics_options(compare)
    compare.set_defaults(func=run_compare)


def _statistics_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--resamples", type=_positive_int, default=10_000, help="bootstrap resamples (default: 10000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 100:
        raise argparse.ArgumentTypeError("use at least 100 resamples (10000 is the default)")
    return value


def _emit(summary: dict[str, Any], fmt: str) -> None:
    from harness.report_render import print_console, to_markdown

    if fmt == "json":
        print(json.dumps(summary, indent=2))
    elif fmt == "markdown":
        print(to_markdown(summary))
    else:
        print_console(summary)


def run_report(args: argparse.Namespace) -> int:
    from harness.report import ReportError, build_report, load_run
    from harness.report_render import to_markdown

    try:
        run = load_run(*args.run_dirs)
        report = build_report(run, reference=args.reference, resamples=args.resamples, seed=args.seed)
    except ReportError as exc:
        raise CommandError(str(exc)) from None
    _emit(report.summary, args.format)
    target = args.run_dirs[0]
    written: list[Path] = []
    try:
        if not args.no_write:
            (target / "report.md").write_text(to_markdown(report.summary), encoding="utf-8")
            (target / "summary.json").write_text(json.dumps(report.summary, indent=2), encoding="utf-8")
            written += [target / "report.md", target / "summary.json"]
        if args.plots:
            from harness.report_plots import write_plots

            written += write_plots(report, target / "plots")
    except OSError as exc:
        raise CommandError(f"could not write into {target}: {exc.strerror or exc}") from None
    if written:
        print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from harness.report import ReportError, RunData, build_report, load_run, relabel

    try:
        run_a = load_run(args.run_a)
        if args.run_b is None or args.run_b.resolve() == args.run_a.resolve():
            arms = run_a.arms
            arm_a = args.arm_a or arms[0]
            arm_b = args.arm_b or next((a for a in arms if a != arm_a), None)
            if arm_b is None:
                raise CommandError(
                    f"{args.run_a} has only the arm {arm_a!r}; name a second run to compare with"
                )
            report = build_report(run_a, arms=[arm_a, arm_b], resamples=args.resamples, seed=args.seed)
        else:
            run_b = load_run(args.run_b)
            arm_a = args.arm_a or _only_arm(run_a, args.run_a, "--a")
            arm_b = args.arm_b or (arm_a if arm_a in run_b.arms else _only_arm(run_b, args.run_b, "--b"))
            for run, arm, folder in ((run_a, arm_a, args.run_a), (run_b, arm_b, args.run_b)):
                if arm not in run.arms:
                    raise CommandError(f"{folder} has no arm {arm!r}; it has {', '.join(run.arms)}")
            label_a, label_b = f"{arm_a} @ {args.run_a.name}", f"{arm_b} @ {args.run_b.name}"
            merged = RunData(
                sources=run_a.sources + run_b.sources,
                manifest={"run_id": f"{args.run_a.name} vs {args.run_b.name}"},
                records=tuple(
                    relabel(run_a.records, arm_a, label_a) + relabel(run_b.records, arm_b, label_b)
                ),
                warnings=run_a.warnings + run_b.warnings,
            )
            report = build_report(merged, arms=[label_a, label_b], resamples=args.resamples, seed=args.seed)
    except ReportError as exc:
        raise CommandError(str(exc)) from None
    _emit(report.summary, args.format)
    if args.fail_on_drop is None:
        return 0
    failures = gate_failures(report.summary["comparisons"][0], args.fail_on_drop)
    for failure in failures:
        print(f"docab compare: {failure}", file=sys.stderr)
    return 1 if failures else 0


def gate_failures(comparison: dict[str, Any], points: float) -> list[str]:
    """The metrics that fell by more than ``points`` with their interval below zero."""
    itt = comparison.get("itt")
    if not itt:
        return [f"nothing to compare: {comparison.get('note', 'no paired questions')}"]
    failures = []
    for metric in ("accuracy", "f1"):
        gap = itt[metric]["difference"]
        estimate, high = gap.get("estimate"), gap.get("high")
        if estimate is not None and high is not None and estimate * 100 < -points and high < 0:
            failures.append(
                f"{metric} fell by {-estimate * 100:.1f} points (95 % CI {gap['low'] * 100:+.1f} to "
                f"{high * 100:+.1f}), more than the allowed {points:g}"
            )
    return failures


def _only_arm(run: Any, folder: Path, flag: str) -> str:
    arms = run.arms
    if len(arms) != 1:
        raise CommandError(f"{folder} has the arms {', '.join(arms)}; choose one with {flag}")
    return arms[0]
