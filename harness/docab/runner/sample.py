"""One sample, (arm, question, epoch), in named steps: from a worker to a record and a transcript.

:func:`run_sample` runs the steps in order, each filling its part of a :class:`SampleRun`:

1. **workspace**: place the question's converted document in the worker's workspace
   (:func:`place_document`);
2. **page map**: map the document's lines to pages, once per document (:func:`page_map`), and track
   what the agent reads;
3. **tools**: the arm's filesystem tools (:func:`filesystem_toolset`);
4. **sessions**: the arm's MCP servers, per worker or per sample, and their tools
   (:func:`open_sessions`);
5. **agent**: :func:`docab.agent.loop.run_agent` (:func:`run_the_agent`);
6. **answer**: the answer by the run's protocol, submitted or extracted (:func:`obtain_answer`);
7. **score**: the benchmark's score of an ``ok`` sample, 0 otherwise (:func:`score_of`);
8. **record**: the :class:`~docab.log.records.RunRecord` and the transcript (:func:`build_record`,
   :func:`build_transcript`); the worker hands both to the store's writer.

Intention-to-treat: every failure — a document that was not converted, an MCP server that does not
start, a model error, a bug — becomes a record with status ``error`` (score 0), never a dropped
sample. MCP crashes and restarts during a sample are listed in its ``errors``.

Times in a record: ``model_time_s`` and ``tool_time_s`` are the model's and the tools' own time;
``wall_time_s`` is the agent loop plus answer extraction, without the set-up (workspace, server
start), which depends on the harness, not on the arm.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from docab.agent.answer import Extraction
from docab.agent.evidence import PageMap, ReadTracker, page_spans
from docab.agent.loop import AgentTrace, CallObserver, run_agent
from docab.agent.toolbox.base import Tool
from docab.agent.toolbox.mcp_session import MCPSession, MCPStartError
from docab.config import ArmConfig
from docab.log.events import AnswerEvent, json_value
from docab.log.records import PROSE_FALLBACK, RunRecord, Status
from docab.log.store import SampleTranscript, utc_now
from docab.log.transcript import transcript_path
from docab.models.base import ModelError
from docab.models.cache import EPOCH
from docab.models.meter import METER, SpendCapReached
from docab.pricing import PriceBook
from docab.protocol import NOT_ANSWERABLE
from docab.runner.context import RunContext, Worker
from docab.runner.dataset import Sample
from docab.runner.spend import SampleMeter
from docab.runner.workspace import WorkspaceError


@dataclass(frozen=True)
class Answer:
    """What the sample answered: as given (``raw``), as scored (``extracted``), and how."""

    raw: str = ""
    extracted: str = ""
    extraction: Extraction | None = None  # under the extraction protocol, when the extractor ran
    error: str | None = None  # the extractor failed: the sample is an error
    path: str = ""  # RunRecord.answer_path: "prose-fallback", or "" for the protocol's own path


@dataclass
class SampleRun:
    """One sample on its way to a record; each step fills its part."""

    sample: Sample
    epoch: int
    arm: ArmConfig
    system: str  # the arm's system prompt
    started_at: str = field(default_factory=utc_now)
    status: Status = "error"  # until the agent says otherwise
    tracker: ReadTracker | None = None
    tools: list[Tool] = field(default_factory=list)
    sessions: list[MCPSession] = field(default_factory=list)  # every session the tools come from
    own_sessions: list[MCPSession] = field(default_factory=list)  # started for this sample only
    trace: AgentTrace | None = None
    answer: Answer = field(default_factory=Answer)
    score: float = 0.0
    errors: list[str] = field(default_factory=list)
    agent_started: float | None = None  # time.perf_counter() when the agent loop began
    agent_ended: float | None = None  # ... and when the answer was in

    def wall_time_s(self, now: float) -> float:
        """The agent loop and the answer, or up to ``now`` when they failed; 0 if never started."""
        if self.agent_started is None:
            return 0.0
        return (self.agent_ended if self.agent_ended is not None else now) - self.agent_started


async def run_sample(
    worker: Worker, sample: Sample, epoch: int, arm_name: str
) -> tuple[RunRecord, SampleTranscript]:
    """Run one sample; returns its record and its transcript (written by the caller)."""
    ctx = worker.ctx
    arm = ctx.config.arm(arm_name)
    state = SampleRun(sample, epoch, arm, system=ctx.system_prompt(arm))
    epoch_scope = EPOCH.set(epoch)  # the response cache keys sampled replies by epoch
    # Every billed call of this sample is priced, journaled and charged to the cap as it returns.
    meter = SampleMeter(
        (arm_name, sample.qid, epoch), ctx.prices or PriceBook(), ctx.spend_journal, ctx.spend
    )
    meter_scope = METER.set(meter)
    try:
        document = await place_document(worker, sample)
        state.tracker = ReadTracker(page_map(ctx, sample, document), workspace_root=str(worker.root))
        state.tools.extend(filesystem_toolset(worker, arm))
        await open_sessions(worker, state)
        state.agent_started = time.perf_counter()
        trace = state.trace = await run_the_agent(ctx, state)
        state.errors.extend(trace.errors)
        state.status = trace.status
        state.answer = await obtain_answer(ctx, sample, trace)
        if state.answer.error:
            state.status = "error"
            state.errors.append(state.answer.error)
        state.agent_ended = time.perf_counter()
        state.score = score_of(ctx, sample, state.status, state.answer)
    except (WorkspaceError, MCPStartError) as exc:
        state.errors.append(str(exc))
    except SpendCapReached:
        raise  # the sample stops unrecorded: the worker stops too (docab.runner.spend)
    except Exception as exc:  # a harness bug: keep the sample (score 0) and leave a trail
        state.errors.append(f"harness error: {type(exc).__name__}: {exc}")
        ctx.errlog("harness").write(
            f"{utc_now()} {arm_name} {sample.qid} e{epoch}\n{traceback.format_exc()}\n"
        )
        state.status = "error"
    finally:
        release_sessions(ctx, state)
        EPOCH.reset(epoch_scope)
        METER.reset(meter_scope)
    if state.status != "ok":
        state.score = 0.0
    record = build_record(ctx, state, now=time.perf_counter())
    meter.settle(record.cost)  # what the record counts that no call here reported (tool-side tokens)
    return record, build_transcript(ctx, state)


# -- 1. workspace -----------------------------------------------------------------------------------


async def place_document(worker: Worker, sample: Sample) -> Path:
    """The sample's document in the worker's workspace; raises WorkspaceError when it cannot be placed."""
    document = worker.slot.prepare(sample.document_dir, copy=False)  # reuse or a ready copy: cheap
    if document is None:
        # File work runs in a thread: on a slow disk it would otherwise stall every sample in flight.
        document = await asyncio.to_thread(worker.slot.prepare, sample.document_dir)
    assert document is not None  # with copying allowed, prepare places the document or raises
    return document


# -- 2. page map ------------------------------------------------------------------------------------


def page_map(ctx: RunContext, sample: Sample, document: Path) -> PageMap:
    """Which lines of the document are which page; built once per document and shared by workers."""
    known = ctx.page_maps.get(sample.document_dir)
    if known is None:
        text = (document / "document.md").read_text(encoding="utf-8", errors="replace")
        meta = sample.document_dir / "meta.json"  # left out of the workspace: read from the corpus
        spans = page_spans(meta.read_text(encoding="utf-8", errors="replace")) if meta.is_file() else None
        known = PageMap.from_markdown(text, spans=spans)
        ctx.page_maps[sample.document_dir] = known
    return known


# -- 3. tools ---------------------------------------------------------------------------------------


def filesystem_toolset(worker: Worker, arm: ArmConfig) -> list[Tool]:
    return list(worker.fs_tools) if "fs" in arm.tools else []


# -- 4. sessions ------------------------------------------------------------------------------------


async def open_sessions(worker: Worker, state: SampleRun) -> None:
    """Start (or reuse) the arm's MCP servers and add their tools; raises MCPStartError. A
    per-sample session is noted before it starts, so one that fails to start is still stopped."""
    ctx = worker.ctx
    for server in state.arm.mcp_servers:
        spec = ctx.server_specs[server]
        if spec.scope == "worker":
            session = await worker.session(spec)
        else:
            session = MCPSession(spec, worker.root, errlog=ctx.errlog(server))
            state.own_sessions.append(session)
            await session.start()
        state.sessions.append(session)
        state.tools.extend(session.tools)


def release_sessions(ctx: RunContext, state: SampleRun) -> None:
    """Keep what the sessions noted (crashes, restarts) and stop the per-sample ones in the background."""
    for session in state.sessions:
        state.errors.extend(session.events)
    for session in state.own_sessions:
        ctx.close_later(session)


# -- 5. agent ---------------------------------------------------------------------------------------


async def run_the_agent(ctx: RunContext, state: SampleRun) -> AgentTrace:
    return await run_agent(
        ctx.model,
        system=state.system,
        prompt=ctx.config.user_prompt(state.sample.question),
        tools=state.tools,
        protocol=ctx.config.answer.protocol,
        limits=ctx.config.limits,
        budget=ctx.budget,
        tracker=state.tracker,
        on_call=call_observer(ctx, (state.arm.name, state.sample.qid, state.epoch)),
        prose_fallback_after=ctx.config.answer.prose_fallback_after if ctx.extractor is not None else 0,
        may_call=ctx.spend.may_call if ctx.spend is not None else None,
    )


def call_observer(ctx: RunContext, key: tuple[str, str, int]) -> CallObserver | None:
    """Tells the run's circuit breaker how each model call of the sample ``key`` went."""
    breaker = ctx.breaker
    if breaker is None:
        return None

    def observe(error: ModelError | None) -> None:
        if error is None:
            breaker.success()
        else:
            breaker.failure(key, error.kind, str(error), ctx.clock())

    return observe


# -- 6. answer --------------------------------------------------------------------------------------


async def obtain_answer(ctx: RunContext, sample: Sample, trace: AgentTrace) -> Answer:
    """The answer by the run's protocol. A sample that did not finish keeps what it said last. Under
    ``submit_tool``, a model that kept answering in prose past its reminders has its last prose
    answer extracted (answer path ``prose-fallback``)."""
    if trace.status != "ok":
        if trace.submission is not None:
            return Answer(raw=trace.submission.answer)
        return Answer(raw=trace.final_text)
    if ctx.config.answer.protocol == "submit_tool" and trace.prose_fallback:
        assert ctx.extractor is not None  # the loop falls back to prose only with an extractor
        extraction = await ctx.extractor.extract(sample.question, trace.final_text)
        return Answer(trace.final_text, extraction.answer, extraction, extraction.error, PROSE_FALLBACK)
    if ctx.config.answer.protocol == "submit_tool":
        assert trace.submission is not None  # an ok trace under submit_tool has submitted
        submission = trace.submission
        raw = submission.answer if submission.status == "answered" else NOT_ANSWERABLE
        return Answer(raw=raw, extracted=submission.scored_answer)
    assert ctx.extractor is not None  # RunContext refuses the extraction protocol without one
    extraction = await ctx.extractor.extract(sample.question, trace.final_text)
    return Answer(trace.final_text, extraction.answer, extraction, extraction.error)


# -- 7. score ---------------------------------------------------------------------------------------


def score_of(ctx: RunContext, sample: Sample, status: Status, answer: Answer) -> float:
    """The benchmark's score of an ``ok`` sample; any other status scores 0 (intention-to-treat)."""
    if status != "ok":
        return 0.0
    return float(ctx.scorer(sample.answer, answer.extracted, sample.answer_format))


# -- 8. record --------------------------------------------------------------------------------------


def build_record(ctx: RunContext, state: SampleRun, *, now: float) -> RunRecord:
    sample, trace, tracker, extraction = state.sample, state.trace, state.tracker, state.answer.extraction
    usage = tuple(trace.usage if trace else ()) + (extraction.usage if extraction else ())
    cached_tool_usage = tuple(trace.cached_tool_usage) if trace else ()
    cached_model_usage = tuple(original for u in usage if (original := u.cached_original()) is not None)
    prices = ctx.prices or PriceBook()
    return RunRecord(
        run_id=ctx.run_id,
        arm=state.arm.name,
        qid=sample.qid,
        doc_id=sample.doc_id,
        epoch=state.epoch,
        model=ctx.model.name,
        status=state.status,
        score=state.score,
        answer_protocol=ctx.config.answer.protocol,
        raw_answer=state.answer.raw,
        extracted_answer=state.answer.extracted,
        gold=sample.answer,
        answer_format=sample.answer_format,
        usage=usage,
        cached_tool_usage=cached_tool_usage,
        cached_model_usage=cached_model_usage,
        model_time_s=round(trace.model_time_s, 6) if trace else 0.0,
        tool_time_s=round(trace.tool_time_s, 6) if trace else 0.0,
        wall_time_s=round(state.wall_time_s(now), 6),
        turns=trace.turns if trace else 0,
        tool_calls=tuple(trace.tool_calls) if trace else (),
        retries=trace.retries if trace else 0,
        limit_hit=trace.limit_hit if trace else None,
        errors=tuple(state.errors),
        pages_read=tracker.pages_read if tracker else (),
        pages_seen=tracker.pages_seen if tracker else (),
        page_shares=tracker.page_shares if tracker else (),
        sections_read=tuple(tracker.sections) if tracker else (),
        evidence_pages=sample.evidence_pages,
        evidence_sources=sample.evidence_sources,
        doc_type=sample.doc_type,
        transcript=sample_transcript_path(ctx, state.arm.name, sample.qid, state.epoch),
        started_at=state.started_at,
        cost=prices.sample_cost(usage, cached_tool_usage + cached_model_usage),
        answer_path=state.answer.path,
    )


def sample_transcript_path(ctx: RunContext, arm: str, qid: str, epoch: int) -> str:
    """Where the sample's transcript goes: ``transcript_path``, or for the n-th retry of a sample
    that errored, the same name ending ``.retry<n>.json`` (the errored attempt's stays)."""
    rel = transcript_path(arm, qid, epoch)
    attempt = ctx.attempts.get((arm, qid, epoch), 0)
    return f"{rel.removesuffix('.json')}.retry{attempt}.json" if attempt else rel


def build_transcript(ctx: RunContext, state: SampleRun) -> SampleTranscript:
    """The agent's events, then the answer event."""
    config, sample, trace = ctx.config, state.sample, state.trace
    epoch, arm_name = state.epoch, state.arm.name
    status, score, errors = state.status, state.score, state.errors
    raw_answer, extracted, extraction = state.answer.raw, state.answer.extracted, state.answer.extraction
    rel = sample_transcript_path(ctx, arm_name, sample.qid, epoch)
    events = list(trace.events) if trace else []
    events.append(
        AnswerEvent(
            protocol=config.answer.protocol,
            status=status,
            raw_answer=raw_answer,
            extracted_answer=extracted,
            gold=sample.answer,
            answer_format=sample.answer_format,
            score=score,
            errors=list(errors),
            extraction_usage=list(extraction.usage) if extraction else [],
            extraction=json_value(extraction.details) if extraction else None,
        )
    )
    return SampleTranscript(
        rel=rel,
        run_id=ctx.run_id,
        arm=arm_name,
        qid=sample.qid,
        epoch=epoch,
        model=ctx.model.name,
        system=state.system,
        tools=tuple(t.spec for t in state.tools),
        events=events,
    )
