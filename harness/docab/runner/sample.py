"""The runner: every (question, epoch, arm) of a run, concurrently, into one run folder.

``concurrency`` workers take work units (one question and epoch, see :mod:`docab.runner.schedule`)
from a queue and run the unit's arms back to back. A worker owns one workspace root, where each
sample's document is placed (:mod:`docab.runner.workspace`), and the sessions of MCP servers declared
``scope = "worker"``; servers with ``scope = "sample"`` are started for the sample and stopped
after it.

For each sample the runner builds the arm's tools, runs :func:`docab.agent.loop.run_agent`, obtains
the answer by the run's protocol, scores it, writes the transcript, then appends the record and
flushes it. Every failure — a document that was not converted, an MCP server that does not start,
a model error, a bug — becomes a record with status ``error`` (score 0), never a dropped sample:
intention-to-treat. MCP crashes and restarts during a sample are listed in its ``errors``.

Times in a record: ``model_time_s`` and ``tool_time_s`` are the model's and the tools' own time;
``wall_time_s`` is the agent loop plus answer extraction, without the set-up (workspace, server
start), which depends on the harness, not on the arm.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from docab.agent.answer import NOT_ANSWERABLE, AnswerExtractor, Extraction
from docab.agent.evidence import PageMap, ReadTracker, page_spans
from docab.agent.loop import AgentTrace, run_agent
from docab.agent.messages import ToolSpec
from docab.agent.toolbox.base import Tool
from docab.agent.toolbox.filesystem import filesystem_tools
from docab.agent.toolbox.mcp_session import MCPServerSpec, MCPSession, MCPStartError
from docab.config import RunConfig
from docab.log.events import AnswerEvent, json_value
from docab.log.records import RunRecord, Status
from docab.log.store import BackgroundWriter, RunStore, utc_now
from docab.log.transcript import transcript_path
from docab.models.base import Model
from docab.runner.dataset import Sample
from docab.runner.progress import ProgressSink
from docab.runner.schedule import WorkUnit
from docab.runner.workspace import DocumentPool, WorkspaceError, WorkspaceSlot

Scorer = Callable[[str, str, str], float]  # (gold, prediction, answer_format) -> score in [0, 1]


@dataclass
class RunContext:
    """Everything the workers share."""

    run_id: str
    config: RunConfig
    model: Model
    scorer: Scorer
    store: RunStore
    progress: ProgressSink
    extractor: AnswerExtractor | None = None
    workspace_parent: Path | None = None  # default: the system's temporary folder
    server_specs: dict[str, MCPServerSpec] = field(default_factory=dict)
    page_maps: dict[Path, PageMap] = field(default_factory=dict)  # per document, shared by workers
    _logs: dict[str, IO[str]] = field(default_factory=dict)
    _closing: set[asyncio.Task[None]] = field(default_factory=set)

    def __post_init__(self) -> None:
        if not self.server_specs:
            self.server_specs = {name: cfg.to_spec(name) for name, cfg in self.config.mcp_servers.items()}
        if self.config.answer.protocol == "extraction" and self.extractor is None:
            raise ValueError("the extraction protocol needs an answer extractor")

    def errlog(self, server: str) -> IO[str]:
        if server not in self._logs:
            self._logs[server] = self.store.log_file(f"mcp-{server}.stderr.log")
        return self._logs[server]

    def close_later(self, session: MCPSession) -> None:
        """Stop a per-sample server in the background (it takes the SDK about half a second);
        :func:`run_units` waits for every one before it returns."""
        task = asyncio.create_task(session.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def wait_closed(self) -> None:
        while self._closing:
            await asyncio.gather(*list(self._closing), return_exceptions=True)

    def close_logs(self) -> None:
        for handle in self._logs.values():
            handle.close()
        self._logs.clear()


class _Worker:
    def __init__(self, ctx: RunContext, index: int, root: Path, pool: DocumentPool) -> None:
        self.ctx = ctx
        self.index = index
        self.root = root
        self.slot = WorkspaceSlot(root, pool)
        self.fs_tools: list[Tool] = []  # built once: the workspace root never changes
        self.sessions: dict[str, MCPSession] = {}  # worker-scoped servers, by name

    async def session(self, spec: MCPServerSpec) -> MCPSession:
        session = self.sessions.get(spec.name)
        if session is None:
            session = MCPSession(spec, self.root, errlog=self.ctx.errlog(spec.name))
            self.sessions[spec.name] = session
        session.begin_sample()
        if not session.running:
            await session.start()
        return session

    async def close(self) -> None:
        for session in self.sessions.values():
            await session.close()
        self.sessions.clear()


async def run_units(ctx: RunContext, units: Sequence[WorkUnit], *, concurrency: int) -> None:
    """Run the units with ``concurrency`` workers; records are appended as samples finish."""
    queue: asyncio.Queue[WorkUnit] = asyncio.Queue()
    for unit in units:
        queue.put_nowait(unit)
    parent = Path(tempfile.mkdtemp(prefix=f"docab-{ctx.run_id[:40]}-", dir=ctx.workspace_parent))
    ctx.store.open()
    # Transcripts, images and records are written in the order samples finish, from one thread,
    # off the event loop (file creation is slow on some disks and would stall every sample).
    writer = BackgroundWriter(ctx.store)
    models = contextlib.AsyncExitStack()
    try:
        # SDK-backed models hold HTTP clients bound to this event loop: open and close them here.
        for model in {
            id(m): m for m in (ctx.model, getattr(ctx.extractor, "model", None)) if m is not None
        }.values():
            if hasattr(model, "__aenter__"):
                await models.enter_async_context(model)  # type: ignore[arg-type]
        pool = DocumentPool(parent / "pool")  # beside the workspaces, never inside one
        count = max(1, min(concurrency, len(units)))
        workers = [_Worker(ctx, i, parent / f"w{i:03d}", pool) for i in range(count)]
        for worker in workers:
            worker.root.mkdir()
        await asyncio.gather(*(_work(worker, queue, writer) for worker in workers))
    finally:
        await ctx.wait_closed()
        await models.aclose()
        writer.close()
        ctx.store.close()
        ctx.close_logs()
        shutil.rmtree(parent, ignore_errors=True)


async def _work(worker: _Worker, queue: asyncio.Queue[WorkUnit], writer: BackgroundWriter) -> None:
    try:
        while True:
            try:
                unit = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            for arm in unit.arms:
                record, transcript = await run_sample(worker, unit.sample, unit.epoch, arm)
                writer.submit(record, transcript)
                worker.ctx.progress.update(record)
    finally:
        await worker.close()


async def run_sample(
    worker: _Worker, sample: Sample, epoch: int, arm_name: str
) -> tuple[RunRecord, dict[str, Any]]:
    """Run one sample; returns its record and the arguments of its transcript (written by the caller)."""
    ctx = worker.ctx
    config = ctx.config
    arm = config.arm(arm_name)
    system = config.system_prompt(arm)
    started_at = utc_now()
    errors: list[str] = []
    trace: AgentTrace | None = None
    tracker: ReadTracker | None = None
    extraction: Extraction | None = None
    status: Status = "error"
    raw_answer = extracted = ""
    score = 0.0
    tools: list[Tool] = []
    sample_sessions: list[MCPSession] = []
    used_sessions: list[MCPSession] = []
    loop_started = loop_ended = 0.0
    try:
        # File work runs in a thread: on a slow disk it would otherwise stall every sample in flight.
        document = worker.slot.prepare(sample.document_dir, copy=False)  # reuse or a ready copy: cheap
        if document is None:
            document = await asyncio.to_thread(worker.slot.prepare, sample.document_dir)
        page_map = ctx.page_maps.get(sample.document_dir)
        if page_map is None:
            text = (document / "document.md").read_text(encoding="utf-8", errors="replace")
            page_map = PageMap.from_markdown(text, spans=page_spans(sample.document_dir / "meta.json"))
            ctx.page_maps[sample.document_dir] = page_map
        tracker = ReadTracker(page_map, workspace_root=str(worker.root))
        if "fs" in arm.tools:
            if not worker.fs_tools:
                worker.fs_tools = filesystem_tools(worker.root)
            tools.extend(worker.fs_tools)
        for server in arm.mcp_servers:
            spec = ctx.server_specs[server]
            if spec.scope == "worker":
                session = await worker.session(spec)
            else:
                session = MCPSession(spec, worker.root, errlog=ctx.errlog(server))
                sample_sessions.append(session)
                await session.start()
            used_sessions.append(session)
            tools.extend(session.tools)
        loop_started = time.perf_counter()
        trace = await run_agent(
            ctx.model,
            system=system,
            prompt=config.user_prompt(sample.question),
            tools=tools,
            protocol=config.answer.protocol,
            limits=config.limits.to_limits(),
            budget=config.output_budget.to_budget(),
            tracker=tracker,
        )
        errors.extend(trace.errors)
        status = trace.status
        if status == "ok":
            if config.answer.protocol == "submit_tool":
                assert trace.submission is not None
                raw_answer = (
                    trace.submission.answer if trace.submission.status == "answered" else NOT_ANSWERABLE
                )
                extracted = trace.submission.scored_answer
            else:
                assert ctx.extractor is not None
                raw_answer = trace.final_text
                extraction = await ctx.extractor.extract(sample.question, raw_answer)
                extracted = extraction.answer
                if extraction.error:
                    status = "error"
                    errors.append(extraction.error)
        elif trace.submission is not None:
            raw_answer = trace.submission.answer
        else:
            raw_answer = trace.final_text
        loop_ended = time.perf_counter()
        if status == "ok":
            score = float(ctx.scorer(sample.answer, extracted, sample.answer_format))
    except (WorkspaceError, MCPStartError) as exc:
        errors.append(str(exc))
    except Exception as exc:  # a harness bug: keep the sample (score 0) and leave a trail
        errors.append(f"harness error: {type(exc).__name__}: {exc}")
        ctx.errlog("harness").write(
            f"{utc_now()} {arm_name} {sample.qid} e{epoch}\n{traceback.format_exc()}\n"
        )
        status = "error"
    finally:
        for session in used_sessions:
            errors.extend(session.events)
        for session in sample_sessions:
            ctx.close_later(session)
    # The agent's time: not the set-up nor the stopping of per-sample servers.
    wall = (loop_ended or time.perf_counter()) - loop_started if loop_started else 0.0
    if status != "ok":
        score = 0.0
    rel = transcript_path(arm_name, sample.qid, epoch)
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
    transcript = {
        "rel": rel,
        "run_id": ctx.run_id,
        "arm": arm_name,
        "qid": sample.qid,
        "epoch": epoch,
        "model": ctx.model.name,
        "system": system,
        "tools": [t.spec for t in tools],
        "events": events,
    }
    record = RunRecord(
        run_id=ctx.run_id,
        arm=arm_name,
        qid=sample.qid,
        doc_id=sample.doc_id,
        epoch=epoch,
        model=ctx.model.name,
        status=status,
        score=score,
        answer_protocol=config.answer.protocol,
        raw_answer=raw_answer,
        extracted_answer=extracted,
        gold=sample.answer,
        answer_format=sample.answer_format,
        usage=tuple(trace.usage if trace else ()) + (extraction.usage if extraction else ()),
        model_time_s=round(trace.model_time_s, 6) if trace else 0.0,
        tool_time_s=round(trace.tool_time_s, 6) if trace else 0.0,
        wall_time_s=round(wall, 6),
        turns=trace.turns if trace else 0,
        tool_calls=tuple(trace.tool_calls) if trace else (),
        retries=trace.retries if trace else 0,
        limit_hit=trace.limit_hit if trace else None,
        errors=tuple(errors),
        pages_read=tracker.pages_read if tracker else (),
        sections_read=tuple(tracker.sections) if tracker else (),
        evidence_pages=sample.evidence_pages,
        evidence_sources=sample.evidence_sources,
        doc_type=sample.doc_type,
        transcript=rel,
        started_at=started_at,
    )
    return record, transcript


async def preflight(
    specs: Sequence[MCPServerSpec], scratch_parent: Path | None = None
) -> dict[str, list[ToolSpec]]:
    """Start each MCP server once in a scratch workspace, so a bad command fails before the run.

    Returns the tools each server offers (for the manifest); raises MCPStartError.
    """
    found: dict[str, list[ToolSpec]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="docab-preflight-", dir=scratch_parent))
    try:
        (scratch / "document").mkdir()
        (scratch / "document" / "document.md").write_text("# Preflight\n\n## Page 1\n\nhello\n")
        for spec in specs:
            session = MCPSession(spec, scratch, errlog=None)
            await session.start()
            found[spec.name] = [t.spec for t in session.tools]
            await session.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return found
