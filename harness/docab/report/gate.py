"""The regression gate: does arm B fall behind arm A by more than a team is willing to accept?

Pure functions on the ``comparisons`` entries of a report summary (``docab.report.summary.compare_arms``).
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


@dataclass(frozen=True)
class Check:
    """One metric of one comparison: the change, its interval, and the gate's verdict on it."""

    metric: str  # "accuracy" | "f1" | "evidence recall" | "tokens" | "latency"
    a: float | None
    b: float | None
    change: float | None  # points (B - A) for scores; percent (ratio - 1) for costs
    low: float | None
    high: float | None
    unit: Literal["points", "percent"]
    threshold: float | None
    verdict: Verdict

    def describe(self, a_name: str, b_name: str) -> str:
        if self.change is None:
            return f"{self.metric}: not measured"
        direction = "fell" if self.unit == "points" else "rose"
        amount = -self.change if self.unit == "points" else self.change
        unit = "points" if self.unit == "points" else "%"
        interval = f"95 % CI {_signed(self.low)} to {_signed(self.high)}"
        return (
            f"{self.metric} of {b_name} {direction} by {amount:.1f} {unit} against {a_name} ({interval}), "
            f"more than the allowed {self.threshold:g}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1f}"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _score_check(metric: str, cell: Mapping[str, Any] | None, threshold: float | None) -> Check:
    if not cell:
        return Check(metric, None, None, None, None, None, "points", threshold, "not measured")
    gap = cell.get("difference") or {}
    change, low, high = (_number(gap.get(k)) for k in ("estimate", "low", "high"))
    as_points = [None if v is None else v * 100 for v in (change, low, high)]
    verdict: Verdict
    if change is None:
        verdict = "not measured"
    elif threshold is None:
        verdict = "not gated"
    else:
        certain = high is not None and high < 0
        verdict = "fail" if certain and change * 100 < -threshold else "pass"
    return Check(
        metric,
        _number(cell.get("a")),
        _number(cell.get("b")),
        *as_points,
        unit="points",
        threshold=threshold,
        verdict=verdict,
    )


def _cost_check(metric: str, cell: Mapping[str, Any] | None, threshold: float | None) -> Check:
    ratio = (cell or {}).get("ratio") or {}
    estimate = _number(ratio.get("ratio"))
    low, high = _number(ratio.get("ratio_low")), _number(ratio.get("ratio_high"))
    a = _number(((cell or {}).get("a") or {}).get("median"))
    b = _number(((cell or {}).get("b") or {}).get("median"))
    if estimate is None:
        return Check(metric, a, b, None, None, None, "percent", threshold, "not measured")
    percent = [None if v is None else (v - 1) * 100 for v in (estimate, low, high)]
    verdict: Verdict
    if threshold is None:
        verdict = "not gated"
    else:
        certain = low is not None and low > 1
        verdict = "fail" if certain and percent[0] is not None and percent[0] > threshold else "pass"
    return Check(metric, a, b, *percent, unit="percent", threshold=threshold, verdict=verdict)


def evaluate(comparison: Mapping[str, Any], thresholds: Thresholds) -> list[Check]:
    """Every gated metric of one comparison (a ``comparisons`` entry of a report summary)."""
    itt = comparison.get("itt") or {}
    return [
        _score_check("accuracy", itt.get("accuracy"), thresholds.accuracy_drop_points),
        _score_check("F1", itt.get("f1"), thresholds.f1_drop_points),
        _score_check(
            "evidence recall", comparison.get("evidence_recall"), thresholds.evidence_recall_drop_points
        ),
        _cost_check("tokens", itt.get("tokens"), thresholds.tokens_rise_percent),
        _cost_check("latency", itt.get("latency"), thresholds.latency_rise_percent),
    ]


def failures(
    comparison: Mapping[str, Any], thresholds: Thresholds, checks: Sequence[Check] | None = None
) -> list[str]:
    """One line per failed metric; a comparison with nothing paired fails when anything is gated.
    ``checks``: this comparison's ``evaluate`` result, when the caller already has it."""
    if "itt" not in comparison:
        if thresholds.any:
            return [f"nothing to compare: {comparison.get('note', 'no paired questions')}"]
        return []
    if checks is None:
        checks = evaluate(comparison, thresholds)
    return [check.describe(comparison["a"], comparison["b"]) for check in checks if check.verdict == "fail"]
