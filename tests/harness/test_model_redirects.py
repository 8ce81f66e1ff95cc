"""A model endpoint's redirect is followed within its origin and refused to any other.

Before: the SDKs followed a 307 to any host and stripped only ``Authorization``: Anthropic's
``x-api-key``, Gemini's ``x-goog-api-key`` and gateway keys from the config's ``headers`` went to
the other host with the prompt, and the run went on as if nothing had happened.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from docab.messages import Message, Text
from docab.models import ModelError, build_model
from docab.models.limits import ConcurrencyLimits
from tests.harness.model_fakes import FakeClock, generate_once
from tests.support.gemini_stub import GeminiStub, gemini_reply
from tests.support.http_server import LocalServer, Reply
from tests.support.llm_stub import LLMStub, anthropic_reply, openai_reply

ASK = [Message("user", (Text("What is the revenue?"),))]
SECRET = {"X-Gateway-Key": "${GATEWAY_KEY}"}  # a gateway key from the environment


@pytest.fixture
def elsewhere() -> Iterator[LocalServer]:
    """Another origin (same host, another port): it must never be asked anything."""
    with LocalServer() as server:
        yield server


@pytest.fixture
def gemini() -> Iterator[GeminiStub]:
    with GeminiStub() as server:
        yield server


def model(name: str, base_url: str) -> Any:
    config = {"name": name, "base_url": base_url, "max_retries": 0, "headers": SECRET}
    return build_model(
        config, env={"GATEWAY_KEY": "gateway-secret"}, limits=ConcurrencyLimits(), clock=FakeClock()
    )


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_redirect_to_another_origin_is_refused_and_nothing_is_sent_there(
    llm_stub: LLMStub, elsewhere: LocalServer, protocol: str
) -> None:
    name, base = (
        ("openai/gpt-test", llm_stub.openai_base_url)
        if protocol == "openai"
        else ("anthropic/claude-test", llm_stub.anthropic_base_url)
    )
    llm_stub.push(protocol, Reply.redirect(elsewhere.base + "/steal", status=307))  # type: ignore[arg-type]
    with pytest.raises(ModelError) as info:
        generate_once(model(name, base), "system", ASK)
    assert elsewhere.requests == []
    assert "redirected to another origin" in str(info.value) and "base_url" in str(info.value)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_redirect_within_the_origin_is_followed(llm_stub: LLMStub, protocol: str) -> None:
    name, base, reply = (
        ("openai/gpt-test", llm_stub.openai_base_url, openai_reply("42"))
        if protocol == "openai"
        else ("anthropic/claude-test", llm_stub.anthropic_base_url, anthropic_reply("42"))
    )
    path = "/v1/chat/completions" if protocol == "openai" else "/v1/messages"
    llm_stub.push(protocol, Reply.redirect(llm_stub.base + path, status=307), reply)  # type: ignore[arg-type]
    turn = generate_once(model(name, base), "system", ASK)
    assert "42" in str(turn)


def test_gemini_refuses_a_redirect_to_another_origin(gemini: GeminiStub, elsewhere: LocalServer) -> None:
    gemini.push(Reply.redirect(elsewhere.base + "/steal", status=307))
    with pytest.raises(ModelError, match="redirected to another origin"):
        generate_once(model("google/gemini-stub", gemini.base), "system", ASK)
    assert elsewhere.requests == []
    gemini.push(gemini_reply())  # the client still works for the next call
