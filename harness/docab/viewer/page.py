"""The viewer's data: a run's records, transcripts and summary turned into plain JSON-ready dicts.

Pure functions, no I/O: :func:`view_transcript` normalises one transcript document (whatever its
state: fields missing, wrong types, hostile text) into the fixed shape the page's script draws;
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
                    "arms": {arm: {"score", "outcome", "tokens", "wall_s", "epochs": [epoch...]}}}]}

An arm's ``score``, ``tokens`` and ``wall_s`` are averaged over epochs as in the report; each epoch
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

from docab.log.records import RunRecord
from docab.log.usage import Usage
from docab.report.plots import breakdown_file
from docab.report.render import METHOD_NOTE, sections, title
from docab.report.schema import Summary
from docab.report.summary import (
    DIMENSIONS,
    FLOOR_LABEL,
    QuestionOutcome,
    arm_order,
    evidence_recall,
    is_floor,
    question_groups,
    question_outcomes,
)

VIEWER_FORMAT = "docab-viewer/1"
OUTCOMES = ("correct", "partial", "wrong", "error", "timeout", "limit")
"""What became of one sample: its status when not ``ok``, else its score (1, between, 0)."""
FILTER_DIMENSIONS = ("evidence source", "evidence pages", "document type", "answer format")
QUESTION_PREVIEW_CHARS = 2000
IMAGE_PATH = re.compile(r"images/[0-9a-f]{64}\.(?:png|jpg|gif|webp|bin)")
"""The only image paths a transcript may reference (``docab.log.transcript.image_path``)."""
VIEWER_TO_RUN = ".."  # the viewer lives in RUN_DIR/viewer/: run files are one folder up
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

    @property
    def entry(self) -> dict[str, Any]:
        title = PLOT_TITLES.get(self.name) or self.name.rsplit(".", 1)[0].replace("_", " ")
        return {
            "title": title,
            "src": f"{VIEWER_TO_RUN}/plots/{self.name}",
            # a plot the viewer does not know is shown at once rather than folded away
            "headline": self.name in HEADLINE_PLOTS or self.name not in PLOT_TITLES,
        }


def plot_order(names: Collection[str]) -> list[Plot]:
    """The known plots in reading order, then any others by name."""
    known = [n for n in PLOT_TITLES if n in names]
    return [Plot(n) for n in known + sorted(n for n in names if n not in PLOT_TITLES)]


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


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _count(value: Any) -> int:
    number = _number(value)
    return max(0, int(number)) if number is not None else 0


# -- transcripts ---------------------------------------------------------------------------------------------


def _block(block: Any, images: Collection[str]) -> dict[str, Any]:
    if not isinstance(block, Mapping):
        return {"type": "other", "json": pretty(block)}
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": _text(block.get("text"))}
    if kind == "image":
        path = _text(block.get("path"))
        safe = IMAGE_PATH.fullmatch(path) is not None
        return {
            "type": "image",
            "path": path,
            "media_type": _text(block.get("media_type")),
            # Only a stored image is linked: a path of another shape could point anywhere.
            "src": f"{VIEWER_TO_RUN}/{path}" if safe and path in images else None,
            "problem": None if safe and path in images else ("image file missing" if safe else "unsafe path"),
        }
    return {"type": "other", "json": pretty(block)}


def _content(blocks: Any, images: Collection[str]) -> list[dict[str, Any]]:
    if isinstance(blocks, str):
        return [{"type": "text", "text": blocks}]
    if not isinstance(blocks, list):
        return [] if blocks is None else [{"type": "other", "json": pretty(blocks)}]
    return [_block(b, images) for b in blocks]


def usage_view(usage: Any) -> dict[str, Any] | None:
    """One usage record as the page shows it: input (all of it), cache reads and writes, output."""
    if not isinstance(usage, Mapping):
        return None
    read = Usage.from_dict(usage)  # the harness's own reading: junk counts as 0
    return {
        "role": _text(read.role) or "agent",
        "model": read.model,
        "input": read.input_total,
        "cache_read": read.cache_read,
        "cache_write": read.cache_write,
        "output": read.output,
        "reasoning": read.reasoning,
    }


def _sidecar_usage(meta: Any) -> dict[str, Any] | None:
    if not isinstance(meta, Mapping):
        return None
    usage = Usage.from_tool_meta(meta)
    return usage_view(usage.to_dict()) if usage else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _message(event: Mapping[str, Any], images: Collection[str]) -> dict[str, Any]:
    return {
        "type": "message",
        "role": _text(event.get("role")) or "user",
        "content": _content(event.get("content"), images),
    }


def _tool_call(call: Any) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        return {"id": "", "name": "?", "arguments": pretty(call)}
    return {
        "id": _text(call.get("id")),
        "name": _text(call.get("name")),
        "arguments": pretty(call.get("arguments")) or "{}",
    }


def _model_turn(event: Mapping[str, Any], images: Collection[str]) -> dict[str, Any]:
    return {
        "type": "model_turn",
        "turn": _count(event.get("turn")),
        "text": _text(event.get("text")),
        "tool_calls": [_tool_call(c) for c in _list(event.get("tool_calls"))],
        "usage": usage_view(event.get("usage")),
        "tokens_so_far": 0,  # filled in by view_transcript
        "latency_s": _number(event.get("latency_s")),
        "retries": _count(event.get("retries")),
        "stop_reason": _text(event.get("stop_reason")),
        "raw": pretty(event.get("raw")),
    }


def _tool_result(event: Mapping[str, Any], images: Collection[str]) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_call_id": _text(event.get("tool_call_id")),
        "name": _text(event.get("name")),
        "duration_s": _number(event.get("duration_s")),
        "is_error": event.get("is_error") is True,
        "truncated": event.get("truncated") is True,
        "content": _content(event.get("content"), images),
        "usage": _sidecar_usage(event.get("meta")),
        "meta": pretty(event.get("meta")),
    }


def _model_error(event: Mapping[str, Any], images: Collection[str]) -> dict[str, Any]:
    return {
        "type": "model_error",
        "kind": _text(event.get("kind")),
        "error": _text(event.get("error")),
        "retries": _count(event.get("retries")),
    }


def _answer(event: Mapping[str, Any], images: Collection[str]) -> dict[str, Any]:
    return {
        "type": "answer",
        "protocol": _text(event.get("protocol")),
        "status": _text(event.get("status")),
        "raw_answer": _text(event.get("raw_answer")),
        "extracted_answer": _text(event.get("extracted_answer")),
        "gold": _text(event.get("gold")),
        "answer_format": _text(event.get("answer_format")),
        "score": _number(event.get("score")),
        "errors": [_text(e) for e in _list(event.get("errors")) if e],
        "extraction_usage": [u for u in map(usage_view, _list(event.get("extraction_usage"))) if u],
        "extraction": pretty(event.get("extraction")),
    }


_EVENTS = {
    "message": _message,
    "model_turn": _model_turn,
    "tool_result": _tool_result,
    "model_error": _model_error,
    "answer": _answer,
}


def _event(event: Any, images: Collection[str]) -> dict[str, Any]:
    if not isinstance(event, Mapping):
        return {"type": "other", "label": type(event).__name__, "json": pretty(event)}
    convert = _EVENTS.get(event.get("type"))
    if convert is None:
        return {"type": "other", "label": _text(event.get("type")) or "event", "json": pretty(event)}
    return convert(event, images)


def view_transcript(document: Any, images: Collection[str] = ()) -> dict[str, Any]:
    """A transcript document (``docab.log.transcript`` layout) in the shape the page draws.

    Never raises: unknown or malformed parts are kept as JSON text (``{"type": "other"}``), images
    are linked only when their path is a stored image's (``images`` holds the run's image paths,
    ``images/<sha256>.<ext>``), and numbers that are not numbers become None.
    """
    if not isinstance(document, Mapping):
        return {
            "problem": "transcript unreadable: not a JSON object",
            "events": [],
            "tools": [],
            "system": "",
        }
    events = [_event(e, images) for e in _list(document.get("events"))]
    spent = 0
    for event in events:
        if event["type"] == "model_turn":
            spent += event["usage"]["input"] + event["usage"]["output"] if event["usage"] else 0
            event["tokens_so_far"] = spent
    return {
        "problem": None,
        "arm": _text(document.get("arm")),
        "qid": _text(document.get("qid")),
        "epoch": _count(document.get("epoch")),
        "model": _text(document.get("model")),
        "system": _text(document.get("system")),
        "tools": [
            {
                "name": _text(t.get("name")),
                "description": _text(t.get("description")),
                "input_schema": pretty(t.get("input_schema")),
            }
            for t in _list(document.get("tools"))
            if isinstance(t, Mapping)
        ],
        "events": events,
    }


def question_text(view: Mapping[str, Any]) -> str:
    """The first user message's text: the question as the agent saw it."""
    for event in view.get("events", ()):
        if event.get("type") == "message" and event.get("role") == "user":
            text = "\n".join(b["text"] for b in event["content"] if b.get("type") == "text").strip()
            return text[:QUESTION_PREVIEW_CHARS]
    return ""


# -- the index ------------------------------------------------------------------------------------------------


def outcome(record: RunRecord) -> str:
    if record.status != "ok":
        return record.status
    if record.score >= 1:
        return "correct"
    return "wrong" if record.score <= 0 else "partial"


def _epoch(record: RunRecord, transcript: TranscriptEntry | None) -> dict[str, Any]:
    by_role: dict[str, int] = {}
    for usage in record.usage:
        by_role[usage.role] = by_role.get(usage.role, 0) + usage.total
    recall = evidence_recall(record)
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
        "limit_hit": record.limit_hit,
        "errors": list(record.errors),
        "tokens": record.tokens(),
        "tokens_by_role": by_role,
        "wall_s": finite(record.wall_time_s),
        "model_s": finite(record.model_time_s),
        "tool_s": finite(record.tool_time_s),
        "turns": record.turns,
        "tool_calls": len(record.tool_calls),
        "tool_errors": sum(c.is_error for c in record.tool_calls),
        "truncated": sum(c.truncated for c in record.tool_calls),
        "retries": record.retries,
        "pages_read": list(record.pages_read),
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


def _run_header(
    manifest: Mapping[str, Any], records: Sequence[RunRecord], arms: Sequence[str]
) -> dict[str, Any]:
    config = manifest.get("config") if isinstance(manifest.get("config"), Mapping) else {}
    dataset = manifest.get("dataset") if isinstance(manifest.get("dataset"), Mapping) else {}
    git = manifest.get("git") if isinstance(manifest.get("git"), Mapping) else {}
    sessions = manifest.get("sessions") if isinstance(manifest.get("sessions"), list) else []
    shard = manifest.get("shard") if isinstance(manifest.get("shard"), Mapping) else None
    declared = {}
    for entry in config.get("arms") or manifest.get("arms") or []:
        if isinstance(entry, Mapping) and entry.get("name"):
            tools = [*(entry.get("tools") or []), *(entry.get("mcp_servers") or [])]
            declared[str(entry["name"])] = ", ".join(str(t) for t in tools)
    commit = _text(git.get("commit"))
    return {
        "run_id": _text(manifest.get("run_id")) or (records[0].run_id if records else ""),
        "description": _text(config.get("description")),
        "dataset": " ".join(_text(dataset.get(k)) for k in ("name", "version") if dataset.get(k)),
        "models": sorted({r.model for r in records}),
        "created_at": _text(manifest.get("created_at")),
        "git": f"{commit[:12]}{' (with local changes)' if git.get('dirty') else ''}" if commit else "",
        "sessions": len(sessions),
        "shard": f"{shard.get('index')} of {shard.get('count')}" if shard else "",
        "merged_from": len(manifest.get("merged_from") or []),
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
    manifest: Mapping[str, Any] | None = None,
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
    manifest = manifest or {}
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
