"""The regression gate: does arm B fall behind arm A by more than a team is willing to accept?

Pure functions on the typed comparisons of a report summary (``docab.report.schema.Comparison``).
A metric fails only when both hold: its estimate is worse than the threshold, and its paired 95 %
interval excludes zero (or, for cost ratios, excludes 1). A small run's noise therefore never fails
the gate; a large, certain drop always does.

Thresholds come from a TOML file (``[gate]`` table, keys as the fields below) and/or flags of
``docab compare``; a metric without a threshold is reported but not gated::

    [gate]
    accuracy_drop_points = 2.0         # accuracy may fall by up to 2 points
    f1_drop_points = 2.0
    evidence_recall_drop_points = 5.0
    tokens_rise_percent = 10.0         # paired geometric-mean token ratio may rise by up to 10 %
    latency_rise_percent = 50.0
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from docab.report.schema import ArmSummary, Comparison, CostComparison, ScoreComparison

Verdict = Literal["fail", "pass", "not gated", "not measured"]


class GateConfigError(ValueError):
    """A gate file or threshold that cannot be used; the message says how to fix it."""


@dataclass(frozen=True)
class Thresholds:
    """How much worse B may be than A; None leaves the metric ungated."""

    accuracy_drop_points: float | None = None
    f1_drop_points: float | None = None
    evidence_recall_drop_points: float | None = None
    tokens_rise_percent: float | None = None
    latency_rise_percent: float | None = None

    def merged(self, **overrides: float | None) -> Thresholds:
        """These thresholds with every override that is not None applied (flags over the file)."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    @property
    def any(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))


def parse_thresholds(data: Mapping[str, Any], source: str = "gate file") -> Thresholds:
    """Thresholds from the ``[gate]`` table of a parsed TOML document."""
    table = data.get("gate")
    if not isinstance(table, Mapping):
        raise GateConfigError(f"{source}: no [gate] table; see `docab compare --help` for its keys")
    known = {f.name for f in fields(Thresholds)}
    unknown = sorted(set(table) - known)
    if unknown:
        raise GateConfigError(
            f"{source}: unknown key(s) {', '.join(unknown)} in [gate]; known: {', '.join(sorted(known))}"
        )
    values: dict[str, float] = {}
    for key, value in table.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            raise GateConfigError(f"{source}: [gate] {key} must be a number of 0 or more, got {value!r}")
        values[key] = float(value)
    return Thresholds(**values)


def load_thresholds(path: Path) -> Thresholds:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GateConfigError(f"cannot read the gate file {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GateConfigError(f"{path} is not valid TOML: {exc}") from None
    return parse_thresholds(data, str(path))


GatedMetric = Literal["accuracy", "F1", "evidence recall", "tokens", "latency"]


class Check(BaseModel):
    """One metric of one comparison: the change, its interval, and the gate's verdict on it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: GatedMetric
    a: float | None  # A's score, or A's median cost
    b: float | None
    change: float | None  # points (B - A) for scores; percent (ratio - 1) for costs
    low: float | None  # the change's 95 % interval, in the same unit
    high: float | None
    unit: Literal["points", "percent"]
    threshold: float | None  # the largest worsening allowed; None: not gated
    verdict: Verdict

    def describe(self, a_name: str, b_name: str) -> str:
        if self.change is None:
            return f"{self.metric}: not measured"
        direction = "fell" if self.unit == "points" else "rose"
        amount = -self.change if self.unit == "points" else self.change
        unit = "points" if self.unit == "points" else "%"
        interval = f"95 % CI {_signed(self.low)} to {_signed(self.high)}"
        allowed = "" if self.threshold is None else f", more than the allowed {self.threshold:g}"
        return f"{self.metric} of {b_name} {direction} by {amount:.1f} {unit} against {a_name} ({interval}){allowed}"


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1f}"


def _scaled(value: float | None, scale: float, shift: float = 0.0) -> float | None:
    return None if value is None else (value - shift) * scale


def score_check(metric: GatedMetric, cell: ScoreComparison | None, threshold: float | None) -> Check:
    """A score (accuracy, F1, evidence recall) may fall by ``threshold`` points; it fails only when it
    fell by more and the whole interval of the difference is below zero."""
    gap = cell.difference if cell else None
    change = _scaled(gap.value, 100) if gap else None
    low = _scaled(gap.low, 100) if gap else None
    high = _scaled(gap.high, 100) if gap else None
    verdict: Verdict
    if change is None:
        verdict = "not measured"
    elif threshold is None:
        verdict = "not gated"
    else:
        certain = high is not None and high < 0
        verdict = "fail" if certain and change < -threshold else "pass"
    return Check(
        metric=metric,
        a=cell.a if cell else None,
        b=cell.b if cell else None,
        change=change,
        low=low,
        high=high,
        unit="points",
        threshold=threshold,
        verdict=verdict,
    )


def cost_check(metric: GatedMetric, cell: CostComparison | None, threshold: float | None) -> Check:
    """A cost (tokens, latency) may rise by ``threshold`` percent by the paired geometric-mean ratio;
    it fails only when it rose by more and the whole interval of the ratio is above 1."""
    ratio = cell.ratio if cell else None
    change = _scaled(ratio.value, 100, 1.0) if ratio else None
    low = _scaled(ratio.low, 100, 1.0) if ratio else None
    high = _scaled(ratio.high, 100, 1.0) if ratio else None
    verdict: Verdict
    if change is None:
        verdict = "not measured"
    elif threshold is None:
        verdict = "not gated"
    else:
        certain = low is not None and low > 0
        verdict = "fail" if certain and change > threshold else "pass"
    return Check(
        metric=metric,
        a=cell.a.median if cell else None,
        b=cell.b.median if cell else None,
        change=change,
        low=low,
        high=high,
        unit="percent",
        threshold=threshold,
        verdict=verdict,
    )


def evaluate(comparison: Comparison, thresholds: Thresholds) -> list[Check]:
    """Every gated metric of one comparison (a ``comparisons`` entry of a report summary)."""
    itt = comparison.itt
    return [
        score_check("accuracy", itt.accuracy if itt else None, thresholds.accuracy_drop_points),
        score_check("F1", itt.f1 if itt else None, thresholds.f1_drop_points),
        score_check(
            "evidence recall",
            itt.evidence.recall if itt and itt.evidence else None,
            thresholds.evidence_recall_drop_points,
        ),
        cost_check("tokens", itt.tokens if itt else None, thresholds.tokens_rise_percent),
        cost_check("latency", itt.latency if itt else None, thresholds.latency_rise_percent),
    ]


def failures(
    comparison: Comparison, thresholds: Thresholds, checks: Sequence[Check] | None = None
) -> list[str]:
    """One line per failed metric; a comparison with nothing paired fails when anything is gated.
    ``checks``: this comparison's ``evaluate`` result, when the caller already has it."""
    if comparison.itt is None:
        if thresholds.any:
            return [f"nothing to compare: {comparison.note or 'no paired questions'}"]
        return []
    if checks is None:
        checks = evaluate(comparison, thresholds)
    return [check.describe(comparison.a, comparison.b) for check in checks if check.verdict == "fail"]


class GatedComparison(BaseModel):
    """One comparison as ``docab compare --format json`` prints it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    comparison: Comparison
    arms: list[ArmSummary]  # A then B
    checks: list[Check]


class GateReport(BaseModel):
    """What ``docab compare --format json`` prints: every comparison, and the gate's outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    comparisons: list[GatedComparison]
    failures: list[str]  # one line per failed metric
    passed: bool
