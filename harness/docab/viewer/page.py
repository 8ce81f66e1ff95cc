"""The viewer's data: a run's records, transcripts and summary turned into plain JSON-ready dicts.

Pure functions, no I/O: :func:`view_transcript` reads one transcript document through the event
models of ``docab.log.events`` into the fixed shape the page's script draws (a damaged or older
transcript is shown as far as it reads, its unreadable parts flagged);
:func:`build_index` builds the page's embedded data (run header, summary tables, plots, one row per
question with every arm's epochs). ``docab.viewer.writer`` reads the files and writes the result.

Text is carried as data and drawn by the page with ``textContent`` only, so nothing here escapes
HTML; ``docab.viewer.html`` makes the JSON safe to embed in a ``<script>`` element.

Index layout (``VIEWER_FORMAT``)::

    {"format", "title", "floor", "label", "run": {...header...}, "arms": [name...], "reference_arm",
     "summary": {"source", "note", "sections": [{title, headers, rows, notes}], "method", "warnings"},
     "plots": [{"title", "src"}], "warnings": [str...],
     "filters": {dimension: [group...]}, "outcomes": [outcome...],
     "questions": [{"qid", "doc_id", "doc_type", "answer_format", "evidence_pages", "evidence_sources",
                    "answerable", "gold", "question", "groups": {dimension: [group...]},
                    "disagree", "versus": {arm: "better" | "worse" | "same"},
                    "arms": {arm: {"score", "outcome", "tokens", "cost_usd", "wall_s", "epochs": [epoch...]}}}]}

An arm's ``score``, ``tokens``, ``cost_usd`` (US dollars; null when a price is unknown) and ``wall_s`` are averaged over epochs as in the report; each epoch
(``_epoch``) holds one record's outcome, answers, costs and ``transcript`` (the script number) or
``transcript_problem``. ``versus`` compares each arm with the reference arm; ``disagree`` is true
when the arms' scores differ. A question an arm did not run has no entry under ``arms``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from docab.log.costs import record_cost
from docab.log.events import (
    EVENT,
    TRANSCRIPT_VERSION,
    Event,
    ImageBlock,
    MessageEvent,
    ModelErrorEvent,
    ModelTurnEvent,
    TextBlock,
    ToolResultEvent,
    Transcript,
    TranscriptHeader,
)
from docab.log.manifest import Manifest
from docab.log.records import RunRecord
from docab.report.arms import FLOOR_LABEL, arm_order, is_floor
from docab.report.breakdowns import DIMENSIONS, question_groups
from docab.report.outcomes import QuestionOutcome, evidence_recall, question_outcomes
from docab.report.plots import breakdown_file
from docab.report.render import METHOD_NOTE, sections, title
from docab.report.schema import Summary
from docab.usage import Usage

VIEWER_FORMAT = "docab-viewer/1"
OUTCOMES = ("correct", "partial", "wrong", "unextracted", "error", "timeout", "limit")
"""What became of one sample: its status when not ``ok``, ``unextracted`` when the answer
extraction's reply could not be parsed ("Failed to extract", scored 0), else its score (1, between, 0)."""
FILTER_DIMENSIONS = ("evidence source", "evidence pages", "document type", "answer format")
QUESTION_PREVIEW_CHARS = 2000
IMAGE_PATH = re.compile(r"images/[0-9a-f]{64}\.(?:png|jpg|gif|webp|bin)")
"""The only image paths a transcript may reference (``docab.log.transcript.image_path``)."""
VIEWER_TO_RUN = ".."
"""Where the run's plots/ and images/ are seen from the viewer's page: RUN_DIR/viewer/ looks one
folder up; a viewer written elsewhere to travel alone (``docab view --out``) carries copies, at ".". """
PLOT_TITLES = {
    "accuracy.png": "Accuracy and F1 per arm",
    "accuracy_vs_tokens.png": "Accuracy against cost",
    "tokens.png": "Token use per question",
    "latency.png": "Latency per question",
    **{breakdown_file(d): f"Accuracy by {d}" for d in DIMENSIONS},
}
"""The plots ``docab.report.plots.write_plots`` draws, in reading order."""
HEADLINE_PLOTS = ("accuracy.png", "accuracy_vs_tokens.png", "tokens.png", "latency.png")
"""Shown at once; the others (the breakdowns) fold away under them."""


@dataclass(frozen=True)
class TranscriptEntry:
    """What the writer made of a record's transcript: the file number it wrote, or why not."""

    number: int | None = None  # viewer/transcripts/<number>.js
    problem: str | None = None  # shown in place of the transcript, e.g. "transcript missing"
    question: str = ""  # the first user message, for the question's header and the search


@dataclass(frozen=True)
class Plot:
    name: str  # file name in RUN_DIR/plots/
    base: str = VIEWER_TO_RUN  # the folder holding plots/, relative to the page

    @property
    def entry(self) -> dict[str, Any]:
        title = PLOT_TITLES.get(self.name) or self.name.rsplit(".", 1)[0].replace("_", " ")
        return {
            "title": title,
            "src": f"{self.base}/plots/{self.name}",
            # a plot the viewer does not know is shown at once rather than folded away
            "headline": self.name in HEADLINE_PLOTS or self.name not in PLOT_TITLES,
        }


def plot_order(names: Collection[str], *, base: str = VIEWER_TO_RUN) -> list[Plot]:
    """The known plots in reading order, then any others by name; ``base`` holds plots/."""
    known = [n for n in PLOT_TITLES if n in names]
    return [Plot(n, base) for n in known + sorted(n for n in names if n not in PLOT_TITLES)]


# -- JSON-safe values ----------------------------------------------------------------------------------------


def finite(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by None and every key a string (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)


def pretty(value: Any) -> str:
    """Indented JSON for display; empty for nothing worth showing."""
    if value in (None, {}, [], ""):
        return ""
    return json.dumps(finite(value), indent=2, ensure_ascii=False, sort_keys=False)


def _number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


# -- transcripts ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TranscriptView:
    """A transcript as the page draws it, and what the viewer must say about it."""

    data: dict[str, Any]  # the page's JSON for it: viewer/transcripts/<n>.js (layout in view_transcript)
    problem: str | None = None  # it cannot be shown at all (then ``data`` holds only the problem)
    notices: tuple[str, ...] = ()  # it is shown, but parts of it did not read (another version, damage)
    question: str = ""  # the first user message: the question as the agent saw it


def _block(block: TextBlock | ImageBlock, images: Collection[str], base: str) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    safe = IMAGE_PATH.fullmatch(block.path) is not None
    return {
        "type": "image",
        "path": block.path,
        "media_type": block.media_type,
        # Only a stored image is linked: a path of another shape could point anywhere.
        "src": f"{base}/{block.path}" if safe and block.path in images else None,
        "problem": None
        if safe and block.path in images
        else ("image file missing" if safe else "unsafe path"),
    }


def usage_view(usage: Usage) -> dict[str, Any]:
    """One usage record as the page shows it: input (all of it), cache reads and writes, output."""
    return {
        "role": usage.role,
        "model": usage.model,
        "input": usage.input_total,
        "cache_read": usage.cache_read,
        "cache_write": usage.cache_write,
        "output": usage.output,
        "reasoning": usage.reasoning,
    }


def _event_view(event: Event, images: Collection[str], base: str) -> dict[str, Any]:
    """One event in the shape the page's script draws (``type`` as in ``docab.log.events``)."""
    if isinstance(event, MessageEvent):
        return {
            "type": "message",
            "role": event.role,
            "content": [_block(b, images, base) for b in event.content],
        }
    if isinstance(event, ModelTurnEvent):
        return {
            "type": "model_turn",
            "turn": event.turn,
            "text": event.text,
            "tool_calls": [
                {
                    "id": c.id,
                    "name": c.name,
                    "arguments": pretty(c.arguments) or "{}",
                    "problem": c.parse_error,
                }
                for c in event.tool_calls
            ],
            "usage": usage_view(event.usage),
            "tokens_so_far": 0,  # filled in by view_transcript
            "latency_s": _number(event.latency_s),
            "retries": event.retries,
            "stop_reason": event.stop_reason,
            "raw": pretty(event.raw),
        }
    if isinstance(event, ToolResultEvent):
        sidecar = Usage.from_tool_meta(event.meta)
        return {
            "type": "tool_result",
            "tool_call_id": event.tool_call_id,
            "name": event.name,
            "duration_s": _number(event.duration_s),
            "is_error": event.is_error,
            "truncated": event.truncated,
            "content": [_block(b, images, base) for b in event.content],
            "usage": usage_view(sidecar) if sidecar else None,
            "meta": pretty(event.meta),
        }
    if isinstance(event, ModelErrorEvent):
        return {"type": "model_error", "kind": event.kind, "error": event.error, "retries": event.retries}
    return {
        "type": "answer",
        "protocol": event.protocol,
        "status": event.status,
        "raw_answer": event.raw_answer,
        "extracted_answer": event.extracted_answer,
        "gold": event.gold,
        "answer_format": event.answer_format,
        "score": _number(event.score),
        "errors": [e for e in event.errors if e],
        "extraction_usage": [usage_view(u) for u in event.extraction_usage],
        "extraction": pretty(event.extraction),
    }


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    said = f"{where}: {first['msg']}" if where else str(first["msg"])
    count = error.error_count()
    return said if count == 1 else f"{said}; {count - 1} more problem(s)"


def _unreadable_event(item: object, error: ValidationError) -> dict[str, Any]:
    """An event that does not match the format: kept, as raw JSON, with the reason."""
    kind = item.get("type") if isinstance(item, Mapping) else None
    return {
        "type": "other",
        "label": kind if isinstance(kind, str) and kind else type(item).__name__,
        "problem": f"does not match the transcript format ({_first_error(error)})",
        "json": pretty(item),
    }


def _tolerant_read(
    document: Mapping[str, Any], images: Collection[str], base: str
) -> tuple[TranscriptHeader | None, list[dict[str, Any]], list[str]]:
    """A document that is not a whole transcript of this version, read part by part."""
    notices: list[str] = []
    version = document.get("version")
    if version != TRANSCRIPT_VERSION:
        found = "has no version" if version is None else f"is format version {version!r}"
        notices.append(
            f"this transcript {found}; this docab reads version {TRANSCRIPT_VERSION}: "
            "parts that do not match are shown as raw JSON"
        )
    header_fields = {k: v for k, v in document.items() if k != "events"}
    header: TranscriptHeader | None = None
    try:
        header = TranscriptHeader.model_validate({**header_fields, "version": TRANSCRIPT_VERSION})
    except ValidationError as exc:
        notices.append(
            f"its header does not match the format ({_first_error(exc)}): the system prompt and tools are not shown"
        )
    items = document.get("events")
    if not isinstance(items, list):
        notices.append("it has no list of events")
        items = []
    events: list[dict[str, Any]] = []
    unreadable = 0
    for item in items:
        try:
            event = EVENT.validate_python(item)
        except ValidationError as exc:
            unreadable += 1
            events.append(_unreadable_event(item, exc))
        else:
            events.append(_event_view(event, images, base))
    if unreadable:
        notices.append(
            f"{unreadable} of {len(items)} event(s) do not match the transcript format; they are shown as raw JSON"
        )
    return header, events, notices


def view_transcript(
    document: object, images: Collection[str] = (), *, base: str = VIEWER_TO_RUN
) -> TranscriptView:
    """A transcript file's parsed JSON, read through ``docab.log.events``, in the shape the page draws.

    Never raises. A transcript of this version is shown whole. Any other (an older version, a damaged
    file) is shown as far as it reads and flagged in ``notices``: an event that does not match its
    model is kept as raw JSON (``{"type": "other", "label", "problem", "json"}``) with the reason,
    and a header that does not match leaves out the system prompt and tools. Images are linked only
    when their path is a stored image's (``images`` holds the run's image paths,
    ``images/<sha256>.<ext>``), as ``<base>/images/...`` seen from the page.

    ``data``: ``{"problem": None, "notices", "arm", "qid", "epoch", "model", "system",
    "tools": [{"name", "description", "input_schema"}], "events": [event...]}``.
    """
    if not isinstance(document, Mapping):
        problem = "transcript unreadable: not a JSON object"
        return TranscriptView(
            data={"problem": problem, "notices": [], "events": [], "tools": [], "system": ""}, problem=problem
        )
    header: TranscriptHeader | None
    try:
        transcript = Transcript.model_validate(document)
    except ValidationError:
        header, events, notices = _tolerant_read(document, images, base)
    else:
        header, events, notices = transcript, [_event_view(e, images, base) for e in transcript.events], []
    spent = 0
    for event in events:
        if event["type"] == "model_turn":
            spent += event["usage"]["input"] + event["usage"]["output"]
            event["tokens_so_far"] = spent
    data = {
        "problem": None,
        "notices": notices,
        "arm": header.arm if header else "",
        "qid": header.qid if header else "",
        "epoch": header.epoch if header else 0,
        "model": header.model if header else "",
        "system": header.system if header else "",
        "tools": [
            {"name": t.name, "description": t.description, "input_schema": pretty(t.input_schema)}
            for t in (header.tools if header else [])
        ],
        "events": events,
    }
    return TranscriptView(data=data, notices=tuple(notices), question=question_text(events))


def question_text(events: Sequence[Mapping[str, Any]]) -> str:
    """The first user message's text (of a transcript's event views): the question as the agent saw it."""
    for event in events:
        if event.get("type") == "message" and event.get("role") == "user":
            text = "\n".join(b["text"] for b in event["content"] if b.get("type") == "text").strip()
            return text[:QUESTION_PREVIEW_CHARS]
    return ""


# -- the index ------------------------------------------------------------------------------------------------


def outcome(record: RunRecord) -> str:
    if record.status != "ok":
        return record.status
    if record.extraction_failed:  # the answer extraction could not parse its reply: scored 0
        return "unextracted"
    if record.score >= 1:
        return "correct"
    return "wrong" if record.score <= 0 else "partial"


def _epoch(record: RunRecord, transcript: TranscriptEntry | None) -> dict[str, Any]:
    by_role: dict[str, int] = {}
    for usage in record.usage:
        by_role[usage.role] = by_role.get(usage.role, 0) + usage.total
    recall = evidence_recall(record)
    cost = record_cost(record)
    problem: str | None
    if transcript is None:
        number = None
        problem = "transcript missing" if record.transcript else "no transcript was recorded for this sample"
    else:
        number = transcript.number if transcript.problem is None else None
        problem = transcript.problem
    return {
        "epoch": record.epoch,
        "model": record.model,
        "status": record.status,
        "outcome": outcome(record),
        "score": finite(record.score),
        "protocol": record.answer_protocol,
        "raw_answer": record.raw_answer,
        "extracted_answer": record.extracted_answer,
        "extraction_failed": record.extraction_failed,
        "answer_path": record.answer_path,
        "limit_hit": record.limit_hit,
        "errors": list(record.errors),
        "tokens": record.tokens(),
        "tokens_by_role": by_role,
        "cost_usd": cost.total,  # null: a price is unknown
        "cost_saved_usd": cost.cached_usd,
        "wall_s": finite(record.wall_time_s),
        "model_s": finite(record.model_time_s),
        "tool_s": finite(record.tool_time_s),
        "turns": record.turns,
        "tool_calls": len(record.tool_calls),
        "tool_errors": sum(c.is_error for c in record.tool_calls),
        "truncated": sum(c.truncated for c in record.tool_calls),
        "retries": record.retries,
        "pages_read": list(record.pages_read),
        "pages_seen_only": sorted(set(record.pages_seen_or_read) - set(record.pages_read)),
        "evidence_recall": finite(recall),
        "started_at": record.started_at,
        "transcript": number,
        "transcript_problem": problem,
    }


def _arm_outcome(epochs: Sequence[Mapping[str, Any]]) -> str:
    kinds = {e["outcome"] for e in epochs}
    return kinds.pop() if len(kinds) == 1 else "mixed"


def _groups(cells: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {d: [] for d in FILTER_DIMENSIONS}
    for dimension, group in cells:
        if dimension in groups and group not in groups[dimension]:
            groups[dimension].append(group)
    return groups


def _run_header(manifest: Manifest, records: Sequence[RunRecord], arms: Sequence[str]) -> dict[str, Any]:
    declared = {
        entry.name: ", ".join([*entry.tools, *entry.mcp_servers]) for entry in manifest.arms if entry.name
    }
    commit = manifest.git.commit or ""
    description = manifest.config.get("description")
    dataset = manifest.dataset
    shard = manifest.shard
    return {
        "run_id": manifest.run_id or (records[0].run_id if records else ""),
        "description": description if isinstance(description, str) else "",
        "dataset": " ".join(part for part in (dataset.name, dataset.version) if part),
        "models": sorted({r.model for r in records}),
        "created_at": manifest.created_at,
        "git": f"{commit[:12]}{' (with local changes)' if manifest.git.dirty else ''}" if commit else "",
        "sessions": len(manifest.sessions),
        "shard": f"{shard.index} of {shard.count}" if shard else "",
        "merged_from": len(manifest.merged_from),
        "records": len(records),
        "questions": len({r.qid for r in records}),
        "epochs": max((r.epoch for r in records), default=-1) + 1,
        "arms": [{"name": a, "tools": declared.get(a, "")} for a in arms],
    }


def _question_row(
    qid: str,
    per_arm: Mapping[str, Sequence[RunRecord]],
    arms: Sequence[str],
    reference: str | None,
    outcomes: Mapping[str, Mapping[str, QuestionOutcome]],
    transcripts: Mapping[tuple[str, str, int], TranscriptEntry],
) -> dict[str, Any]:
    """One question: its properties, and per arm the epoch-averaged result and every epoch."""
    present = [a for a in arms if a in per_arm]
    first = outcomes[present[0]][qid]
    row_arms: dict[str, Any] = {}
    for arm in present:
        averaged = outcomes[arm][qid]
        epochs = [_epoch(r, transcripts.get(r.key)) for r in sorted(per_arm[arm], key=lambda r: r.epoch)]
        row_arms[arm] = {
            "score": finite(averaged.score),
            "outcome": _arm_outcome(epochs),
            "tokens": finite(averaged.tokens),
            "cost_usd": finite(averaged.cost_usd),  # null: a price is unknown
            "wall_s": finite(averaged.wall_time_s),
            "epochs": epochs,
        }
    asked = (transcripts[r.key].question for a in present for r in per_arm[a] if r.key in transcripts)
    scores = [entry["score"] or 0.0 for entry in row_arms.values()]
    versus: dict[str, str] = {}
    if reference in row_arms:
        base = row_arms[reference]["score"] or 0.0
        for arm, entry in row_arms.items():
            if arm != reference:
                gap = (entry["score"] or 0.0) - base
                versus[arm] = "better" if gap > 1e-9 else "worse" if gap < -1e-9 else "same"
    return {
        "qid": qid,
        "doc_id": first.doc_id,
        "doc_type": first.doc_type,
        "answer_format": first.answer_format,
        "evidence_pages": list(first.evidence_pages),
        "evidence_sources": list(first.evidence_sources),
        "answerable": first.answerable,
        "gold": per_arm[present[0]][0].gold,
        "question": next((q for q in asked if q), ""),
        "groups": _groups(question_groups(first)),
        "disagree": max(scores) - min(scores) > 1e-9,  # discordant, as McNemar counts them
        "versus": versus,
        "arms": row_arms,
    }


def summary_view(summary: Summary | None, *, source: str, note: str = "") -> dict[str, Any]:
    """The report summary as the tables ``docab report`` prints (``docab.report.render.sections``)."""
    if summary is None:
        return {"source": source, "note": note, "title": "", "sections": [], "method": "", "warnings": []}
    return {
        "source": source,
        "note": note,
        "title": title(summary),
        "sections": [
            {"title": s.title, "headers": s.headers, "rows": s.rows, "notes": s.notes}
            for s in sections(summary)
        ],
        "method": METHOD_NOTE,
        "warnings": list(summary.warnings),
    }


def build_index(
    records: Sequence[RunRecord],
    *,
    manifest: Manifest | None = None,
    summary: Summary | None = None,
    summary_source: str = "summary.json",
    summary_note: str = "",
    transcripts: Mapping[tuple[str, str, int], TranscriptEntry] | None = None,
    plots: Sequence[Plot] = (),
    warnings: Sequence[str] = (),
) -> dict[str, Any]:
    """The page's data: header, summary tables, plots, and one row per question (first-seen order).

    ``transcripts`` maps a record's key (arm, qid, epoch) to what the writer made of its transcript;
    a record without an entry shows "transcript missing". ``summary`` is the run's report summary
    (``summary.json``) or None; the page then shows the question table alone.
    """
    manifest = manifest or Manifest()
    transcripts = transcripts or {}
    arms = arm_order(manifest, list(dict.fromkeys(r.arm for r in records)))
    wanted = summary.reference_arm if summary else None
    reference = wanted if wanted in arms else (arms[0] if arms else None)
    outcomes = question_outcomes(records)
    by_question: dict[str, dict[str, list[RunRecord]]] = {}
    for record in records:
        by_question.setdefault(record.qid, {}).setdefault(record.arm, []).append(record)
    questions = [
        _question_row(qid, per_arm, arms, reference, outcomes, transcripts)
        for qid, per_arm in by_question.items()
    ]
    filters = {d: sorted({g for q in questions for g in q["groups"][d]}) for d in FILTER_DIMENSIONS}
    seen_outcomes = {e["outcome"] for q in questions for a in q["arms"].values() for e in a["epochs"]}
    floor = (summary is not None and summary.floor) or any(is_floor(r.model) for r in records)
    header = _run_header(manifest, records, arms)
    return {
        "format": VIEWER_FORMAT,
        "title": f"Run {header['run_id']}",
        "floor": floor,
        "label": FLOOR_LABEL if floor else "",
        "run": header,
        "arms": arms,
        "reference_arm": reference,
        "summary": summary_view(summary, source=summary_source, note=summary_note),
        "plots": [p.entry for p in plots],
        "warnings": list(warnings),
        "filters": filters,
        "outcomes": [o for o in OUTCOMES if o in seen_outcomes],
        "questions": questions,
    }
