"""A reply cut short and a redirect loop are named, not reported as "Connection error.".

Before (aiohttp transport, the default): a server that sent 20 of 249 declared bytes and reset
the connection, and one that redirected a request to itself for ever, both ended in
``the connection failed: Connection error.``. After: ``the server cut the reply short: Not enough
data to satisfy content length header (received ... of ... bytes)`` and ``the endpoint keeps
redirecting (a redirect loop, ...): set base_url to the API's own address``.
"""

from __future__ import annotations

from typing import Any

import pytest

from docab.messages import Message, Text
from docab.models import ModelError, build_model
from docab.models.limits import ConcurrencyLimits
from tests.harness.model_fakes import FakeClock, generate_once
from tests.support.http_server import Reply
from tests.support.llm_stub import LLMStub, anthropic_reply, openai_reply

ASK = [Message("user", (Text("What is the revenue?"),))]


def model(llm_stub: LLMStub, protocol: str) -> Any:
    name, base = (
        ("openai/gpt-test", llm_stub.openai_base_url)
        if protocol == "openai"
        else ("anthropic/claude-test", llm_stub.anthropic_base_url)
    )
    config = {"name": name, "base_url": base, "max_retries": 1}
    return build_model(config, env={}, limits=ConcurrencyLimits(), clock=FakeClock())


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_reply_cut_short_says_so_and_the_next_attempt_is_answered(llm_stub: LLMStub, protocol: str) -> None:
    good = openai_reply("Paris") if protocol == "openai" else anthropic_reply("Paris")
    cut = Reply(body=good.body, content_type="application/json", close_early=True)
    llm_stub.push(protocol, cut, cut)  # type: ignore[arg-type]
    with pytest.raises(ModelError) as info:
        generate_once(model(llm_stub, protocol), "system", ASK)
    assert info.value.kind == "connection" and info.value.retries == 1
    assert "the server cut the reply short" in str(info.value)
    assert "Not enough data to satisfy content length header" in str(info.value)
    llm_stub.push(protocol, cut, good)  # type: ignore[arg-type]
    assert generate_once(model(llm_stub, protocol), "system", ASK).text == "Paris"


def test_a_redirect_loop_is_named(llm_stub: LLMStub) -> None:
    path = "/v1/chat/completions"
    llm_stub.push("openai", *[Reply.redirect(llm_stub.base + path, status=307)] * 60)
    with pytest.raises(ModelError) as info:
        generate_once(model(llm_stub, "openai"), "system", ASK)
    assert "the endpoint keeps redirecting (a redirect loop" in str(info.value)
    assert "base_url" in str(info.value)
    assert len(llm_stub.requests_for("openai")) <= 2 * 21  # two attempts, each stopped by the client
