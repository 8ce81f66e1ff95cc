"""Statistics against hand-computed values and scipy references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from docab.report import stats
from docab.report.stats import PairedData
from docab.report.summary import paired_results


def test_clustered_se_worked_example() -> None:
    # mean 0.5; residual sums per document: a 0, b +1, c -1 -> sqrt(3/2 * 2) / 6
    x = [1, 0, 1, 1, 0, 0]
    docs = ["a", "a", "b", "b", "c", "c"]
    assert stats.clustered_se(x, docs) == pytest.approx(math.sqrt(3) / 6)
    mean = stats.clustered_mean(x, docs)
    half = 4.302652729911275 * math.sqrt(3) / 6  # t(0.975, df=2)
    assert (mean.mean, mean.df, mean.clusters) == (0.5, 2, 3)
    assert mean.interval.low == pytest.approx(0.5 - half)
    assert mean.interval.high == pytest.approx(0.5 + half)
    assert mean.interval.method == "cluster-t"


def test_clustered_se_with_singleton_clusters_is_the_usual_se_up_to_n_over_n_minus_1() -> None:
    rng = np.random.default_rng(3)
    x = rng.random(50)
    ordinary = x.std(ddof=1) / math.sqrt(50)
    assert stats.clustered_se(x, range(50)) == pytest.approx(ordinary)


def test_one_cluster_gives_no_interval() -> None:
    result = stats.clustered_mean([1, 0, 1], ["d", "d", "d"])
    assert math.isnan(result.se) and result.interval.method == "none"


def test_mcnemar_exact_hand_computed() -> None:
    # b = 1 (A right, B wrong), c = 9: p = 2 * (C(10,0) + C(10,1)) / 2**10
    a = [1] * 1 + [0] * 9 + [1] * 5 + [0] * 5
    b = [0] * 1 + [1] * 9 + [1] * 5 + [0] * 5
    result = stats.mcnemar_exact(np.array(a, bool), np.array(b, bool))
    assert (result.b, result.c) == (1, 9)
    assert result.p_value == pytest.approx(22 / 1024)
    assert result.p_value == pytest.approx(sps.binomtest(1, 10, 0.5).pvalue)


def test_mcnemar_without_discordant_pairs_is_one() -> None:
    assert stats.mcnemar_exact([True, False], [True, False]).p_value == 1.0


@pytest.mark.parametrize(("k", "n"), [(7, 20), (0, 12), (12, 12), (1, 3), (150, 400)])
def test_clopper_pearson_matches_scipy(k: int, n: int) -> None:
    ours = stats.clopper_pearson(k, n)
    reference = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert ours.low == pytest.approx(reference.low, abs=1e-12)
    assert ours.high == pytest.approx(reference.high, abs=1e-12)


def test_korn_graubard_without_clustering_is_clopper_pearson_on_n_minus_one() -> None:
    # Singleton clusters: SE^2 = p(1-p)/(n-1), so n_eff = n - 1 and the df factor is 1.
    x = np.array([1] * 6 + [0] * 14, dtype=float)
    interval = stats.korn_graubard(x, range(20))
    expected = stats.clopper_pearson(0.3 * 19, 19)
    assert (interval.low, interval.high) == pytest.approx((expected.low, expected.high))
    assert interval.method == "korn-graubard"


def test_korn_graubard_widens_with_clustering() -> None:
    x = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0] * 3, dtype=float)
    clustered = stats.korn_graubard(x, np.repeat(np.arange(9), 4))
    independent = stats.korn_graubard(x, np.arange(36))
    assert clustered.high - clustered.low > independent.high - independent.low
    # hand: p = .5, SE from the worked formula, then the df factor (t_35 / t_8)^2
    se = stats.clustered_se(x, np.repeat(np.arange(9), 4))
    n_eff = min(36, 0.25 / se**2) * (sps.t.ppf(0.975, 35) / sps.t.ppf(0.975, 8)) ** 2
    expected = stats.clopper_pearson(0.5 * n_eff, n_eff)
    assert (clustered.low, clustered.high) == pytest.approx((expected.low, expected.high))


def test_proportion_interval_picks_exact_for_small_samples() -> None:
    small = stats.proportion_interval([1, 0, 1, 1], ["a", "b", "c", "d"])
    assert small.method == "korn-graubard"
    rng = np.random.default_rng(0)
    x = (rng.random(600) < 0.4).astype(float)
    big = stats.proportion_interval(x, np.repeat(np.arange(100), 6))
    assert big.method == "cluster-t" and 0 <= big.low < x.mean() < big.high <= 1


def test_wilcoxon_exact_small_sample() -> None:
    # all five differences positive: exact two-sided p = 2 / 2**5
    result = stats.wilcoxon_signed_rank([0, 0, 0, 0, 0], [1, 2, 3, 4, 5])
    assert result.p_value == pytest.approx(0.0625)
    assert result.n_nonzero == 5


def test_wilcoxon_drops_zero_differences_and_handles_all_equal() -> None:
    assert stats.wilcoxon_signed_rank([1, 2], [1, 2]).p_value == 1.0
    with_zero = stats.wilcoxon_signed_rank([0, 0, 0, 0, 0, 7], [1, 2, 3, 4, 5, 7])
    assert with_zero.n_nonzero == 5 and with_zero.p_value == pytest.approx(0.0625)


def test_paired_ratio_is_the_geometric_mean_and_skips_zeros() -> None:
    ratio = stats.paired_ratio([1, 2, 4, 0], [2, 2, 2, 5])
    assert ratio.geometric_mean == pytest.approx(1.0)  # ratios 2, 1, 1/2
    assert (ratio.n_used, ratio.n_excluded) == (3, 1)
    assert stats.paired_ratio([100, 100], [150, 150]).geometric_mean == pytest.approx(1.5)


def test_spread_median_and_p90() -> None:
    result = stats.spread([*range(1, 11), math.nan])
    assert (result.n, result.median, result.mean) == (10, 5.5, 5.5)
    assert result.p90 == pytest.approx(9.1)  # numpy's linear interpolation


def test_icc_oneway_hand_computed() -> None:
    # groups (1,1) (0,0) (1,0): MSB 0.5, MSW 1/6, m0 2 -> (0.5 - 1/6) / (0.5 + 1/6) = 0.5
    assert stats.icc_oneway([1, 1, 0, 0, 1, 0], ["a", "a", "b", "b", "c", "c"]) == pytest.approx(0.5)
    assert stats.icc_oneway([1, 0, 1, 0], ["a", "a", "b", "b"]) == 0.0  # within > between: clipped
    assert math.isnan(stats.icc_oneway([1, 0], ["a", "b"]))  # no within-document replication


def test_minimum_detectable_effect_and_its_inverse() -> None:
    z = 1.959963984540054 + 0.8416212335729143
    mde = stats.minimum_detectable_effect(100, 0.3, questions_per_document=8, icc=0.1)
    assert stats.design_effect(8, 0.1) == pytest.approx(1.7)
    assert mde == pytest.approx(z * math.sqrt(0.3 * 1.7 / 100))
    n = stats.required_questions(mde, 0.3, questions_per_document=8, icc=0.1)
    assert n in (100, 101)  # rounding up
    assert stats.PlanningAssumptions().mde(1082) == pytest.approx(z * math.sqrt(0.3 * 1.7 / 1082))


def test_generalised_f1_follows_the_official_definition() -> None:
    # recall 3/4, precision 3/5 -> 2 * .45 / 1.35
    assert float(stats.generalised_f1(3.0, 4, 5)) == pytest.approx(2 / 3)
    assert float(stats.generalised_f1(0.0, 4, 5)) == 0.0
    assert float(stats.generalised_f1(1.0, 4, 0)) == 0.0  # nothing answered: 0, as the official fallback
    vector = stats.generalised_f1(np.array([3.0, 1.0]), np.array([4, 2]), np.array([5, 2]))
    assert vector == pytest.approx([2 / 3, 0.5])


def test_bootstrap_keeps_pairs_together() -> None:
    rng = np.random.default_rng(1)
    a = rng.random(40)
    docs = np.repeat(np.arange(10), 4)
    result = stats.cluster_bootstrap(
        {"a": a, "b": a + 0.25, "n": np.ones(40)}, docs, lambda s: (s["b"] - s["a"]) / s["n"], resamples=500
    )
    assert result.estimate == pytest.approx(0.25)
    assert (result.interval.low, result.interval.high) == pytest.approx((0.25, 0.25))


def test_bootstrap_is_seeded_and_reproducible() -> None:
    rng = np.random.default_rng(2)
    x, docs = rng.random(60), np.repeat(np.arange(15), 4)
    first = stats.bootstrap_mean(x, docs, resamples=1000, seed=7)
    again = stats.bootstrap_mean(x, docs, resamples=1000, seed=7)
    other = stats.bootstrap_mean(x, docs, resamples=1000, seed=8)
    assert first == again and first.interval != other.interval


def test_bootstrap_mean_agrees_with_the_clustered_t_interval_roughly() -> None:
    rng = np.random.default_rng(4)
    docs = np.repeat(np.arange(120), 8)
    x = (rng.random(960) < 0.4 + 0.2 * rng.random(120)[docs]).astype(float)
    boot = stats.bootstrap_mean(x, docs)
    t = stats.clustered_mean(x, docs)
    assert boot.interval.low == pytest.approx(t.interval.low, abs=0.01)
    assert boot.interval.high == pytest.approx(t.interval.high, abs=0.01)


def test_bootstrap_with_one_document_reports_no_interval() -> None:
    result = stats.bootstrap_mean([1, 0, 1], ["d"] * 3)
    assert (
        result.estimate == pytest.approx(2 / 3) and math.isnan(result.interval.low) and result.resamples == 0
    )


def test_bootstrap_f1_recomputes_the_ratio_per_resample() -> None:
    scores = np.array([1, 0, 1, 0, 1, 1, 0, 0.6])
    answerable = np.array([1, 1, 1, 1, 0, 1, 0, 1.0])
    answered = np.array([1, 1, 1, 0, 1, 1, 1, 1.0])
    docs = ["a", "a", "b", "b", "c", "c", "d", "d"]
    result = stats.bootstrap_f1(scores, answerable, answered, docs, resamples=2000)
    s = float((scores * answerable).sum())
    assert result.estimate == pytest.approx(float(stats.generalised_f1(s, answerable.sum(), answered.sum())))
    assert result.interval.low <= result.estimate <= result.interval.high


def test_bootstrap_interval_covers_the_truth_at_about_the_nominal_rate() -> None:
    """Seeded simulation: 40 documents x 5 questions with document effects, true accuracy 0.5."""
    rng = np.random.default_rng(11)
    docs = np.repeat(np.arange(40), 5)
    covered = 0
    simulations = 300
    for i in range(simulations):
        effect = rng.normal(0, 0.15, 40)[docs]
        x = (rng.random(200) < 0.5 + effect).astype(float)
        interval = stats.bootstrap_mean(x, docs, resamples=400, seed=i).interval
        covered += interval.low <= 0.5 <= interval.high
    assert 0.89 <= covered / simulations <= 0.99


def make_paired(n_docs: int = 30, per_doc: int = 6, lift: float = 0.1, seed: int = 0) -> PairedData:
    rng = np.random.default_rng(seed)
    docs = np.repeat([f"doc{i}" for i in range(n_docs)], per_doc)
    n = docs.size
    base = rng.random(n)
    a = (base < 0.4).astype(float)
    b = (base < 0.4 + lift).astype(float)
    tokens_a = rng.lognormal(9, 0.5, n)
    return PairedData(
        clusters=docs,
        score_a=a,
        score_b=b,
        answerable=(rng.random(n) < 0.8).astype(float),
        answered_a=np.ones(n),
        answered_b=np.ones(n),
        tokens_a=tokens_a,
        tokens_b=tokens_a * 1.5,
        latency_a=np.full(n, 10.0),
        latency_b=np.full(n, 12.0),
    )


def test_paired_analysis_reports_every_figure_consistently() -> None:
    data = make_paired()
    result = stats.paired_analysis(data, resamples=2000)
    assert result.n == 180 and result.clusters == 30
    assert result.accuracy_difference.estimate == pytest.approx(result.accuracy_b - result.accuracy_a)
    assert result.accuracy_difference.interval.low > 0  # b is never worse, often better
    assert result.mcnemar.b == 0 and result.mcnemar.c > 0 and result.mcnemar.p_value < 0.01
    assert result.tokens.ratio.geometric_mean == pytest.approx(1.5)
    assert result.tokens.ratio_interval.low == pytest.approx(
        1.5
    ) and result.tokens.ratio_interval.high == pytest.approx(1.5)
    assert result.latency.difference.estimate == pytest.approx(2.0)
    assert result.latency.a.median == 10.0 and result.latency.b.p90 == 12.0
    assert result.f1_difference.estimate == pytest.approx(result.f1_b - result.f1_a)
    assert 0 < result.mde < 1
    json_ready = paired_results(result)
    assert json_ready.accuracy.difference.method == "cluster-bootstrap"


def test_paired_analysis_ignores_missing_costs_pairwise() -> None:
    data = make_paired()
    tokens_b = data.tokens_b.copy()
    tokens_b[:10] = np.nan
    result = stats.paired_analysis(PairedData(**{**data.__dict__, "tokens_b": tokens_b}), resamples=500)
    assert result.tokens.a.n == data.n - 10 and result.tokens.ratio.n_used == data.n - 10


def test_paired_data_subset_keeps_alignment() -> None:
    data = make_paired(n_docs=3, per_doc=2)
    part = data.subset(data.clusters == "doc1")
    assert part.n == 2 and set(part.clusters) == {"doc1"}
    assert (part.score_a == data.score_a[2:4]).all()


def test_identical_arms_state_the_mde_on_the_rule_of_three_bound() -> None:
    data = make_paired(n_docs=10, per_doc=3)
    same = stats.paired_analysis(PairedData(**{**data.__dict__, "score_b": data.score_a}), resamples=200)
    z = 1.959963984540054 + 0.8416212335729143
    # No discordant pair: Var(d) is bounded by 3/n, the design effect is 1 (ICC of zeros is 0).
    assert same.mde_bounded and same.mde == pytest.approx(z * math.sqrt((3 / 30) / 30))
    assert paired_results(same).mde.bounded is True
    assert not stats.paired_analysis(data, resamples=200).mde_bounded


def test_a_constant_nonzero_difference_states_the_mde_on_the_mean_squared_difference() -> None:
    from docab.report.summary import mde_statement

    data = make_paired(n_docs=10, per_doc=3)
    all_improved = PairedData(**{**data.__dict__, "score_a": np.zeros(30), "score_b": np.ones(30)})
    result = stats.paired_analysis(all_improved, resamples=200)
    z = 1.959963984540054 + 0.8416212335729143
    # Var(d) is 0 but not because nothing changed: it is bounded by mean(d^2) = 1, not by 3/n.
    assert result.mde_bounded and result.mde >= z * math.sqrt(1 / 30)
    assert "changed by the same amount" in mde_statement(result)
    assert "no question's score differed" not in mde_statement(result)
    few = PairedData(
        **{**make_paired(n_docs=2, per_doc=2).__dict__, "score_a": np.zeros(4), "score_b": np.ones(4)}
    )
    assert mde_statement(stats.paired_analysis(few, resamples=200)).startswith(
        "No difference in accuracy is resolvable with this run"
    )


def test_one_document_gives_no_mde_number() -> None:
    result = stats.paired_analysis(make_paired(n_docs=1, per_doc=5), resamples=200)
    assert math.isnan(result.mde) and paired_results(result).mde.observed is None
