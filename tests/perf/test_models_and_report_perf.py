"""Benchmarks of the model layer's own overhead and of the report's statistics.

    uv run pytest tests/perf/test_models_and_report_perf.py -m perf

- wire conversion: the pure per-call work of the model edge, without the network;
- model-call overhead: ``generate()`` (neutral messages -> wire format, retry wrapper, concurrency
  slot, reply parsing, usage normalisation) against the same request sent with the bare SDK, both to
  the loopback stub answering at once. The difference per call is what the harness adds.
- the paired analysis and the whole report at MMLongBench-Doc scale (1,082 questions on 135
  documents, two arms; cluster-robust t intervals and the clustered McNemar test, no resampling).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from docab.messages import Message, Text, ToolCall, ToolResult, ToolSpec
from docab.models import build_model
from docab.models.limits import ConcurrencyLimits
from docab.report.stats import PairedData, paired_analysis
from docab.report.summary import build_report, load_run
from tests.harness.synthetic_runs import random_run
from tests.support.llm_stub import LLMStub, openai_reply

pytestmark = pytest.mark.perf

TOOLS = [
    ToolSpec(f"tool{i}", "A tool.", {"type": "object", "properties": {"path": {"type": "string"}}})
    for i in range(6)
]


def conversation(turns: int = 8) -> list[Message]:
    history = [Message.user("What was the revenue in 2023 according to the annual report?")]
    for i in range(turns):
        call = ToolCall(f"c{i}", "tool1", {"path": f"pages/page-{i:04d}.md"})
        history.append(Message.assistant(tool_calls=(call,)))
        history.append(Message.tool(call.id, ToolResult(blocks=(Text("lorem ipsum " * 200),))))
    return history


@pytest.fixture(scope="module")
def stub() -> Iterator[LLMStub]:
    reply = openai_reply("ok")
    with LLMStub(responder=lambda protocol, request: reply) as server:
        yield server


@pytest.mark.benchmark(min_rounds=30)
def test_model_call_through_generate(benchmark, stub: LLMStub) -> None:
    loop = asyncio.new_event_loop()
    model = build_model(
        {"name": "openai/m", "base_url": stub.openai_base_url}, env={}, limits=ConcurrencyLimits()
    )
    history = conversation()
    benchmark(
        lambda: loop.run_until_complete(model.generate("system", history, TOOLS, max_output_tokens=512))
    )
    loop.run_until_complete(model.aclose())
    loop.close()


@pytest.mark.benchmark(min_rounds=30)
def test_model_call_with_the_bare_sdk(benchmark, stub: LLMStub) -> None:
    import openai

    loop = asyncio.new_event_loop()
    client = openai.AsyncOpenAI(base_url=stub.openai_base_url, api_key="k", max_retries=0)
    model = build_model(
        {"name": "openai/m", "base_url": stub.openai_base_url}, env={}, limits=ConcurrencyLimits()
    )
    request = json.loads(json.dumps(model.build_request("system", conversation(), TOOLS, 512)))
    benchmark(lambda: loop.run_until_complete(client.chat.completions.create(**request)))
    loop.run_until_complete(client.close())
    loop.close()


def test_wire_conversion_per_call(benchmark, stub: LLMStub) -> None:
    """The pure part of the harness's per-call work: neutral history -> request body, reply -> Turn parts."""
    model = build_model(
        {"name": "openai/m", "base_url": stub.openai_base_url}, env={}, limits=ConcurrencyLimits()
    )
    history = conversation()
    raw = json.loads(openai_reply("ok").body)

    def once() -> None:
        model.build_request("system", history, TOOLS, 512)
        model.parse(raw)
        model.usage(raw)

    benchmark(once)


def mmlongbench_sized_pairs(seed: int = 0) -> PairedData:
    rng = np.random.default_rng(seed)
    n = 1082
    docs = rng.integers(0, 135, n)
    tokens = rng.lognormal(10, 1, n)
    return PairedData(
        clusters=docs,
        score_a=(rng.random(n) < 0.4).astype(float),
        score_b=(rng.random(n) < 0.45).astype(float),
        answerable=(rng.random(n) < 0.8).astype(float),
        answered_a=np.ones(n),
        answered_b=np.ones(n),
        tokens_a=tokens,
        tokens_b=tokens * rng.lognormal(0.2, 0.3, n),
        latency_a=rng.lognormal(3, 0.5, n),
        latency_b=rng.lognormal(3.2, 0.5, n),
    )


def test_paired_analysis_at_mmlongbench_scale(benchmark) -> None:
    data = mmlongbench_sized_pairs()
    result = benchmark(lambda: paired_analysis(data))
    assert result.n == 1082


def test_report_at_mmlongbench_scale(benchmark, tmp_path: Path) -> None:
    folder = random_run(tmp_path / "big", documents=135, per_document=8)
    run = load_run(folder)
    report = benchmark(lambda: build_report(run))
    assert report.summary.comparisons[0].paired == 1080
