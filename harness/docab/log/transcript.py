"""Transcripts: the full conversation of one sample, stored apart from the records.

One JSON file per (arm, question, epoch) at ``transcripts/<arm>/<qid>.e<epoch>.json`` (the qid
made safe for a file name), referenced by ``RunRecord.transcript``. Images are stored once per
run, by content hash, under ``images/<sha256>.<ext>``, and referenced by path. Layout
(``TRANSCRIPT_VERSION`` 1)::

    {"version": 1, "run_id", "arm", "qid", "epoch", "model", "system", "tools": [{name, description, input_schema}],
     "events": [
       {"type": "message", "role": "user", "content": [...]},
       {"type": "model_turn", "turn": 1, "text", "tool_calls": [{id, name, arguments}], "usage": {...},
        "latency_s", "retries", "stop_reason", "raw"},
       {"type": "tool_result", "tool_call_id", "name", "duration_s", "is_error", "truncated", "content": [...], "meta"},
       {"type": "model_error", "kind", "error"},
       {"type": "answer", "protocol", "raw_answer", "extracted_answer", "gold", "score", "extraction_usage": [...]}
     ]}

Content blocks are ``{"type": "text", "text"}`` or ``{"type": "image", "media_type", "sha256", "path"}``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from typing import Any

from docab.agent.messages import Block, Image, Message, Text, ToolSpec
from docab.models.base import Turn

TRANSCRIPT_VERSION = 1
ImageSink = Callable[[Image], str]  # stores an image, returns its path relative to the run folder

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


def image_path(image: Image) -> str:
    return f"images/{image.sha256}.{_EXTENSIONS.get(image.media_type, 'bin')}"


def transcript_path(arm: str, qid: str, epoch: int) -> str:
    """A file name per (arm, question, epoch) that no other triple shares: names changed to be safe
    on disk (``doc.pdf#3`` and ``doc.pdf_3`` both become ``doc.pdf_3``) get a hash of the original."""
    return f"transcripts/{_safe_name(arm, 'arm')}/{_safe_name(qid, 'question')}.e{epoch}.json"


def _safe_name(name: str, fallback: str) -> str:
    safe = _UNSAFE.sub("_", name).strip("._") or fallback
    if safe == name:
        return safe
    return f"{safe}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:8]}"


def content(blocks: Iterable[Block], store_image: ImageSink) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, Text):
            out.append({"type": "text", "text": block.text})
        else:
            out.append(
                {
                    "type": "image",
                    "media_type": block.media_type,
                    "sha256": block.sha256,
                    "path": store_image(block),
                }
            )
    return out


def _jsonable(value: Any) -> Any:
    """Tool ``_meta`` and raw provider data, made safe for JSON (unknown objects become strings)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def event_to_json(event: dict[str, Any], store_image: ImageSink) -> dict[str, Any]:
    kind = event["type"]
    if kind == "message":
        message: Message = event["message"]
        return {"type": "message", "role": message.role, "content": content(message.blocks, store_image)}
    if kind == "model_turn":
        turn: Turn = event["turn_data"]
        return {
            "type": "model_turn",
            "turn": event["turn"],
            "text": turn.text,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": _jsonable(c.arguments)} for c in turn.tool_calls
            ],
            "usage": turn.usage.to_dict(),
            "latency_s": round(turn.latency_s, 6),
            "retries": turn.retries,
            "stop_reason": turn.stop_reason,
            "raw": _jsonable(turn.raw),
        }
    if kind == "tool_result":
        message = event["message"]
        return {
            "type": "tool_result",
            "tool_call_id": event["tool_call_id"],
            "name": event["name"],
            "duration_s": event["duration_s"],
            "is_error": message.is_error,
            "truncated": event["truncated"],
            "content": content(message.blocks, store_image),
            "meta": _jsonable(event.get("meta") or {}),
        }
    return _jsonable(event)


def transcript_document(
    *,
    run_id: str,
    arm: str,
    qid: str,
    epoch: int,
    model: str,
    system: str,
    tools: Iterable[ToolSpec],
    events: Iterable[dict[str, Any]],
    store_image: ImageSink,
) -> dict[str, Any]:
    return {
        "version": TRANSCRIPT_VERSION,
        "run_id": run_id,
        "arm": arm,
        "qid": qid,
        "epoch": epoch,
        "model": model,
        "system": system,
        "tools": [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools
        ],
        "events": [event_to_json(e, store_image) for e in events],
    }
