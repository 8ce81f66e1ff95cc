"""The loopback model stub answers the real OpenAI and Anthropic SDKs in their own wire formats."""

from __future__ import annotations

import anthropic
import openai
import pytest

from tests.support.llm_stub import LLMStub, anthropic_reply, error_reply, openai_reply


def test_openai_sdk_round_trip_with_tool_call_and_usage(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "openai", openai_reply(None, tool_calls=[("c1", "grep", '{"pattern": "x"}')], cached_tokens=4)
    )
    client = openai.OpenAI(base_url=llm_stub.openai_base_url, api_key="k", max_retries=0)
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    call = reply.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, call.function.arguments) == ("c1", "grep", '{"pattern": "x"}')
    assert reply.usage.prompt_tokens_details.cached_tokens == 4
    sent = llm_stub.requests_for("openai")[0]
    assert sent.json()["model"] == "m"
    assert sent.headers["authorization"] == "Bearer k"


def test_anthropic_sdk_round_trip_and_error_shape(llm_stub: LLMStub) -> None:
    llm_stub.push("anthropic", anthropic_reply("ok", cache_read_input_tokens=7))
    llm_stub.push("anthropic", error_reply("anthropic", 400, "bad request"))
    client = anthropic.Anthropic(base_url=llm_stub.anthropic_base_url, api_key="k", max_retries=0)
    message = client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert message.content[0].text == "ok"
    assert message.usage.cache_read_input_tokens == 7
    with pytest.raises(anthropic.BadRequestError, match="bad request"):
        client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    sent = llm_stub.requests_for("anthropic")[0].headers
    # anthropic 2.x authenticates with a bearer token (older releases sent x-api-key).
    assert sent.get("x-api-key") == "k" or sent.get("authorization") == "Bearer k"
    assert "anthropic-version" in sent
