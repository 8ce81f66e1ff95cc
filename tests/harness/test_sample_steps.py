"""The steps of one sample, each on its own: answer, score, wall time, and the record of a sample
that failed before its agent ran (intention-to-treat)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from docab.agent.answer import Extraction, Submission
from docab.agent.loop import AgentTrace
from docab.config import parse_config
from docab.log.store import RunStore
from docab.protocol import NOT_ANSWERABLE
from docab.runner.context import RunContext, Worker
from docab.runner.progress import SilentProgress
from docab.runner.sample import (
    Answer,
    SampleRun,
    build_record,
    build_transcript,
    obtain_answer,
    place_document,
    run_sample,
    score_of,
)
from docab.runner.workspace import DocumentPool, WorkspaceError
from docab.usage import Usage
from tests.harness.corpus import exact_scorer, make_dataset
from tests.harness.fakes import ScriptedModel


class FixedExtractor:
    def __init__(self, extraction: Extraction) -> None:
        self.extraction = extraction
        self.asked: list[tuple[str, str]] = []

    async def extract(self, question: str, response: str) -> Extraction:
        self.asked.append((question, response))
        return self.extraction


def context(tmp_path: Path, protocol: str = "submit_tool", extractor: Any = None) -> RunContext:
    config = parse_config(
        {
            "name": "steps",
            "model": "baseline/keyword",
            "answer": {"protocol": protocol},
            "arms": [{"name": "fs", "prompt": "Be brief."}],
        }
    )
    return RunContext(
        run_id="steps",
        config=config,
        model=ScriptedModel(),
        scorer=exact_scorer,
        store=RunStore(tmp_path / "run"),
        progress=SilentProgress(),
        extractor=extractor,
    )


@pytest.fixture
def sample(tmp_path: Path):  # type: ignore[no-untyped-def]
    return make_dataset(tmp_path / "corpus", documents=1).samples[0]


def answer_of(ctx: RunContext, sample: Any, trace: AgentTrace) -> Answer:
    return asyncio.run(obtain_answer(ctx, sample, trace))


def test_a_submitted_answer_is_scored_as_submitted(tmp_path: Path, sample: Any) -> None:
    ctx = context(tmp_path)
    answered = answer_of(ctx, sample, AgentTrace(submission=Submission("answered", "1980")))
    assert (answered.raw, answered.extracted, answered.extraction, answered.error) == (
        "1980",
        "1980",
        None,
        None,
    )
    declined = answer_of(ctx, sample, AgentTrace(submission=Submission("not_answerable", "")))
    assert declined.raw == declined.extracted == NOT_ANSWERABLE


def test_a_sample_that_did_not_finish_keeps_what_it_said_last(tmp_path: Path, sample: Any) -> None:
    ctx = context(tmp_path)
    limited = AgentTrace(status="limit", submission=Submission("answered", "maybe"), final_text="thinking")
    assert answer_of(ctx, sample, limited) == Answer(raw="maybe")
    failed = AgentTrace(status="error", final_text="half a thought")
    assert answer_of(ctx, sample, failed) == Answer(raw="half a thought")


def test_extraction_reads_the_final_text_and_a_failed_extractor_is_an_error(
    tmp_path: Path, sample: Any
) -> None:
    usage = (Usage(input_uncached=50, output=5, role="extractor"),)
    good = FixedExtractor(Extraction("1980", usage))
    ctx = context(tmp_path, "extraction", good)
    answer = answer_of(ctx, sample, AgentTrace(final_text="It was founded in 1980."))
    assert (answer.raw, answer.extracted, answer.error) == ("It was founded in 1980.", "1980", None)
    assert good.asked == [(sample.question, "It was founded in 1980.")]
    broken = FixedExtractor(Extraction("", error="answer extraction failed: ModelError: down"))
    answer = answer_of(context(tmp_path, "extraction", broken), sample, AgentTrace(final_text="x"))
    assert answer.error == "answer extraction failed: ModelError: down"


def test_only_an_ok_sample_is_scored(tmp_path: Path, sample: Any) -> None:
    calls: list[str] = []

    def scorer(gold: str, prediction: str, answer_format: str) -> float:
        calls.append(prediction)
        return 1.0

    ctx = context(tmp_path)
    ctx.scorer = scorer
    assert score_of(ctx, sample, "ok", Answer("1980", "1980")) == 1.0
    assert score_of(ctx, sample, "limit", Answer("1980", "1980")) == 0.0
    assert score_of(ctx, sample, "error", Answer("1980", "1980")) == 0.0
    assert calls == ["1980"]


def test_wall_time_is_the_agent_and_the_answer_or_up_to_the_failure(sample: Any) -> None:
    from docab.config import ArmConfig

    state = SampleRun(sample, 0, ArmConfig(name="fs"), system="s")
    assert state.wall_time_s(now=50.0) == 0.0  # never reached the agent (workspace, server start)
    state.agent_started = 10.0
    assert state.wall_time_s(now=12.5) == 2.5  # failed during the agent or the answer
    state.agent_ended = 11.0
    assert state.wall_time_s(now=99.0) == 1.0


def test_a_document_that_cannot_be_placed_becomes_an_error_record(tmp_path: Path, sample: Any) -> None:
    (sample.document_dir / "document.md").unlink()
    ctx = context(tmp_path)
    root = tmp_path / "w0"
    root.mkdir()
    worker = Worker(ctx, 0, root, DocumentPool(tmp_path / "pool"))

    async def go() -> Any:
        with pytest.raises(WorkspaceError, match=r"document\.md"):
            await place_document(worker, sample)
        return await run_sample(worker, sample, 0, "fs")

    record, transcript = asyncio.run(go())
    assert (record.status, record.score, record.turns, record.wall_time_s) == ("error", 0.0, 0, 0.0)
    assert "document.md" in record.errors[0] and record.usage == () and record.pages_read == ()
    assert record.transcript == transcript.rel and transcript.rel.startswith("transcripts/fs/")
    assert transcript.system.rstrip().endswith("Be brief.") and transcript.tools == ()
    (answer_event,) = transcript.events
    assert answer_event.type == "answer" and answer_event.status == "error"
    assert ctx.model.seen == []  # the model was never called


def test_the_record_and_transcript_of_a_finished_state_agree(tmp_path: Path, sample: Any) -> None:
    from docab.config import ArmConfig

    ctx = context(tmp_path)
    trace = AgentTrace(turns=3, retries=1, model_time_s=0.1234567, limit_hit=None)
    state = SampleRun(sample, 2, ArmConfig(name="fs"), system="s", trace=trace, status="ok", score=1.0)
    state.answer = Answer("1980", "1980")
    state.errors.append("md: restarted once")
    state.agent_started, state.agent_ended = 1.0, 3.5
    record = build_record(ctx, state, now=10.0)
    transcript = build_transcript(ctx, state)
    assert (record.epoch, record.turns, record.retries, record.model_time_s) == (2, 3, 1, 0.123457)
    assert record.wall_time_s == 2.5 and record.errors == ("md: restarted once",)
    assert record.transcript == transcript.rel and transcript.epoch == 2
    last = transcript.events[-1]
    assert last.type == "answer" and last.score == 1.0 and last.raw_answer == "1980"
