"""``openai/<model>`` through the real SDK against the loopback stub: request shapes, images, usage."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from docab.messages import Message, Reasoning, Text, ToolCall, ToolResult, ToolSpec
from docab.models import ModelError, build_model
from docab.models.limits import ConcurrencyLimits
from docab.models.openai_chat import parse_arguments, to_openai_messages
from tests.harness.model_fakes import FakeClock, generate_once, png
from tests.support.http_server import Reply
from tests.support.llm_stub import LLMStub, openai_reply

GREP = ToolSpec(
    "grep", "Search the document.", {"type": "object", "properties": {"pattern": {"type": "string"}}}
)
READ = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})


def make_model(stub: LLMStub, **options: Any):
    config = {"name": "openai/gpt-test", "base_url": stub.openai_base_url, "max_retries": 0, **options}
    return build_model(config, env={}, limits=ConcurrencyLimits(), clock=FakeClock())


def sent(stub: LLMStub, index: int = -1) -> dict[str, Any]:
    return stub.requests_for("openai")[index].json()


def test_tool_call_loop_sends_each_turn_in_wire_shape(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "openai",
        openai_reply(
            None, tool_calls=[("c1", "grep", '{"pattern": "revenue"}'), ("c2", "read", '{"path": "a.md"}')]
        ),
        openai_reply("The revenue was 42."),
    )
    model = make_model(llm_stub, temperature=0)

    async def loop() -> list[Any]:
        async with model:
            history = [Message.user("What was the revenue?")]
            first = await model.generate("Be brief.", history, [GREP, READ], max_output_tokens=256)
            history.append(first.message())
            history.append(Message.tool("c1", ToolResult(blocks=(Text("line 3: revenue 42"),))))
            history.append(Message.tool("c2", ToolResult.error("no such file: a.md")))
            second = await model.generate("Be brief.", history, [GREP, READ], max_output_tokens=256)
            return [first, second]

    first, second = asyncio.run(loop())
    assert [c.name for c in first.tool_calls] == ["grep", "read"]
    assert first.tool_calls[0].arguments == {"pattern": "revenue"}
    assert first.stop_reason == "tool_calls"
    assert second.text == "The revenue was 42."

    body = sent(llm_stub, 0)
    assert body["model"] == "gpt-test"
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][1] == {"role": "user", "content": "What was the revenue?"}
    assert body["tools"][0] == {"type": "function", "function": {"name": "grep", **_fn(GREP)}}
    assert body["max_tokens"] == 256  # a custom base_url gets the widely supported parameter
    assert body["temperature"] == 0

    messages = sent(llm_stub, 1)["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assistant = messages[2]
    assert assistant["content"] == ""  # not null: llama-cpp-python's server rejects null (tests/llama)
    assert [json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]] == [
        {"pattern": "revenue"},
        {"path": "a.md"},
    ]
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "line 3: revenue 42"}
    assert messages[4]["tool_call_id"] == "c2"
    assert messages[4]["content"] == "Tool error: no such file: a.md"


def _fn(spec: ToolSpec) -> dict[str, Any]:
    return {"description": spec.description, "parameters": spec.input_schema}


def test_tool_result_images_go_to_one_user_message_after_all_tool_messages(llm_stub: LLMStub) -> None:
    page = png(4, 3, name="pages/page-0003.png")
    figure = png(2, 2, name="figures/fig-1.png")
    history = [
        Message.user("Look at page 3."),
        Message.assistant(
            tool_calls=(ToolCall("c1", "read", {"path": "p3"}), ToolCall("c2", "read", {"path": "f"}))
        ),
        Message.tool("c1", ToolResult(blocks=(Text("page 3"), page))),
        Message.tool("c2", ToolResult(blocks=(figure,))),
    ]
    generate_once(make_model(llm_stub), "", history, [READ], max_output_tokens=64)
    messages = sent(llm_stub)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user"]
    # Tool messages stay text-only, and say that images follow.
    assert messages[2]["content"] == "page 3\n[this result includes an image; it follows in the next message]"
    assert messages[3]["content"] == "[this result includes an image; it follows in the next message]"
    parts = messages[4]["content"]
    kinds = [p["type"] for p in parts]
    assert kinds == ["text", "text", "image_url", "text", "image_url"]
    assert "read (call c1)" in parts[1]["text"] and "read (call c2)" in parts[3]["text"]
    url = parts[2]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == page.data


def test_user_images_become_content_parts_with_detail(llm_stub: LLMStub) -> None:
    history = [Message(role="user", blocks=(Text("What is shown?"), png()))]
    generate_once(make_model(llm_stub, image_detail="low"), "", history, [], max_output_tokens=8)
    content = sent(llm_stub)["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "What is shown?"}
    assert content[1]["image_url"]["detail"] == "low"
    assert "tools" not in sent(llm_stub)  # no empty tool list for servers that reject one


def test_text_only_mode_sends_no_image_and_says_where_it_was(llm_stub: LLMStub) -> None:
    history = [
        Message.user("Read page 3."),
        Message.assistant(tool_calls=(ToolCall("c1", "read", {"path": "pages/page-0003.png"}),)),
        Message.tool("c1", ToolResult(blocks=(png(1584, 2048, name="pages/page-0003.png"),))),
    ]
    model = make_model(llm_stub, text_only=True)
    assert model.supports_images is False
    generate_once(model, "", history, [READ], max_output_tokens=8)
    raw = llm_stub.requests_for("openai")[-1].body.decode()
    assert "image_url" not in raw and "base64" not in raw
    messages = sent(llm_stub)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[2]["content"] == "[image omitted: page-0003.png, 1584x2048; this model cannot see images]"


def test_usage_counts_cached_prompt_tokens_once(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "openai",
        openai_reply("x", prompt_tokens=1000, cached_tokens=800, completion_tokens=300, reasoning_tokens=200),
    )
    turn = generate_once(make_model(llm_stub), "", [Message.user("q")], [], max_output_tokens=8)
    usage = turn.usage
    assert (usage.input_uncached, usage.cache_read, usage.cache_write) == (200, 800, 0)
    assert (usage.input_total, usage.output, usage.reasoning) == (1000, 300, 200)
    assert usage.model == "openai/gpt-test" and usage.role == "agent"
    assert usage.raw["prompt_tokens_details"] == {"cached_tokens": 800}
    assert turn.raw["usage"]["prompt_tokens"] == 1000


def test_missing_usage_gives_zeros_not_a_crash(llm_stub: LLMStub) -> None:
    body = json.loads(openai_reply("x").body)
    del body["usage"]
    llm_stub.push("openai", Reply.json(body))
    turn = generate_once(make_model(llm_stub), "", [Message.user("q")], [], max_output_tokens=8)
    assert turn.text == "x" and turn.usage.total == 0 and not turn.usage.reported
    # Its cost is unknown, never a silent $0 (an endpoint that drops usage made --max-cost a no-op).
    from docab.pricing import sample_cost

    cost = sample_cost([turn.usage])
    assert cost.total is None and cost.unpriced == ("openai/gpt-test (replies without token usage)",)


def test_reasoning_content_is_kept_and_echoed_only_on_tool_call_turns(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "openai",
        openai_reply(None, tool_calls=[("c1", "grep", "{}")], reasoning_content="I should search."),
        openai_reply("done", reasoning_content="Found it."),
        openai_reply("next"),
    )
    model = make_model(llm_stub)

    async def loop() -> None:
        async with model:
            history = [Message.user("q")]
            first = await model.generate("", history, [GREP], max_output_tokens=8)
            assert first.reasoning == (Reasoning(text="I should search.", field="reasoning_content"),)
            history += [first.message(), Message.tool("c1", ToolResult(blocks=(Text("hit"),)))]
            second = await model.generate("", history, [GREP], max_output_tokens=8)
            history += [second.message(), Message.user("and then?")]
            await model.generate("", history, [GREP], max_output_tokens=8)

    asyncio.run(loop())
    assistants = [m for m in sent(llm_stub, 2)["messages"] if m["role"] == "assistant"]
    assert assistants[0]["reasoning_content"] == "I should search."  # DeepSeek needs it back here
    assert "reasoning_content" not in assistants[1]  # a plain answer's reasoning is not resent


def test_official_endpoint_uses_max_completion_tokens() -> None:
    from docab.models.config import ModelConfig
    from docab.models.openai_chat import max_tokens_param

    assert max_tokens_param(ModelConfig(name="openai/gpt-5")) == "max_completion_tokens"
    assert max_tokens_param(ModelConfig(name="openai/m", base_url="http://h/v1")) == "max_tokens"
    forced = ModelConfig(name="openai/m", base_url="http://h/v1", max_tokens_param="max_completion_tokens")
    assert max_tokens_param(forced) == "max_completion_tokens"


def test_config_caps_max_output_tokens_and_passes_vendor_options(llm_stub: LLMStub) -> None:
    model = make_model(llm_stub, max_output_tokens=100, reasoning_effort="low", extra_body={"top_k": 20})
    generate_once(model, "", [Message.user("q")], [], max_output_tokens=4096)
    body = sent(llm_stub)
    assert body["max_tokens"] == 100
    assert body["reasoning_effort"] == "low"
    assert body["top_k"] == 20


def test_bad_tool_arguments_are_a_recoverable_turn(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "openai",
        openai_reply(
            None, tool_calls=[("c1", "grep", '{"pattern": "x"'), ("c2", "grep", "[1, 2]"), ("c3", "read", "")]
        ),
    )
    turn = generate_once(make_model(llm_stub), "", [Message.user("q")], [GREP], max_output_tokens=8)
    bad_json, not_object, empty = turn.tool_calls
    assert bad_json.arguments == {} and "not valid JSON" in (bad_json.parse_error or "")
    assert "must be a JSON object" in (not_object.parse_error or "")
    assert empty.arguments == {} and empty.parse_error is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"a": 1}, ({"a": 1}, None)),
        (None, ({}, None)),
        ("  ", ({}, None)),
        ('{"a": [1]}', ({"a": [1]}, None)),
    ],
)
def test_parse_arguments_accepts_what_servers_send(raw: Any, expected: Any) -> None:
    assert parse_arguments("t", raw) == expected


def test_missing_tool_call_ids_are_filled_in(llm_stub: LLMStub) -> None:
    body = json.loads(openai_reply(None, tool_calls=[("", "grep", "{}")]).body)
    del body["choices"][0]["message"]["tool_calls"][0]["id"]
    llm_stub.push("openai", Reply.json(body))
    turn = generate_once(make_model(llm_stub), "", [Message.user("q")], [GREP], max_output_tokens=8)
    assert turn.tool_calls[0].id == "call_0"


@pytest.mark.parametrize(
    ("reply", "needle"),
    [
        (Reply.json({"id": "x", "object": "chat.completion", "choices": []}), "no choices"),
        (Reply.json({"error": {"message": "upstream overloaded"}}), "upstream overloaded"),
        (Reply(body=b"<html>proxy error</html>", content_type="text/html"), "not a JSON object"),
        (Reply.json({"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}), "no function name"),
    ],
)
def test_malformed_replies_become_clear_model_errors(llm_stub: LLMStub, reply: Reply, needle: str) -> None:
    llm_stub.push("openai", reply)
    with pytest.raises(ModelError) as caught:
        generate_once(make_model(llm_stub), "", [Message.user("q")], [], max_output_tokens=8)
    assert caught.value.kind == "malformed"
    assert needle in str(caught.value)


def test_malformed_reply_is_retried_and_its_tokens_still_counted(llm_stub: LLMStub) -> None:
    empty = {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 0}}
    llm_stub.push("openai", Reply.json(empty), openai_reply("fine", prompt_tokens=50, completion_tokens=5))
    clock = FakeClock()
    config = {"name": "openai/m", "base_url": llm_stub.openai_base_url, "max_retries": 2}
    model = build_model(config, env={}, limits=ConcurrencyLimits(), clock=clock)
    turn = generate_once(model, "", [Message.user("q")], [], max_output_tokens=8)
    assert turn.text == "fine" and turn.retries == 1 and len(clock.sleeps) == 1
    assert turn.usage.input_total == 100  # the wasted reply was billed too


def test_to_openai_messages_user_message_follows_only_after_the_tool_run() -> None:
    history = [
        Message.assistant(tool_calls=(ToolCall("a", "read", {}),)),
        Message.tool("a", ToolResult(blocks=(png(),))),
        Message.user("thanks"),
    ]
    wire = to_openai_messages("", history)
    assert [m["role"] for m in wire] == ["assistant", "tool", "user", "user"]
    assert wire[2]["content"][0]["type"] == "text"
    assert wire[3] == {"role": "user", "content": "thanks"}
