"""Models that answer in prose (issue 23 item 5): under the submit_tool protocol, after
``answer.prose_fallback_after`` reminders the last prose answer goes through the benchmark's answer
extraction and is recorded with the answer path ``prose-fallback``, so a weak model is scored, not
zeroed; the report gives each arm's share."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docab.agent.budget import OutputBudget
from docab.agent.loop import SampleLimits, run_agent
from docab.config import parse_config
from docab.log.manifest import Manifest
from docab.messages import Message, ToolSpec, Turn
from docab.report.render import to_markdown
from docab.report.summary import RunData, build_report
from docab.runner.launch import RunRequest, launch
from docab.runner.progress import SilentProgress
from docab.usage import Usage
from tests.harness.corpus import exact_scorer, make_dataset
from tests.harness.fakes import ScriptedModel, turn


def loop(model: ScriptedModel, after: int, max_turns: int = 10):  # type: ignore[no-untyped-def]
    return asyncio.run(
        run_agent(
            model,
            system="sys",
            prompt="Question: q?",
            tools=[],
            protocol="submit_tool",
            limits=SampleLimits(max_turns=max_turns),
            budget=OutputBudget(),
            prose_fallback_after=after,
        )
    )


def test_the_loop_stops_on_prose_after_k_reminders() -> None:
    model = ScriptedModel(then=turn("It was founded in 1980."))
    trace = loop(model, after=2)
    assert trace.status == "ok" and trace.prose_fallback and trace.submission is None
    assert (trace.turns, trace.nudges) == (3, 2)
    assert trace.final_text == "It was founded in 1980."


def test_without_the_fallback_prose_is_nagged_to_the_turn_limit() -> None:
    trace = loop(ScriptedModel(then=turn("It was founded in 1980.")), after=0, max_turns=5)
    assert trace.status == "limit" and trace.limit_hit == "turns" and not trace.prose_fallback


def test_an_empty_reply_is_not_an_answer_to_fall_back_on() -> None:
    model = ScriptedModel([turn("thinking"), turn("still"), turn("")], then=turn("It is 1980."))
    trace = loop(model, after=2)
    assert trace.prose_fallback and trace.turns == 4 and trace.final_text == "It is 1980."


@dataclass
class ProseModel:
    """Answers every agent turn in prose (never calls submit_answer); as the extractor (no tools)
    replies in the benchmark's extraction format."""

    name: str = "fake/prose"
    supports_images: bool = True
    is_baseline: bool = False
    extracted: list[str] = field(default_factory=list)

    async def generate(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_output_tokens: int
    ) -> Turn:
        usage = Usage(input_uncached=50, output=10, model="fake")
        if not tools:
            self.extracted.append(messages[-1].text)
            return Turn("Extracted answer: 1980\nAnswer format: Integer", (), usage, 0.0)
        return Turn("The company was founded in 1980, I believe.", (), usage, 0.0)


def test_a_run_of_a_prose_model_is_scored_and_reported(tmp_path: Path) -> None:
    config = parse_config(
        {
            "name": "prose",
            "model": "openai/fake",
            "limits": {"max_turns": 8},
            "arms": [{"name": "fs"}, {"name": "fs2"}],
        }
    )
    assert config.answer.prose_fallback_after == 2
    dataset = make_dataset(tmp_path / "corpus", documents=1)
    model = ProseModel()
    request = RunRequest(config, results_dir=tmp_path / "results", concurrency=1, preflight=False)
    outcome = launch(
        request,
        dataset=dataset,
        model=model,
        scorer=exact_scorer,
        progress=SilentProgress(),
        say=lambda s: None,
    )
    records = outcome.records
    assert len(records) == 8 and all(r.status == "ok" and r.answer_path == "prose-fallback" for r in records)
    assert all(r.turns == 3 and r.extracted_answer == "1980" for r in records)
    assert all(r.tokens("extractor") > 0 for r in records)
    founded = [r for r in records if r.gold == "1980"]
    assert founded and all(r.score == 1.0 for r in founded)  # scored, not zeroed
    summary = build_report(RunData((outcome.run_dir,), Manifest(), tuple(records))).summary
    arm = summary.arm("fs")
    assert arm is not None and arm.extraction.prose_fallback == 4 and arm.extraction.of == 4
    assert "fs: prose fallback: 4 of 4 answers (100%)" in to_markdown(summary)


def test_the_default_keeps_the_config_hash_and_a_change_is_a_new_run() -> None:
    base: dict[str, Any] = {"name": "p", "model": "baseline/keyword", "arms": [{"name": "fs"}]}
    plain = parse_config(base)
    same = parse_config({**base, "answer": {"prose_fallback_after": 2}})
    other = parse_config({**base, "answer": {"prose_fallback_after": 0}})
    assert plain.config_hash() == same.config_hash() != other.config_hash()
    assert "prose_fallback_after" not in plain.identity()["answer"]
