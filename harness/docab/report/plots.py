"""Plots of a report, as PNG files. Headless: figures are drawn with matplotlib's object API on the
Agg canvas, never through pyplot, so no display and no global backend state are involved."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from docab.report.outcomes import QuestionOutcome
from docab.report.schema import ArmSummary, Dimension, Estimate, Summary
from docab.report.summary import Report

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860")


def _figure(width: float = 7.0, height: float = 4.2) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=120, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _title(text: str, summary: Summary) -> str:
    return f"{text}\n({summary.label})" if summary.floor else text


def _error(cell: Estimate) -> tuple[float, float]:
    """The error bar below and above an estimate (none when its interval is undefined)."""
    value, low, high = cell.value, cell.low, cell.high
    if value is None or low is None or high is None:
        return (0.0, 0.0)
    return (max(0.0, value - low), max(0.0, high - value))


def accuracy_plot(summary: Summary, path: Path) -> Path:
    arms = summary.arms
    figure = _figure()
    axes = figure.add_subplot()
    width = 0.38
    metrics: tuple[tuple[str, Callable[[ArmSummary], Estimate]], ...] = (
        ("Acc", lambda arm: arm.accuracy),
        ("F1", lambda arm: arm.f1),
    )
    for offset, (label, metric) in enumerate(metrics):
        xs = [i + (offset - 0.5) * width for i in range(len(arms))]
        values = [(metric(a).value or 0.0) * 100 for a in arms]
        errors = [[e * 100 for e in _error(metric(a))] for a in arms]
        axes.bar(
            xs,
            values,
            width,
            yerr=list(zip(*errors, strict=True)) if errors else None,
            capsize=4,
            label=label,
            color=COLOURS[offset],
        )
    axes.set_xticks(range(len(arms)), [a.arm for a in arms])
    axes.set_ylabel("% (95 % CI)")
    axes.set_ylim(0, 100)
    axes.legend()
    axes.set_title(_title("Accuracy and generalised F1 per arm", summary))
    figure.savefig(path)
    return path


def tokens_plot(report: Report, path: Path) -> Path:
    """Tokens per question, by arm and role: box plots on a log scale."""
    roles = sorted({r for a in report.summary.arms for r in a.tokens.by_role})
    return _box_plot(
        report,
        path,
        [(role, _role_tokens(role)) for role in roles],
        legend="role",
        ylabel="tokens per question",
        title="Token use per question, by role",
        empty="no model tokens were spent",
    )


def _role_tokens(role: str) -> Callable[[QuestionOutcome], float]:
    return lambda outcome: outcome.tokens_by_role.get(role, 0.0)


def _box_plot(
    report: Report,
    path: Path,
    parts: Sequence[tuple[str, Callable[[QuestionOutcome], float]]],
    *,
    legend: str,
    ylabel: str,
    title: str,
    empty: str,
) -> Path:
    """One box per arm and part of a per-question quantity (positive values), on a log scale."""
    summary = report.summary
    arms = [a.arm for a in summary.arms]
    figure = _figure()
    axes = figure.add_subplot()
    series: list[list[float]] = []
    positions: list[float] = []
    colours: list[str] = []
    width = 0.8 / max(len(parts), 1)
    for i, arm in enumerate(arms):
        outcomes = list(report.outcomes[arm].values())
        for j, (_, value_of) in enumerate(parts):
            values = [value_of(o) for o in outcomes]
            series.append([v for v in values if math.isfinite(v) and v > 0] or [math.nan])
            positions.append(i + (j - (len(parts) - 1) / 2) * width)
            colours.append(COLOURS[j % len(COLOURS)])
    if any(not all(math.isnan(v) for v in s) for s in series):
        boxes = axes.boxplot(
            series, positions=positions, widths=width * 0.85, patch_artist=True, showfliers=True
        )
        for patch, colour in zip(boxes["boxes"], colours, strict=True):
            patch.set_facecolor(colour)
        axes.set_yscale("log")
        for j, (label, _) in enumerate(parts):
            axes.plot([], [], color=COLOURS[j % len(COLOURS)], linewidth=8, label=label)
        axes.legend(title=legend)
    else:
        axes.text(0.5, 0.5, empty, ha="center", va="center", transform=axes.transAxes)
    axes.set_xticks(range(len(arms)), arms)
    axes.set_ylabel(ylabel)
    axes.set_title(_title(title, summary))
    figure.savefig(path)
    return path


def cost_accuracy_plot(summary: Summary, path: Path) -> Path:
    figure = _figure(6.0, 4.2)
    axes = figure.add_subplot()
    for i, arm in enumerate(summary.arms):
        tokens = arm.tokens.total.median or 0.0
        accuracy = arm.accuracy
        low, high = _error(accuracy)
        axes.errorbar(
            [tokens],
            [(accuracy.value or 0.0) * 100],
            yerr=[[low * 100], [high * 100]],
            fmt="o",
            capsize=4,
            color=COLOURS[i % len(COLOURS)],
            label=arm.arm,
        )
    axes.set_xlabel("median tokens per question")
    axes.set_ylabel("accuracy, % (95 % CI)")
    axes.legend()
    axes.set_title(_title("Accuracy against cost", summary))
    figure.savefig(path)
    return path


def breakdown_plot(summary: Summary, path: Path, dimension: Dimension = "evidence source") -> Path | None:
    rows = [r for r in summary.breakdowns if r.dimension == dimension]
    if not rows:
        return None
    arms = [a.arm for a in summary.arms]
    figure = _figure(max(6.0, 1.2 * len(rows) + 2), 4.2)
    axes = figure.add_subplot()
    width = 0.8 / len(arms)
    for i, arm in enumerate(arms):
        values = [((r.arms[arm].accuracy if arm in r.arms else None) or 0.0) * 100 for r in rows]
        axes.bar(
            [k + (i - (len(arms) - 1) / 2) * width for k in range(len(rows))],
            values,
            width,
            label=arm,
            color=COLOURS[i % len(COLOURS)],
        )
    axes.set_xticks(range(len(rows)), [r.group for r in rows], rotation=20, ha="right")
    axes.set_ylabel("accuracy, %")
    axes.set_ylim(0, 100)
    axes.legend()
    axes.set_title(_title(f"Accuracy by {dimension}", summary))
    figure.savefig(path)
    return path


def latency_plot(report: Report, path: Path) -> Path:
    """Wall, model and tool time per question, by arm: box plots on a log scale."""
    return _box_plot(
        report,
        path,
        [
            ("wall", lambda o: o.wall_time_s),
            ("model", lambda o: o.model_time_s),
            ("tools", lambda o: o.tool_time_s),
        ],
        legend="time",
        ylabel="seconds per question",
        title="Latency per question",
        empty="no time was recorded",
    )


def breakdown_file(dimension: str) -> str:
    return "accuracy_by_" + dimension.replace(" ", "_") + ".png"


def write_plots(report: Report, folder: Path) -> list[Path]:
    """Draw every plot into ``folder`` (created if needed); returns the files written."""
    from docab.report.breakdowns import DIMENSIONS

    folder.mkdir(parents=True, exist_ok=True)
    summary = report.summary
    written = [
        accuracy_plot(summary, folder / "accuracy.png"),
        tokens_plot(report, folder / "tokens.png"),
        latency_plot(report, folder / "latency.png"),
        cost_accuracy_plot(summary, folder / "accuracy_vs_tokens.png"),
    ]
    for dimension in DIMENSIONS:
        breakdown = breakdown_plot(summary, folder / breakdown_file(dimension), dimension)
        if breakdown:
            written.append(breakdown)
    return written
