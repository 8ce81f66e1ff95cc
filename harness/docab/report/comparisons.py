"""The paired A/B comparisons of two arms on their common questions, and what a run can resolve."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from docab.report import prompt_cache, schema, stats
from docab.report.arms import as_spread, difference, sign_flip_data, spread
from docab.report.outcomes import QuestionOutcome

CALIBRATED_FROM_DOCUMENTS = 30  # the smallest size docab calibrate's table covers


def paired_data(
    a: Mapping[str, QuestionOutcome], b: Mapping[str, QuestionOutcome], qids: Sequence[str]
) -> stats.PairedData:
    def column(side: Mapping[str, QuestionOutcome], attribute: str) -> np.ndarray:
        return np.array([float(getattr(side[q], attribute)) for q in qids])

    return stats.PairedData(
        clusters=np.array([a[q].doc_id for q in qids], dtype=object),
        score_a=column(a, "score"),
        score_b=column(b, "score"),
        answerable=np.array([float(a[q].answerable) for q in qids]),
        answered_a=column(a, "answered"),
        answered_b=column(b, "answered"),
        tokens_a=column(a, "tokens"),
        tokens_b=column(b, "tokens"),
        latency_a=column(a, "wall_time_s"),
        latency_b=column(b, "wall_time_s"),
    )


def paired_cost(
    a: Mapping[str, QuestionOutcome], b: Mapping[str, QuestionOutcome], qids: Sequence[str]
) -> schema.CostComparison | None:
    """US dollars per question of both arms on the paired questions, with the B/A ratio and its
    cluster-robust interval; None when a question's cost is unknown in either arm."""
    cost_a = np.array([a[q].cost_usd for q in qids])
    cost_b = np.array([b[q].cost_usd for q in qids])
    if not qids or not (np.isfinite(cost_a).all() and np.isfinite(cost_b).all()):
        return None
    clusters = np.array([a[q].doc_id for q in qids], dtype=object)
    return cost_comparison(stats.compare_costs(cost_a, cost_b, clusters))


def mde_statement(analysis: stats.PairedAnalysis, plan: stats.PlanningAssumptions | None = None) -> str:
    """The sentence the report prints about the finest difference this run resolves: never finer
    than the planned figure, whatever the run's own variance says."""
    plan = plan or stats.PlanningAssumptions()
    if analysis.clusters < 2:
        return (
            "The minimum detectable effect cannot be estimated from this run: its questions come from one "
            "document, and what varies between documents is unknown."
        )
    resolvable = analysis.mde
    if not math.isfinite(resolvable):
        return "The minimum detectable effect cannot be estimated from this run (too few questions or documents)."
    if analysis.mde_bounded and analysis.accuracy_a == analysis.accuracy_b:
        basis = "no question's score differed between the arms, so the run's own figure rests on the 95 % upper bound of the variance of the differences (rule of three)"
    elif analysis.mde_bounded:
        basis = "every question's score changed by the same amount, so the run's own figure rests on an upper bound of the variance of the differences, the mean squared difference"
    else:
        basis = "from this run's own variance"
    observed = f"{basis}: {analysis.mde_observed * 100:.1f} points"
    context = (
        f"(n = {analysis.n} question{'s' * (analysis.n != 1)} on {analysis.clusters} documents; planned "
        f"{analysis.mde_planned * 100:.1f} points assuming {plan.discordance:.0%} of answers differ between "
        f"arms and ICC {plan.icc:g}; {observed}; {plan.power:.0%} power, two-sided alpha {plan.alpha:g})."
    )
    if resolvable >= 1.0:
        return f"Differences in accuracy of any size are not resolvable with this run {context}"
    return f"Differences in accuracy under {resolvable * 100:.1f} points are not resolvable with this run {context}"


def planning_statement(n: int, assumptions: stats.PlanningAssumptions | None = None) -> str:
    """What a run of n questions can resolve, said before the run (the runner prints it)."""
    plan = assumptions or stats.PlanningAssumptions()
    return (
        f"With {n} questions, accuracy differences under {plan.mde(n) * 100:.1f} points are not resolvable "
        f"(assuming {plan.questions_per_document:g} questions per document, ICC {plan.icc:g}, and "
        f"{plan.discordance:.0%} of answers differing between arms; power {plan.power:.0%}, "
        f"two-sided alpha {plan.alpha:g})."
    )


def paired_results(
    analysis: stats.PairedAnalysis, evidence: schema.EvidenceComparison | None = None
) -> schema.PairedResults:
    """The summary's form of a paired analysis (``evidence`` comes from another set of questions)."""
    return schema.PairedResults(
        questions=analysis.n,
        documents=analysis.clusters,
        accuracy=accuracy_comparison(analysis),
        answerable=schema.AnswerableComparison(
            questions=analysis.answerable,
            a=analysis.answerable_accuracy_a,
            b=analysis.answerable_accuracy_b,
            difference=difference(analysis.answerable_difference),
        ),
        f1=schema.ScoreComparison(
            a=analysis.f1_a, b=analysis.f1_b, difference=difference(analysis.f1_difference)
        ),
        evidence=evidence,
        score_correlation=analysis.score_correlation,
        tokens=cost_comparison(analysis.tokens),
        latency=cost_comparison(analysis.latency),
        icc=analysis.icc,
        mde=schema.DetectableEffect(
            planned=analysis.mde_planned,
            observed=analysis.mde_observed,
            resolvable=analysis.mde,
            bounded=analysis.mde_bounded,
            statement=mde_statement(analysis),
        ),
    )


def accuracy_comparison(analysis: stats.PairedAnalysis) -> schema.AccuracyComparison:
    clustered = analysis.clustered_mcnemar
    t = clustered.test
    return schema.AccuracyComparison(
        a=analysis.accuracy_a,
        b=analysis.accuracy_b,
        difference=difference(analysis.accuracy_difference),
        clustered_mcnemar=schema.ClusteredMcNemar(
            only_a_correct=clustered.b,
            only_b_correct=clustered.c,
            statistic=t.estimate / t.se if t.se and math.isfinite(t.se) else None,
            df=t.df,
            p_value=clustered.p_value,
        ),
        mcnemar_ignoring_documents=schema.McNemar(
            only_a_correct=analysis.mcnemar.b,
            only_b_correct=analysis.mcnemar.c,
            p_value=analysis.mcnemar.p_value,
        ),
    )


def cost_comparison(cost: stats.CostComparison) -> schema.CostComparison:
    return schema.CostComparison(
        a=as_spread(cost.a),
        b=as_spread(cost.b),
        difference=difference(cost.difference),
        ratio=schema.Ratio(
            value=cost.ratio,
            low=cost.ratio_interval.low,
            high=cost.ratio_interval.high,
            method=cost.ratio_interval.method,
            log_se=cost.ratio_test.se,
            df=cost.ratio_test.df,
            documents=cost.ratio_test.clusters,
            sign_flip=sign_flip_data(cost.ratio_test),
            pairs=cost.pairs,
            excluded=cost.excluded,
        ),
        wilcoxon=schema.SignedRank(
            statistic=cost.wilcoxon.statistic, p_value=cost.wilcoxon.p_value, pairs=cost.wilcoxon.n_nonzero
        ),
    )


def compare_arms(
    name_a: str,
    name_b: str,
    a: Mapping[str, QuestionOutcome],
    b: Mapping[str, QuestionOutcome],
) -> schema.Comparison:
    common = [q for q in a if q in b]
    if not common:
        return schema.Comparison(
            a=name_a,
            b=name_b,
            questions_a=len(a),
            questions_b=len(b),
            paired=0,
            note="the arms share no question; nothing to pair",
        )
    analysis = stats.paired_analysis(paired_data(a, b, common))
    evidence = evidence_comparison(a, b, common)
    usd = paired_cost(a, b, common)
    overhead = [b[q].first_call_input - a[q].first_call_input for q in common]
    itt = paired_results(analysis, evidence).model_copy(
        update={
            "cost": usd,
            "prompt_cache": prompt_cache_estimates(a, b, common),
            "tokens_estimated": any(a[q].tokens_estimated or b[q].tokens_estimated for q in common),
        }
    )
    return schema.Comparison(
        a=name_a,
        b=name_b,
        questions_a=len(a),
        questions_b=len(b),
        paired=len(common),
        itt=itt,
        sensitivity=sensitivity(a, b, common),
        first_call_input_difference=spread(x for x in overhead if math.isfinite(x)),
    )


def prompt_cache_estimates(
    a: Mapping[str, QuestionOutcome], b: Mapping[str, QuestionOutcome], common: Sequence[str]
) -> list[schema.PromptCacheEstimate]:
    """The token comparison again, with each provider's prompt caching applied to every agent call
    (estimates: ``docab.report.prompt_cache``)."""
    docs = np.array([a[q].doc_id for q in common], dtype=object)
    found = []
    for name, rule in prompt_cache.PROMPT_CACHE_RULES.items():
        tokens_a = np.array([a[q].tokens_with_cache.get(name, math.nan) for q in common])
        tokens_b = np.array([b[q].tokens_with_cache.get(name, math.nan) for q in common])
        if not (np.isfinite(tokens_a).any() and np.isfinite(tokens_b).any()):
            continue
        found.append(
            schema.PromptCacheEstimate(
                rule=name,
                source=rule.source,
                tokens=cost_comparison(stats.compare_costs(tokens_a, tokens_b, docs)),
            )
        )
    return found


def sensitivity(
    a: Mapping[str, QuestionOutcome], b: Mapping[str, QuestionOutcome], common: Sequence[str]
) -> schema.Sensitivity:
    """The comparison without every pair where either arm did not finish normally."""
    dropped = Counter(status for q in common if (status := a[q].unfinished or b[q].unfinished) is not None)
    kept = [q for q in common if a[q].unfinished is None and b[q].unfinished is None]
    by_status = schema.DroppedStatus(**dropped)
    count = len(common) - len(kept)
    if count and kept:
        analysis = stats.paired_analysis(paired_data(a, b, kept))
        return schema.Sensitivity(
            dropped=count,
            dropped_by_status=by_status,
            paired=len(kept),
            accuracy=accuracy_comparison(analysis),
            f1=schema.ScoreComparison(
                a=analysis.f1_a, b=analysis.f1_b, difference=difference(analysis.f1_difference)
            ),
        )
    if count:
        return schema.Sensitivity(
            dropped=count,
            dropped_by_status=by_status,
            paired=0,
            note="every paired question had an error, timeout or limit in an arm",
        )
    return schema.Sensitivity(
        dropped=0,
        dropped_by_status=by_status,
        paired=len(kept),
        note="no errors, timeouts or limits: identical to intention-to-treat",
    )


def evidence_comparison(
    a: Mapping[str, QuestionOutcome], b: Mapping[str, QuestionOutcome], common: Sequence[str]
) -> schema.EvidenceComparison | None:
    """B's evidence recall and precision against A's on the paired questions that list evidence
    pages, each with its cluster-robust t interval; None when no paired question lists any."""
    with_evidence = [
        q for q in common if math.isfinite(a[q].evidence_recall) and math.isfinite(b[q].evidence_recall)
    ]
    if not with_evidence:
        return None
    docs = np.array([a[q].doc_id for q in with_evidence], dtype=object)

    def column(side: Mapping[str, QuestionOutcome], attribute: str) -> np.ndarray:
        return np.array([float(getattr(side[q], attribute)) for q in with_evidence])

    recall_a, recall_b = column(a, "evidence_recall"), column(b, "evidence_recall")
    read_a, read_b = column(a, "pages_read"), column(b, "pages_read")
    found_a, found_b = column(a, "evidence_found"), column(b, "evidence_found")
    precision = None
    if read_a.sum() > 0 and read_b.sum() > 0:
        gap = stats.ratio_difference_t(found_a, read_a, found_b, read_b, docs)
        precision = schema.ScoreComparison(
            a=float(found_a.sum() / read_a.sum()),
            b=float(found_b.sum() / read_b.sum()),
            difference=difference(gap),
        )
    return schema.EvidenceComparison(
        questions=len(with_evidence),
        recall=schema.ScoreComparison(
            a=float(recall_a.mean()),
            b=float(recall_b.mean()),
            difference=difference(stats.mean_t(recall_b - recall_a, docs)),
        ),
        precision=precision,
    )
