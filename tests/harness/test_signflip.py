"""The sign-flip test that replaces the cluster-robust t below 30 documents (issue 24, item 3)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from docab.report import stats
from docab.report.signflip import SMALL_DOCUMENTS, SignFlip, sign_patterns


def brute_force_p_above(values: np.ndarray, docs: np.ndarray, bound: float) -> float:
    """#{sign patterns s: sum_c s_c U_c(bound) >= sum_c U_c(bound)} / 2^C, by enumeration."""
    sums = np.array([np.sum(values[docs == d] - bound) for d in np.unique(docs)])
    observed = sums.sum()
    hits = sum(
        np.dot(signs, sums) >= observed - 1e-12 for signs in itertools.product((1, -1), repeat=sums.size)
    )
    return hits / 2**sums.size


@pytest.mark.parametrize("seed", range(6))
def test_the_exact_p_values_are_the_enumerated_ones(seed: int) -> None:
    rng = np.random.default_rng(seed)
    docs = np.repeat(np.arange(7), rng.integers(1, 5, 7))
    values = rng.integers(-1, 2, docs.size).astype(float)
    test = stats.mean_t(values, docs)
    assert test.flip is not None and test.flip.patterns == 2**7
    for bound in (-0.5, -0.1, 0.0, 0.2, float(values.mean()) - 0.05):
        assert test.p_above(bound) == pytest.approx(brute_force_p_above(values, docs, bound))
        assert test.p_below(bound) == pytest.approx(brute_force_p_above(-values, docs, -bound))


def test_the_issues_example_a_stronger_result_never_has_a_larger_p_value() -> None:
    """6 documents of 3 questions: B winning every question had p = 0.031 (sign test) while B
    winning all but one had p = 0.00058 (t)."""
    docs = np.repeat(np.arange(6), 3)
    every = np.ones(18)
    all_but_one = every.copy()
    all_but_one[0] = 0.0
    strong = stats.clustered_mcnemar(np.zeros(18, bool), every.astype(bool), docs)
    weak = stats.clustered_mcnemar(np.zeros(18, bool), all_but_one.astype(bool), docs)
    assert strong.p_value == pytest.approx(2 / 64)
    assert weak.p_value >= strong.p_value


@pytest.mark.parametrize("documents", [6, 9, 14, 20, 29])
def test_raising_any_documents_contribution_never_raises_the_p_value(documents: int) -> None:
    rng = np.random.default_rng(documents)
    docs = np.repeat(np.arange(documents), rng.integers(1, 6, documents))
    for _ in range(15):
        values = rng.integers(-1, 2, docs.size).astype(float)
        before = stats.mean_t(values, docs)
        stronger = values.copy()
        lifted = rng.choice(docs.size, size=rng.integers(1, 4), replace=False)
        stronger[lifted] = np.minimum(1.0, stronger[lifted] + 1.0)
        after = stats.mean_t(stronger, docs)
        for bound in (-0.3, 0.0, 0.1):
            assert after.p_above(bound) <= before.p_above(bound) + 1e-12
            assert after.p_below(bound) >= before.p_below(bound) - 1e-12


@pytest.mark.parametrize("documents", [6, 12, 16, 25])
def test_the_interval_is_the_inverted_test(documents: int) -> None:
    rng = np.random.default_rng(documents + 100)
    docs = np.repeat(np.arange(documents), 4)
    values = rng.normal(0.2, 0.5, docs.size)
    test = stats.mean_t(values, docs)
    low, high = test.interval.low, test.interval.high
    assert test.interval.method == "sign-flip" and low < test.estimate < high
    eps = 1e-6
    assert test.p_above(low) > 0.025 >= test.p_above(low - eps)
    assert test.p_below(high) > 0.025 >= test.p_below(high + eps)
    # a value inside the interval is not rejected two-sided; one far outside is
    assert test.p_two_sided(test.estimate) == 1.0 and test.p_two_sided(high + 10) < 0.05


def test_below_six_documents_no_interval_and_from_thirty_the_t() -> None:
    for documents, method in (
        (5, "none"),
        (6, "sign-flip"),
        (SMALL_DOCUMENTS - 1, "sign-flip"),
        (SMALL_DOCUMENTS, "cluster-t-cr3"),
    ):
        docs = np.repeat(np.arange(documents), 3)
        values = np.resize([1.0, 0.0, 1.0, 1.0, -1.0], docs.size)
        assert stats.mean_t(values, docs).interval.method == method, documents


def test_sampled_patterns_are_fixed_mirrored_and_the_same_for_every_test() -> None:
    patterns = sign_patterns(20)
    assert patterns.shape == (16_384, 20)
    half = patterns.shape[0] // 2
    assert np.array_equal(patterns[:half], -patterns[half:])
    assert sign_patterns(20) is patterns
    flip = SignFlip(0.1, tuple(np.linspace(-1, 1, 20)), tuple([1.0] * 20))
    assert flip.p_two_sided(0.0) == pytest.approx(min(1.0, 2 * min(flip.p_above(0.0), flip.p_below(0.0))))
    assert math.isnan(SignFlip(0.0, (0.5, -0.5), (1.0, 1.0)).one_sided_bound(0.025, upper=True))


def test_the_gate_redoes_the_sign_flip_from_the_summary(tmp_path: Path) -> None:
    """A gate on a small run tests at its thresholds with the same sign-flip test as the report:
    B losing every question never passes where B losing all but one fails."""
    from docab.report.gate import Thresholds, evaluate
    from docab.report.summary import build_report, load_run
    from tests.harness.synthetic_runs import make_record, write_run

    def verdict(b_right: set[int]) -> tuple[str, float]:
        records = []
        for q in range(18):
            doc = f"d{q // 3}"
            records.append(make_record("fs", f"q{q}", doc, score=1.0))
            records.append(make_record("md", f"q{q}", doc, score=1.0 if q in b_right else 0.0))
        folder = write_run(tmp_path / f"run{len(b_right)}", records)
        comparison = build_report(load_run(folder)).summary.comparisons[0]
        assert comparison.itt is not None and comparison.itt.accuracy.difference.sign_flip is not None
        check = evaluate(comparison, Thresholds(accuracy_drop_points=5.0))[0]
        assert check.p_value is not None
        return check.verdict, check.p_value

    worst, p_worst = verdict(set())
    weaker, p_weaker = verdict({0})
    assert p_worst <= p_weaker
    assert worst == "fail" or weaker == "pass"
