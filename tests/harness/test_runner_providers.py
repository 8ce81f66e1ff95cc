"""A run through the real OpenAI and Anthropic clients, against the loopback model stub.

The runner, the agent loop, the tools and the record store see exactly what they would see with
a provider: tool calls in each wire format, usage in each convention, an HTTP 500 that is retried,
and images that reach the model in each provider's own placement.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from docab.config import parse_config
from docab.runner.launch import RunRequest, launch
from docab.runner.progress import SilentProgress
from tests.harness.corpus import exact_scorer, make_dataset
from tests.support.http_server import Request
from tests.support.llm_stub import LLMStub, anthropic_reply, error_reply, openai_reply

QUESTION_ANSWERS = {
    "founded": "1980",
    "employees": "100",
    "flagship": "Model-0",
    "chief executive": "Not answerable",
}


def answer_for(text: str) -> tuple[str, str]:
    for key, answer in QUESTION_ANSWERS.items():
        if key in text:
            return ("not_answerable", "") if answer == "Not answerable" else ("answered", answer)
    raise AssertionError(f"unexpected question: {text}")


def openai_script(protocol: str, request: Request):  # type: ignore[no-untyped-def]
    body = request.json()
    messages = body["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    question = question if isinstance(question, str) else question[0]["text"]
    tool_results = [m for m in messages if m["role"] == "tool"]
    if not tool_results:  # first turn: read the first page's image
        args = json.dumps({"path": "document/pages/page-0001.png"})
        return openai_reply(
            None, tool_calls=[("call_1", "read_file", args)], prompt_tokens=900, cached_tokens=600
        )
    status, answer = answer_for(question)
    args = json.dumps({"status": status, "answer": answer})
    return openai_reply(
        None, tool_calls=[("call_2", "submit_answer", args)], prompt_tokens=2000, cached_tokens=1500
    )


def anthropic_script(protocol: str, request: Request):  # type: ignore[no-untyped-def]
    body = request.json()
    messages = body["messages"]
    first = messages[0]["content"]
    question = first if isinstance(first, str) else first[0]["text"]
    if len(messages) == 1:
        return anthropic_reply(
            None,
            tool_uses=[("tu_1", "read_file", {"path": "document/pages/page-0001.png"})],
            input_tokens=300,
            cache_creation_input_tokens=600,
        )
    status, answer = answer_for(question)
    return anthropic_reply(
        None,
        tool_uses=[("tu_2", "submit_answer", {"status": status, "answer": answer})],
        input_tokens=50,
        cache_read_input_tokens=1800,
    )


def run_with(stub: LLMStub, model: dict[str, Any], tmp_path: Path):  # type: ignore[no-untyped-def]
    config = parse_config({"name": "p", "model": model, "arms": [{"name": "fs"}, {"name": "fs2"}]})
    dataset = make_dataset(tmp_path / "corpus", documents=1)
    request = RunRequest(config, results_dir=tmp_path / "results", concurrency=2)
    return launch(
        request, dataset=dataset, scorer=exact_scorer, progress=SilentProgress(), say=lambda s: None
    )


def test_openai_run_end_to_end(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("DOCAB_TEST_KEY", "k")
    with LLMStub(openai_script) as stub:
        stub.push("openai", error_reply("openai", 500, "overloaded"))  # retried by the client
        model = {
            "name": "openai/stub-model",
            "base_url": stub.openai_base_url,
            "api_key_env": "DOCAB_TEST_KEY",
            "retry_base_delay": 0.01,
        }
        outcome = run_with(stub, model, tmp_path)
        requests = stub.requests_for("openai")
    records = outcome.records
    assert len(records) == 8 and all(r.status == "ok" and r.score == 1.0 for r in records)
    assert sum(r.retries for r in records) == 1
    usage = [u for r in records for u in r.usage]
    assert {(u.input_uncached, u.cache_read) for u in usage} == {(300, 600), (500, 1500)}
    assert all(r.pages_read == (1,) for r in records)
    # The page image went to the model in a user message after the tool message (OpenAI's rule).
    second_turn = next(r.json() for r in requests if any(m["role"] == "tool" for m in r.json()["messages"]))
    roles = [m["role"] for m in second_turn["messages"]]
    assert roles[-2:] == ["tool", "user"]
    parts = second_turn["messages"][-1]["content"]
    assert any(p["type"] == "image_url" for p in parts) and any(p["type"] == "text" for p in parts)


def test_anthropic_run_end_to_end(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("DOCAB_TEST_KEY", "k")
    with LLMStub(anthropic_script) as stub:
        model = {
            "name": "anthropic/stub-model",
            "base_url": stub.anthropic_base_url,
            "api_key_env": "DOCAB_TEST_KEY",
        }
        outcome = run_with(stub, model, tmp_path)
        requests = stub.requests_for("anthropic")
    records = outcome.records
    assert len(records) == 8 and all(r.status == "ok" and r.score == 1.0 for r in records)
    usage = [u for r in records for u in r.usage]
    assert {(u.input_uncached, u.cache_read, u.cache_write) for u in usage} == {(300, 0, 600), (50, 1800, 0)}
    # The image stayed inside the tool_result block (Anthropic's rule).
    second_turn = next(r.json() for r in requests if len(r.json()["messages"]) > 1)
    result = next(b for b in second_turn["messages"][-1]["content"] if b["type"] == "tool_result")
    assert any(b["type"] == "image" for b in result["content"])
    tools = {t["name"] for t in second_turn["tools"]}
    assert tools == {"list_files", "read_file", "grep", "submit_answer"}


def extraction_script(protocol: str, request: Request):  # type: ignore[no-untyped-def]
    body = request.json()
    if not body.get("tools"):  # the benchmark's answer extraction: no tools, the official prompt
        assert "Extracted answer" in json.dumps(body["messages"])
        if "chief executive" in json.dumps(body["messages"]):
            return error_reply("openai", 400, "the extractor refused")
        return openai_reply(
            "Extracted answer: 1980\nAnswer format: Integer", prompt_tokens=700, completion_tokens=9
        )
    question = body["messages"][1]["content"]
    question = question if isinstance(question, str) else question[0]["text"]
    if "founded" in question:
        return openai_reply("The company was founded in 1980, says page 1.", prompt_tokens=800)
    return openai_reply("I could not tell.", prompt_tokens=800)


def test_extraction_protocol_through_the_benchmark_extractor(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("DOCAB_TEST_KEY", "k")
    with LLMStub(extraction_script) as stub:
        model = {
            "name": "openai/stub-model",
            "base_url": stub.openai_base_url,
            "api_key_env": "DOCAB_TEST_KEY",
            "max_retries": 0,
        }
        config = parse_config(
            {"name": "x", "model": model, "answer": {"protocol": "extraction"}, "arms": [{"name": "fs"}]}
        )
        dataset = make_dataset(tmp_path / "corpus", documents=1)
        request = RunRequest(config, results_dir=tmp_path / "results")
        outcome = launch(
            request, dataset=dataset, scorer=exact_scorer, progress=SilentProgress(), say=lambda s: None
        )
    by_question = {r.gold: r for r in outcome.records}
    founded = by_question["1980"]
    assert founded.answer_protocol == "extraction" and founded.status == "ok" and founded.score == 1.0
    assert founded.raw_answer.startswith("The company was founded") and founded.extracted_answer == "1980"
    assert [u.role for u in founded.usage] == ["agent", "extractor"]
    assert founded.tokens("extractor") == 709
    refused = by_question["Not answerable"]  # the extractor call failed for good: an error, scored 0
    assert (
        refused.status == "error" and refused.score == 0.0 and "answer extraction failed" in refused.errors[0]
    )
    transcript = json.loads((outcome.run_dir / founded.transcript).read_text())
    assert transcript["events"][-1]["extraction"]["method"] == "llm-extraction"


def test_an_unreadable_extraction_prompt_stops_the_run_before_any_sample(
    tmp_path: Path, monkeypatch: Any
) -> None:
    import dataclasses

    from docab.errors import RunError

    monkeypatch.setenv("DOCAB_TEST_KEY", "k")
    config = parse_config(
        {
            "name": "x",
            "model": {
                "name": "openai/stub-model",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key_env": "DOCAB_TEST_KEY",
            },
            "answer": {"protocol": "extraction"},
            "arms": [{"name": "fs"}],
        }
    )
    dataset = dataclasses.replace(
        make_dataset(tmp_path / "corpus", documents=1), extraction_prompt=tmp_path / "missing-prompt.md"
    )
    with pytest.raises(RunError, match="cannot read the extraction prompt"):
        launch(
            RunRequest(config, results_dir=tmp_path / "results"),
            dataset=dataset,
            scorer=exact_scorer,
            progress=SilentProgress(),
            say=lambda s: None,
        )
    assert not list((tmp_path / "results").glob("*/records.jsonl"))
