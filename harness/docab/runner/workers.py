"""The workers of a run: every (question, epoch, arm) still to do, concurrently, into one run folder.

``concurrency`` workers take work units (one question and epoch, see :mod:`docab.runner.schedule`)
from a queue and run the unit's arms back to back (:func:`docab.runner.sample.run_sample`). A
worker owns one workspace root, where each sample's document is placed
(:mod:`docab.runner.workspace`), and the sessions of MCP servers declared ``scope = "worker"``;
servers with ``scope = "sample"`` are started for the sample and stopped after it. Finished
samples go to the store's writer thread (transcript, then record, flushed) as they finish.

Workspace roots are ``<temp>/docab-<random>/wNNN``: nothing in the path names the run, an arm
or a question, and it is the same for every sample a worker runs. The tools show paths relative to
the root (the filesystem tools always; md-vision with ``--relative-paths``, as the shipped configs
start it), so every path the model sees is the same in every sample, arm and run.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docab.log.records import RunRecord
from docab.log.store import BackgroundWriter, SampleTranscript
from docab.models.meter import SpendCapReached
from docab.runner.breaker import CircuitBreaker, RunStopped
from docab.runner.context import RunContext, Worker
from docab.runner.failures import ERRORED
from docab.runner.inflight import unwrapped
from docab.runner.sample import run_sample
from docab.runner.schedule import WorkUnit
from docab.runner.workspace import DocumentPool

WORKSPACE_PREFIX = "docab-"  # + a random suffix; each worker's root is <parent>/wNNN


async def run_units(ctx: RunContext, units: Sequence[WorkUnit], *, concurrency: int) -> None:
    """Run the units with ``concurrency`` workers; records are appended as samples finish."""
    queue: asyncio.Queue[WorkUnit] = asyncio.Queue()
    for unit in units:
        queue.put_nowait(unit)
    # Nothing in a workspace path names the run, an arm or a question: the model may see it.
    parent = Path(tempfile.mkdtemp(prefix=WORKSPACE_PREFIX, dir=ctx.workspace_parent))
    if ctx.on_scratch is not None:
        ctx.on_scratch(parent)
    ctx.store.open()
    # Transcripts, images and records are written in the order samples finish, from one thread,
    # off the event loop (file creation is slow on some disks and would stall every sample).
    writer = BackgroundWriter(ctx.store)
    models = contextlib.AsyncExitStack()
    try:
        # SDK-backed models hold HTTP clients bound to this event loop: open and close them here.
        extractor_model: Any = getattr(ctx.extractor, "model", None)
        chosen = (unwrapped(ctx.model), unwrapped(extractor_model))  # not a JournaledModel: its model
        for model in {id(m): m for m in chosen if m is not None}.values():
            if isinstance(model, contextlib.AbstractAsyncContextManager):
                await models.enter_async_context(model)
        pool = DocumentPool(parent / "pool")  # beside the workspaces, never inside one
        count = max(1, min(concurrency, len(units)))
        workers = [Worker(ctx, i, parent / f"w{i:03d}", pool) for i in range(count)]
        for worker in workers:
            worker.root.mkdir()
        state = _RunState(writer)
        tasks = [asyncio.create_task(_work(worker, queue, state)) for worker in workers]
        await _supervise(tasks, state)
        if ctx.breaker is not None and ctx.breaker.open:
            left = sum(len(unit.arms) for unit in units) - state.written
            raise RunStopped(
                ctx.breaker.reason or "the endpoint stopped answering", kept=state.written, left=left
            )
        state.flush_all()
    finally:
        await ctx.wait_closed()
        await models.aclose()
        writer.close()
        ctx.store.close()
        ctx.close_logs()
        shutil.rmtree(parent, ignore_errors=True)


@dataclass
class _RunState:
    """What the workers share: the writer, a count of samples written, and the records held back
    while their sample is part of a streak of connection failures (written when the endpoint answers
    again, dropped when the breaker stops the run: those samples did not get a fair try)."""

    writer: BackgroundWriter
    written: int = 0
    held: list[tuple[RunRecord, SampleTranscript]] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def write(self, record: RunRecord, transcript: SampleTranscript) -> None:
        self.writer.submit(record, transcript)
        self.written += 1

    def flush(self, breaker: CircuitBreaker) -> None:
        """Write the held records whose sample is no longer part of the failing streak."""
        keep = [(r, t) for r, t in self.held if breaker.in_streak(r.key)]
        for record, transcript in self.held:
            if not breaker.in_streak(record.key):
                self.write(record, transcript)
        self.held = keep

    def flush_all(self) -> None:
        for record, transcript in self.held:
            self.write(record, transcript)
        self.held = []


async def _supervise(tasks: list[asyncio.Task[None]], state: _RunState) -> None:
    """Wait for the workers; when one fails or the breaker opens, cancel the others.

    When the run itself is cancelled (Ctrl-C), the workers are cancelled and waited for before
    this returns: left running while the models and the writer close, each would take its next
    sample, fail at once on a closed client and be recorded as a model error (ten such records
    after one Ctrl-C, kept by the resume)."""
    stopper = asyncio.create_task(state.stop.wait())
    pending: set[asyncio.Task[Any]] = set(tasks)
    try:
        while pending:
            done, pending = await asyncio.wait(pending | {stopper}, return_when=asyncio.FIRST_COMPLETED)
            pending.discard(stopper)
            failed = [t for t in done if t is not stopper and not t.cancelled() and t.exception()]
            if failed or stopper in done:
                await _cancel(pending)
                if failed:
                    raise failed[0].exception()  # type: ignore[misc]
                return
    except BaseException:
        await _cancel(pending)
        raise
    finally:
        stopper.cancel()


async def _cancel(tasks: set[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until every one has ended, even if this waiter is cancelled too."""
    for task in tasks:
        task.cancel()
    while not all(task.done() for task in tasks):
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)


async def _work(worker: Worker, queue: asyncio.Queue[WorkUnit], state: _RunState) -> None:
    breaker = worker.ctx.breaker
    try:
        while True:
            try:
                unit = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            for arm in unit.arms:
                if breaker is not None and breaker.open:
                    return
                spend = worker.ctx.spend
                if spend is not None and not await spend.admit(arm):
                    return  # the spend cap: start nothing more (samples in flight finish)
                try:
                    record, transcript = await run_sample(worker, unit.sample, unit.epoch, arm)
                except SpendCapReached:
                    if spend is not None:
                        spend.abandoned(arm)
                    return  # unrecorded: its calls are journaled, and a resume with a higher cap runs it
                if spend is not None:
                    spend.finished(arm, record.cost)
                if breaker is None:
                    state.write(record, transcript)
                elif breaker.open:
                    if record.status not in ERRORED:  # finished before the endpoint went: kept
                        state.write(record, transcript)
                    state.stop.set()
                    return
                elif record.status in ERRORED and breaker.in_streak(record.key):
                    state.held.append((record, transcript))
                else:
                    state.write(record, transcript)
                    state.flush(breaker)
                worker.ctx.progress.update(record)
    finally:
        await worker.close()
