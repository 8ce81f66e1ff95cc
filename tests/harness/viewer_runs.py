"""A run folder with transcripts and images for the viewer's tests: every state a question can be in.

``q-agree``   both arms correct, two epochs, a page image in a tool result, tool-side tokens
``q-differ``  fs correct, fs+md-vision wrong; a failed and a truncated tool call
``q-error``   fs: a model error (status error); fs+md-vision: a timeout
``q-only-fs`` no fs+md-vision record (a missing arm)
``q-hostile`` text that tries to break out of the page: ``</script>``, ``<img onerror>``, ``<!--``
``q-broken``  fs: a transcript that is not JSON; fs+md-vision: the transcript file is gone
``q-limit``   both arms stopped by the turn limit
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from pathlib import Path
from typing import Any

from docab.log.events import (
    AnswerEvent,
    Event,
    ImageBlock,
    MessageEvent,
    ModelErrorEvent,
    ModelTurnEvent,
    RequestedCall,
    TextBlock,
    ToolDefinition,
    ToolResultEvent,
    Transcript,
)
from docab.log.records import RunRecord
from docab.log.transcript import transcript_path
from docab.usage import Usage
from tests.harness.synthetic_runs import make_record, write_run

ARMS = ("fs", "fs+md-vision")
HOSTILE = '</script><img src=x onerror="window.__pwned=1"><!-- \u2028 </SCRIPT >'
MARKER = "unique-tool-output-7f3a"  # a tool result's text, to find on the page


def png_bytes(colour: tuple[int, int, int] = (40, 90, 200)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def store_image(folder: Path, data: bytes) -> str:
    rel = f"images/{hashlib.sha256(data).hexdigest()}.png"
    (folder / "images").mkdir(parents=True, exist_ok=True)
    (folder / rel).write_bytes(data)
    return rel


def text(value: str) -> TextBlock:
    return TextBlock(text=value)


def transcript(record: RunRecord, question: str, events: list[Event]) -> dict[str, Any]:
    """The transcript file of ``record``, as the runner writes it (``docab.log.events``)."""
    return Transcript(
        run_id=record.run_id,
        arm=record.arm,
        qid=record.qid,
        epoch=record.epoch,
        model=record.model,
        system="You answer questions about one document.",
        tools=[ToolDefinition(name="read_file", description="Read a file.", input_schema={"type": "object"})],
        events=[
            MessageEvent(role="user", content=[text(f"Question: {question}")]),
            *events,
            AnswerEvent(
                protocol=record.answer_protocol,
                status=record.status,
                raw_answer=record.raw_answer,
                extracted_answer=record.extracted_answer,
                gold=record.gold,
                answer_format=record.answer_format,
                score=record.score,
                errors=list(record.errors),
                extraction_usage=[],
                extraction=None,
            ),
        ],
    ).model_dump(mode="json")


def turn(number: int, calls: list[tuple[str, dict[str, Any]]], text_said: str = "") -> ModelTurnEvent:
    return ModelTurnEvent(
        turn=number,
        text=text_said,
        tool_calls=[
            RequestedCall(id=f"call_{number}_{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls)
        ],
        usage=Usage(role="agent", input_uncached=900, cache_read=100, cache_write=0, output=40),
        latency_s=0.8,
        retries=0,
        stop_reason="tool_use",
        raw={"id": "resp_1"},
    )


def result(number: int, name: str, content: list[TextBlock | ImageBlock], **flags: Any) -> ToolResultEvent:
    return ToolResultEvent(
        tool_call_id=f"call_{number}_0",
        name=name,
        duration_s=0.25,
        is_error=flags.get("is_error", False),
        truncated=flags.get("truncated", False),
        content=content,
        meta=flags.get("meta", {}),
    )


def build(folder: Path) -> Path:
    """Write the run (records.jsonl, manifest.json, transcripts/, images/) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    image = store_image(folder, png_bytes())
    plan: list[tuple[RunRecord, str, list[Event]]] = []

    def add(record: RunRecord, question: str, events: list[Event]) -> None:
        plan.append((record, question, events))

    sidecar = {
        "io.github.docab/usage": {
            "provider": "openai",
            "model": "gpt-4o",
            "input_tokens": 500,
            "output_tokens": 20,
        }
    }
    for epoch in (0, 1):
        for arm in ARMS:
            add(
                make_record(
                    arm,
                    "q-agree",
                    "report.pdf",
                    epoch=epoch,
                    gold="1970",
                    doc_type="Financial report",
                    evidence_sources=("Pure-text (Plain-text)",),
                    evidence_pages=(1,),
                    pages_read=(1,),
                ),
                "In which year was Northwind founded?",
                [
                    turn(1, [("read_file", {"path": "document/pages/page-0001.png"})]),
                    result(
                        1,
                        "read_file",
                        [
                            text(f"{MARKER} epoch {epoch}"),
                            ImageBlock(media_type="image/png", sha256="x", path=image),
                        ],
                        meta=sidecar,
                    ),
                ],
            )
    add(
        make_record(
            "fs", "q-differ", "report.pdf", gold="4759", answer_format="Int", evidence_sources=("Table",)
        ),
        "How many people does Northwind employ?",
        [
            turn(1, [("grep", {"pattern": "employ"})], "Let me search."),
            result(1, "grep", [text("no such file")], is_error=True),
            turn(2, [("read_file", {"path": "document/document.md"})]),
            result(2, "read_file", [text("4759 people ... [truncated]")], truncated=True),
        ],
    )
    add(
        make_record(
            "fs+md-vision",
            "q-differ",
            "report.pdf",
            score=0.0,
            gold="4759",
            answer="4000",
            answer_format="Int",
            evidence_sources=("Table",),
        ),
        "How many people does Northwind employ?",
        [turn(1, [("index_md", {"uri": "document/document.md"})]), result(1, "index_md", [text("# Report")])],
    )
    add(
        make_record(
            "fs",
            "q-error",
            "survey.pdf",
            status="error",
            gold="11",
            doc_type="Research report",
            evidence_sources=("Chart",),
        ),
        "How many nesting pairs were counted?",
        [ModelErrorEvent(kind="server", error="HTTP 500 from the provider", retries=4)],
    )
    add(
        make_record(
            "fs+md-vision",
            "q-error",
            "survey.pdf",
            status="timeout",
            gold="11",
            doc_type="Research report",
            evidence_sources=("Chart",),
        ),
        "How many nesting pairs were counted?",
        [ModelErrorEvent(kind="timeout", error="no answer within 120 s", retries=0)],
    )
    add(
        make_record(
            "fs",
            "q-only-fs",
            "survey.pdf",
            gold="Not answerable",
            answer_format="None",
            doc_type="Research report",
            evidence_pages=(),
            evidence_sources=(),
        ),
        "Who funded the survey?",
        [],
    )
    for arm in ARMS:
        add(
            make_record(
                arm,
                "q-hostile",
                "survey.pdf",
                score=0.0,
                gold="blue",
                answer=HOSTILE,
                answer_format="Str",
                doc_type="Research report",
                evidence_sources=("Figure",),
            ),
            f"What colour is {HOSTILE}?",
            [turn(1, [("read_file", {"path": HOSTILE})], HOSTILE), result(1, "read_file", [text(HOSTILE)])],
        )
    for arm in ARMS:
        add(
            make_record(
                arm, "q-broken", "guide.pdf", gold="3", doc_type="Guidebook", evidence_sources=("Table",)
            ),
            "How many rooms are there?",
            [],
        )
        add(
            make_record(
                arm,
                "q-limit",
                "guide.pdf",
                status="limit",
                limit_hit="turns",
                gold="9",
                doc_type="Guidebook",
                evidence_sources=("Table",),
            ),
            "How far is the campus?",
            [turn(1, [("grep", {"pattern": "km"})])],
        )
    records = []
    for record, question, events in plan:
        rel = transcript_path(record.arm, record.qid, record.epoch)
        record = dataclasses.replace(record, transcript=rel, run_id=folder.name)
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(transcript(record, question, events)), encoding="utf-8")
        records.append(record)
    by_key = {(r.arm, r.qid): r for r in records}
    (folder / by_key[("fs", "q-broken")].transcript).write_text('{"events": [', encoding="utf-8")
    (folder / by_key[("fs+md-vision", "q-broken")].transcript).unlink()
    return write_run(
        folder, records, manifest={"run_id": folder.name, "created_at": "2026-01-01T00:00:00+00:00"}
    )
