"""One arm's result on one question, epochs averaged (:class:`QuestionOutcome`), from its records."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from docab.log.costs import record_cost
from docab.log.records import RunRecord
from docab.pricing.cost import SampleCost
from docab.report import prompt_cache

NOT_ANSWERABLE = "Not answerable"

NOT_FINISHED = ("error", "timeout", "limit")  # statuses dropped from both arms in the sensitivity view


@dataclass(frozen=True)
class QuestionOutcome:
    """An arm's result on one question, epochs averaged."""

    arm: str
    qid: str
    doc_id: str
    model: str
    epochs: int
    score: float
    answered: float  # share of epochs whose answer was not exactly "Not answerable"
    answerable: bool
    statuses: tuple[str, ...]
    tokens: float
    tokens_by_role: dict[str, float]
    input_total: float
    cache_read: float
    first_call_input: float  # input tokens of the first agent call: system + tools + question
    wall_time_s: float
    model_time_s: float
    tool_time_s: float
    turns: float
    tool_calls: float
    tool_calls_by_name: dict[str, float]
    tool_seconds_by_name: dict[str, float]
    truncations: float
    retries: float
    evidence_recall: float  # NaN when the question lists no evidence page; pages read calls opened
    pages_read: float  # pages read calls showed most of (epochs averaged)
    evidence_found: float  # of those, pages listed as evidence (epochs averaged)
    evidence_pages: tuple[int, ...]
    evidence_sources: tuple[str, ...]
    doc_type: str
    answer_format: str
    answer_protocols: tuple[str, ...]
    limits: tuple[str, ...]
    errors: tuple[str, ...] = field(default=(), compare=False)
    # As evidence_recall, counting pages search results showed most of too (NaN without evidence)
    evidence_recall_seen: float = math.nan
    # Input-equivalent tokens under each provider's prompt caching (docab.report.prompt_cache)
    tokens_with_cache: dict[str, float] = field(default_factory=dict, compare=False)
    tokens_estimated: bool = False  # the usage is the offline policy's estimate, not a provider's
    cost_usd: float = math.nan  # US dollars, every role (docab.pricing); NaN when a price is unknown
    cost_saved_usd: float = 0.0  # what answers served from a cache cost when first computed

    @property
    def unfinished(self) -> str | None:
        """The first status other than ok among the epochs (error, timeout, limit), or None."""
        return next((s for s in NOT_FINISHED if s in self.statuses), None)


def evidence_recall(record: RunRecord) -> float:
    """Share of the gold evidence pages that read calls opened (NaN without evidence pages)."""
    gold = set(record.evidence_pages)
    if not gold:
        return math.nan
    return len(gold & set(record.pages_read)) / len(gold)


def evidence_recall_seen(record: RunRecord) -> float:
    """Share of the gold evidence pages shown most of by any tool, search results included."""
    gold = set(record.evidence_pages)
    if not gold:
        return math.nan
    return len(gold & set(record.pages_seen_or_read)) / len(gold)


def _mean(values: Iterable[float]) -> float:
    items = [v for v in values if not math.isnan(v)]
    return sum(items) / len(items) if items else math.nan


def _tokens_of(role: str) -> Callable[[RunRecord], float]:
    return lambda record: record.tokens(role)


def _calls_of(tool: str) -> Callable[[RunRecord], float]:
    return lambda record: sum(call.name == tool for call in record.tool_calls)


def _seconds_of(tool: str) -> Callable[[RunRecord], float]:
    return lambda record: sum(call.duration_s for call in record.tool_calls if call.name == tool)


def summarise_question(records: Sequence[RunRecord]) -> QuestionOutcome:
    first = records[0]
    count = len(records)

    def per_epoch_mean(value: Callable[[RunRecord], float]) -> float:
        return sum(value(r) for r in records) / count

    roles = sorted({u.role for r in records for u in r.usage})
    names = sorted({c.name for r in records for c in r.tool_calls})
    return QuestionOutcome(
        arm=first.arm,
        qid=first.qid,
        doc_id=first.doc_id,
        model=first.model,
        epochs=count,
        score=per_epoch_mean(lambda r: r.score if r.status == "ok" else 0.0),
        answered=per_epoch_mean(lambda r: float(r.extracted_answer != NOT_ANSWERABLE)),
        answerable=first.gold != NOT_ANSWERABLE,
        statuses=tuple(r.status for r in records),
        tokens=per_epoch_mean(lambda r: r.tokens()),
        tokens_by_role={role: per_epoch_mean(_tokens_of(role)) for role in roles},
        input_total=per_epoch_mean(lambda r: sum(u.input_total for u in r.usage)),
        cache_read=per_epoch_mean(lambda r: sum(u.cache_read for u in r.usage)),
        first_call_input=_mean(
            next((u.input_total for u in r.usage if u.role == "agent"), math.nan) for r in records
        ),
        wall_time_s=per_epoch_mean(lambda r: r.wall_time_s),
        model_time_s=per_epoch_mean(lambda r: r.model_time_s),
        tool_time_s=per_epoch_mean(lambda r: r.tool_time_s),
        turns=per_epoch_mean(lambda r: r.turns),
        tool_calls=per_epoch_mean(lambda r: len(r.tool_calls)),
        tool_calls_by_name={n: per_epoch_mean(_calls_of(n)) for n in names},
        tool_seconds_by_name={n: per_epoch_mean(_seconds_of(n)) for n in names},
        truncations=per_epoch_mean(lambda r: sum(c.truncated for c in r.tool_calls)),
        retries=per_epoch_mean(lambda r: r.retries),
        evidence_recall=_mean(evidence_recall(r) for r in records),
        pages_read=per_epoch_mean(lambda r: len(set(r.pages_read))),
        evidence_found=per_epoch_mean(lambda r: len(set(r.pages_read) & set(r.evidence_pages))),
        evidence_pages=tuple(first.evidence_pages),
        evidence_sources=tuple(first.evidence_sources),
        doc_type=first.doc_type,
        answer_format=first.answer_format,
        answer_protocols=tuple(sorted({r.answer_protocol for r in records})),
        limits=tuple(r.limit_hit for r in records if r.limit_hit),
        errors=tuple(e for r in records for e in r.errors),
        evidence_recall_seen=_mean(evidence_recall_seen(r) for r in records),
        tokens_with_cache={
            name: sum(prompt_cache.billed_with_cache(r.usage, rule) for r in records) / count
            for name, rule in prompt_cache.PROMPT_CACHE_RULES.items()
        },
        tokens_estimated=any(prompt_cache.is_estimated(r.usage) for r in records),
        cost_usd=per_epoch_mean(lambda r: _usd(record_cost(r))),
        cost_saved_usd=per_epoch_mean(lambda r: record_cost(r).cached_usd),
    )


def _usd(cost: SampleCost) -> float:
    return math.nan if cost.total is None else cost.total


def question_outcomes(records: Iterable[RunRecord]) -> dict[str, dict[str, QuestionOutcome]]:
    """arm -> qid -> outcome, arms and questions in first-seen order."""
    grouped: dict[str, dict[str, list[RunRecord]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        grouped[record.arm][record.qid].append(record)
    return {
        arm: {qid: summarise_question(sorted(rs, key=lambda r: r.epoch)) for qid, rs in by_q.items()}
        for arm, by_q in grouped.items()
    }
