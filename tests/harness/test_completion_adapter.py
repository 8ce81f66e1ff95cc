"""The answer extractor can use any harness model; its tokens are booked as ``extractor``."""

from __future__ import annotations

import asyncio

import pytest

from docab.messages import Message, Text
from docab.models import ModelError, build_model
from docab.models.completion_adapter import CompletionAdapter, final_assistant_into_user, to_neutral
from docab.models.limits import ConcurrencyLimits
from tests.harness.model_fakes import FakeClock, RecordingModel
from tests.support.llm_stub import LLMStub, anthropic_reply, error_reply, openai_reply

PROMPT = "Given the question and analysis, extract the answer."
ANALYSIS = "\n\nQuestion:How many?\nAnalysis:There are 3.\n"
OFFICIAL = [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": ANALYSIS}]


def test_the_official_layout_reaches_an_openai_model_unchanged(llm_stub: LLMStub) -> None:
    llm_stub.push("openai", openai_reply("Extracted answer: 3\nAnswer format: Integer", prompt_tokens=120))
    config = {"name": "openai/gpt-4o", "base_url": llm_stub.openai_base_url, "temperature": 0.7}
    model = build_model(config, env={}, limits=ConcurrencyLimits(), clock=FakeClock())
    adapter = CompletionAdapter(model)

    async def run() -> object:
        async with model:
            return await adapter.complete(OFFICIAL, max_tokens=256, temperature=0.0)

    completion = asyncio.run(run())
    assert completion.text.startswith("Extracted answer: 3")
    assert completion.usage.role == "extractor" and completion.usage.input_total == 120
    body = llm_stub.requests_for("openai")[0].json()
    assert body["messages"] == OFFICIAL  # the question and analysis stay an assistant turn
    assert body["max_tokens"] == 256 and body["temperature"] == 0.0  # the call's temperature wins


def test_anthropic_gets_the_analysis_in_the_user_turn_not_as_prefill(llm_stub: LLMStub) -> None:
    llm_stub.push("anthropic", anthropic_reply("Extracted answer: 3\nAnswer format: Integer"))
    config = {"name": "anthropic/claude-x", "base_url": llm_stub.anthropic_base_url}
    model = build_model(config, env={}, limits=ConcurrencyLimits(), clock=FakeClock())

    async def run() -> object:
        async with model:
            # temperature 0 cannot be sent to Anthropic; the adapter keeps the model as configured
            return await CompletionAdapter(model).complete(OFFICIAL, max_tokens=256, temperature=0.0)

    completion = asyncio.run(run())
    assert completion.usage.role == "extractor"
    body = llm_stub.requests_for("anthropic")[0].json()
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": PROMPT},
        {"type": "text", "text": ANALYSIS},
    ]
    assert "temperature" not in body


def test_api_failures_surface_as_model_errors_for_the_extractor_to_record(llm_stub: LLMStub) -> None:
    llm_stub.push("openai", error_reply("openai", 400, "context too long"))
    config = {"name": "openai/gpt-4o", "base_url": llm_stub.openai_base_url}
    model = build_model(config, env={}, limits=ConcurrencyLimits(), clock=FakeClock())

    async def run() -> None:
        async with model:
            await CompletionAdapter(model).complete(OFFICIAL, max_tokens=16, temperature=0.0)

    with pytest.raises(ModelError, match="context too long"):
        asyncio.run(run())


def test_any_model_works_and_system_messages_become_the_system_prompt() -> None:
    model = RecordingModel(["Extracted answer: x"])
    adapter = CompletionAdapter(model, role="extractor")
    messages = [{"role": "system", "content": "S"}, *OFFICIAL]
    completion = asyncio.run(adapter.complete(messages, max_tokens=99, temperature=0.0))
    system, sent, tools, max_tokens = model.calls[0]
    assert (system, tools, max_tokens) == ("S", [], 99)
    assert [m.role for m in sent] == ["user", "assistant"]
    assert completion.text == "Extracted answer: x" and completion.usage.role == "extractor"


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        ([{"role": "tool", "content": "x"}], "role must be system, user or assistant"),
        ([{"role": "user", "content": ["parts"]}], "content must be a string"),
    ],
)
def test_unusable_messages_are_refused(messages: list[dict[str, object]], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        to_neutral(messages)


def test_final_assistant_into_user_only_moves_a_closing_text_turn() -> None:
    merged = final_assistant_into_user([Message.user("a"), Message.assistant("b")])
    assert merged == [Message(role="user", blocks=(Text("a"), Text("b")))]
    alone = final_assistant_into_user([Message.assistant("b")])
    assert alone == [Message(role="user", blocks=(Text("b"),))]
    unchanged = [Message.assistant("b"), Message.user("c")]
    assert final_assistant_into_user(unchanged) == unchanged
