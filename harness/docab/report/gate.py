"""The regression gate: does arm B fall behind arm A by more than a team is willing to accept?

Pure functions on the typed comparisons of a report summary (``docab.report.schema.Comparison``).

Each gated metric is a one-sided test of "B is worse than A by more than the threshold allows",
on the cluster-robust t of the metric's paired difference (for costs, of the mean log ratio). The
p-values of the gated metrics of one comparison are adjusted together by Holm's step-down method,
and a metric fails when its adjusted p-value is below ``alpha``. So when no metric got worse than
its threshold (in particular when nothing changed), the gate fails by mistake at most ``alpha`` of
the time across all the metrics it gates — checked by simulation (``docab calibrate``). A metric
that fails is always worse than its threshold by its point estimate.

Thresholds come from a TOML file (``[gate]`` table, keys as the fields below) and/or flags of
``docab compare``; a metric without a threshold is reported but not gated::

    [gate]
    accuracy_drop_points = 2.0         # accuracy may fall by up to 2 points
    f1_drop_points = 2.0
    evidence_recall_drop_points = 5.0
    tokens_rise_percent = 10.0         # paired geometric-mean token ratio may rise by up to 10 %
    latency_rise_percent = 50.0
    alpha = 0.05                       # the family-wise false-fail rate (default 0.05)
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from docab.report import stats
from docab.report.schema import ArmSummary, Comparison, CostComparison, ScoreComparison, SignFlipData
from docab.report.signflip import SignFlip

Verdict = Literal["fail", "pass", "cannot test", "not gated", "not measured"]
"""``cannot test``: the metric is gated and measured, but its figure rests on one document (no
between-document variation to test against); the gate fails rather than pass what it cannot check."""


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
    alpha: float = 0.05  # the family-wise rate of failing by mistake, across the gated metrics

    def merged(self, **overrides: float | None) -> Thresholds:
        """These thresholds with every override that is not None applied (flags over the file)."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    @property
    def any(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self) if f.name != "alpha")


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
        if key == "alpha" and not 0 < value <= 0.5:
            raise GateConfigError(f"{source}: [gate] alpha must be above 0 and at most 0.5, got {value!r}")
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
    p_value: float | None = None  # one-sided, of "no worse than allowed"; None when not gated or measured
    adjusted_p: float | None = None  # Holm-adjusted across the comparison's gated metrics
    level: float | None = (
        None  # the one-sided level Holm's step tests this metric at (alpha / (m - rank + 1))
    )
    bound: float | None = (
        None  # at that level, how little worse B plausibly is (the change's bound, same unit)
    )
    verdict: Verdict

    def describe(self, a_name: str, b_name: str) -> str:
        if self.change is None:
            return f"{self.metric}: not measured"
        direction = "fell" if self.unit == "points" else "rose"
        amount = -self.change if self.unit == "points" else self.change
        unit = "points" if self.unit == "points" else "%"
        if self.verdict == "cannot test":
            return (
                f"{self.metric} of {b_name} {direction} by {amount:.1f} {unit} against {a_name}, but it "
                "cannot be tested: the figure rests on one document. Gate on a run of at least 2 "
                "documents, or drop this metric's threshold"
            )
        allowed = "" if self.threshold is None else f", more than the allowed {self.threshold:g}"
        evidence = ""
        if self.bound is not None and self.level is not None:
            worse = -self.bound if self.unit == "points" else self.bound
            evidence = (
                f"at least {worse:.1f} {unit} {'worse' if self.unit == 'points' else 'more'} "
                f"(one-sided {100 * (1 - self.level):.1f} % bound, Holm's level)"
            )
        if self.adjusted_p is not None:
            evidence += ("; " if evidence else "") + f"Holm-adjusted p = {self.adjusted_p:.3g}"
        return (
            f"{self.metric} of {b_name} {direction} by {amount:.1f} {unit} against {a_name} "
            f"({evidence}){allowed}"
        )


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1f}"


def _scaled(value: float | None, scale: float, shift: float = 0.0) -> float | None:
    return None if value is None else (value - shift) * scale


def _test(
    value: float | None,
    se: float | None,
    df: float | None,
    documents: int,
    sign_flip: SignFlipData | None = None,
) -> stats.ClusterT | None:
    """The figure's inference, rebuilt from the summary (with its sign-flip test below 30
    documents); None when it has none (one document)."""
    if value is None or se is None or not math.isfinite(value) or math.isnan(se):
        return None
    flip = SignFlip(value, tuple(sign_flip.influence), tuple(sign_flip.weights)) if sign_flip else None
    return stats.ClusterT(value, se, math.nan if df is None else df, stats.NO_INTERVAL, documents, flip)


def score_check(metric: GatedMetric, cell: ScoreComparison | None, threshold: float | None) -> Check:
    """A score (accuracy, F1, evidence recall) may fall by ``threshold`` points: the one-sided p-value
    of H0 "the true change is at least -threshold"."""
    gap = cell.difference if cell else None
    change = _scaled(gap.value, 100) if gap else None
    low = _scaled(gap.low, 100) if gap else None
    high = _scaled(gap.high, 100) if gap else None
    test = _test(gap.value, gap.se, gap.df, gap.documents, gap.sign_flip) if gap else None
    verdict: Verdict
    p: float | None = None
    if change is None:
        verdict = "not measured"
    elif threshold is None:
        verdict = "not gated"
    elif test is None:
        verdict = "cannot test"
    else:
        verdict = "pass"
        p = test.p_below(-threshold / 100)
    return Check(
        metric=metric,
        a=cell.a if cell else None,
        b=cell.b if cell else None,
        change=change,
        low=low,
        high=high,
        unit="points",
        threshold=threshold,
        p_value=p,
        verdict=verdict,
    )


def cost_check(metric: GatedMetric, cell: CostComparison | None, threshold: float | None) -> Check:
    """A cost (tokens, latency) may rise by ``threshold`` percent by the paired geometric-mean ratio:
    the one-sided p-value of H0 "the true mean log ratio is at most log(1 + threshold / 100)"."""
    ratio = cell.ratio if cell else None
    change = _scaled(ratio.value, 100, 1.0) if ratio else None
    low = _scaled(ratio.low, 100, 1.0) if ratio else None
    high = _scaled(ratio.high, 100, 1.0) if ratio else None
    positive = ratio is not None and ratio.value is not None and ratio.value > 0
    test = (
        _test(math.log(ratio.value), ratio.log_se, ratio.df, ratio.documents, ratio.sign_flip)
        if positive and ratio and ratio.value
        else None
    )
    verdict: Verdict
    p: float | None = None
    if change is None:
        verdict = "not measured"
    elif threshold is None:
        verdict = "not gated"
    elif test is None:
        verdict = "cannot test"
    else:
        verdict = "pass"
        p = test.p_above(math.log1p(threshold / 100))
    return Check(
        metric=metric,
        a=cell.a.median if cell else None,
        b=cell.b.median if cell else None,
        change=change,
        low=low,
        high=high,
        unit="percent",
        threshold=threshold,
        p_value=p,
        verdict=verdict,
    )


def evaluate(comparison: Comparison, thresholds: Thresholds) -> list[Check]:
    """Every gated metric of one comparison (a ``comparisons`` entry of a report summary), with the
    gated metrics' p-values Holm-adjusted together and the verdicts that follow."""
    itt = comparison.itt
    scores: list[tuple[GatedMetric, ScoreComparison | None, float | None]] = [
        ("accuracy", itt.accuracy if itt else None, thresholds.accuracy_drop_points),
        ("F1", itt.f1 if itt else None, thresholds.f1_drop_points),
        (
            "evidence recall",
            itt.evidence.recall if itt and itt.evidence else None,
            thresholds.evidence_recall_drop_points,
        ),
    ]
    costs: list[tuple[GatedMetric, CostComparison | None, float | None]] = [
        ("tokens", itt.tokens if itt else None, thresholds.tokens_rise_percent),
        ("latency", itt.latency if itt else None, thresholds.latency_rise_percent),
    ]
    checks: list[Check] = []
    tests: list[stats.ClusterT | None] = []
    for metric, cell, threshold in scores:
        checks.append(score_check(metric, cell, threshold))
        gap = cell.difference if cell else None
        tests.append(_test(gap.value, gap.se, gap.df, gap.documents, gap.sign_flip) if gap else None)
    for metric, cost, threshold in costs:
        checks.append(cost_check(metric, cost, threshold))
        ratio = cost.ratio if cost else None
        usable = ratio is not None and ratio.value is not None and ratio.value > 0
        tests.append(
            _test(math.log(ratio.value), ratio.log_se, ratio.df, ratio.documents, ratio.sign_flip)
            if usable and ratio and ratio.value
            else None
        )
    return holm_verdicts(checks, thresholds.alpha, tests)


def holm_verdicts(
    checks: Sequence[Check], alpha: float, tests: Sequence[stats.ClusterT | None] | None = None
) -> list[Check]:
    """The checks with Holm-adjusted p-values over those that have one, and the verdict each gets:
    fail when its adjusted p-value is below ``alpha``. With ``tests`` (each check's inference), each
    tested check also gets the one-sided bound at the level its Holm step uses, alpha / (m - rank + 1),
    so the printed bound and the verdict agree."""
    raw = [math.nan if c.p_value is None else c.p_value for c in checks]
    adjusted = stats.holm(raw)
    tested = sorted((p, i) for i, p in enumerate(raw) if not math.isnan(p))
    levels = {index: alpha / (len(tested) - rank) for rank, (_p, index) in enumerate(tested)}
    result = []
    for index, (check, p) in enumerate(zip(checks, adjusted, strict=True)):
        if check.verdict in ("not gated", "not measured", "cannot test"):
            result.append(check)
            continue
        value = None if math.isnan(p) else p
        verdict: Verdict = "fail" if value is not None and value < alpha else "pass"
        update: dict[str, object] = {"adjusted_p": value, "verdict": verdict, "level": levels.get(index)}
        test = tests[index] if tests is not None else None
        if test is not None and index in levels:
            update["bound"] = _bound(check, test, levels[index])
        result.append(check.model_copy(update=update))
    return result


def _bound(check: Check, test: stats.ClusterT, level: float) -> float | None:
    """The change's one-sided bound toward "B no worse", in the check's unit: for a score the
    largest plausible change (points), for a cost the smallest plausible rise (percent)."""
    if check.unit == "points":
        found = test.one_sided_bound(level, upper=True)
        return None if math.isnan(found) else found * 100
    found = test.one_sided_bound(level, upper=False)
    return None if math.isnan(found) else (math.exp(found) - 1) * 100


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
    return [
        check.describe(comparison.a, comparison.b)
        for check in checks
        if check.verdict in ("fail", "cannot test")
    ]


class GatedComparison(BaseModel):
    """One comparison as ``docab compare --format json`` prints it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    comparison: Comparison
    arms: list[ArmSummary]  # A then B
    checks: list[Check]


class UnpairedArm(BaseModel):
    """An arm of one of two compared runs that was compared with nothing: the other run has no arm
    of its name and it was not named with --a/--b."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arm: str
    run: str  # the folder holding it, as given
    side: Literal["base", "new"]  # RUN_A (the reference) or RUN_B


def unpaired_arms(
    base: tuple[str, Sequence[str]], new: tuple[str, Sequence[str]], pairs: Sequence[tuple[str, str]]
) -> list[UnpairedArm]:
    """The arms of two runs (each ``(folder, arms)``) present in only one of them and in no compared
    pair, the base run's first."""
    (base_run, base_arms), (new_run, new_arms) = base, new
    compared_a, compared_b = {a for a, _ in pairs}, {b for _, b in pairs}
    return [
        UnpairedArm(arm=arm, run=base_run, side="base")
        for arm in base_arms
        if arm not in new_arms and arm not in compared_a
    ] + [
        UnpairedArm(arm=arm, run=new_run, side="new")
        for arm in new_arms
        if arm not in base_arms and arm not in compared_b
    ]


def describe_unpaired(unpaired: Sequence[UnpairedArm], base_name: str, new_name: str) -> str:
    """The warning naming every unpaired arm, the runs by the names the tables give them ("" when
    there is none)."""
    if not unpaired:
        return ""
    names = ", ".join(f"{u.arm!r} only in {base_name if u.side == 'base' else new_name}" for u in unpaired)
    return f"arms present in only one run were not compared: {names}; name a pair with --a and --b"


def missing_arms_failure(
    unpaired: Sequence[UnpairedArm], base_name: str, new_name: str, new_arms: Sequence[str]
) -> str:
    """The gate's failure when arms of the base run have no counterpart in the new run ("" when none):
    a gate that compared only the arms left would pass without testing them."""
    missing = [u.arm for u in unpaired if u.side == "base"]
    if not missing:
        return ""
    one = len(missing) == 1
    names = ", ".join(repr(arm) for arm in missing)
    return (
        f"the arm{'' if one else 's'} {names} of {base_name} {'is' if one else 'are'} missing from "
        f"{new_name} (its arms: {', '.join(new_arms)}), so the gate did not test {'it' if one else 'them'}; "
        f"name the pair with --a {missing[0]} --b ARM, or add --allow-missing-arms to gate only the "
        "arms both runs have"
    )


class GateReport(BaseModel):
    """What ``docab compare --format json`` prints: every comparison, and the gate's outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    comparisons: list[GatedComparison]
    failures: list[str]  # one line per failed metric, or per arm of the base the new run lacks
    passed: bool
    unpaired_arms: list[UnpairedArm] = []  # arms of two runs present in only one and compared with nothing
