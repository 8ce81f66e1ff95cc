"""From a run's records to the conclusions a researcher can defend.

``load_run(RUN_DIR)`` reads ``manifest.json`` and ``records.jsonl`` (tolerating the torn last line
of a killed run); ``build_report(run)`` turns the records into a summary: per arm, the paired A/B
comparisons and the breakdowns, as a typed :class:`docab.report.schema.Summary` (written into the
run as ``summary.json``); ``docab.report.render`` renders it as a terminal table or markdown, and
``docab.report.plots`` draws it.

Conventions, from ../shared/specs/harness.md and mmlongbench.md:

- intention-to-treat: every record counts, errors and timeouts with score 0; the sensitivity view
  drops a question from *both* arms when either arm had an error or timeout on it;
- epochs are averaged per question before anything else; documents are the clustering unit;
- Acc is the mean score; F1 is the generalised F1 (precision over predictions other than exactly
  "Not answerable"); evidence recall is the share of a question's gold evidence pages the agent read;
- tokens are per question, all roles (agent, tool-side, extractor) unless a role is named;
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
from typing import Any

import numpy as np

from docab.interchange import is_inspect_source
from docab.log.manifest import ArmManifest, ManifestError, load_manifest, readable_manifest
from docab.log.records import RunRecord
from docab.report import schema, stats

NOT_ANSWERABLE = "Not answerable"
FLOOR_LABEL = "offline baseline policy, not a model result"
INFRASTRUCTURE_FAILURES = frozenset({"error", "timeout"})  # dropped in the sensitivity view


class ReportError(Exception):
    """A run that cannot be reported; the message says what is wrong and what to do."""


# -- loading ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunData:
    sources: tuple[Path, ...]
    manifest: dict[str, Any]
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
    manifest: dict[str, Any] = {}
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
                if not manifest:
                    manifest = loaded.model_dump(mode="json")
            except ManifestError as exc:
                warnings.append(f"{manifest_path} is unreadable ({exc}); reporting without it")
        else:
            warnings.append(f"{folder} has no manifest.json; reporting the records alone")
        found, problems = read_records(path)
        warnings += [f"{folder.name}/{p}" for p in problems]
        if reruns_as_epochs:
            found = _as_further_epochs(found, records.values())
        for record in found:
            duplicates += record.key in records
            records[record.key] = record
    if duplicates:
        warnings.append(f"{duplicates} record(s) appeared more than once; the last copy of each was kept")
    if not records:
        raise ReportError(f"no run records in {', '.join(str(s) for s in sources)}")
    return RunData(sources, manifest, tuple(records.values()), tuple(warnings))


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
    manifest = {
        "run_id": logs.run_id,
        "arms": [{"name": arm} for arm in logs.arms],
        "models": {"agent": logs.models[0] if len(logs.models) == 1 else ", ".join(logs.models)},
    }
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
    evidence_recall: float  # NaN when the question lists no evidence page
    evidence_pages: tuple[int, ...]
    evidence_sources: tuple[str, ...]
    doc_type: str
    answer_format: str
    answer_protocols: tuple[str, ...]
    limits: tuple[str, ...]
    errors: tuple[str, ...] = field(default=(), compare=False)

    @property
    def infrastructure_failure(self) -> bool:
        return any(s in INFRASTRUCTURE_FAILURES for s in self.statuses)


def evidence_recall(record: RunRecord) -> float:
    gold = set(record.evidence_pages)
    if not gold:
        return math.nan
    return len(gold & set(record.pages_read)) / len(gold)


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
        evidence_pages=tuple(first.evidence_pages),
        evidence_sources=tuple(first.evidence_sources),
        doc_type=first.doc_type,
        answer_format=first.answer_format,
        answer_protocols=tuple(sorted({r.answer_protocol for r in records})),
        limits=tuple(r.limit_hit for r in records if r.limit_hit),
        errors=tuple(e for r in records for e in r.errors),
    )


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


def declared_arms(manifest: Mapping[str, Any]) -> list[str]:
    """The arm names the manifest lists, in its order."""
    return readable_manifest(manifest).arm_names


def arm_order(manifest: Mapping[str, Any], seen: Sequence[str]) -> list[str]:
    declared = declared_arms(manifest)
    ordered = [a for a in declared if a in seen]
    return ordered + [a for a in seen if a not in ordered]


def _manifest_arm(manifest: Mapping[str, Any], arm: str) -> ArmManifest:
    return readable_manifest(manifest).arm(arm) or ArmManifest(name=arm)


def estimate(value: float, interval: stats.Interval) -> schema.Estimate:
    return schema.Estimate(value=value, low=interval.low, high=interval.high, method=interval.method)


def difference(boot: stats.BootstrapEstimate) -> schema.Difference:
    return schema.Difference(
        value=boot.estimate,
        low=boot.interval.low,
        high=boot.interval.high,
        method=boot.interval.method,
        undefined_resamples=boot.undefined,
    )


def spread(values: Iterable[float]) -> schema.Spread:
    return _spread(stats.spread(list(values)))


def _spread(found: stats.Spread) -> schema.Spread:
    return schema.Spread(n=found.n, mean=found.mean, median=found.median, p90=found.p90)


def arm_summary(
    arm: str,
    outcomes: Mapping[str, QuestionOutcome],
    records: Sequence[RunRecord],
    manifest: Mapping[str, Any],
    *,
    resamples: int,
    seed: int,
) -> schema.ArmSummary:
    items = list(outcomes.values())
    docs = np.array([o.doc_id for o in items], dtype=object)
    scores = np.array([o.score for o in items])
    answerable = np.array([float(o.answerable) for o in items])
    answered = np.array([o.answered for o in items])
    models = sorted({r.model for r in records})
    statuses = Counter(r.status for r in records)
    limits = Counter(r.limit_hit for r in records if r.limit_hit)
    recall = np.array([o.evidence_recall for o in items])
    with_evidence = np.isfinite(recall)
    usage = [u for r in records for u in r.usage]
    input_total = sum(u.input_total for u in usage)
    roles = sorted({role for o in items for role in o.tokens_by_role})
    tool_names = sorted({n for o in items for n in o.tool_calls_by_name})
    tool_overhead = _manifest_arm(manifest, arm).tool_definition_tokens
    f1 = stats.bootstrap_f1(scores, answerable, answered, docs, resamples=resamples, seed=seed)
    evidence = None
    if with_evidence.any():
        found = stats.bootstrap_mean(
            recall[with_evidence], docs[with_evidence], resamples=resamples, seed=seed
        )
        evidence = schema.EvidenceSummary(
            questions=int(with_evidence.sum()), recall=estimate(found.estimate, found.interval)
        )
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
        f1=estimate(f1.estimate, f1.interval),
        evidence=evidence,
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


def mde_statement(analysis: stats.PairedAnalysis) -> str:
    if analysis.clusters < 2:
        return (
            "The minimum detectable effect cannot be estimated from this run: its questions come from one "
            "document, and what varies between documents is unknown."
        )
    if not math.isfinite(analysis.mde):
        return "The minimum detectable effect cannot be estimated from this run (too few questions or documents)."
    icc = 0.0 if math.isnan(analysis.icc) else analysis.icc
    basis = ""
    if analysis.mde_bounded and analysis.accuracy_a == analysis.accuracy_b:
        basis = (
            "no question's score differed between the arms, so the variance of the differences is taken "
            "at its 95 % upper bound (rule of three); "
        )
    elif analysis.mde_bounded:
        basis = (
            "every question's score changed by the same amount, so the variance of the differences is "
            "taken at its upper bound, the mean squared difference; "
        )
    context = (
        f"(n = {analysis.n} question{'s' * (analysis.n != 1)} on {analysis.clusters} documents, ICC {icc:.2f}; "
        f"{basis}80 % power, two-sided alpha 0.05)."
    )
    if analysis.mde >= 1.0:
        return f"No difference in accuracy is resolvable with this run {context}"
    return f"Differences in accuracy under {analysis.mde * 100:.1f} points are not resolvable with this run {context}"


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
        f1=schema.ScoreComparison(
            a=analysis.f1_a, b=analysis.f1_b, difference=difference(analysis.f1_difference)
        ),
        evidence=evidence,
        score_correlation=analysis.score_correlation,
        tokens=cost_comparison(analysis.tokens),
        latency=cost_comparison(analysis.latency),
        icc=analysis.icc,
        mde=schema.DetectableEffect(
            observed=analysis.mde, bounded=analysis.mde_bounded, statement=mde_statement(analysis)
        ),
    )


def accuracy_comparison(analysis: stats.PairedAnalysis) -> schema.AccuracyComparison:
    t = analysis.accuracy_difference_t
    return schema.AccuracyComparison(
        a=analysis.accuracy_a,
        b=analysis.accuracy_b,
        difference=difference(analysis.accuracy_difference),
        difference_clustered_t=schema.ClusteredDifference(
            value=t.mean, low=t.interval.low, high=t.interval.high, method=t.interval.method, se=t.se
        ),
        mcnemar=schema.McNemar(
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
            value=cost.ratio.geometric_mean,
            low=cost.ratio_interval.low,
            high=cost.ratio_interval.high,
            method=cost.ratio_interval.method,
            pairs=cost.ratio.n_used,
            excluded=cost.ratio.n_excluded,
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
    *,
    resamples: int,
    seed: int,
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
    analysis = stats.paired_analysis(paired_data(a, b, common), resamples=resamples, seed=seed)
    evidence = evidence_comparison(a, b, common, resamples=resamples, seed=seed)
    overhead = [b[q].first_call_input - a[q].first_call_input for q in common]
    kept = [q for q in common if not (a[q].infrastructure_failure or b[q].infrastructure_failure)]
    dropped = len(common) - len(kept)
    if dropped and kept:
        sensitive = stats.paired_analysis(paired_data(a, b, kept), resamples=resamples, seed=seed)
        sensitivity = schema.Sensitivity(
            dropped=dropped,
            paired=len(kept),
            accuracy=accuracy_comparison(sensitive),
            f1=schema.ScoreComparison(
                a=sensitive.f1_a, b=sensitive.f1_b, difference=difference(sensitive.f1_difference)
            ),
        )
    elif dropped:
        sensitivity = schema.Sensitivity(
            dropped=dropped, paired=0, note="every paired question had an error or timeout in an arm"
        )
    else:
        sensitivity = schema.Sensitivity(
            dropped=0, paired=len(kept), note="no errors or timeouts: identical to intention-to-treat"
        )
    return schema.Comparison(
        a=name_a,
        b=name_b,
        questions_a=len(a),
        questions_b=len(b),
        paired=len(common),
        itt=paired_results(analysis, evidence),
        sensitivity=sensitivity,
        first_call_input_difference=spread(x for x in overhead if math.isfinite(x)),
    )


def evidence_comparison(
    a: Mapping[str, QuestionOutcome],
    b: Mapping[str, QuestionOutcome],
    common: Sequence[str],
    *,
    resamples: int,
    seed: int,
) -> schema.EvidenceComparison | None:
    """B's evidence recall against A's on the paired questions that list evidence pages, with the
    paired cluster bootstrap by document; None when no paired question lists any."""
    with_evidence = [
        q for q in common if math.isfinite(a[q].evidence_recall) and math.isfinite(b[q].evidence_recall)
    ]
    if not with_evidence:
        return None
    docs = np.array([a[q].doc_id for q in with_evidence], dtype=object)
    gap = stats.bootstrap_mean(
        [b[q].evidence_recall - a[q].evidence_recall for q in with_evidence],
        docs,
        resamples=resamples,
        seed=seed,
    )
    return schema.EvidenceComparison(
        questions=len(with_evidence),
        recall=schema.ScoreComparison(
            a=float(np.mean([a[q].evidence_recall for q in with_evidence])),
            b=float(np.mean([b[q].evidence_recall for q in with_evidence])),
            difference=difference(gap),
        ),
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
    *,
    resamples: int,
    seed: int,
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
            docs = np.array([base[q].doc_id for q in common], dtype=object)
            gap = stats.bootstrap_mean(
                [outcomes[arm][q].score - base[q].score for q in common], docs, resamples=resamples, seed=seed
            )
            differences[arm] = schema.BreakdownDifference(
                n=len(common),
                value=gap.estimate,
                low=gap.interval.low,
                high=gap.interval.high,
                method=gap.interval.method,
                undefined_resamples=gap.undefined,
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
    resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = 0,
    with_breakdowns: bool = True,
) -> Report:
    """Summaries per arm, each arm against the reference arm (the first, unless named), breakdowns
    (one bootstrap per group cell: left out, as an empty list, by callers that show none)."""
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
    arm_summaries = [
        arm_summary(a, outcomes[a], by_arm[a], run.manifest, resamples=resamples, seed=seed) for a in order
    ]
    comparisons = [
        compare_arms(reference, a, outcomes[reference], outcomes[a], resamples=resamples, seed=seed)
        for a in order[1:]
    ]
    floor = any(s.floor for s in arm_summaries)
    warnings = list(run.warnings)
    absent = [a for a in declared_arms(run.manifest) if a not in outcomes]
    if absent and not arms:
        warnings.append(
            f"arm(s) {', '.join(absent)} of the run's config have no records yet; "
            "they are missing from every table (is the run still going, or did that arm fail to start?)"
        )
    counts = {a: len(outcomes[a]) for a in order}
    if len(set(counts.values())) > 1:
        warnings.append(
            "arms cover different questions ("
            + ", ".join(f"{a}: {n}" for a, n in counts.items())
            + "); comparisons use the questions both arms answered"
        )
    summary = schema.Summary(
        runs=[str(s) for s in run.sources],
        run_id=readable_manifest(run.manifest).run_id or next(iter(run.records)).run_id,
        floor=floor,
        label=FLOOR_LABEL if floor else "",
        reference_arm=reference,
        confidence=0.95,
        resamples=resamples,
        seed=seed,
        arms=arm_summaries,
        comparisons=comparisons,
        breakdowns=(
            breakdowns(order, outcomes, reference, resamples=resamples, seed=seed) if with_breakdowns else []
        ),
        warnings=warnings,
    )
    return Report(summary=summary, outcomes={a: outcomes[a] for a in order})


def relabel(records: Iterable[RunRecord], arm: str, new_name: str) -> list[RunRecord]:
    """Records of ``arm`` under another arm name (to compare arms of two different runs)."""
    return [dataclasses.replace(r, arm=new_name) for r in records if r.arm == arm]
