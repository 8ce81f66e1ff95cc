"""The per-arm summary: accuracy, F1, evidence, tokens, cost, prices and extraction, with their intervals."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from docab.log.costs import manifest_prices, record_cost
from docab.log.manifest import Manifest
from docab.log.records import PROSE_FALLBACK, RunRecord
from docab.report import schema, stats
from docab.report.outcomes import QuestionOutcome

FLOOR_LABEL = "offline baseline policy, not a model result"


def is_floor(model: str) -> bool:
    return model.startswith("baseline/")


def arm_order(manifest: Manifest, seen: Sequence[str]) -> list[str]:
    """The arms the manifest lists, in its order, then any others in the order records show them."""
    ordered = [a for a in manifest.arm_names if a in seen]
    return ordered + [a for a in seen if a not in ordered]


def estimate(value: float, interval: stats.Interval) -> schema.Estimate:
    return schema.Estimate(value=value, low=interval.low, high=interval.high, method=interval.method)


def sign_flip_data(test: stats.ClusterT) -> schema.SignFlipData | None:
    flip = test.flip
    if flip is None:
        return None
    return schema.SignFlipData(influence=list(flip.influence), weights=list(flip.weights))


def difference(test: stats.ClusterT) -> schema.Difference:
    return schema.Difference(
        value=test.estimate,
        low=test.interval.low,
        high=test.interval.high,
        method=test.interval.method,
        se=test.se,
        df=test.df,
        p_value=test.p_two_sided(0.0),
        documents=test.clusters,
        sign_flip=sign_flip_data(test),
    )


def ratio_estimate(test: stats.ClusterT) -> schema.Estimate:
    """An arm's ratio figure (F1, evidence precision), clipped to [0, 1]."""
    low, high = test.interval.low, test.interval.high
    return schema.Estimate(
        value=test.estimate,
        low=max(0.0, low) if math.isfinite(low) else None,
        high=min(1.0, high) if math.isfinite(high) else None,
        method=test.interval.method,
    )


def spread(values: Iterable[float]) -> schema.Spread:
    return as_spread(stats.spread(list(values)))


def as_spread(found: stats.Spread) -> schema.Spread:
    return schema.Spread(n=found.n, mean=found.mean, median=found.median, p90=found.p90)


def arm_summary(
    arm: str,
    outcomes: Mapping[str, QuestionOutcome],
    records: Sequence[RunRecord],
    manifest: Manifest,
) -> schema.ArmSummary:
    items = list(outcomes.values())
    docs = np.array([o.doc_id for o in items], dtype=object)
    scores = np.array([o.score for o in items])
    answerable = np.array([float(o.answerable) for o in items])
    answered = np.array([o.answered for o in items])
    models = sorted({r.model for r in records})
    statuses = Counter(r.status for r in records)
    limits = Counter(r.limit_hit for r in records if r.limit_hit)
    usage = [u for r in records for u in r.usage]
    input_total = sum(u.input_total for u in usage)
    roles = sorted({role for o in items for role in o.tokens_by_role})
    tool_names = sorted({n for o in items for n in o.tool_calls_by_name})
    declared = manifest.arm(arm)
    tool_overhead = declared.tool_definition_tokens if declared else None
    f1_numerator, f1_denominator = stats.f1_parts(scores, answerable, answered)
    f1 = stats.ratio_t(f1_numerator, f1_denominator, docs)
    gold_answerable = answerable > 0
    floor = any(is_floor(m) for m in models)
    return schema.ArmSummary(
        arm=arm,
        models=models,
        floor=floor,
        label=FLOOR_LABEL if floor else "",
        records=len(records),
        questions=len(items),
        documents=len(set(docs.tolist())),
        epochs=max((o.epochs for o in items), default=0),
        status=schema.StatusCounts(
            ok=statuses["ok"], error=statuses["error"], timeout=statuses["timeout"], limit=statuses["limit"]
        ),
        limits=dict(limits),
        accuracy=estimate(float(scores.mean()), stats.proportion_interval(scores, docs)),
        answerable_questions=int(gold_answerable.sum()),
        answerable_accuracy=estimate(
            float(scores[gold_answerable].mean()) if gold_answerable.any() else math.nan,
            stats.proportion_interval(scores[gold_answerable], docs[gold_answerable]),
        ),
        f1=ratio_estimate(f1) if f1_denominator.sum() > 0 else estimate(0.0, stats.NO_INTERVAL),
        not_answerable=not_answerable_summary(answered, answerable),
        evidence=evidence_summary([o for o in items if math.isfinite(o.evidence_recall)]),
        tokens=schema.TokenSummary(
            total=spread(o.tokens for o in items),
            by_role={role: spread(o.tokens_by_role.get(role, 0.0) for o in items) for role in roles},
            cache_read_share=sum(u.cache_read for u in usage) / input_total if input_total else None,
            first_call_input=spread(o.first_call_input for o in items),
            tool_definition_tokens=(
                round(tool_overhead)
                if isinstance(tool_overhead, int | float)
                and not isinstance(tool_overhead, bool)
                and math.isfinite(tool_overhead)
                else None
            ),
        ),
        time=schema.TimeSummary(
            wall_s=spread(o.wall_time_s for o in items),
            model_s=spread(o.model_time_s for o in items),
            tool_s=spread(o.tool_time_s for o in items),
        ),
        turns=spread(o.turns for o in items),
        tool_calls=schema.ToolCallSummary(
            per_question=spread(o.tool_calls for o in items),
            by_name={
                name: schema.ToolUse(
                    calls=sum(o.tool_calls_by_name.get(name, 0.0) for o in items),
                    mean_s=_mean_duration(items, name),
                )
                for name in tool_names
            },
            truncated=sum(o.truncations for o in items),
        ),
        retries=sum(r.retries for r in records),
        answer_protocols=dict(Counter(r.answer_protocol for r in records)),
        cost=cost_summary(items, records),
        extraction=extraction_summary(records),
    )


def cost_summary(items: Sequence[QuestionOutcome], records: Sequence[RunRecord]) -> schema.CostSummary:
    """What an arm cost in US dollars: in all, per question, per role, and what caches saved."""
    costs = [record_cost(r) for r in records]
    unpriced = sorted({m for c in costs for m in c.unpriced})
    by_role: dict[str, float] = {}
    for cost in costs:
        for role, usd in cost.by_role.items():
            by_role[role] = by_role.get(role, 0.0) + usd
    saved = sum(c.cached_usd for c in costs)
    total = None if unpriced else sum(c.priced for c in costs)
    return schema.CostSummary(
        total=total,
        per_question=None if unpriced else spread(o.cost_usd for o in items),
        by_role=by_role,
        unpriced=unpriced,
        saved_by_cache=saved,
        uncached_total=None if total is None else total + saved,
    )


def price_rows(records: Iterable[RunRecord], manifest: Manifest) -> list[schema.PriceRow]:
    """The price of every model the records' calls used (cached answers' too), as the run's
    config (manifest) and docab's price table give it."""
    book = manifest_prices(manifest)
    models = sorted(
        {
            u.model
            for r in records
            for u in (*r.usage, *r.cached_tool_usage, *r.cached_model_usage)
            if u.model and (u.total or u.cached_original() is not None)  # a call of no tokens costs 0
        }
    )
    rows = []
    for model in models:
        quote = book.quote(model)
        price = quote.price
        rows.append(
            schema.PriceRow(
                model=model,
                origin=quote.origin,
                input=price.input if price else None,
                cached_input=(price.cached_input if price.cached_input is not None else price.input)
                if price
                else None,
                cache_write=(price.cache_write if price.cache_write is not None else price.input)
                if price
                else None,
                output=price.output if price else None,
                source=price.source if price else "",
                date=price.date if price else "",
                note=price.note if price else "",
            )
        )
    return rows


def extraction_summary(records: Sequence[RunRecord]) -> schema.ExtractionSummary:
    """How the benchmark's answer extraction went in an arm's records (every epoch counted)."""
    return schema.ExtractionSummary(
        of=sum(r.extraction_ran for r in records),
        failed=sum(r.extraction_failed for r in records),
        prose_fallback=sum(r.answer_path == PROSE_FALLBACK for r in records),
    )


EXTRACTION_WARN_SHARE = 0.10  # above this share of extracted answers unparsable, the report warns


def extraction_warnings(arms: Sequence[schema.ArmSummary]) -> list[str]:
    """A loud warning per arm whose answer extraction failed on more than 10 % of its answers:
    a misconfigured extractor looks like a model scoring 0."""
    return [
        f"EXTRACTION FAILED on {arm.extraction.failed} of {arm.extraction.of} answers of arm {arm.arm} "
        f'({arm.extraction.failed_share:.0%}): they score 0 as "Failed to extract"; check the extractor '
        "model ([answer] extractor) and its replies in the transcripts before reading the scores"
        for arm in arms
        if arm.extraction.of and arm.extraction.failed_share > EXTRACTION_WARN_SHARE
    ]


def not_answerable_summary(answered: np.ndarray, answerable: np.ndarray) -> schema.NotAnswerableSummary:
    """How often an arm answered "Not answerable", how often that was right, and how many of the
    unanswerable questions it recognised (per question, epochs averaged)."""
    said = 1.0 - answered
    right = float(np.sum(said * (1.0 - answerable)))
    unanswerable = float(np.sum(1.0 - answerable))
    return schema.NotAnswerableSummary(
        answered=float(said.mean()) if said.size else 0.0,
        correct=right / float(said.sum()) if said.sum() > 0 else None,
        found=right / unanswerable if unanswerable > 0 else None,
    )


def evidence_summary(items: Sequence[QuestionOutcome]) -> schema.EvidenceSummary | None:
    """Evidence recall and precision over the questions listing evidence pages, and what an
    evidence page found cost in tokens; None when no question lists any."""
    if not items:
        return None
    docs = np.array([o.doc_id for o in items], dtype=object)
    recall = np.array([o.evidence_recall for o in items])
    seen = np.array([o.evidence_recall_seen for o in items])
    read = np.array([o.pages_read for o in items])
    found = np.array([o.evidence_found for o in items])
    tokens = np.array([o.tokens for o in items])
    precision = stats.ratio_t(found, read, docs)
    return schema.EvidenceSummary(
        questions=len(items),
        recall=estimate(float(recall.mean()), stats.proportion_interval(recall, docs)),
        recall_seen=(
            estimate(float(seen.mean()), stats.proportion_interval(seen, docs))
            if np.isfinite(seen).all()
            else None
        ),
        precision=ratio_estimate(precision) if read.sum() > 0 else None,
        tokens_per_evidence_page=float(tokens.sum() / found.sum()) if found.sum() > 0 else None,
    )


def _mean_duration(items: Sequence[QuestionOutcome], name: str) -> float | None:
    calls = sum(o.tool_calls_by_name.get(name, 0.0) for o in items)
    seconds = sum(o.tool_seconds_by_name.get(name, 0.0) for o in items)
    return seconds / calls if calls else None
