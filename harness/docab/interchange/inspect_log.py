"""A docab run as Inspect AI eval logs, and Inspect eval logs as docab run records.

**Export** (``docab export RUN --format inspect``, :func:`eval_log`): one ``EvalLog`` per arm, each
record an ``EvalSample``:

================================  ==================================================================
Inspect                           docab
================================  ==================================================================
``id``, ``epoch``                 ``qid``, ``epoch + 1`` (Inspect counts epochs from 1)
``input``, ``target``             the question as the agent was asked it, the gold answer
``messages``                      the transcript: system prompt, user turns, assistant turns with
                                  their tool calls, tool results as the model saw them (after the
                                  output budget; images as data URLs)
``output``                        the last assistant turn
``scores["docab"]``               ``value``: the record's score (0 for every status but ok);
                                  ``answer``: the extracted answer
``model_usage`` / ``role_usage``  the tokens of each model the eval called (the agent's and the
                                  answer extractor's) / tokens per docab role (agent, tool-side,
                                  extractor), in Inspect's convention (``input_tokens`` excludes
                                  cache reads and writes, as docab's ``input_uncached``); the same
                                  in ``stats`` for the arm
``total_time``, ``working_time``  wall time, model + tool time
``error`` / ``limit``             status error or timeout / status limit
``metadata``                      ``doc_id``, ``doc_type``, ``answer_format``, ``evidence_pages``,
                                  ``evidence_sources``; under ``docab``, the record itself
                                  (``RunRecord.to_dict``), so reading the log back loses nothing
================================  ==================================================================

Each arm is its own task (``task_id``; one log per arm); the answer extractor is the eval's
``grader`` model role (``model_roles``), as in the docab Inspect task. The log's ``results`` hold docab's accuracy (per question with epochs averaged, then over questions,
intention-to-treat): Inspect shows the accuracy ``docab report`` prints.

**Import** (:func:`records_from_log`; ``docab report`` and ``docab compare`` on Inspect logs through
``docab.report.summary.load_run``): a docab-exported sample gives back its record. A sample of the
docab Inspect task (:mod:`docab.interchange.inspect_task`) carries a :class:`SampleTrail` (in its
score's metadata, else in its store), which with Inspect's own error and limit gives the record.
Any other Inspect log reads too: usage and tool calls come from its events, its first score is the
score, and each sample without a ``doc_id`` in its metadata is its own document (a warning says so).

The arm of a log is ``eval.metadata["docab"]["arm"]``, else the task argument ``arm``, else the task.

Why one module: export and import are the two directions of one mapping (the table above); side
by side, a field added to one direction is seen missing from the other, and the round-trip tests
read one file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from inspect_ai._util.error import EvalError
from inspect_ai.event import ModelEvent, ToolEvent
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalMetric,
    EvalPlan,
    EvalPlanStep,
    EvalResults,
    EvalRevision,
    EvalSample,
    EvalSampleLimit,
    EvalScore,
    EvalSpec,
    EvalStats,
)
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    Content,
    ContentImage,
    ContentText,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.model import ModelConfig as InspectModelConfig
from inspect_ai.scorer import Score, value_to_float
from inspect_ai.tool import ToolCall as InspectToolCall
from inspect_ai.tool import ToolCallError
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from docab.log.costs import manifest_prices
from docab.log.events import (
    ImageBlock,
    MessageEvent,
    ModelErrorEvent,
    ModelTurnEvent,
    TextBlock,
    ToolResultEvent,
    Transcript,
)
from docab.log.manifest import Manifest
from docab.log.records import RECORD_VERSION, AnswerProtocol, PageShare, RunRecord, Status, ToolCallRecord
from docab.pricing import PriceBook
from docab.usage import Usage, totals_by_role

DOCAB_KEY = "docab"  # metadata key (eval, sample, score) and score name
SCORE_NAME = "docab"
EXPORT_VERSION = 1  # of what docab puts under "docab" in an exported log

ImageURL = Callable[[str], str | None]
"""The data URL of a run image (``images/<sha256>.<ext>``, relative to the run), or None when missing."""

TranscriptOf = Callable[[RunRecord], Transcript | None]
"""A record's transcript, or None when the run kept none (or it cannot be read)."""

_LIMIT_TYPES: dict[str, Literal["turn", "token", "time"]] = {
    "turns": "turn",
    "tokens": "token",
    "wall_time": "time",
}
_LIMIT_HITS = {
    "turn": "turns",
    "message": "turns",
    "token": "tokens",
    "time": "wall_time",
    "working": "wall_time",
}


# -- the trail the Inspect task leaves ------------------------------------------------------------------


class TrailToolCall(BaseModel):
    """One tool call as the docab Inspect task ran it (after the output budget)."""

    model_config = ConfigDict(frozen=True)

    name: str
    duration_s: float
    is_error: bool = False
    truncated: bool = False  # the output budget cut the result
    arguments: dict[str, JsonValue] = Field(default_factory=dict)


class SampleTrail(BaseModel):
    """What the docab Inspect task records of one sample, beyond Inspect's own fields.

    The solver fills the agent part (turns, usage, tool calls, pages read) and the scorer the answer
    part; both keep it in the sample's store under ``"docab"``, and the scorer puts the whole of it
    in its score's metadata. :func:`records_from_log` turns it back into a :class:`RunRecord`."""

    model_config = ConfigDict(frozen=True)

    version: Literal[1] = 1
    arm: str
    answer_protocol: AnswerProtocol
    turns: int = 0
    usage: list[Usage] = Field(default_factory=list)  # agent turns, then the extractor's calls
    model_time_s: float = 0.0
    tool_time_s: float = 0.0
    tool_calls: list[TrailToolCall] = Field(default_factory=list)
    pages_read: list[int] = Field(default_factory=list)
    # None in trails written before version 3, whose pages_read counted search results too.
    pages_seen: list[int] | None = None
    page_shares: list[PageShare] = Field(default_factory=list)
    sections_read: list[str] = Field(default_factory=list)
    limit_hit: str | None = None  # "turns" when the agent used every turn without answering
    raw_answer: str = ""
    extracted_answer: str = ""
    scored: bool = False  # the scorer ran
    errors: list[str] = Field(default_factory=list)


class QuestionInfo(BaseModel):
    """A sample's metadata as the docab Inspect task and the export write it: the question's facts."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    doc_id: str
    doc_type: str = ""
    answer_format: str = ""
    evidence_pages: list[int] = Field(default_factory=list)
    evidence_sources: list[str] = Field(default_factory=list)


# -- export ---------------------------------------------------------------------------------------------


def inspect_usage(usages: Iterable[Usage], prices: PriceBook | None = None) -> ModelUsage:
    """docab usage records summed in Inspect's convention (``input_tokens`` without the cache);
    with ``prices``, ``total_cost`` in US dollars too (None when a model's price is unknown)."""
    total = ModelUsage()
    cost: float | None = 0.0
    for usage in usages:
        total = total + ModelUsage(
            input_tokens=usage.input_uncached,
            output_tokens=usage.output,
            total_tokens=usage.total,
            input_tokens_cache_read=usage.cache_read,
            input_tokens_cache_write=usage.cache_write,
            reasoning_tokens=usage.reasoning,
        )
        if prices is not None:
            usd = prices.usd(usage)
            cost = None if cost is None or usd is None else cost + usd
    return total.model_copy(update={"total_cost": cost if prices is not None else None})


MODEL_ROLES = ("agent", "extractor")  # roles whose tokens are calls the eval made to a model
GRADER_ROLE = "grader"  # Inspect's name for the model that reads answers (the docab task's extractor)


def usage_by_model(
    usages: Iterable[Usage], default_model: str, prices: PriceBook | None = None
) -> dict[str, ModelUsage]:
    """Inspect's ``model_usage``: the tokens of every model the eval called (the agent's and the
    answer extractor's; a tool's own model is not the eval's), keyed by model name, in Inspect's
    convention. A model that plays both roles gets the sum."""
    grouped: dict[str, list[Usage]] = {}
    for usage in usages:
        if usage.role in MODEL_ROLES:
            grouped.setdefault(usage.model or default_model, []).append(usage)
    return {model: inspect_usage(found, prices) for model, found in grouped.items()}


def _content(blocks: Sequence[TextBlock | ImageBlock], image_url: ImageURL) -> list[Content]:
    content: list[Content] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            content.append(ContentText(text=block.text))
        else:
            url = image_url(block.path)
            content.append(
                ContentImage(image=url)
                if url
                else ContentText(text=f"[image {block.path}: not in the run folder]")
            )
    return content


def transcript_messages(transcript: Transcript, image_url: ImageURL) -> list[ChatMessage]:
    """The conversation of a transcript as Inspect chat messages."""
    messages: list[ChatMessage] = [ChatMessageSystem(content=transcript.system)]
    for event in transcript.events:
        if isinstance(event, MessageEvent):
            content = _content(event.content, image_url)
            if event.role == "assistant":
                messages.append(ChatMessageAssistant(content=content, model=transcript.model))
            elif event.role == "tool":
                messages.append(ChatMessageTool(content=content))
            else:
                messages.append(ChatMessageUser(content=content))
        elif isinstance(event, ModelTurnEvent):
            calls = [
                InspectToolCall(
                    id=c.id, function=c.name, arguments=dict(c.arguments), parse_error=c.parse_error
                )
                for c in event.tool_calls
            ]
            messages.append(
                ChatMessageAssistant(
                    content=event.text, tool_calls=calls or None, model=transcript.model, source="generate"
                )
            )
        elif isinstance(event, ToolResultEvent):
            content = _content(event.content, image_url)
            text = "\n".join(b.text for b in event.content if isinstance(b, TextBlock))
            messages.append(
                ChatMessageTool(
                    content=content,
                    tool_call_id=event.tool_call_id,
                    function=event.name,
                    error=ToolCallError("unknown", text) if event.is_error else None,
                )
            )
        elif isinstance(event, ModelErrorEvent):
            messages.append(
                ChatMessageAssistant(
                    content=f"[model error ({event.kind}): {event.error}]", model=transcript.model
                )
            )
    return messages


def _question_text(transcript: Transcript | None, record: RunRecord) -> str:
    if transcript is not None:
        for event in transcript.events:
            if isinstance(event, MessageEvent) and event.role == "user":
                return "\n".join(b.text for b in event.content if isinstance(b, TextBlock))
    return f"question {record.qid} of {record.doc_id} (the run kept no transcript of it)"


def _sample_limit(record: RunRecord, limits: dict[str, Any]) -> EvalSampleLimit | None:
    if record.status != "limit":
        return None
    kind = _LIMIT_TYPES.get(record.limit_hit or "")
    key = {"turn": "max_turns", "token": "max_tokens", "time": "max_wall_s"}.get(kind or "")
    value = limits.get(key) if key else None
    return EvalSampleLimit(
        type=kind or "custom",
        limit=float(value) if isinstance(value, int | float) else 0.0,
        reason=f"docab limit: {record.limit_hit}" if record.limit_hit else None,
    )


def _end_time(started_at: str, seconds: float) -> str | None:
    from datetime import datetime, timedelta

    try:
        start = datetime.fromisoformat(started_at)
    except ValueError:
        return None
    return (start + timedelta(seconds=seconds)).isoformat()


def eval_sample(
    record: RunRecord,
    transcript: Transcript | None,
    image_url: ImageURL,
    *,
    limits: dict[str, Any] | None = None,
    prices: PriceBook | None = None,
) -> EvalSample:
    """One record (and its transcript, when kept) as an Inspect sample; ``prices`` (default: the
    shipped table) give its usage's ``total_cost`` in US dollars."""
    prices = prices or PriceBook()
    messages = transcript_messages(transcript, image_url) if transcript is not None else []
    if not messages:
        messages = [ChatMessageUser(content=_question_text(None, record))]
    last = next((m for m in reversed(messages) if isinstance(m, ChatMessageAssistant)), None)
    output = ModelOutput(
        model=record.model,
        choices=[ChatCompletionChoice(message=last, stop_reason="stop")] if last is not None else [],
        usage=inspect_usage((u for u in record.usage if u.role == "agent"), prices),
    )
    question = QuestionInfo(
        doc_id=record.doc_id,
        doc_type=record.doc_type,
        answer_format=record.answer_format,
        evidence_pages=list(record.evidence_pages),
        evidence_sources=list(record.evidence_sources),
    )
    error = None
    if record.status in ("error", "timeout"):
        error = EvalError(
            message=f"{record.status}: {'; '.join(record.errors) or 'no message recorded'}",
            traceback="",
            traceback_ansi="",
        )
    roles = totals_by_role(record.usage)
    return EvalSample(
        id=record.qid,
        epoch=record.epoch + 1,
        input=_question_text(transcript, record),
        target=record.gold,
        messages=messages,
        output=output,
        scores={
            SCORE_NAME: Score(
                value=record.score,
                answer=record.extracted_answer,
                explanation=(
                    f"status {record.status}; answer {record.raw_answer!r} read as "
                    f"{record.extracted_answer!r}, gold {record.gold!r} ({record.answer_format})"
                    + (
                        "; answer extraction failed (unparsable extractor reply)"
                        if record.extraction_failed
                        else ""
                    )
                    + (f"; answer path {record.answer_path}" if record.answer_path else "")
                ),
            )
        },
        metadata={
            **question.model_dump(),
            DOCAB_KEY: {"version": EXPORT_VERSION, "record": record.to_dict()},
        },
        model_usage=usage_by_model(record.usage, record.model, prices)
        or {record.model: inspect_usage((), prices)},
        role_usage={
            role: inspect_usage((u for u in record.usage if u.role == role), prices) for role in sorted(roles)
        },
        started_at=record.started_at or None,
        completed_at=_end_time(record.started_at, record.wall_time_s) if record.started_at else None,
        total_time=record.wall_time_s,
        working_time=record.model_time_s + record.tool_time_s,
        error=error,
        limit=_sample_limit(record, limits or {}),
        turn_count=record.turns,
    )


def docab_accuracy(records: Iterable[RunRecord]) -> float:
    """docab's accuracy: per question the mean over epochs (0 for every status but ok), then the mean."""
    by_question: dict[str, list[float]] = defaultdict(list)
    for record in records:
        by_question[record.qid].append(record.score if record.status == "ok" else 0.0)
    if not by_question:
        return math.nan
    return sum(sum(s) / len(s) for s in by_question.values()) / len(by_question)


def _eval_id(run_id: str, arm: str) -> str:
    return hashlib.sha256(f"{run_id}\n{arm}".encode()).hexdigest()[:22]


def _model_roles(
    records: Sequence[RunRecord], manifest: Manifest
) -> dict[str, InspectModelConfig | list[InspectModelConfig]] | None:
    """The answer extractor as Inspect's ``grader`` role (the docab task's name for it): the model
    its records name, else the manifest's; None for a run without one (the submit tool)."""
    used = sorted({u.model for r in records for u in r.usage if u.role == "extractor" and u.model})
    extractor = used[0] if len(used) == 1 else manifest.models.extractor
    if not extractor:
        return None
    return {GRADER_ROLE: InspectModelConfig(model=extractor)}


def eval_log(
    arm: str,
    records: Sequence[RunRecord],
    *,
    manifest: Manifest,
    transcript_of: TranscriptOf,
    image_url: ImageURL,
) -> EvalLog:
    """The records of one arm as an Inspect eval log (pure: files reach it through the two callables)."""
    if not records:
        raise ValueError(f"the arm {arm!r} has no records to export")
    run_id = manifest.run_id or records[0].run_id
    model = records[0].model
    limits = manifest.config.get("limits")
    prices = manifest_prices(manifest)
    samples = [
        eval_sample(
            r, transcript_of(r), image_url, limits=limits if isinstance(limits, dict) else None, prices=prices
        )
        for r in sorted(records, key=lambda r: (r.epoch, r.qid))
    ]
    qids = sorted({r.qid for r in records})
    arm_info = next((a.model_dump(mode="json") for a in manifest.arms if a.name == arm), {"name": arm})
    names = [a.name for a in manifest.arms]
    arm_index = names.index(arm) if arm in names else None
    started = sorted(r.started_at for r in records if r.started_at)
    created = manifest.created_at or (started[0] if started else "1970-01-01T00:00:00+00:00")
    git = manifest.git
    usage_by_role = totals_by_role(u for r in records for u in r.usage)
    config_name = manifest.config.get("name") if isinstance(manifest.config.get("name"), str) else None
    return EvalLog(
        status="success",
        eval=EvalSpec(
            eval_id=_eval_id(run_id, arm),
            run_id=run_id,
            created=created,
            task=f"docab/{config_name or run_id}",
            task_id=_eval_id(run_id, f"task\n{arm}"),  # each arm is its own task (one log each)
            task_display_name=f"{run_id}: {arm}",
            task_args={"arm": arm},
            solver="docab",
            dataset=EvalDataset(
                name=manifest.dataset.name or None,
                location=manifest.dataset.version or None,
                samples=len(qids),
                sample_ids=list(qids),
            ),
            model=model,
            model_roles=_model_roles(records, manifest),
            config=EvalConfig(epochs=max(r.epoch for r in records) + 1),
            revision=EvalRevision(type="git", origin="", commit=git.commit, dirty=git.dirty)
            if git.commit
            else None,
            packages={name: version for name, version in manifest.packages.items() if version},
            metadata={
                DOCAB_KEY: {
                    "version": EXPORT_VERSION,
                    "arm": arm,
                    "arm_index": arm_index,
                    "run_id": run_id,
                    "config_hash": manifest.config_hash,
                    "arm_config": arm_info,
                    "dataset": manifest.dataset.model_dump(mode="json"),
                }
            },
        ),
        plan=EvalPlan(
            steps=[
                EvalPlanStep(
                    solver="docab", params={"arm": arm, "answer_protocol": records[0].answer_protocol}
                )
            ]
        ),
        results=EvalResults(
            total_samples=len(samples),
            completed_samples=len(samples),
            scores=[
                EvalScore(
                    name=SCORE_NAME,
                    scorer=SCORE_NAME,
                    scored_samples=len(samples),
                    metrics={"accuracy": EvalMetric(name="accuracy", value=docab_accuracy(records))},
                    metadata={
                        "definition": "per question, epochs averaged; errors, timeouts, limits score 0"
                    },
                )
            ],
        ),
        stats=EvalStats(
            started_at=started[0] if started else "",
            completed_at=manifest.updated_at or "",
            model_usage=usage_by_model((u for r in records for u in r.usage), model, prices)
            or {model: inspect_usage((), prices)},
            role_usage={
                role: inspect_usage((u for r in records for u in r.usage if u.role == role), prices)
                for role in sorted(usage_by_role)
            },
        ),
        metadata={DOCAB_KEY: {"version": EXPORT_VERSION, "arm": arm, "run_id": run_id}},
        samples=samples,
    )


# -- import ---------------------------------------------------------------------------------------------


def log_arm(log: EvalLog) -> str:
    """The arm a log holds (see the module docstring)."""
    meta = (log.eval.metadata or {}).get(DOCAB_KEY)
    if isinstance(meta, dict) and isinstance(meta.get("arm"), str):
        return str(meta["arm"])
    arm = log.eval.task_args.get("arm")
    if isinstance(arm, str) and arm:
        return arm
    return log.eval.task


def log_arm_index(log: EvalLog) -> int:
    """The arm's place in its run config (``eval.metadata["docab"]["arm_index"]``), for ordering arms
    read from several logs (the first is the reference); logs without one come after."""
    meta = (log.eval.metadata or {}).get(DOCAB_KEY)
    index = meta.get("arm_index") if isinstance(meta, dict) else None
    return index if isinstance(index, int) else 1_000_000


def _usage_of(model: str, usage: ModelUsage | None, role: Literal["agent", "extractor"]) -> Usage | None:
    if usage is None:
        return None
    return Usage(
        input_uncached=usage.input_tokens,
        cache_read=usage.input_tokens_cache_read or 0,
        cache_write=usage.input_tokens_cache_write or 0,
        output=usage.output_tokens,
        reasoning=usage.reasoning_tokens or 0,
        role=role,
        model=model,
    )


def _first_score(sample: EvalSample) -> Score | None:
    if not sample.scores:
        return None
    return sample.scores.get(SCORE_NAME) or next(iter(sample.scores.values()))


def _trail(sample: EvalSample, score: Score | None) -> SampleTrail | None:
    for source in ((score.metadata or {}) if score is not None else {}, sample.store):
        data = source.get(DOCAB_KEY)
        if isinstance(data, dict):
            try:
                return SampleTrail.model_validate(data)
            except ValidationError:
                return None
    return None


def _status(sample: EvalSample, trail: SampleTrail | None) -> tuple[Status, str | None, list[str]]:
    """The record's status, limit and errors from Inspect's error and limit and the trail."""
    if sample.error is not None:
        return "error", None, [sample.error.message]
    if sample.limit is not None:
        return "limit", _LIMIT_HITS.get(sample.limit.type, sample.limit.type), []
    if trail is not None and trail.limit_hit:
        return "limit", trail.limit_hit, []
    if trail is not None and trail.errors:
        return "error", None, list(trail.errors)
    return "ok", None, []


def _event_trail(
    sample: EvalSample, model: str
) -> tuple[list[Usage], list[ToolCallRecord], float, float, int]:
    """Usage, tool calls, model and tool time and turns from a sample's events (logs of other tasks)."""
    usage: list[Usage] = []
    calls: list[ToolCallRecord] = []
    model_time = tool_time = 0.0
    turns = 0
    for event in sample.events:
        if isinstance(event, ModelEvent):
            role: Literal["agent", "extractor"] = "extractor" if event.role == "grader" else "agent"
            turns += role == "agent"
            found = _usage_of(event.model or model, event.output.usage, role)
            if found is not None:
                usage.append(found)
            model_time += event.working_time or 0.0
        elif isinstance(event, ToolEvent):
            duration = event.working_time or 0.0
            tool_time += duration
            calls.append(
                ToolCallRecord(
                    name=event.function,
                    duration_s=duration,
                    is_error=event.error is not None,
                    truncated=event.truncated is not None,
                    arguments=dict(event.arguments),
                )
            )
    return usage, calls, model_time, tool_time, turns


def _score_value(score: Score | None) -> float:
    if score is None:
        return 0.0
    try:
        value = value_to_float()(score.value)
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) else 0.0


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else ", ".join(value)


def record_from_sample(sample: EvalSample, *, arm: str, run_id: str, model: str) -> RunRecord:
    """A sample of the docab Inspect task, or of any other Inspect task, as a docab record."""
    score = _first_score(sample)
    trail = _trail(sample, score)
    try:
        question = QuestionInfo.model_validate(sample.metadata)
    except ValidationError:
        question = QuestionInfo(doc_id=str(sample.id))
    status, limit_hit, errors = _status(sample, trail)
    if trail is not None:
        usage = list(trail.usage)
        calls = [ToolCallRecord(**c.model_dump()) for c in trail.tool_calls]
        model_time, tool_time, turns = trail.model_time_s, trail.tool_time_s, trail.turns
        raw, extracted, protocol = trail.raw_answer, trail.extracted_answer, trail.answer_protocol
        pages, sections = tuple(trail.pages_read), tuple(trail.sections_read)
        seen = tuple(trail.pages_seen) if trail.pages_seen is not None else pages
        version = RECORD_VERSION if trail.pages_seen is not None else 2
        shares = tuple(trail.page_shares)
    else:
        usage, calls, model_time, tool_time, turns = _event_trail(sample, model)
        raw = sample.output.completion if sample.output.choices else ""
        extracted = score.answer if score is not None and score.answer is not None else raw
        protocol = "extraction"
        pages, sections, shares, seen, version = (), (), (), (), RECORD_VERSION
    value = _score_value(score)
    return RunRecord(
        run_id=run_id,
        arm=arm,
        qid=str(sample.id),
        doc_id=question.doc_id,
        epoch=sample.epoch - 1,
        model=model,
        status=status,
        score=value if status == "ok" else 0.0,
        answer_protocol=protocol,
        raw_answer=raw,
        extracted_answer=extracted,
        gold=_text(sample.target),
        answer_format=question.answer_format,
        usage=tuple(usage),
        model_time_s=model_time,
        tool_time_s=tool_time,
        wall_time_s=sample.total_time or 0.0,
        turns=turns,
        tool_calls=tuple(calls),
        retries=sum(e.retries or 0 for e in sample.events if isinstance(e, ModelEvent)),
        limit_hit=limit_hit,
        errors=tuple(errors),
        pages_read=pages,
        pages_seen=seen,
        page_shares=shares,
        sections_read=sections,
        evidence_pages=tuple(question.evidence_pages),
        evidence_sources=tuple(question.evidence_sources),
        doc_type=question.doc_type,
        started_at=str(sample.started_at or ""),
        version=version,
    )


def records_from_log(log: EvalLog) -> tuple[list[RunRecord], list[str]]:
    """The records of a log's samples, and warnings (samples without a document, unreadable records)."""
    arm = log_arm(log)
    run_id = log.eval.run_id or log.eval.eval_id
    records: list[RunRecord] = []
    warnings: list[str] = []
    own_documents = 0
    for sample in log.samples or []:
        exported = sample.metadata.get(DOCAB_KEY)
        if isinstance(exported, dict) and isinstance(exported.get("record"), dict):
            try:
                records.append(RunRecord.from_dict(exported["record"]))
                continue
            except (TypeError, ValueError) as exc:
                warnings.append(
                    f"sample {sample.id} (epoch {sample.epoch}): its docab record is unreadable ({exc})"
                )
        if "doc_id" not in sample.metadata:
            own_documents += 1
        records.append(record_from_sample(sample, arm=arm, run_id=run_id, model=log.eval.model))
    if own_documents:
        warnings.append(
            f"{own_documents} sample(s) of arm {arm!r} name no doc_id in their metadata: each is its own "
            "document in the clustered statistics"
        )
    return records, warnings


# -- images -----------------------------------------------------------------------------------------------

_MEDIA_TYPES = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
}
_DATA_URL = re.compile(r"^data:(image/[A-Za-z0-9.+-]+);base64,(.*)$", re.DOTALL)


def data_url(name: str, data: bytes) -> str:
    """A data URL for an image file's bytes, its media type from the file name."""
    suffix = name.rsplit(".", 1)[-1].lower()
    media_type = _MEDIA_TYPES.get(suffix, "application/octet-stream")
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def decode_data_url(url: str) -> tuple[str, bytes] | None:
    """(media type, bytes) of an image data URL, or None for anything else."""
    match = _DATA_URL.match(url)
    if match is None:
        return None
    try:
        return match.group(1), base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return None
