"""``openai/<model>`` with ``api = "responses"``: the OpenAI Responses API through the real SDK
against the loopback stub: request items, tool calls and results, images, reasoning items, usage."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from docab.messages import Message, Reasoning, Text, ToolCall, ToolResult, ToolSpec
from docab.models import ModelConfig, ModelConfigError, ModelError, build_model
from docab.models.limits import ConcurrencyLimits
from docab.models.openai_responses import OpenAIResponsesModel, to_responses_input
from docab.models.preflight import check_endpoints
from tests.harness.model_fakes import FakeClock, generate_once, png
from tests.support.http_server import Reply
from tests.support.llm_stub import LLMStub, error_reply, responses_reply

GREP = ToolSpec(
    "grep", "Search the document.", {"type": "object", "properties": {"pattern": {"type": "string"}}}
)
READ = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})


def make_model(stub: LLMStub, **options: Any) -> Any:
    config = {
        "name": "openai/gpt-test",
        "base_url": stub.openai_base_url,
        "api": "responses",
        "max_retries": 0,
        **options,
    }
    return build_model(
        config, env={"OPENAI_API_KEY": "sk-test"}, limits=ConcurrencyLimits(), clock=FakeClock()
    )


def sent(stub: LLMStub, index: int = -1) -> dict[str, Any]:
    return stub.requests_for("responses")[index].json()


def test_a_tool_call_loop_goes_out_as_responses_items(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "responses",
        responses_reply(
            None,
            function_calls=[
                ("call_1", "grep", '{"pattern": "revenue"}'),
                ("call_2", "read", '{"path": "a.md"}'),
            ],
            reasoning=("rs_1", "Looking for the revenue.", "gAAAA-encrypted"),
        ),
        responses_reply("The revenue was 42."),
    )
    model = make_model(llm_stub, temperature=0, reasoning_effort="low")
    assert isinstance(model, OpenAIResponsesModel)

    async def loop() -> list[Any]:
        async with model:
            history = [Message.user("What was the revenue?")]
            first = await model.generate("Be brief.", history, [GREP, READ], max_output_tokens=256)
            history.append(first.message())
            history.append(Message.tool("call_1", ToolResult(blocks=(Text("line 3: revenue 42"),))))
            history.append(Message.tool("call_2", ToolResult.error("no such file: a.md")))
            second = await model.generate("Be brief.", history, [GREP, READ], max_output_tokens=256)
            return [first, second]

    first, second = asyncio.run(loop())
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_1", "grep", {"pattern": "revenue"}),
        ("call_2", "read", {"path": "a.md"}),
    ]
    assert first.reasoning == (
        Reasoning(
            text="Looking for the revenue.",
            signature="rs_1",
            redacted="gAAAA-encrypted",
            field="reasoning_item",
        ),
    )
    assert first.stop_reason == "completed" and second.text == "The revenue was 42."

    request = llm_stub.requests_for("responses")[0]
    assert request.path == "/v1/responses" and request.headers["authorization"] == "Bearer sk-test"
    body = sent(llm_stub, 0)
    assert body["model"] == "gpt-test" and body["instructions"] == "Be brief."
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "What was the revenue?"}],
        }
    ]
    assert body["tools"][0] == {
        "type": "function",
        "name": "grep",
        "description": "Search the document.",
        "parameters": GREP.input_schema,
        "strict": False,
    }
    assert body["max_output_tokens"] == 256 and body["store"] is False and body["temperature"] == 0
    assert body["reasoning"] == {"effort": "low"} and body["include"] == ["reasoning.encrypted_content"]
    assert "messages" not in body and "max_tokens" not in body and "max_completion_tokens" not in body

    items = sent(llm_stub, 1)["input"]
    assert [item["type"] for item in items] == [
        "message",
        "reasoning",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert items[1] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Looking for the revenue."}],
        "encrypted_content": "gAAAA-encrypted",
    }  # sent back before the calls it led to
    assert items[2] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "grep",
        "arguments": json.dumps({"pattern": "revenue"}),
    }
    assert items[4] == {"type": "function_call_output", "call_id": "call_1", "output": "line 3: revenue 42"}
    assert items[5] == {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": "Tool error: no such file: a.md",
    }


def test_images_go_inside_the_tool_output_and_user_message(llm_stub: LLMStub) -> None:
    page = png(4, 3, name="pages/page-0003.png")
    history = [
        Message(role="user", blocks=(Text("Look at this and page 3."), png())),
        Message.assistant(
            tool_calls=(ToolCall("c1", "read", {"path": "p3"}), ToolCall("c2", "read", {"path": "f"}))
        ),
        Message.tool("c1", ToolResult(blocks=(Text("page 3"), page))),
        Message.tool("c2", ToolResult(blocks=(png(2, 2),))),
    ]
    generate_once(make_model(llm_stub, image_detail="low"), "", history, [READ], max_output_tokens=64)
    items = sent(llm_stub)["input"]
    assert [item["type"] for item in items] == [
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]  # no extra user message carries the images, unlike Chat Completions
    user = items[0]["content"]
    assert [part["type"] for part in user] == ["input_text", "input_image"] and user[1]["detail"] == "low"
    output = items[3]["output"]
    assert [part["type"] for part in output] == ["input_text", "input_image"]
    assert output[0]["text"] == "page 3"
    url = output[1]["image_url"]
    assert url.startswith("data:image/png;base64,") and base64.b64decode(url.split(",", 1)[1]) == page.data
    assert [part["type"] for part in items[4]["output"]] == ["input_image"]
    assert "instructions" not in sent(llm_stub)  # no empty system prompt


def test_text_only_sends_no_image_and_says_where_it_was(llm_stub: LLMStub) -> None:
    history = [
        Message.user("Read page 3."),
        Message.assistant(tool_calls=(ToolCall("c1", "read", {"path": "pages/page-0003.png"}),)),
        Message.tool("c1", ToolResult(blocks=(png(1584, 2048, name="pages/page-0003.png"),))),
    ]
    generate_once(make_model(llm_stub, text_only=True), "", history, [READ], max_output_tokens=8)
    raw = llm_stub.requests_for("responses")[-1].body.decode()
    assert "input_image" not in raw and "base64" not in raw
    assert sent(llm_stub)["input"][2]["output"] == (
        "[image omitted: page-0003.png, 1584x2048; this model cannot see images]"
    )


def test_usage_counts_cached_and_reasoning_tokens_once(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "responses",
        responses_reply(
            "x",
            input_tokens=1000,
            cached_tokens=800,
            cache_write_tokens=50,
            output_tokens=300,
            reasoning_tokens=200,
        ),
    )
    turn = generate_once(make_model(llm_stub), "", [Message.user("q")], [], max_output_tokens=8)
    usage = turn.usage
    assert (usage.input_uncached, usage.cache_read, usage.cache_write) == (150, 800, 50)
    assert (usage.input_total, usage.output, usage.reasoning, usage.total) == (1000, 300, 200, 1300)
    assert usage.model == "openai/gpt-test" and usage.raw["input_tokens_details"]["cached_tokens"] == 800


def test_an_incomplete_response_says_why_and_a_failed_one_is_retried(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "responses", responses_reply("partial", status="incomplete", incomplete_reason="max_output_tokens")
    )
    turn = generate_once(make_model(llm_stub), "", [Message.user("q")], [], max_output_tokens=8)
    assert (turn.text, turn.stop_reason) == ("partial", "max_output_tokens")

    failed = json.loads(responses_reply(None, status="failed").body)  # type: ignore[arg-type]
    failed["error"] = {"code": "server_error", "message": "The model crashed"}
    llm_stub.push("responses", Reply.json(failed), responses_reply("recovered", output_tokens=4))
    turn = generate_once(
        make_model(llm_stub, max_retries=1), "", [Message.user("q")], [], max_output_tokens=8
    )
    assert turn.text == "recovered" and turn.retries == 1
    assert turn.usage.output == 9  # the failed attempt's tokens are counted too

    llm_stub.push("responses", Reply.json(failed))
    with pytest.raises(ModelError) as caught:
        generate_once(make_model(llm_stub), "", [Message.user("q")], [], max_output_tokens=8)
    assert caught.value.kind == "malformed"
    assert "the reply cannot be read: the response failed (the server said: The model crashed)" in str(
        caught.value
    )


def test_reasoning_without_encrypted_content_is_not_sent_back() -> None:
    kept = Reasoning(text="", signature="rs_2", redacted="enc", field="reasoning_item")
    stored_only = Reasoning(text="summary", signature="rs_1", field="reasoning_item")  # needs store=true
    foreign = Reasoning(text="thinking", signature="sig")  # an Anthropic thinking block
    items = to_responses_input([Message.assistant("ok", (), (stored_only, foreign, kept))])
    assert items == [
        {"type": "reasoning", "summary": [], "encrypted_content": "enc", "id": "rs_2"},
        {"type": "message", "role": "assistant", "content": "ok"},
    ]


def test_bad_arguments_are_a_recoverable_turn(llm_stub: LLMStub) -> None:
    llm_stub.push("responses", responses_reply(None, function_calls=[("call_9", "grep", '{"pattern": ')]))
    turn = generate_once(make_model(llm_stub), "", [Message.user("q")], [GREP], max_output_tokens=8)
    (call,) = turn.tool_calls
    assert call.id == "call_9" and call.arguments == {} and "not valid JSON" in (call.parse_error or "")


def test_an_http_error_names_role_url_and_the_providers_message(llm_stub: LLMStub) -> None:
    llm_stub.push("responses", error_reply("openai", 400, "Unsupported parameter: 'temperature'"))
    with pytest.raises(ModelError) as caught:
        generate_once(make_model(llm_stub, temperature=1), "", [Message.user("q")], [], max_output_tokens=8)
    assert str(caught.value) == (
        f"agent model openai/gpt-test at {llm_stub.openai_base_url}: HTTP 400: Unsupported parameter: 'temperature'"
    )


def test_the_preflight_asks_the_model_list_as_for_chat(llm_stub: LLMStub) -> None:
    model = make_model(llm_stub, name="openai/stub-model")

    async def once() -> list[str]:
        async with model:
            return await check_endpoints([model])

    assert asyncio.run(once()) == [] and len(llm_stub.model_list_requests()) == 1
    assert not llm_stub.requests_for("responses")  # no tokens spent


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"name": "anthropic/m", "api": "responses"}, 'api = "responses" applies to openai/ models'),
        ({"name": "openai/m", "api": "assistants"}, "api must be one of chat, responses"),
        (
            {"name": "openai/m", "api": "responses", "max_tokens_param": "max_tokens"},
            "max_tokens_param applies to Chat Completions",
        ),
    ],
)
def test_the_api_option_is_checked(spec: dict[str, Any], words: str) -> None:
    with pytest.raises(ModelConfigError) as caught:
        ModelConfig.from_mapping(spec)
    assert words in str(caught.value)
