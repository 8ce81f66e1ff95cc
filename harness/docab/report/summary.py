"""From a run's records to the conclusions a researcher can defend.

``load_run(RUN_DIR)`` reads ``manifest.json`` and ``records.jsonl`` (tolerating the torn last line
of a killed run); ``build_report(run)`` turns the records into a summary: per arm, the paired A/B
comparisons and the breakdowns, as a typed :class:`docab.report.schema.Summary` (written into the
run as ``summary.json``); ``docab.report.render`` renders it as a terminal table or markdown, and
``docab.report.plots`` draws it.

Conventions, from ../shared/specs/harness.md and mmlongbench.md:

- intention-to-treat: every record counts, errors, timeouts and limits with score 0; the
  sensitivity view drops a question from *both* arms when either arm did not finish it normally
  (status error, timeout or limit), and says how many of each;
- epochs are averaged per question before anything else; documents are the clustering unit;
- Acc is the mean score, reported beside the accuracy on answerable questions alone and the
  "always Not answerable" reference row (about a fifth of MMLongBench-Doc is unanswerable, so a
  policy that never answers beats a weak one); F1 is the generalised F1 (precision over
  predictions other than exactly "Not answerable"); evidence recall is the share of a question's
  gold evidence pages the agent read, precision the share of the pages read that are evidence;
- every interval is the cluster-robust t of :mod:`docab.report.stats`, with documents as clusters;
  breakdown cells are unadjusted for their number, and say so;
- tokens are per question, all roles (agent, tool-side, extractor) unless a role is named, and so
  are US dollars (``docab.pricing``: a record's cost as written, or its usage priced by the table);
  a model without a known price makes a cost unknown (None), never 0;
- a run of an offline baseline policy (``baseline/...``) is labelled a floor everywhere.

The summary's schema (``summary.json``, versioned) is :mod:`docab.report.schema`: this module is
its one writer.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from docab.interchange import is_inspect_source
from docab.log.costs import manifest_prices, record_cost
from docab.log.manifest import ArmManifest, Manifest, ManifestError, ModelsInfo, load_manifest
from docab.log.records import PROSE_FALLBACK, RunRecord
from docab.pricing.cost import SampleCost
from docab.report import prompt_cache, schema, signflip, stats

NOT_ANSWERABLE = "Not answerable"
FLOOR_LABEL = "offline baseline policy, not a model result"
NOT_FINISHED = ("error", "timeout", "limit")  # statuses dropped from both arms in the sensitivity view
# A breakdown cell spanning fewer documents gets no interval: below 6, no sign pattern of the
# sign-flip test (docab.report.signflip) reaches p < 0.05.
MIN_DOCUMENTS_FOR_INTERVAL = signflip.MIN_DOCUMENTS_FOR_INTERVAL
CALIBRATED_FROM_DOCUMENTS = 30  # the smallest size docab calibrate's table covers


class ReportError(Exception):
    """A run that cannot be reported; the message says what is wrong and what to do."""


# -- loading ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunData:
    sources: tuple[Path, ...]
    manifest: Manifest  # an empty Manifest() when the run has none (the records alone are reported)
    records: tuple[RunRecord, ...]
    warnings: tuple[str, ...] = ()

    @property
    def arms(self) -> list[str]:
        """Arm names: the manifest's order, then any others in the order records show them."""
        seen = list(dict.fromkeys(r.arm for r in self.records))
        return arm_order(self.manifest, seen)


def read_records(path: Path) -> tuple[list[RunRecord], list[str]]:
    """Records from one ``records.jsonl``; unreadable lines are skipped and reported, never fatal."""
    from docab.log.store import StoreError, read_records_reporting

    try:
        return read_records_reporting(path)
    except StoreError as exc:
        raise ReportError(str(exc)) from None


def load_run(*run_dirs: Path | str, reruns_as_epochs: bool = False) -> RunData:
    """One run, or several merged; or Inspect eval logs, one arm each (:func:`load_inspect_logs`).
    Shards (disjoint questions) simply unite. A record key seen
    twice keeps its last copy (a resumed or repeated shard), unless ``reruns_as_epochs``: then each
    folder's records of a question already seen in an earlier folder become further epochs of it,
    so reruns of one config average like ``epochs = k`` would."""
    if not run_dirs:
        raise ReportError("no run folder given")
    sources = tuple(Path(d) for d in run_dirs)
    inspect_sources = [s for s in sources if is_inspect_source(s)]
    if inspect_sources:
        if len(inspect_sources) != len(sources):
            raise ReportError("give docab run folders or Inspect logs, not both")
        return load_inspect_logs(sources)
    manifest: Manifest | None = None
    records: dict[tuple[str, str, int], RunRecord] = {}
    warnings: list[str] = []
    duplicates = 0
    for folder in sources:
        if not folder.is_dir():
            raise ReportError(f"{folder} is not a run folder (expected results/<run-id>/ with records.jsonl)")
        path = folder / "records.jsonl"
        if not path.is_file():
            raise ReportError(f"{folder} has no records.jsonl yet; has the run written any sample?")
        manifest_path = folder / "manifest.json"
        if manifest_path.is_file():
            try:
                loaded = load_manifest(manifest_path)
                manifest = manifest or loaded
            except ManifestError as exc:
                warnings.append(f"{manifest_path} is unreadable ({exc}); reporting without it")
        else:
            warnings.append(f"{folder} has no manifest.json; reporting the records alone")
        found, problems = read_records(path)
        warnings += [f"{folder.name}/{p}" for p in problems]
        if reruns_as_epochs:
            found = _as_further_epochs(found, records.values())
        for record in found:
            earlier = records.get(record.key)
            # A newer record of a sample that errored is a retry (docab run --retry-errors), not a duplicate.
            duplicates += earlier is not None and earlier.status not in ("error", "timeout")
            records[record.key] = record
    if duplicates:
        warnings.append(f"{duplicates} record(s) appeared more than once; the last copy of each was kept")
    if manifest is not None and manifest.merged_from:
        from docab.log.merge import merged_coverage

        coverage = merged_coverage(manifest)
        if not coverage.complete:
            warnings.append(f"a partial run (docab merge --allow-partial): {coverage.describe()}")
    if not records:
        raise ReportError(f"no run records in {', '.join(str(s) for s in sources)}")
    return RunData(sources, manifest or Manifest(), tuple(records.values()), tuple(warnings))


def load_inspect_logs(sources: Sequence[Path]) -> RunData:
    """Inspect eval logs as one run, one arm per log (``docab export --format inspect`` writes them, and
    so does an ``inspect eval`` of the docab task): ``docab.interchange.inspect_files.read_logs``."""
    from docab.errors import DocabError
    from docab.interchange import require_inspect_ai

    try:
        require_inspect_ai("reading Inspect logs")
        from docab.interchange.inspect_files import read_logs

        logs = read_logs(sources)
    except DocabError as exc:
        raise ReportError(str(exc)) from None
    if not logs.records:
        raise ReportError(f"no samples in the Inspect logs {', '.join(str(s) for s in sources)}")
    manifest = Manifest(
        run_id=logs.run_id,
        arms=logs.arm_configs or tuple(ArmManifest(name=arm) for arm in logs.arms),
        models=ModelsInfo(agent=logs.models[0] if len(logs.models) == 1 else ", ".join(logs.models)),
    )
    return RunData(tuple(sources), manifest, logs.records, logs.warnings)


def _as_further_epochs(found: Sequence[RunRecord], earlier: Iterable[RunRecord]) -> list[RunRecord]:
    """``found`` with the epochs of questions already in ``earlier`` numbered after theirs."""
    last: dict[tuple[str, str], int] = {}
    for record in earlier:
        key = (record.arm, record.qid)
        last[key] = max(last.get(key, -1), record.epoch)
    return [
        dataclasses.replace(r, epoch=r.epoch + last[(r.arm, r.qid)] + 1) if (r.arm, r.qid) in last else r
        for r in found
    ]


# -- one question, one arm --------------------------------------------------------------------------


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


# -- per-arm summary ----------------------------------------------------------------------------------


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
    return _spread(stats.spread(list(values)))


def _spread(found: stats.Spread) -> schema.Spread:
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


# -- paired comparisons -------------------------------------------------------------------------------


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
        a=_spread(cost.a),
        b=_spread(cost.b),
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


# -- breakdowns -----------------------------------------------------------------------------------------


DIMENSIONS: tuple[schema.Dimension, ...] = (
    "evidence source",
    "evidence pages",
    "document type",
    "answer format",
    "answer path",
)


def evidence_pages_groups(pages: int, answerable: bool) -> list[str]:
    """single-page (exactly one evidence page), cross-page (answerable, any other count) and/or
    unanswerable: the paper's split of questions by their evidence pages."""
    groups = ["single-page"] if pages == 1 else ["cross-page"] if answerable else []
    return groups + ([] if answerable else ["unanswerable"])


def question_groups(outcome: QuestionOutcome) -> list[tuple[schema.Dimension, str]]:
    """The (dimension, group) cells a question counts in; a question may count in several."""
    groups: list[tuple[schema.Dimension, str]] = [
        ("evidence source", s) for s in outcome.evidence_sources
    ] or [("evidence source", "(none)")]
    groups += [
        ("evidence pages", g) for g in evidence_pages_groups(len(outcome.evidence_pages), outcome.answerable)
    ]
    groups.append(("document type", outcome.doc_type or "(unknown)"))
    groups.append(("answer format", outcome.answer_format or "(unknown)"))
    return groups


def _mean_or_none(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def breakdowns(
    arms: Sequence[str],
    outcomes: Mapping[str, Mapping[str, QuestionOutcome]],
    reference: str,
) -> list[schema.Breakdown]:
    cells: dict[tuple[schema.Dimension, str], set[str]] = defaultdict(set)
    for arm in arms:
        for outcome in outcomes[arm].values():
            for cell in question_groups(outcome):
                cells[cell].add(outcome.qid)
    rows: list[schema.Breakdown] = []
    for (dimension, group), qids in sorted(
        cells.items(), key=lambda item: (DIMENSIONS.index(item[0][0]), item[0][1])
    ):
        by_arm: dict[str, schema.BreakdownCell] = {}
        for arm in arms:
            scores = [outcomes[arm][q].score for q in qids if q in outcomes[arm]]
            by_arm[arm] = schema.BreakdownCell(n=len(scores), accuracy=_mean_or_none(scores))
        differences: dict[str, schema.BreakdownDifference] = {}
        base = outcomes[reference]
        for arm in arms:
            if arm == reference:
                continue
            common = sorted(q for q in qids if q in base and q in outcomes[arm])
            if not common:
                continue
            differences[arm] = breakdown_difference(
                [base[q].doc_id for q in common], [outcomes[arm][q].score - base[q].score for q in common]
            )
        rows.append(schema.Breakdown(dimension=dimension, group=group, arms=by_arm, differences=differences))
    # The answer path is each arm's own (tool-submitted or extracted), so it gets no paired difference.
    paths: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for arm in arms:
        for outcome in outcomes[arm].values():
            for protocol in outcome.answer_protocols:
                paths[protocol][arm].append(outcome.score)
    for protocol, per_arm in sorted(paths.items()):
        rows.append(
            schema.Breakdown(
                dimension="answer path",
                group=protocol,
                arms={
                    arm: schema.BreakdownCell(n=len(scores), accuracy=_mean_or_none(scores))
                    for arm, scores in per_arm.items()
                },
                differences={},
            )
        )
    return rows


def breakdown_difference(documents: Sequence[str], gaps: Sequence[float]) -> schema.BreakdownDifference:
    """B − A on one cell: an interval only when the cell spans enough documents for one."""
    docs = np.array(documents, dtype=object)
    count = len(set(documents))
    value = float(np.mean(gaps))
    if count < MIN_DOCUMENTS_FOR_INTERVAL:
        return schema.BreakdownDifference(
            n=len(gaps),
            documents=count,
            value=value,
            note=f"too small for an interval ({count} document{'s' * (count != 1)}; "
            f"{MIN_DOCUMENTS_FOR_INTERVAL} needed)",
        )
    gap = stats.mean_t(gaps, docs)
    return schema.BreakdownDifference(
        n=len(gaps),
        documents=count,
        value=value,
        low=gap.interval.low,
        high=gap.interval.high,
        method=gap.interval.method,
    )


def breakdown_note(rows: Sequence[schema.Breakdown]) -> str:
    cells = sum(len(row.differences) for row in rows)
    if not cells:
        return ""
    return (
        f"{cells} paired difference{'s' * (cells != 1)} over {len(rows)} group{'s' * (len(rows) != 1)}: "
        "each interval is unadjusted for the number of cells, so about 1 in 20 excludes zero by chance; "
        f"cells spanning fewer than {MIN_DOCUMENTS_FOR_INTERVAL} documents get none."
    )


def reference_rows(outcomes: Mapping[str, Mapping[str, QuestionOutcome]]) -> list[schema.ReferenceRow]:
    """Policies that are not arms, on the run's questions: what answering "Not answerable" to every
    question scores (the official scorer gives it 1 on unanswerable gold, 0 elsewhere, and F1 0)."""
    questions: dict[str, bool] = {}
    for by_question in outcomes.values():
        for qid, outcome in by_question.items():
            questions.setdefault(qid, outcome.answerable)
    if not questions:
        return []
    unanswerable = sum(not answerable for answerable in questions.values())
    answerable = len(questions) - unanswerable
    return [
        schema.ReferenceRow(
            name="always Not answerable",
            description='answers "Not answerable" to every question: an arm below it has learnt nothing',
            questions=len(questions),
            accuracy=unanswerable / len(questions),
            answerable_accuracy=0.0 if answerable else None,
            f1=0.0,
        )
    ]


# -- the report -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    summary: schema.Summary  # summary.json
    outcomes: dict[str, dict[str, QuestionOutcome]]  # arm -> qid -> outcome, for plots and notebooks


def build_report(
    run: RunData,
    *,
    reference: str | None = None,
    arms: Sequence[str] | None = None,
    with_breakdowns: bool = True,
    plan: schema.Plan | None = None,
) -> Report:
    """Summaries per arm, each arm against the reference arm (the first, unless named), reference
    rows, and breakdowns (left out, as an empty list, by callers that show none); ``plan``, a
    projection of this run to a full run (``docab plan``), is carried into the summary."""
    outcomes = question_outcomes(run.records)
    order = arm_order(run.manifest, list(outcomes))
    if arms:
        missing = [a for a in arms if a not in outcomes]
        if missing:
            raise ReportError(f"arm(s) {', '.join(missing)} not in this run; it has {', '.join(order)}")
        order = list(arms)
    reference = reference or order[0]
    if reference not in outcomes:
        raise ReportError(f"reference arm {reference!r} not in this run; it has {', '.join(order)}")
    order = [reference] + [a for a in order if a != reference]
    by_arm: dict[str, list[RunRecord]] = defaultdict(list)
    for record in run.records:
        by_arm[record.arm].append(record)
    arm_summaries = [arm_summary(a, outcomes[a], by_arm[a], run.manifest) for a in order]
    comparisons = [compare_arms(reference, a, outcomes[reference], outcomes[a]) for a in order[1:]]
    floor = any(s.floor for s in arm_summaries)
    warnings = list(run.warnings) + extraction_warnings(arm_summaries)
    absent = [a for a in run.manifest.arm_names if a not in outcomes]
    if absent and not arms:
        warnings.append(
            f"arm(s) {', '.join(absent)} of the run's config have no records yet; "
            "they are missing from every table (is the run still going, or did that arm fail to start?)"
        )
    documents = max((arm.documents for arm in arm_summaries), default=0)
    if comparisons and documents < CALIBRATED_FROM_DOCUMENTS:
        warnings.append(
            f"this run spans {documents} document{'s' * (documents != 1)}: below {CALIBRATED_FROM_DOCUMENTS} "
            "documents the paired intervals and tests are the cluster sign-flip test's, conservative and "
            "wide on few documents (none below 6) "
            f"(docab calibrate --documents {max(documents, 2)} shows how they behave at this size)"
        )
    counts = {a: len(outcomes[a]) for a in order}
    if len(set(counts.values())) > 1:
        warnings.append(
            "arms cover different questions ("
            + ", ".join(f"{a}: {n}" for a, n in counts.items())
            + "); comparisons use the questions both arms answered"
        )
    rows = breakdowns(order, outcomes, reference) if with_breakdowns else []
    summary = schema.Summary(
        runs=[str(s) for s in run.sources],
        run_id=run.manifest.run_id or next(iter(run.records)).run_id,
        floor=floor,
        label=FLOOR_LABEL if floor else "",
        reference_arm=reference,
        confidence=stats.CONFIDENCE,
        arms=arm_summaries,
        reference_rows=reference_rows({a: outcomes[a] for a in order}),
        comparisons=comparisons,
        breakdowns=rows,
        breakdown_note=breakdown_note(rows),
        warnings=warnings,
        prices=price_rows(run.records, run.manifest),
        plan=plan,
    )
    return Report(summary=summary, outcomes={a: outcomes[a] for a in order})


def relabel(records: Iterable[RunRecord], arm: str, new_name: str) -> list[RunRecord]:
    """Records of ``arm`` under another arm name (to compare arms of two different runs)."""
    return [dataclasses.replace(r, arm=new_name) for r in records if r.arm == arm]
