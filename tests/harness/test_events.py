"""Transcript events: the union round-trips through JSON, refuses what it does not know, and the
agent loop and the transcript writer speak it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from docab.agent.budget import OutputBudget
from docab.agent.loop import SampleLimits, run_agent
from docab.log.events import (
    EVENT,
    TRANSCRIPT_VERSION,
    AnswerEvent,
    Event,
    ImageBlock,
    MessageEvent,
    ModelErrorEvent,
    ModelTurnEvent,
    TextBlock,
    ToolResultEvent,
    Transcript,
    image_path,
)
from docab.log.transcript import transcript_document
from docab.messages import Image, Message, Text, ToolCall, ToolResult, ToolSpec, Turn
from docab.models.base import ModelError
from docab.usage import Usage
from tests.harness.corpus import png_bytes
from tests.harness.fakes import ScriptedModel, submit, turn

IMAGE = Image(png_bytes(), "image/png", name="pages/page-0001.png")


def every_event() -> list[Event]:
    call = ToolCall("c1", "read_file", {"path": "document/pages/page-0001.png", "n": (1, 2)})
    bad_call = ToolCall("c2", "grep", {}, parse_error="arguments are not JSON")
    usage = Usage(input_uncached=900, cache_read=100, output=40, model="openai/gpt-test", raw={"x": 1})
    model_turn = Turn(
        "looking", (call, bad_call), usage, 0.1234567, 2, "tool_calls", {"id": "resp", "obj": object()}
    )
    result = ToolResult(
        (Text("page one"), IMAGE), meta={"io.github.docab/usage": {"input_tokens": 5}}, truncated=True
    )
    return [
        MessageEvent.of(Message.user("Question: when?")),
        ModelTurnEvent.of(1, model_turn),
        ToolResultEvent.of(call, result, 0.25),
        ModelErrorEvent(kind="server", error="HTTP 500", retries=4),
        AnswerEvent(
            protocol="extraction",
            status="ok",
            raw_answer="It is 1970.",
            extracted_answer="1970",
            gold="1970",
            answer_format="Int",
            score=1.0,
            errors=[],
            extraction_usage=[Usage(input_uncached=50, output=5, role="extractor")],
            extraction={"method": "llm", "status": "ok"},
        ),
    ]


@pytest.mark.parametrize("event", every_event(), ids=lambda e: e.type)
def test_each_event_round_trips_through_json(event: Event) -> None:
    text = EVENT.dump_json(event)
    back = EVENT.validate_json(text)
    assert type(back) is type(event) and back.type == event.type
    assert EVENT.dump_python(back, mode="json") == EVENT.dump_python(event, mode="json")
    assert EVENT.validate_python(json.loads(text)) == back  # from parsed JSON too, as the viewer reads


def test_events_keep_what_the_loop_saw() -> None:
    _, model_turn, result, _, _ = every_event()
    assert isinstance(model_turn, ModelTurnEvent) and isinstance(result, ToolResultEvent)
    assert model_turn.latency_s == 0.123457 and model_turn.retries == 2
    assert model_turn.tool_calls[0].arguments == {"path": "document/pages/page-0001.png", "n": [1, 2]}
    assert model_turn.tool_calls[1].parse_error == "arguments are not JSON"
    assert isinstance(model_turn.raw, dict) and model_turn.raw["obj"].startswith(
        "<object object"
    )  # made JSON
    assert model_turn.usage.cache_read == 100 and model_turn.usage.role == "agent"
    text, image = result.content
    assert text == TextBlock(text="page one")
    assert isinstance(image, ImageBlock) and image.path == image_path(IMAGE) and image.image is IMAGE
    assert result.truncated and result.meta["io.github.docab/usage"] == {"input_tokens": 5}
    dumped = EVENT.dump_json(result).decode()
    assert "page one" in dumped and IMAGE.sha256 in dumped and "PNG" not in dumped  # the bytes stay out


@pytest.mark.parametrize(
    "data",
    [
        {"type": "brand_new", "x": 1},
        {"kind": "server", "error": "no type"},
        {"type": "model_error", "kind": "server"},  # a field missing
        {"type": "model_error", "kind": "server", "error": "x", "retries": 0, "extra": 1},  # a field unknown
        {"type": "message", "role": "user", "content": "plain text"},  # v1 tolerated a string
        {"type": "message", "role": "robot", "content": []},
        {"type": "answer", "protocol": "telepathy", "status": "ok"},
        {"type": "message", "role": "user", "content": [{"type": "audio"}]},
    ],
)
def test_the_union_refuses_unknown_types_and_malformed_events(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        EVENT.validate_python(data)


def test_an_unknown_type_names_the_known_ones() -> None:
    with pytest.raises(ValidationError) as caught:
        EVENT.validate_python({"type": "brand_new"})
    message = str(caught.value)
    assert "brand_new" in message and "'model_turn'" in message and "'answer'" in message


def test_the_transcript_document_stores_its_images_and_reads_back() -> None:
    stored: list[Image] = []

    def sink(image: Image) -> str:
        stored.append(image)
        return image_path(image)

    document = transcript_document(
        run_id="r",
        arm="fs",
        qid="q1",
        epoch=0,
        model="openai/gpt-test",
        system="sys",
        tools=[ToolSpec("read_file", "Read a file.", {"type": "object"})],
        events=every_event(),
        store_image=sink,
    )
    assert stored == [IMAGE]
    text = json.dumps(document, allow_nan=False)
    back = Transcript.model_validate_json(text)
    assert back.version == TRANSCRIPT_VERSION == 2
    assert [e.type for e in back.events] == ["message", "model_turn", "tool_result", "model_error", "answer"]
    assert back.model_dump(mode="json") == document
    assert list(back.images()) == []  # read back from JSON, an image block holds a path only


def test_a_sink_storing_images_elsewhere_is_refused() -> None:
    with pytest.raises(ValueError, match="transcripts name the former"):
        transcript_document(
            run_id="r",
            arm="fs",
            qid="q",
            epoch=0,
            model="m",
            system="",
            tools=[],
            events=[ToolResultEvent.of(ToolCall("c", "t", {}), ToolResult((IMAGE,)), 0.0)],
            store_image=lambda image: "elsewhere.png",
        )


def test_the_agent_loop_records_typed_events(tmp_path: Path) -> None:
    from docab.agent.toolbox.filesystem import filesystem_tools
    from tests.harness.corpus import write_document

    write_document(tmp_path / "document")
    model = ScriptedModel(
        [turn("", ("grep", {"pattern": "Hermes"})), turn("no call"), submit("Hermes")],
    )
    trace = asyncio.run(
        run_agent(
            model,
            system="sys",
            prompt="Question: q?",
            tools=filesystem_tools(tmp_path),
            protocol="submit_tool",
            limits=SampleLimits(),
            budget=OutputBudget(),
        )
    )
    kinds = [e.type for e in trace.events]
    assert kinds == [
        "message",
        "model_turn",
        "tool_result",
        "model_turn",
        "message",
        "model_turn",
        "tool_result",
    ]
    assert [e.turn for e in trace.events if isinstance(e, ModelTurnEvent)] == [1, 2, 3]
    reminder = trace.events[4]
    assert isinstance(reminder, MessageEvent) and reminder.role == "user"
    first = reminder.content[0]
    assert isinstance(first, TextBlock) and "submit_answer" in first.text
    failing = ScriptedModel([ModelError("server", "HTTP 500", retries=3)])
    trace = asyncio.run(
        run_agent(
            failing,
            system="sys",
            prompt="q",
            tools=[],
            protocol="submit_tool",
            limits=SampleLimits(),
            budget=OutputBudget(),
        )
    )
    assert trace.events[-1] == ModelErrorEvent(kind="server", error="HTTP 500", retries=3)
