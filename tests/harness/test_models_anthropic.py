"""``anthropic/<model>`` through the real SDK against the loopback stub: blocks, images, caching."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest

from docab.messages import Message, Text, ToolCall, ToolResult, ToolSpec
from docab.models import ModelConfigError, ModelError, build_model
from docab.models.anthropic_messages import to_anthropic_messages
from docab.models.limits import ConcurrencyLimits
from tests.harness.model_fakes import FakeClock, generate_once, png
from tests.support.http_server import Reply
from tests.support.llm_stub import LLMStub, anthropic_reply

GREP = ToolSpec(
    "grep", "Search the document.", {"type": "object", "properties": {"pattern": {"type": "string"}}}
)
READ = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})


def make_model(stub: LLMStub, **options: Any):
    config = {
        "name": "anthropic/claude-test",
        "base_url": stub.anthropic_base_url,
        "max_retries": 0,
        **options,
    }
    return build_model(config, env={}, limits=ConcurrencyLimits(), clock=FakeClock())


def sent(stub: LLMStub, index: int = -1) -> dict[str, Any]:
    return stub.requests_for("anthropic")[index].json()


def test_tool_use_loop_merges_parallel_results_into_one_user_turn(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "anthropic",
        anthropic_reply(
            "Let me look.",
            tool_uses=[("tu1", "grep", {"pattern": "revenue"}), ("tu2", "read", {"path": "p3"})],
        ),
        anthropic_reply("Revenue was 42."),
    )
    model = make_model(llm_stub)
    page = png(5, 7, name="pages/page-0003.png")

    async def loop() -> list[Any]:
        async with model:
            history = [Message.user("What was the revenue?")]
            first = await model.generate("Be brief.", history, [GREP, READ], max_output_tokens=300)
            history.append(first.message())
            history.append(Message.tool("tu1", ToolResult(blocks=(Text("line 3: revenue 42"),))))
            history.append(Message.tool("tu2", ToolResult(blocks=(Text("page 3"), page))))
            second = await model.generate("Be brief.", history, [GREP, READ], max_output_tokens=300)
            return [first, second]

    first, second = asyncio.run(loop())
    assert first.text == "Let me look." and first.stop_reason == "tool_use"
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("tu1", "grep", {"pattern": "revenue"}),
        ("tu2", "read", {"path": "p3"}),
    ]
    assert second.text == "Revenue was 42."

    body = sent(llm_stub, 0)
    assert body["model"] == "claude-test"
    assert body["system"] == "Be brief."
    assert body["max_tokens"] == 300 and "temperature" not in body
    assert body["tools"][1] == {
        "name": "read",
        "description": READ.description,
        "input_schema": READ.input_schema,
    }

    messages = sent(llm_stub, 1)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assistant = messages[1]["content"]
    assert [b["type"] for b in assistant] == ["text", "tool_use", "tool_use"]
    assert assistant[1] == {"type": "tool_use", "id": "tu1", "name": "grep", "input": {"pattern": "revenue"}}
    results = messages[2]["content"]
    assert [(b["type"], b["tool_use_id"]) for b in results] == [
        ("tool_result", "tu1"),
        ("tool_result", "tu2"),
    ]
    # The image stays inside its tool_result, as an image block after the text.
    inner = results[1]["content"]
    assert [b["type"] for b in inner] == ["text", "image"]
    assert inner[1]["source"]["media_type"] == "image/png"
    assert base64.b64decode(inner[1]["source"]["data"]) == page.data
    assert "is_error" not in results[0]


def test_error_results_and_empty_results_are_marked(llm_stub: LLMStub) -> None:
    history = [
        Message.user("q"),
        Message.assistant(tool_calls=(ToolCall("a", "read", {}), ToolCall("b", "read", {}))),
        Message.tool("a", ToolResult.error("no such file")),
        Message.tool("b", ToolResult(blocks=())),
        Message.user("Please answer now."),
    ]
    generate_once(make_model(llm_stub), "", history, [READ])
    messages = sent(llm_stub)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    error, empty, note = messages[2]["content"]
    assert error["is_error"] is True and error["content"] == [{"type": "text", "text": "no such file"}]
    assert empty["content"] == [{"type": "text", "text": "(no output)"}]  # the API rejects empty text
    assert note == {"type": "text", "text": "Please answer now."}  # after the results, as required


def test_usage_keeps_cache_reads_and_writes_apart(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "anthropic",
        anthropic_reply(
            "x",
            input_tokens=50,
            cache_read_input_tokens=900,
            cache_creation_input_tokens=100,
            output_tokens=40,
        ),
    )
    turn = generate_once(make_model(llm_stub), "", [Message.user("q")])
    usage = turn.usage
    assert (usage.input_uncached, usage.cache_read, usage.cache_write, usage.output) == (50, 900, 100, 40)
    assert usage.input_total == 1050  # Anthropic's input_tokens excludes the cache: added, not double counted
    assert usage.raw == {
        "input_tokens": 50,
        "output_tokens": 40,
        "cache_read_input_tokens": 900,
        "cache_creation_input_tokens": 100,
    }


def test_prompt_cache_places_breakpoints_on_tools_system_and_newest_message(llm_stub: LLMStub) -> None:
    history = [Message.user("first"), Message.assistant("reply"), Message.user("second")]
    generate_once(make_model(llm_stub, prompt_cache=True), "System prompt.", history, [GREP, READ])
    body = sent(llm_stub)
    assert body["system"] == [
        {"type": "text", "text": "System prompt.", "cache_control": {"type": "ephemeral"}}
    ]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["messages"][0]["content"][-1]


def test_without_prompt_cache_no_breakpoint_is_sent(llm_stub: LLMStub) -> None:
    generate_once(make_model(llm_stub), "System.", [Message.user("q")], [GREP])
    assert "cache_control" not in llm_stub.requests_for("anthropic")[-1].body.decode()


def test_thinking_blocks_are_preserved_and_sent_back_first(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "anthropic",
        anthropic_reply(None, thinking="Search first.", tool_uses=[("tu1", "grep", {"pattern": "x"})]),
        anthropic_reply("done"),
    )
    model = make_model(llm_stub, thinking_budget=2000)

    async def loop() -> None:
        async with model:
            history = [Message.user("q")]
            first = await model.generate("", history, [GREP], max_output_tokens=500)
            assert first.reasoning[0].text == "Search first." and first.reasoning[0].signature == "sig"
            history += [first.message(), Message.tool("tu1", ToolResult(blocks=(Text("hit"),)))]
            await model.generate("", history, [GREP], max_output_tokens=500)

    asyncio.run(loop())
    first_body, second_body = sent(llm_stub, 0), sent(llm_stub, 1)
    assert first_body["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert first_body["max_tokens"] == 2500  # the answer keeps its 500 tokens on top of the budget
    assert "temperature" not in first_body
    assistant = second_body["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "Search first.", "signature": "sig"}
    assert assistant[1]["type"] == "tool_use"


def test_redacted_thinking_round_trips(llm_stub: LLMStub) -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "redacted_thinking", "data": "opaque=="}, {"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    llm_stub.push("anthropic", Reply.json(body))
    turn = generate_once(make_model(llm_stub), "", [Message.user("q")])
    wire = to_anthropic_messages([turn.message()])
    assert wire[0]["content"][0] == {"type": "redacted_thinking", "data": "opaque=="}


def test_text_only_mode_replaces_images_inside_tool_results(llm_stub: LLMStub) -> None:
    history = [
        Message.user("q"),
        Message.assistant(tool_calls=(ToolCall("a", "read", {}),)),
        Message.tool("a", ToolResult(blocks=(Text("page 3"), png(1584, 2048, name="pages/page-0003.png")))),
    ]
    generate_once(make_model(llm_stub, text_only=True), "", history, [READ])
    result = sent(llm_stub)["messages"][2]["content"][0]
    assert result["content"] == [
        {"type": "text", "text": "page 3"},
        {"type": "text", "text": "[image omitted: page-0003.png, 1584x2048; this model cannot see images]"},
    ]


def test_a_non_object_tool_input_is_a_recoverable_turn(llm_stub: LLMStub) -> None:
    llm_stub.push("anthropic", anthropic_reply(None, tool_uses=[("tu1", "grep", "not an object")]))  # type: ignore[list-item]
    turn = generate_once(make_model(llm_stub), "", [Message.user("q")], [GREP])
    assert turn.tool_calls[0].arguments == {} and "JSON object" in (turn.tool_calls[0].parse_error or "")


def test_a_reply_without_content_is_malformed(llm_stub: LLMStub) -> None:
    llm_stub.push("anthropic", Reply.json({"id": "m", "type": "message", "role": "assistant", "usage": {}}))
    with pytest.raises(ModelError) as caught:
        generate_once(make_model(llm_stub), "", [Message.user("q")])
    assert caught.value.kind == "malformed"


def test_a_temperature_is_refused_for_anthropic_models() -> None:
    # API version 2026-10-21 answers 400 to any sampling parameter.
    with pytest.raises(ModelConfigError, match="temperature cannot be set for anthropic"):
        build_model({"name": "anthropic/m", "temperature": 0}, env={"ANTHROPIC_API_KEY": "k"})
