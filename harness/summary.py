"""The short per-arm table printed at the end of ``docab run`` and ``docab demo``.

A quick look only; ``docab report`` gives the defensible comparison (intervals, paired tests,
breakdowns). Every sample counts, errors included (scored 0: intention-to-treat).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from harness.records import RunRecord


@dataclass(frozen=True)
class ArmSummary:
    arm: str
    n: int
    errors: int
    limits: int
    accuracy: float
    evidence_recall: float | None  # share of gold evidence pages read, over answerable samples with evidence
    median_tokens: float
    mean_turns: float
    mean_tool_calls: float
    median_wall_s: float


def summarise(records: Sequence[RunRecord], arms: Sequence[str] | None = None) -> list[ArmSummary]:
    order = list(arms) if arms else sorted({r.arm for r in records})
    rows = []
    for arm in order:
        mine = [r for r in records if r.arm == arm]
        if not mine:
            continue
        recalls = [
            len(set(r.evidence_pages) & set(r.pages_read)) / len(set(r.evidence_pages))
            for r in mine
            if r.evidence_pages
        ]
        rows.append(
            ArmSummary(
                arm=arm,
                n=len(mine),
                errors=sum(r.status in ("error", "timeout") for r in mine),
                limits=sum(r.status == "limit" for r in mine),
                accuracy=sum(r.score for r in mine) / len(mine),
                evidence_recall=sum(recalls) / len(recalls) if recalls else None,
                median_tokens=statistics.median(r.tokens() for r in mine),
                mean_turns=sum(r.turns for r in mine) / len(mine),
                mean_tool_calls=sum(len(r.tool_calls) for r in mine) / len(mine),
                median_wall_s=statistics.median(r.wall_time_s for r in mine),
            )
        )
    return rows


def render(
    records: Sequence[RunRecord], *, title: str, arms: Sequence[str] | None = None, baseline: bool = False
) -> str:
    """The table as text (rich, without colour), ready to print."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in (
        "arm",
        "N",
        "errors",
        "limits",
        "accuracy",
        "evidence recall",
        "tokens (median)",
        "turns",
        "tool calls",
        "wall s (median)",
    ):
        table.add_column(column, justify="left" if column == "arm" else "right")
    for row in summarise(records, arms):
        table.add_row(
            row.arm,
            str(row.n),
            str(row.errors),
            str(row.limits),
            f"{row.accuracy:.3f}",
            "–" if row.evidence_recall is None else f"{row.evidence_recall:.3f}",
            f"{row.median_tokens:,.0f}",
            f"{row.mean_turns:.1f}",
            f"{row.mean_tool_calls:.1f}",
            f"{row.median_wall_s:.2f}",
        )
    console = Console(width=140, record=True, color_system=None, force_terminal=False)
    with console.capture() as capture:
        console.print(table)
        if baseline:
            console.print(
                "baseline/keyword is an offline keyword policy: a floor for the pipeline, not a model result. "
                "Its token counts are estimates (characters / 4)."
            )
    return capture.get()
