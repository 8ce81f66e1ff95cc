"""Statistics against hand-computed values and scipy references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from docab.report import stats
from docab.report.comparisons import paired_results
from docab.report.stats import PairedData


def test_clustered_se_worked_example() -> None:
    # mean 0.5; residual sums per document: a 0, b +1, c -1 -> sqrt(3/2 * 2) / 6
    x = [1, 0, 1, 1, 0, 0]
    docs = ["a", "a", "b", "b", "c", "c"]
    assert stats.clustered_se(x, docs) == pytest.approx(math.sqrt(3) / 6)


def test_cluster_t_cr3_worked_example() -> None:
    # residual sums per document a 0, b +1, c -1; each document holds h = 1/3 of the weight:
    # Var = (0 + 1 + 1) / (2/3)^2 / 6^2 = 0.125; equal documents give Bell-McCaffrey df = C - 1 = 2.
    x = [1, 0, 1, 1, 0, 0]
    docs = ["a", "a", "b", "b", "c", "c"]
    mean = stats.mean_t(x, docs, sign_flip_below=0)  # the t itself (the default on 3 documents: sign flip)
    assert stats.mean_t(x, docs).interval.method == "none"  # 3 documents cannot reach p < 0.05
    half = 4.302652729911275 * math.sqrt(0.125)  # t(0.975, df=2)
    assert (mean.estimate, mean.clusters) == (0.5, 3)
    assert mean.se == pytest.approx(math.sqrt(0.125)) and mean.df == pytest.approx(2.0)
    assert mean.interval.low == pytest.approx(0.5 - half)
    assert mean.interval.high == pytest.approx(0.5 + half)
    assert mean.interval.method == "cluster-t-cr3"


def test_bell_mccaffrey_df_falls_below_c_minus_1_for_unequal_documents() -> None:
    assert stats.bell_mccaffrey_df([4, 4, 4, 4]) == pytest.approx(3.0)
    unequal = stats.bell_mccaffrey_df([20, 2, 2, 2, 2])
    assert 1.0 < unequal < 4.0
    # by hand for weights (2, 1, 1): h = (1/2, 1/4, 1/4)
    h = np.array([0.5, 0.25, 0.25])
    root = np.sqrt(1 - h)
    gram = -np.outer(h, h) / np.outer(root, root)
    np.fill_diagonal(gram, h)
    assert stats.bell_mccaffrey_df([2, 1, 1]) == pytest.approx(np.trace(gram) ** 2 / np.sum(gram**2))


def test_cluster_t_p_values_match_its_interval() -> None:
    rng = np.random.default_rng(5)
    docs = np.repeat(np.arange(12), 5)
    x = rng.normal(0.1, 0.3, 60)
    result = stats.mean_t(x, docs, sign_flip_below=0)  # the t (12 documents get the sign flip)
    # the interval's ends are exactly where the two-sided p-value is 0.05
    assert result.p_two_sided(result.interval.low) == pytest.approx(0.05)
    assert result.p_two_sided(result.interval.high) == pytest.approx(0.05)
    # one-sided p-values are halves, in the direction asked
    assert result.p_above(result.interval.low) == pytest.approx(0.025)
    assert result.p_below(result.interval.high) == pytest.approx(0.025)
    assert result.p_above(0.0) + result.p_below(0.0) == pytest.approx(1.0)


def test_holm_adjusts_step_down_and_keeps_order() -> None:
    adjusted = stats.holm([0.01, 0.04, 0.03, math.nan])
    # sorted 0.01, 0.03, 0.04 over m = 3: 0.03, 0.06, max(0.06, 0.04) = 0.06
    assert adjusted[:3] == pytest.approx([0.03, 0.06, 0.06]) and math.isnan(adjusted[3])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert stats.holm([]) == []


def test_clustered_se_with_singleton_clusters_is_the_usual_se_up_to_n_over_n_minus_1() -> None:
    rng = np.random.default_rng(3)
    x = rng.random(50)
    ordinary = x.std(ddof=1) / math.sqrt(50)
    assert stats.clustered_se(x, range(50)) == pytest.approx(ordinary)


def test_one_cluster_gives_no_interval() -> None:
    result = stats.mean_t([1, 0, 1], ["d", "d", "d"])
    assert math.isnan(result.se) and result.interval.method == "none"
    assert math.isnan(result.p_two_sided(0.0))


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
    assert big.method == "cluster-t-cr3" and 0 <= big.low < x.mean() < big.high <= 1


def test_wilcoxon_exact_small_sample() -> None:
    # all five differences positive: exact two-sided p = 2 / 2**5
    result = stats.wilcoxon_signed_rank([0, 0, 0, 0, 0], [1, 2, 3, 4, 5])
    assert result.p_value == pytest.approx(0.0625)
    assert result.n_nonzero == 5


def test_wilcoxon_drops_zero_differences_and_handles_all_equal() -> None:
    assert stats.wilcoxon_signed_rank([1, 2], [1, 2]).p_value == 1.0
    with_zero = stats.wilcoxon_signed_rank([0, 0, 0, 0, 0, 7], [1, 2, 3, 4, 5, 7])
    assert with_zero.n_nonzero == 5 and with_zero.p_value == pytest.approx(0.0625)


def test_cost_ratio_is_the_geometric_mean_and_skips_zeros() -> None:
    docs = np.array(["a", "b", "c", "d"], dtype=object)
    cost = stats.compare_costs([1, 2, 4, 0], [2, 2, 2, 5], docs)
    assert cost.ratio == pytest.approx(1.0)  # ratios 2, 1, 1/2
    assert (cost.pairs, cost.excluded) == (3, 1)
    same = stats.compare_costs([100, 100], [150, 150], np.array(["a", "b"], dtype=object))
    assert same.ratio == pytest.approx(1.5)
    # a ratio exactly constant over documents has no t interval; the sign test speaks instead
    assert math.isnan(same.ratio_interval.low) and same.ratio_test.p_above(0.0) == pytest.approx(1 / 4)


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
    # 4 answerable questions, 3 right; 5 answers other than "Not answerable": R 3/4, P 3/5 -> 2/3
    scores = [1, 1, 1, 0, 0]
    answerable = [1, 1, 1, 1, 0]
    assert stats.generalised_f1(scores, answerable, [1, 1, 1, 1, 1]) == pytest.approx(2 / 3)
    assert stats.generalised_f1([0] * 5, answerable, [1] * 5) == 0.0
    # nothing answered: precision undefined, 0 as the official fallback
    assert stats.generalised_f1(scores, answerable, [0] * 5) == 0.0
    numerator, denominator = stats.f1_parts(scores, answerable, [1] * 5)
    assert numerator.sum() / denominator.sum() == pytest.approx(2 / 3)  # F1 = 2S / (NA + NP)


def test_constant_paired_difference_has_a_point_interval() -> None:
    rng = np.random.default_rng(1)
    a = rng.random(40)
    docs = np.repeat(np.arange(10), 4)
    result = stats.mean_t(a + 0.25 - a, docs)
    assert result.estimate == pytest.approx(0.25) and result.se == 0.0
    # No variation between documents: no t interval, and the exact sign test's p (all 10 documents
    # on one side: 2 / 2^10), never 0.
    assert math.isnan(result.interval.low) and result.interval.method == "none"
    assert result.p_two_sided(0.25) == 1.0 and result.p_two_sided(0.0) == pytest.approx(2 / 2**10)
    assert result.p_above(0.0) == pytest.approx(1 / 2**10) and result.p_below(0.0) == 1.0


def test_cr3_is_close_to_cr1_with_many_documents_and_wider_with_few() -> None:
    rng = np.random.default_rng(4)
    docs = np.repeat(np.arange(120), 8)
    x = (rng.random(960) < 0.4 + 0.2 * rng.random(120)[docs]).astype(float)
    assert stats.mean_t(x, docs).se == pytest.approx(stats.clustered_se(x, docs), rel=0.02)
    few = np.repeat(np.arange(6), 8)
    y = x[:48]
    assert stats.mean_t(y, few).se > stats.clustered_se(y, few)


def test_ratio_t_is_the_ratio_of_sums_with_a_delta_method_se() -> None:
    scores = np.array([1, 0, 1, 0, 1, 1, 0, 0.6])
    answerable = np.array([1, 1, 1, 1, 0, 1, 0, 1.0])
    answered = np.array([1, 1, 1, 0, 1, 1, 1, 1.0])
    docs = ["a", "a", "b", "b", "c", "c", "d", "d"]
    numerator, denominator = stats.f1_parts(scores, answerable, answered)
    result = stats.ratio_t(numerator, denominator, docs)
    assert result.estimate == pytest.approx(stats.generalised_f1(scores, answerable, answered))
    # by hand: per-document sums of (num - R den), each over (1 - h_c), h_c its share of den
    r = numerator.sum() / denominator.sum()
    codes = np.repeat(np.arange(4), 2)
    u = np.bincount(codes, weights=numerator - r * denominator)
    h = np.bincount(codes, weights=denominator) / denominator.sum()
    assert result.se == pytest.approx(math.sqrt(np.sum(u**2 / (1 - h) ** 2)) / denominator.sum())
    assert result.interval.low <= result.estimate <= result.interval.high


def test_ratio_difference_of_identical_arms_is_zero_with_no_spread() -> None:
    num = np.array([2.0, 0, 2, 2, 0, 2])
    den = np.array([2.0, 1, 2, 2, 2, 1])
    result = stats.ratio_difference_t(num, den, num, den, ["a", "a", "b", "b", "c", "c"])
    assert result.estimate == 0.0 and result.se == 0.0 and result.p_two_sided(0.0) == 1.0
    assert math.isnan(result.interval.low)  # not the degenerate [+0.0, +0.0] of issue 13 #11


def test_cluster_t_interval_covers_the_truth_at_about_the_nominal_rate() -> None:
    """Seeded simulation: 40 documents x 5 questions with document effects, true accuracy 0.5.
    (The full calibration, with paired arms, F1, costs and the gate, is ``docab calibrate``.)"""
    rng = np.random.default_rng(11)
    docs = np.repeat(np.arange(40), 5)
    covered = 0
    simulations = 400
    for _ in range(simulations):
        effect = rng.normal(0, 0.15, 40)[docs]
        x = (rng.random(200) < 0.5 + effect).astype(float)
        interval = stats.mean_t(x, docs).interval
        covered += interval.low <= 0.5 <= interval.high
    assert 0.92 <= covered / simulations <= 0.98


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
    result = stats.paired_analysis(data)
    assert result.n == 180 and result.clusters == 30
    assert result.accuracy_difference.estimate == pytest.approx(result.accuracy_b - result.accuracy_a)
    assert result.accuracy_difference.interval.low > 0  # b is never worse, often better
    assert result.mcnemar.b == 0 and result.mcnemar.c > 0 and result.mcnemar.p_value < 0.01
    clustered = result.clustered_mcnemar
    assert (clustered.b, clustered.c) == (result.mcnemar.b, result.mcnemar.c) and clustered.p_value < 0.01
    assert result.tokens.ratio == pytest.approx(1.5)
    assert math.isnan(result.tokens.ratio_interval.low)  # exactly 1.5 everywhere: no spread, no t interval
    assert result.tokens.ratio_test.p_above(0.0) == pytest.approx(2.0**-30)
    assert result.latency.difference.estimate == pytest.approx(2.0)
    assert result.latency.a.median == 10.0 and result.latency.b.p90 == 12.0
    assert result.f1_difference.estimate == pytest.approx(result.f1_b - result.f1_a)
    answerable = data.answerable > 0
    assert result.answerable == int(answerable.sum())
    assert result.answerable_accuracy_b - result.answerable_accuracy_a == pytest.approx(
        result.answerable_difference.estimate
    )
    assert 0 < result.mde < 1 and result.mde == max(result.mde_planned, result.mde_observed)
    json_ready = paired_results(result)
    assert json_ready.accuracy.difference.method == "cluster-t-cr3"
    assert json_ready.mde.resolvable == pytest.approx(result.mde)


def test_paired_analysis_ignores_missing_costs_pairwise() -> None:
    data = make_paired()
    tokens_b = data.tokens_b.copy()
    tokens_b[:10] = np.nan
    result = stats.paired_analysis(PairedData(**{**data.__dict__, "tokens_b": tokens_b}))
    assert result.tokens.a.n == data.n - 10 and result.tokens.pairs == data.n - 10


def test_paired_data_subset_keeps_alignment() -> None:
    data = make_paired(n_docs=3, per_doc=2)
    part = data.subset(data.clusters == "doc1")
    assert part.n == 2 and set(part.clusters) == {"doc1"}
    assert (part.score_a == data.score_a[2:4]).all()


def test_identical_arms_state_the_mde_on_the_rule_of_three_bound_never_below_the_plan() -> None:
    data = make_paired(n_docs=10, per_doc=3)
    same = stats.paired_analysis(PairedData(**{**data.__dict__, "score_b": data.score_a}))
    # t quantiles on 10 documents - 1 degrees of freedom (equal documents: no size spread)
    q = sps.t.ppf(0.975, 9) + sps.t.ppf(0.8, 9)
    # No discordant pair: Var(d) is bounded by 3/n; the design effect uses the planning ICC 0.1.
    assert same.mde_bounded
    assert same.mde_observed == pytest.approx(q * math.sqrt((3 / 30) * (1 + 2 * 0.1) / 30))
    # The claim is never finer than the plan's 30 % discordance figure.
    assert same.mde_planned == pytest.approx(stats.PlanningAssumptions().mde(30, 3.0, documents=10))
    assert same.mde == max(same.mde_planned, same.mde_observed)
    assert paired_results(same).mde.bounded is True
    assert not stats.paired_analysis(data).mde_bounded


def test_near_identical_arms_never_claim_finer_resolution_than_planned() -> None:
    # Two deterministic arms that differ on one question out of 652: the run's own variance is tiny.
    docs = np.repeat([f"d{i}" for i in range(80)], 9)[:652]
    a = (np.arange(652) % 3 == 0).astype(float)
    b = a.copy()
    b[5] = 1 - b[5]
    data = PairedData(docs, a, b, np.ones(652), np.ones(652), np.ones(652), *[np.ones(652)] * 4)
    result = stats.paired_analysis(data)
    assert result.mde_observed < 0.02  # what the old report claimed: "1.1 points resolvable"
    assert result.mde == pytest.approx(result.mde_planned) and result.mde > 0.05


def test_a_constant_nonzero_difference_states_the_mde_on_the_mean_squared_difference() -> None:
    from docab.report.comparisons import mde_statement

    data = make_paired(n_docs=10, per_doc=3)
    all_improved = PairedData(**{**data.__dict__, "score_a": np.zeros(30), "score_b": np.ones(30)})
    result = stats.paired_analysis(all_improved)
    z = 1.959963984540054 + 0.8416212335729143
    # Var(d) is 0 but not because nothing changed: it is bounded by mean(d^2) = 1, not by 3/n.
    assert result.mde_bounded and result.mde >= z * math.sqrt(1 / 30)
    assert "changed by the same amount" in mde_statement(result)
    assert "no question's score differed" not in mde_statement(result)
    few = PairedData(
        **{**make_paired(n_docs=2, per_doc=2).__dict__, "score_a": np.zeros(4), "score_b": np.ones(4)}
    )
    assert mde_statement(stats.paired_analysis(few)).startswith(
        "Differences in accuracy of any size are not resolvable with this run"
    )


def test_one_document_gives_no_mde_number() -> None:
    result = stats.paired_analysis(make_paired(n_docs=1, per_doc=5))
    assert math.isnan(result.mde) and paired_results(result).mde.observed is None


def test_three_documents_all_lost_are_not_certainty() -> None:
    """Review finding: B losing the one question of each of 3 documents has SE 0; the report said
    p < 0.001 and the gate failed. The exact sign test gives 0.25, as plain McNemar does."""
    docs = ["d1", "d2", "d3"]
    result = stats.paired_analysis(
        PairedData(
            np.array(docs, dtype=object), np.ones(3), np.zeros(3), *[np.ones(3)] * 3, *[np.ones(3)] * 4
        )
    )
    assert result.accuracy_difference.estimate == -1.0
    assert result.accuracy_difference.p_two_sided(0.0) == pytest.approx(0.25)
    assert result.clustered_mcnemar.p_value == pytest.approx(0.25)
    assert result.mcnemar.p_value == pytest.approx(0.25)


def test_one_document_gives_an_arm_no_interval() -> None:
    """Review finding: one document fell back to plain Clopper-Pearson, narrower than two documents'."""
    x = [1.0] * 10 + [0.0] * 2
    assert stats.proportion_interval(x, ["d"] * 12).method == "none"
    two = stats.proportion_interval(x, ["d"] * 6 + ["e"] * 6)
    assert two.method == "korn-graubard" and 0 <= two.low < two.high <= 1


def test_the_planned_mde_counts_unequal_documents_and_few_degrees_of_freedom() -> None:
    plan = stats.PlanningAssumptions()
    equal = plan.mde(240, 8.0)
    unequal = plan.mde(240, 8.0, size_cv=0.8)
    few = plan.mde(240, 8.0, documents=30)
    assert unequal > equal and few > equal
    # DE = 1 + ((1 + CV^2) m - 1) ICC, quantiles on documents - 1 degrees of freedom
    de = 1 + ((1 + 0.8**2) * 8 - 1) * 0.1
    q = sps.t.ppf(0.975, 29) + sps.t.ppf(0.8, 29)
    assert plan.mde(240, 8.0, size_cv=0.8, documents=30) == pytest.approx(q * math.sqrt(0.3 * de / 240))
