"""Answer extraction: the official message layout and parsing, failures as outcomes, the submitted path.

Driven through a fake model implementing the Protocol, and through the real openai SDK against the
loopback stub (with a tiny adapter here; the harness provides the real one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path

import openai
import pytest

from docab.usage import Usage
from docab_benchmark.mmlongbench.errors import DataError
from docab_benchmark.mmlongbench.extraction import (
    Completion,
    CompletionModel,
    ExtractionPrompt,
    extract_answer,
    extraction_messages,
    load_prompt,
    parse_extraction,
    submitted_answer,
)
from docab_benchmark.mmlongbench.scoring import score_answer
from tests.conftest import shared_data
from tests.support.llm_stub import LLMStub, error_reply, openai_reply

PROMPT = ExtractionPrompt("EXTRACT PROMPT", "test")


class FakeModel:
    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply
        self.calls: list[tuple[list[dict[str, str]], int, float]] = []

    async def complete(
        self, messages: Sequence[Mapping[str, str]], *, max_tokens: int, temperature: float
    ) -> Completion:
        self.calls.append(([dict(m) for m in messages], max_tokens, temperature))
        if isinstance(self.reply, Exception):
            raise self.reply
        return Completion(self.reply, usage={"output_tokens": 3})


def run(model: CompletionModel, question: str = "How many?", response: str = "There are 10.") -> object:
    return asyncio.run(extract_answer(model, question, response, prompt=PROMPT))


def test_official_message_layout_and_settings() -> None:
    model = FakeModel("Extracted answer: 10\nAnswer format: Integer")
    assert isinstance(model, CompletionModel)
    result = run(model, "How many regulations?", "It breached 10.")
    ((messages, max_tokens, temperature),) = model.calls
    assert messages == [
        {"role": "user", "content": "EXTRACT PROMPT"},
        {"role": "assistant", "content": "\n\nQuestion:How many regulations?\nAnalysis:It breached 10.\n"},
    ]
    assert (max_tokens, temperature) == (256, 0.0)
    assert (result.pred, result.method, result.status, result.format_guess) == (
        "10",
        "llm-extraction",
        "ok",
        "Integer",
    )
    assert result.usage == {"output_tokens": 3}
    assert result.prompt_sha256 == PROMPT.sha256


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Extracted answer: ['a', 'b']\nAnswer format: List", ("['a', 'b']", "List")),
        ("Extracted answer:   Not answerable  \n", ("Not answerable", None)),
        ("noise Extracted answer: 3 Extracted answer: 4\nAnswer format: Integer", ("3", "Integer")),
        (
            "Answer format: Integer\nExtracted answer: 5",
            None,
        ),  # the official split takes the text before the format
        ("I think 5.", None),
    ],
)
def test_parsing_matches_the_official_split(reply: str, expected: tuple[str, str | None] | None) -> None:
    assert parse_extraction(reply) == expected


def test_unparsable_reply_is_failed_to_extract_and_scores_zero() -> None:
    result = run(FakeModel("The answer is 10."))
    assert (result.pred, result.status, result.raw) == (
        "Failed to extract",
        "unparsable",
        "The answer is 10.",
    )
    assert score_answer("10", result.pred, "Int") == 0.0


def test_model_failure_is_recorded_not_raised() -> None:
    result = run(FakeModel(TimeoutError("provider timed out")))
    assert (result.pred, result.status, result.raw) == ("Failed to extract", "api-failure", "Failed")
    assert result.error == "TimeoutError: provider timed out"
    assert result.to_dict()["status"] == "api-failure"


def test_submitted_answers_skip_extraction_and_score() -> None:
    listed = submitted_answer(["gray", "red"])
    assert (listed.pred, listed.method) == ("['gray', 'red']", "submitted")
    assert score_answer("['red', 'gray']", listed.pred, "List") == 1.0
    assert submitted_answer(18.29).pred == "18.29"
    assert submitted_answer("  Not answerable ").pred == "Not answerable"
    assert submitted_answer(7).to_dict()["method"] == "submitted"


def test_bundled_prompt_is_the_benchmarks_file_unchanged() -> None:
    bundled = load_prompt()
    assert bundled.source == "bundled"
    assert "Extracted answer: [answer]" in bundled.text
    dev = shared_data("mmlongbench-dev") / "prompt_for_answer_extraction.md"
    assert bundled.text == dev.read_text(encoding="utf-8")
    from_data = load_prompt(dev)
    assert (from_data.source, from_data.sha256) == (str(dev), bundled.sha256)


def test_unreadable_prompt_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="cannot read the extraction prompt"):
        load_prompt(tmp_path / "missing.md")


class OpenAICompletions:
    """The smallest adapter from the openai SDK to ``CompletionModel`` (the harness has the real one)."""

    def __init__(self, client: openai.AsyncOpenAI, model: str) -> None:
        self.client, self.model = client, model

    async def complete(
        self, messages: Sequence[Mapping[str, str]], *, max_tokens: int, temperature: float
    ) -> Completion:
        reply = await self.client.chat.completions.create(
            model=self.model, messages=list(messages), max_tokens=max_tokens, temperature=temperature
        )
        usage = Usage.from_openai(reply.usage.model_dump(), role="extractor", model=self.model)
        return Completion(reply.choices[0].message.content or "", usage)


def test_extraction_through_the_openai_sdk(llm_stub: LLMStub) -> None:
    llm_stub.push("openai", openai_reply("Extracted answer: 18.29%\nAnswer format: Float", prompt_tokens=900))
    llm_stub.push("openai", error_reply("openai", 500, "upstream down"))

    async def scenario() -> tuple[object, object]:
        client = openai.AsyncOpenAI(base_url=llm_stub.openai_base_url, api_key="k", max_retries=0)
        model = OpenAICompletions(client, "gpt-4o")
        prompt = load_prompt()
        ok = await extract_answer(model, "What share?", "About 18.29% of them.", prompt=prompt)
        failed = await extract_answer(model, "What share?", "About 18.29% of them.", prompt=prompt)
        await client.close()
        return ok, failed

    ok, failed = asyncio.run(scenario())
    assert (ok.pred, ok.status) == ("18.29%", "ok")
    assert score_answer("18.29%", ok.pred, "Float") == 1.0
    assert ok.usage.role == "extractor" and ok.usage.input_total == 900
    assert (failed.status, failed.raw, failed.pred) == ("api-failure", "Failed", "Failed to extract")
    sent = llm_stub.requests_for("openai")[0].json()
    assert sent["messages"] == extraction_messages(load_prompt().text, "What share?", "About 18.29% of them.")
    assert (sent["max_tokens"], sent["temperature"], sent["model"]) == (256, 0.0, "gpt-4o")
