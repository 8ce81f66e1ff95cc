"""``docab report`` and ``docab compare``: the faces of ``docab.report.summary``.

Heavy imports (numpy, scipy, rich, matplotlib) happen inside the handlers, so ``docab --help``
stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docab.cli.errors import CommandError

if TYPE_CHECKING:
    from docab.report.gate import Check, UnpairedArm
    from docab.report.schema import Comparison, Plan, Summary
    from docab.report.summary import Report, RunData

FORMATS = ("table", "markdown", "json")

REPORT_HELP = """\
Summarise a run: per arm (accuracy overall and on answerable questions, F1, with
document-clustered 95 % intervals; errors, limits; how often "Not answerable" was said and was
right; evidence recall and precision; tokens by role, cache reads, latency, tool calls), the
"always Not answerable" reference row, every arm against the reference arm (cluster-robust t
intervals, clustered McNemar, Wilcoxon on per-document costs, cost ratios, the minimum detectable
effect planned and observed, the view without unfinished samples), and breakdowns by evidence
source, evidence pages, document type and answer format (intervals unadjusted, and said so).

Writes RUN_DIR/report.md, RUN_DIR/summary.json and PNG plots into RUN_DIR/plots/ (accuracy with
intervals, accuracy against tokens, token and latency distributions, accuracy per breakdown);
--no-plots skips the plots, --no-write writes nothing. Several folders (shards of one run) are merged;
folders run with different configs are refused, as docab merge refuses them (docab compare A B
sets two runs side by side).

examples:
  docab report results/demo
  docab report results/mmlb-openai --format markdown
  docab report results/shard-1 results/shard-2 --format json
"""

COMPARE_HELP = """\
Compare arms question by question with paired statistics: two arms of one run, or two runs (for
example a new version of a tool against a committed baseline run). With two runs and no --a/--b,
every arm the runs share is compared with itself (base fs vs new fs, base fs+md-vision vs new
fs+md-vision), and an arm present in only one run is named (in --format json, "unpaired_arms");
as a gate, an arm of RUN_A that RUN_B lacks (renamed or dropped) fails it, unless the pair is named
with --a/--b or --allow-missing-arms is given. Prints what changed: accuracy, F1, evidence recall, tokens and latency, each with
its paired 95 % interval (cluster-robust t with documents as clusters).

As a CI gate it tests each gated metric, one-sided, for being worse than its threshold allows,
adjusts the p-values across the gated metrics (Holm) and exits 1 when one is below alpha (0.05
unless the gate file sets it): with no real change it fails by mistake at most alpha of the time
however many metrics it gates (see docab calibrate). A gated metric whose figure rests on one
document cannot be tested, and fails the gate. Thresholds come from a TOML file (--gate) and/or flags, flags winning:

  [gate]
  accuracy_drop_points = 2.0        # also f1_drop_points, evidence_recall_drop_points
  tokens_rise_percent = 10.0        # also latency_rise_percent
  alpha = 0.05                      # the family-wise false-fail rate

Exit status: 0 no metric failed, 1 a metric failed, 2 bad input (folder, arm, gate file).

examples:
  docab compare results/demo                       # the run's first two arms
  docab compare results/demo --a fs --b fs+md-vision
  docab compare results/baselines/demo results/demo --gate results/baselines/gate.toml
  docab compare results/base results/new --a fs+md-vision --fail-on-drop 2 --max-tokens-rise 10
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
    report.add_argument("--no-plots", action="store_true", help="draw no PNG plots into RUN_DIR/plots/")
    report.add_argument(
        "--reference", metavar="ARM", help="the arm others are compared with (default: the first)"
    )
    report.add_argument(
        "--no-write", action="store_true", help="print only; write no report.md or summary.json"
    )
    report.add_argument(
        "--reruns-as-epochs",
        action="store_true",
        help="with several folders: a question seen again in a later folder is a further epoch of it "
        "(reruns of one config), not a duplicate (resumed shards)",
    )
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
    gate = compare.add_argument_group("gate (exit 1 when a metric fails)")
    gate.add_argument(
        "--gate", type=Path, metavar="FILE.toml", help="thresholds from the [gate] table of a file"
    )
    gate.add_argument(
        "--fail-on-drop",
        type=_threshold,
        metavar="POINTS",
        help="shorthand: accuracy, F1 and evidence recall may each fall by at most POINTS",
    )
    for flag, unit, what in (
        ("--max-accuracy-drop", "POINTS", "accuracy"),
        ("--max-f1-drop", "POINTS", "F1"),
        ("--max-recall-drop", "POINTS", "evidence recall"),
        ("--max-tokens-rise", "PERCENT", "tokens per question (paired ratio)"),
        ("--max-latency-rise", "PERCENT", "wall time per question (paired ratio)"),
    ):
        gate.add_argument(flag, type=_threshold, metavar=unit, help=f"{what}: the largest change allowed")
    gate.add_argument(
        "--allow-missing-arms",
        action="store_true",
        help="gate only the arms both runs have: an arm of RUN_A that RUN_B lacks (renamed or dropped) "
        "is named but does not fail the gate",
    )
    compare.set_defaults(func=run_compare)


def _emit(summary: Summary, fmt: str) -> None:
    from docab.report.render import print_console, to_markdown

    if fmt == "json":
        print(summary.model_dump_json(indent=2))
    elif fmt == "markdown":
        print(to_markdown(summary))
    else:
        print_console(summary)


def run_report(args: argparse.Namespace) -> int:
    from docab.report.summary import ReportError, build_report, load_run

    try:
        run = load_run(*args.run_dirs, reruns_as_epochs=args.reruns_as_epochs)
        target = (
            args.run_dirs[0] if args.run_dirs[0].is_dir() else args.run_dirs[0].parent
        )  # an Inspect log file
        plan = earlier_plan(target, len(run.records)) if len(args.run_dirs) == 1 else None
        report = build_report(run, reference=args.reference, plan=plan)
    except ReportError as exc:
        raise CommandError(str(exc)) from None
    _emit(report.summary, args.format)
    written: list[Path] = []
    if not args.no_write:
        written = write_report_files(report, target, plots=not args.no_plots)
    if written:
        print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0


def earlier_plan(folder: Path, records: int) -> Plan | None:
    """The plan ``docab plan`` wrote into the folder's summary.json, while it still describes the
    run (the same number of samples); None otherwise, or when there is none."""
    from docab.report.schema import SummaryFormatError, parse_summary

    try:
        plan = parse_summary((folder / "summary.json").read_bytes()).plan
    except (OSError, SummaryFormatError):
        return None
    return plan if plan is not None and plan.pilot_samples == records else None


def write_report_files(report: Report, target: Path, *, plots: bool) -> list[Path]:
    """Write ``report.md`` and ``summary.json`` (and with ``plots``, ``plots/*.png``) into ``target``;
    returns the files written. Raises CommandError when the folder cannot be written."""
    from docab.report.render import to_markdown

    written = [target / "report.md", target / "summary.json"]
    try:
        written[0].write_text(to_markdown(report.summary), encoding="utf-8")
        written[1].write_text(report.summary.model_dump_json(indent=2), encoding="utf-8")
        if plots:
            from docab.report.plots import write_plots

            written += write_plots(report, target / "plots")
    except OSError as exc:
        raise CommandError(f"could not write into {target}: {exc.strerror or exc}") from None
    return written


def run_compare(args: argparse.Namespace) -> int:
    from docab.report.gate import (
        GateConfigError,
        Thresholds,
        describe_unpaired,
        evaluate,
        failures,
        load_thresholds,
        missing_arms_failure,
    )
    from docab.report.summary import ReportError

    try:
        thresholds = load_thresholds(args.gate) if args.gate else Thresholds()
    except GateConfigError as exc:
        raise CommandError(str(exc)) from None
    drop = args.fail_on_drop
    thresholds = thresholds.merged(
        accuracy_drop_points=args.max_accuracy_drop if args.max_accuracy_drop is not None else drop,
        f1_drop_points=args.max_f1_drop if args.max_f1_drop is not None else drop,
        evidence_recall_drop_points=args.max_recall_drop if args.max_recall_drop is not None else drop,
        tokens_rise_percent=args.max_tokens_rise,
        latency_rise_percent=args.max_latency_rise,
    )
    try:
        chosen = _comparison_reports(args)
    except ReportError as exc:
        raise CommandError(str(exc)) from None
    pairs: list[tuple[Summary, Comparison, list[Check]]] = []
    failed: list[str] = []
    for report, _ in chosen.reports:
        comparison = report.summary.comparisons[0]
        checks = evaluate(comparison, thresholds)
        failed += failures(comparison, thresholds, checks)
        pairs.append((report.summary, comparison, checks))
    if thresholds.any and not chosen.explicit and not args.allow_missing_arms:
        missing = missing_arms_failure(chosen.unpaired, chosen.name_a, chosen.name_b, chosen.arms_b)
        failed += [missing] if missing else []
    _emit_comparisons(
        pairs,
        failed,
        args.format,
        same_arm=[same for _, same in chosen.reports],
        alpha=thresholds.alpha,
        unpaired=chosen.unpaired,
        unpaired_note=describe_unpaired(chosen.unpaired, chosen.name_a, chosen.name_b),
    )
    for failure in failed:
        print(f"docab compare: {failure}", file=sys.stderr)
    if thresholds.any and not failed:
        print("docab compare: gate passed", file=sys.stderr)
    return 1 if failed else 0


@dataclass(frozen=True)
class _Chosen:
    """What ``docab compare`` compares: one two-arm report per pair, with whether its two sides are
    the same arm (in two runs); the arms compared with nothing; the runs' names in the tables."""

    reports: list[tuple[Report, bool]]
    unpaired: list[UnpairedArm]
    explicit: bool  # the pair was named with --a/--b
    name_a: str = ""
    name_b: str = ""
    arms_b: tuple[str, ...] = ()


def _comparison_reports(args: argparse.Namespace) -> _Chosen:
    """The pairs to compare: within one run, or arm by arm across two runs."""
    from docab.log.manifest import Manifest
    from docab.report.gate import unpaired_arms
    from docab.report.summary import RunData, build_report, load_run, relabel

    run_a = load_run(args.run_a)
    explicit = bool(args.arm_a or args.arm_b)
    if args.run_b is None or args.run_b.resolve() == args.run_a.resolve():
        arms = run_a.arms
        arm_a = args.arm_a or arms[0]
        arm_b = args.arm_b or next((a for a in arms if a != arm_a), None)
        if arm_b is None:
            raise CommandError(f"{args.run_a} has only the arm {arm_a!r}; name a second run to compare with")
        return _Chosen(
            [(build_report(run_a, arms=[arm_a, arm_b], with_breakdowns=False), False)], [], explicit
        )
    run_b = load_run(args.run_b)
    if explicit:
        arm_a = args.arm_a or _only_arm(run_a, args.run_a, "--a")
        arm_b = args.arm_b or (arm_a if arm_a in run_b.arms else _only_arm(run_b, args.run_b, "--b"))
        pairs = [(arm_a, arm_b)]
    else:
        shared = [arm for arm in run_a.arms if arm in run_b.arms]
        if shared:
            pairs = [(arm, arm) for arm in shared]
        elif len(run_a.arms) == 1 and len(run_b.arms) == 1:
            pairs = [(run_a.arms[0], run_b.arms[0])]
        else:
            raise CommandError(
                f"{args.run_a} (arms {', '.join(run_a.arms)}) and {args.run_b} (arms {', '.join(run_b.arms)}) "
                "share no arm; choose the two with --a and --b"
            )
    # Runs are named by folder; two folders of the same name (a baseline and a fresh demo) are
    # named by their paths as given, so the two arms never share a label.
    name_a, name_b = args.run_a.name, args.run_b.name
    if name_a == name_b:
        name_a, name_b = str(args.run_a), str(args.run_b)
    reports = []
    for arm_a, arm_b in pairs:
        for run, arm, folder in ((run_a, arm_a, args.run_a), (run_b, arm_b, args.run_b)):
            if arm not in run.arms:
                raise CommandError(f"{folder} has no arm {arm!r}; it has {', '.join(run.arms)}")
        label_a, label_b = f"{arm_a} @ {name_a}", f"{arm_b} @ {name_b}"
        merged = RunData(
            sources=run_a.sources + run_b.sources,
            manifest=Manifest(run_id=f"{name_a} vs {name_b}"),
            records=tuple(relabel(run_a.records, arm_a, label_a) + relabel(run_b.records, arm_b, label_b)),
            warnings=run_a.warnings + run_b.warnings,
        )
        report = build_report(merged, arms=[label_a, label_b], with_breakdowns=False)
        reports.append((report, arm_a == arm_b))
    unpaired = unpaired_arms((str(args.run_a), run_a.arms), (str(args.run_b), run_b.arms), pairs)
    return _Chosen(reports, unpaired, explicit, name_a, name_b, tuple(run_b.arms))


def _emit_comparisons(
    pairs: list[tuple[Summary, Comparison, list[Check]]],
    failed: list[str],
    fmt: str,
    *,
    same_arm: list[bool],
    alpha: float = 0.05,
    unpaired: Sequence[UnpairedArm] = (),
    unpaired_note: str = "",
) -> None:
    from docab.report.gate import GatedComparison, GateReport
    from docab.report.render import (
        METHOD_NOTE,
        compare_sections,
        print_sections,
        report_console,
        sections_markdown,
    )

    if fmt == "json":
        document = GateReport(
            comparisons=[
                GatedComparison(
                    run_id=summary.run_id, comparison=comparison, arms=summary.arms, checks=checks
                )
                for summary, comparison, checks in pairs
            ],
            failures=failed,
            passed=not failed,
            unpaired_arms=list(unpaired),
        )
        print(document.model_dump_json(indent=2))
        return
    parts = [
        section
        for (summary, comparison, checks), same in zip(pairs, same_arm, strict=True)
        for section in compare_sections(comparison, summary, checks, same_arm=same, alpha=alpha)
    ]
    warnings = sorted({w for summary, _, _ in pairs for w in summary.warnings})
    warnings = [unpaired_note, *warnings] if unpaired_note else warnings
    if fmt == "markdown":
        lines = [f"# Comparison: {pairs[0][0].run_id}", "", *sections_markdown(parts)]
        lines += [f"- warning: {w}" for w in warnings]
        print("\n".join([*lines, "", METHOD_NOTE]))
        return
    console = report_console()
    console.print(f"[bold]Comparison: {pairs[0][0].run_id}[/bold]")
    print_sections(parts, console)
    for warning in warnings:
        console.print(f"warning: {warning}", style="yellow")


def _threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of 0 or more, got {text!r}")
    return value


def _only_arm(run: RunData, folder: Path, flag: str) -> str:
    arms = run.arms
    if len(arms) != 1:
        raise CommandError(f"{folder} has the arms {', '.join(arms)}; choose one with {flag}")
    return arms[0]
