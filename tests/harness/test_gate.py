"""The regression gate's verdicts on comparison summaries, and its threshold files."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from scipy import stats as sps

from docab.report.gate import (
    Check,
    GateConfigError,
    Thresholds,
    evaluate,
    failures,
    load_thresholds,
    parse_thresholds,
)
from docab.report.schema import (
    AccuracyComparison,
    AnswerableComparison,
    ClusteredMcNemar,
    Comparison,
    CostComparison,
    DetectableEffect,
    Difference,
    EvidenceComparison,
    McNemar,
    PairedResults,
    Ratio,
    ScoreComparison,
    SignedRank,
    Spread,
)

DF = 20.0  # the degrees of freedom every synthetic difference below carries
T = float(sps.t.ppf(0.975, DF))


def _se(low: float | None, high: float | None) -> float | None:
    """The standard error a symmetric 95 % t interval [low, high] on DF degrees of freedom implies."""
    return None if low is None or high is None else (high - low) / (2 * T)


def _difference(value: float, low: float | None, high: float | None) -> Difference:
    return Difference(
        value=value, low=low, high=high, method="cluster-t-cr3", se=_se(low, high), df=DF, p_value=None
    )


def _spread(median: float) -> Spread:
    return Spread(n=10, mean=median, median=median, p90=median)


def _cost(median_a: float, ratio: tuple[float | None, float | None, float | None]) -> CostComparison:
    value, low, high = ratio
    return CostComparison(
        a=_spread(median_a),
        b=_spread(median_a * (value or 1.0)),
        difference=_difference(0.0, None, None),
        ratio=Ratio(
            value=value,
            low=low,
            high=high,
            method="cluster-t-cr3",
            log_se=_se(math.log(low), math.log(high)) if low and high else None,
            df=DF,
            pairs=10,
            excluded=0,
        ),
        wilcoxon=SignedRank(statistic=None, p_value=1.0, pairs=0),
    )


def comparison(
    accuracy: tuple[float, float | None, float | None] = (0.0, 0.0, 0.0),
    tokens_ratio: tuple[float | None, float | None, float | None] = (1.0, 1.0, 1.0),
    recall: tuple[float, float, float] | None = None,
) -> Comparison:
    """A typed comparison of arm "new" against "base" with the given differences (fractions)."""
    estimate, low, high = accuracy
    gap = _difference(estimate, low, high)
    itt = PairedResults(
        questions=10,
        documents=5,
        accuracy=AccuracyComparison(
            a=0.8,
            b=0.8 + estimate,
            difference=gap,
            clustered_mcnemar=ClusteredMcNemar(
                only_a_correct=0, only_b_correct=0, statistic=None, df=None, p_value=1.0
            ),
            mcnemar_ignoring_documents=McNemar(only_a_correct=0, only_b_correct=0, p_value=1.0),
        ),
        answerable=AnswerableComparison(questions=8, a=0.8, b=0.8 + estimate, difference=gap),
        f1=ScoreComparison(a=0.8, b=0.8 + estimate, difference=gap),
        evidence=(
            EvidenceComparison(
                questions=10,
                recall=ScoreComparison(a=0.9, b=0.9 + recall[0], difference=_difference(*recall)),
                precision=None,
            )
            if recall
            else None
        ),
        score_correlation=None,
        tokens=_cost(1000.0, tokens_ratio),
        latency=_cost(1.0, (None, None, None)),
        icc=None,
        mde=DetectableEffect(planned=None, observed=None, resolvable=None, bounded=False, statement=""),
    )
    return Comparison(a="base", b="new", questions_a=10, questions_b=10, paired=10, itt=itt)


def verdicts(checks: list[Check]) -> dict[str, str]:
    return {c.metric: c.verdict for c in checks}


def test_a_drop_beyond_the_threshold_with_a_certain_interval_fails() -> None:
    checks = evaluate(comparison(accuracy=(-0.05, -0.08, -0.02)), Thresholds(accuracy_drop_points=2))
    assert verdicts(checks)["accuracy"] == "fail"
    assert checks[0].change == pytest.approx(-5.0) and checks[0].high == pytest.approx(-2.0)
    assert verdicts(checks)["F1"] == "not gated"
    assert verdicts(checks)["evidence recall"] == "not measured"
    assert verdicts(checks)["latency"] == "not measured"


def test_a_drop_whose_interval_reaches_zero_passes_however_large() -> None:
    noisy = comparison(accuracy=(-0.10, -0.25, 0.01))
    assert verdicts(evaluate(noisy, Thresholds(accuracy_drop_points=2)))["accuracy"] == "pass"


def test_a_certain_drop_within_the_threshold_passes() -> None:
    small = comparison(accuracy=(-0.01, -0.015, -0.005))
    assert verdicts(evaluate(small, Thresholds(accuracy_drop_points=2)))["accuracy"] == "pass"
    assert verdicts(evaluate(small, Thresholds(accuracy_drop_points=0)))["accuracy"] == "fail"


def test_costs_fail_on_a_certain_rise_beyond_the_percentage() -> None:
    dearer = comparison(tokens_ratio=(1.30, 1.20, 1.40))
    assert verdicts(evaluate(dearer, Thresholds(tokens_rise_percent=10)))["tokens"] == "fail"
    assert verdicts(evaluate(dearer, Thresholds(tokens_rise_percent=50)))["tokens"] == "pass"
    uncertain = comparison(tokens_ratio=(1.30, 0.95, 1.70))
    assert verdicts(evaluate(uncertain, Thresholds(tokens_rise_percent=10)))["tokens"] == "pass"
    (line,) = failures(dearer, Thresholds(tokens_rise_percent=10))
    assert line.startswith("tokens of new rose by 30.0 % against base (at least 22.0 % more")


def test_evidence_recall_is_gated_in_points() -> None:
    lost = comparison(recall=(-0.2, -0.3, -0.1))
    (line,) = failures(lost, Thresholds(evidence_recall_drop_points=5))
    assert line.startswith("evidence recall of new fell by 20.0 points")


def test_nothing_paired_fails_only_a_gate_that_gates_something() -> None:
    empty = Comparison(
        a="base",
        b="new",
        questions_a=3,
        questions_b=2,
        paired=0,
        note="the arms share no question; nothing to pair",
    )
    assert failures(empty, Thresholds()) == []
    assert failures(empty, Thresholds(f1_drop_points=1)) == [
        "nothing to compare: the arms share no question; nothing to pair"
    ]


def test_flags_override_the_file_and_none_keeps_it() -> None:
    base = Thresholds(accuracy_drop_points=2, tokens_rise_percent=10)
    merged = base.merged(accuracy_drop_points=None, tokens_rise_percent=20, latency_rise_percent=None)
    assert merged == Thresholds(accuracy_drop_points=2, tokens_rise_percent=20)
    assert not Thresholds().any and merged.any


def test_threshold_files(tmp_path: Path) -> None:
    path = tmp_path / "gate.toml"
    path.write_text("[gate]\naccuracy_drop_points = 2\ntokens_rise_percent = 7.5\n")
    assert load_thresholds(path) == Thresholds(accuracy_drop_points=2.0, tokens_rise_percent=7.5)
    with pytest.raises(GateConfigError, match="must be a number"):
        parse_thresholds({"gate": {"f1_drop_points": True}})
    with pytest.raises(GateConfigError, match="must be a number"):
        parse_thresholds({"gate": {"f1_drop_points": "2"}})


def test_the_committed_ci_gate_file_is_valid() -> None:
    from tests.conftest import REPO_ROOT

    thresholds = load_thresholds(REPO_ROOT / "results" / "baselines" / "gate.toml")
    assert thresholds.accuracy_drop_points is not None and thresholds.evidence_recall_drop_points is not None


def test_every_verdict_on_typed_comparisons() -> None:
    """Each verdict, for a score and a cost: fail, pass, not gated, not measured."""
    gates = Thresholds(
        accuracy_drop_points=2, f1_drop_points=2, tokens_rise_percent=10, latency_rise_percent=10
    )
    # Three gated metrics share Holm's 5 %: the drop must be clearer than for one metric alone.
    checks = {c.metric: c for c in evaluate(comparison(accuracy=(-0.05, -0.07, -0.03)), gates)}
    assert checks["accuracy"].verdict == "fail" and checks["F1"].verdict == "fail"
    assert checks["tokens"].verdict == "pass"  # ratio 1: no rise
    assert checks["latency"].verdict == "not measured" and checks["latency"].change is None
    assert checks["latency"].a == 1.0  # the medians are shown even when the ratio is undefined
    assert checks["evidence recall"].verdict == "not measured"
    ungated = {c.metric: c.verdict for c in evaluate(comparison(recall=(-0.2, -0.3, -0.1)), Thresholds())}
    assert ungated == {
        "accuracy": "not gated",
        "F1": "not gated",
        "evidence recall": "not gated",
        "tokens": "not gated",
        "latency": "not measured",
    }
    accuracy = checks["accuracy"]
    assert (accuracy.a, accuracy.b, accuracy.unit, accuracy.threshold) == (
        0.8,
        pytest.approx(0.75),
        "points",
        2,
    )
    assert (accuracy.change, accuracy.low, accuracy.high) == (
        pytest.approx(-5.0),
        pytest.approx(-7.0),
        pytest.approx(-3.0),
    )


def test_a_gated_difference_that_cannot_be_tested_fails_the_gate() -> None:
    """One document gives no inference (no interval, no SE): the drop is measured but cannot be
    tested, and the gate does not pass what it cannot check (review finding: it used to pass a
    100-point drop)."""
    one_document = comparison(accuracy=(-0.5, None, None), tokens_ratio=(3.0, None, None))
    gates = Thresholds(accuracy_drop_points=1, tokens_rise_percent=1)
    checks = {c.metric: c for c in evaluate(one_document, gates)}
    assert checks["accuracy"].verdict == "cannot test" and checks["accuracy"].change == pytest.approx(-50.0)
    assert checks["accuracy"].low is None and checks["accuracy"].high is None
    assert checks["tokens"].verdict == "cannot test" and checks["tokens"].change == pytest.approx(200.0)
    lines = failures(one_document, gates)
    assert len(lines) == 2 and all(
        "cannot be tested: the figure rests on one document" in line for line in lines
    )
    # Ungated, it is only reported.
    assert {c.verdict for c in evaluate(one_document, Thresholds())} == {"not gated", "not measured"}


def test_the_printed_bound_agrees_with_the_verdict() -> None:
    """Review finding: the failure message printed a two-sided 95 % interval that contained the
    allowed change while the one-sided test failed. The bound printed is the one-sided bound at the
    level Holm's step tests, and it lies beyond the allowed change exactly when the metric fails."""
    for estimate in (-0.02, -0.03, -0.035, -0.05):
        gap = comparison(accuracy=(estimate, estimate - 0.032, estimate + 0.032))
        (check, *_) = evaluate(gap, Thresholds(accuracy_drop_points=0))
        assert check.bound is not None and check.level == pytest.approx(0.05)
        assert (check.verdict == "fail") == (check.bound < 0)


def test_a_check_reads_back_from_its_json() -> None:
    (check, *_) = evaluate(comparison(accuracy=(-0.05, -0.08, -0.02)), Thresholds(accuracy_drop_points=2))
    assert Check.model_validate_json(check.model_dump_json()) == check


def test_holm_controls_the_family_of_gated_metrics() -> None:
    """Each drop alone would fail one metric at p = 0.025; three at once do not, by Holm."""
    drop = comparison(accuracy=(-0.05, -0.08, -0.02))  # accuracy and F1 share this difference
    alone = {c.metric: c for c in evaluate(drop, Thresholds(accuracy_drop_points=2))}
    assert alone["accuracy"].p_value == pytest.approx(0.025) and alone["accuracy"].verdict == "fail"
    assert alone["accuracy"].adjusted_p == pytest.approx(0.025)
    three = {
        c.metric: c
        for c in evaluate(drop, Thresholds(accuracy_drop_points=2, f1_drop_points=2, tokens_rise_percent=10))
    }
    assert three["accuracy"].adjusted_p == pytest.approx(0.075)
    assert three["accuracy"].verdict == "pass" and three["F1"].verdict == "pass"
    assert three["tokens"].p_value == 1.0  # ratio exactly 1, no spread: certainly no rise


def test_the_threshold_is_the_null_hypothesis() -> None:
    """The p-value is of "no worse than allowed": an estimate right at the threshold gives 0.5."""
    at_threshold = comparison(accuracy=(-0.02, -0.05, 0.01))
    (check, *_) = evaluate(at_threshold, Thresholds(accuracy_drop_points=2))
    assert check.p_value == pytest.approx(0.5)
    tokens = comparison(tokens_ratio=(1.10, 1.05, 1.15))
    cost = {c.metric: c for c in evaluate(tokens, Thresholds(tokens_rise_percent=10))}["tokens"]
    assert cost.p_value == pytest.approx(0.5, abs=0.01)


def test_gate_alpha_is_configurable_and_checked(tmp_path: Path) -> None:
    assert parse_thresholds({"gate": {"alpha": 0.01}}).alpha == 0.01
    with pytest.raises(GateConfigError, match=r"alpha must be above 0 and at most 0\.5"):
        parse_thresholds({"gate": {"alpha": 0.9}})
    strict = Thresholds(accuracy_drop_points=2, alpha=0.01)
    (check, *_) = evaluate(comparison(accuracy=(-0.05, -0.08, -0.02)), strict)
    assert check.verdict == "pass"  # p = 0.025 is not below 0.01
    assert not Thresholds(alpha=0.01).any
