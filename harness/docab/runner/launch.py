"""From a config to a finished (or resumed) run folder: the library's entry point.

``await run_async(config)`` (or ``run(config)`` outside an event loop) does, in one event loop:

1. load the questions and their converted documents; apply ``limit`` (or ``first``) then ``shard``;
2. read ``results/<run-id>/`` if it exists (only read; refused at once when another process
   holds its lock: checking its manifest matches this config's
   identity, which leaves out where the endpoints live, see :func:`docab.log.identity.identity_of`);
3. plan the work units still to do (records already written are skipped: resume; with
   ``retry_errors``, samples whose newest record is an error or timeout are run again, and
   their new records appended);
4. preflight: one cheap request per distinct model endpoint (the offline baseline needs none) and
   a start of every MCP server, so an unreachable endpoint or a bad server command stops the run
   before any sample, with a message naming the role, the URL and the cause;
5. only then take the folder's lock (``run.lock``, held for the whole run: a second process is
   refused in one sentence naming the holder, or waits with ``wait``; a lock left by a killed
   run is taken over and its temporary workspaces removed: :mod:`docab.log.lock`), and create or
   resume the run folder: the manifest, with one session more (which records the endpoints it used);
6. run the units and report progress; records are flushed as samples finish.

Errors are :class:`docab.errors.DocabError`\\ s worded for the library's own terms
(``limit must be at least 1``); ``docab run`` and ``docab demo`` check their flags before calling.

Why one module: the six steps share one run's state (the plan, the lock, the manifest session,
the progress display) in one event loop, and their order is the contract; split, that state would
cross modules and the order would be spread over them. The pieces that stand alone already live
apart (:mod:`docab.log.lock`, :mod:`docab.runner.schedule`, :mod:`docab.runner.workers`,
:mod:`docab.models.preflight`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docab.agent.answer import SUBMIT_TOOL, BenchmarkExtractor
from docab.agent.toolbox.filesystem import FILESYSTEM_TOOLS
from docab.agent.toolbox.mcp_session import MCPServerSpec, MCPSession, MCPStartError
from docab.config import RunConfig, load_config, with_overrides
from docab.errors import DatasetError, RunError
from docab.log.costs import record_cost
from docab.log.lock import RunLock, remove_scratch
from docab.log.manifest import ArmManifest, DatasetInfo, EndpointInfo, Manifest, ModelsInfo, Session
from docab.log.records import RunRecord
from docab.log.spend_journal import SPEND_JOURNAL, SpendJournal, SpendTotals, read_spend, records_spend
from docab.log.store import RunStore, StoreError, manifest_for, resume_notes, session_info, utc_now
from docab.messages import ToolSpec
from docab.models.base import Model, ModelError
from docab.models.cache import shared_cache
from docab.models.completion_adapter import CompletionAdapter
from docab.models.preflight import check_endpoints, describe
from docab.models.provider import USAGE_ALARM, UsageAlarm
from docab.models.registry import build_model
from docab.pricing import PriceBook
from docab.runner.breaker import BreakerSettings, CircuitBreaker
from docab.runner.context import RunContext, Scorer, price_book, server_specs
from docab.runner.dataset import Dataset, Sample, dataset_contents, load_dataset
from docab.runner.failures import ErrorTally, counts_as_error, tally_errors
from docab.runner.inflight import journaled
from docab.runner.progress import ProgressSink, ProgressState, progress_for, totals_per_arm
from docab.runner.schedule import WorkUnit, in_shard, newest_per_key, plan, spread_over_documents
from docab.runner.spend import SpendGuard, SpendStop
from docab.runner.workers import run_units
from docab.tokens import CHARS_PER_TOKEN
from docab.usage import Implausible
from docab_benchmark.mmlongbench.errors import DataError
from docab_benchmark.mmlongbench.extraction import load_prompt

Say = Callable[[str], None]  # where the launcher's notes go (a warning, "resuming; ..."); print by default


@dataclass(frozen=True)
class RunRequest:
    """One invocation: the config and the run controls, which change how much runs and how fast,
    never what a record means (they are not part of the config hash)."""

    config: RunConfig
    results_dir: Path = Path("results")
    run_dir: Path | None = None  # default: results_dir / run id
    limit: int | None = None  # N questions spread over the documents (seeded by the config's seed)
    first: int | None = None  # the first N questions, in dataset order
    concurrency: int | None = None  # default: the config's
    epochs: int | None = None  # default: the config's
    shard: tuple[int, int] | None = None  # (i, N): the questions of shard i of N, 1-based
    quiet: bool = False  # no progress display
    retry_errors: bool = False  # run again the samples whose newest record is an error or timeout
    preflight: bool = True  # check every model endpoint with one cheap request before any sample
    overrides: tuple[str, ...] = ()  # KEY=VALUE changes already applied to ``config``, for the manifest
    wait: bool = False  # when another process writes the run folder: wait for it (else refuse)
    max_cost: float | None = None  # USD the whole run may spend (docab.runner.spend); default: the config's
    accept_data_change: bool = False  # resume though questions or documents the run used differ now

    def __post_init__(self) -> None:
        for name, value in (
            ("limit", self.limit),
            ("first", self.first),
            ("concurrency", self.concurrency),
            ("epochs", self.epochs),
        ):
            if value is not None and value < 1:
                raise RunError(f"{name} must be at least 1, got {value}")
        if self.max_cost is not None and not self.max_cost > 0:
            raise RunError(f"max_cost must be a positive number of US dollars, got {self.max_cost}")
        if self.limit is not None and self.first is not None:
            raise RunError("give limit or first, not both (limit spreads over documents, first does not)")
        if self.shard is not None:
            index, count = self.shard
            if count < 1 or not 1 <= index <= count:
                raise RunError(f"shard must be (i, N) with 1 <= i <= N, got ({index}, {count})")

    @property
    def run_id(self) -> str:
        if self.run_dir is not None:
            return self.run_dir.name
        if self.shard:
            return f"{self.config.name}.shard-{self.shard[0]}-of-{self.shard[1]}"
        return self.config.name

    @property
    def folder(self) -> Path:
        return self.run_dir if self.run_dir is not None else self.results_dir / self.run_id


@dataclass(frozen=True)
class RunOutcome:
    """What a launch leaves: the run folder and the records of this request's share of it."""

    run_dir: Path
    records: list[RunRecord]  # the newest record of every requested sample, earlier ones included
    ran: int  # samples run in this invocation
    skipped: int  # samples already recorded
    retried: int = 0  # of ``ran``: samples run again because their newest record was an error
    spend_stop: SpendStop | None = None  # the spend cap stopped the run before its last sample
    # USD billed for samples that have no record (cut short by a kill, a Ctrl-C, the breaker or
    # the cap; run again by a resume): the spend journal's total less what the records cost.
    unrecorded_usd: float = 0.0
    # Calls a kill interrupted in flight, in any session of the run (journaled as sent, never as
    # returned: docab.log.spend_journal), and the most they can have cost; not in unrecorded_usd.
    interrupted_calls: int = 0
    interrupted_usd: float = 0.0
    # The first call this session whose usage was past any model's (docab.usage.implausible),
    # billed as reported and warned of as it returned; None when every call's was plausible.
    implausible_usage: Implausible | None = None

    def errors(self) -> ErrorTally:
        """The samples that ended in an error or timeout, and why (``docab.runner.failures``)."""
        return tally_errors(self.records)


async def run_async(
    config: RunConfig | str | Path,
    *,
    results_dir: Path | str = "results",
    run_dir: Path | str | None = None,
    limit: int | None = None,
    first: int | None = None,
    concurrency: int | None = None,
    epochs: int | None = None,
    shard: tuple[int, int] | None = None,
    quiet: bool = False,
    retry_errors: bool = False,
    wait: bool = False,
    overrides: Sequence[str] = (),
    max_cost: float | None = None,
    dataset: Dataset | None = None,
    model: Model | None = None,
    scorer: Scorer | None = None,
    progress: ProgressSink | None = None,
    say: Say = print,
) -> RunOutcome:
    """Run (or resume) every arm of ``config`` on its dataset, in the running event loop.

    ``config`` is a :class:`~docab.config.RunConfig`, a TOML file or the name of a shipped config;
    ``overrides`` (``"limits.max_turns=10"``) change it as ``docab run --set`` does. The run goes
    to ``run_dir`` (default ``results_dir/<run name>``); running again with the same config
    resumes it, and ``retry_errors`` runs its errored and timed-out samples again. One process
    writes a run folder at a time: another one's run raises :class:`~docab.log.lock.RunBusy`, or
    is waited for with ``wait``. ``limit``
    spreads that many questions over the documents; ``first`` takes the first ones. ``max_cost``
    (USD; default the config's) stops the run before a sample that would take it over
    (:mod:`docab.runner.spend`; the outcome's ``spend_stop`` says so).
    ``dataset``, ``model``, ``scorer`` and ``progress`` replace what the config would build
    (tests and notebooks inject them). Raises a :class:`~docab.errors.DocabError` (a
    ``ConfigError``, ``DatasetError`` or ``RunError``) when the run cannot start or go on.
    """
    loaded = (
        with_overrides(config, overrides)
        if isinstance(config, RunConfig)
        else load_config(config, overrides=overrides)
    )
    request = RunRequest(
        config=loaded,
        results_dir=Path(results_dir),
        run_dir=Path(run_dir) if run_dir is not None else None,
        limit=limit,
        first=first,
        concurrency=concurrency,
        epochs=epochs,
        shard=shard,
        quiet=quiet,
        retry_errors=retry_errors,
        wait=wait,
        overrides=tuple(str(o) for o in overrides),
        max_cost=max_cost,
    )
    return await launch_async(
        request, dataset=dataset, model=model, scorer=scorer, progress=progress, say=say
    )


def run(
    config: RunConfig | str | Path,
    *,
    results_dir: Path | str = "results",
    run_dir: Path | str | None = None,
    limit: int | None = None,
    first: int | None = None,
    concurrency: int | None = None,
    epochs: int | None = None,
    shard: tuple[int, int] | None = None,
    quiet: bool = False,
    retry_errors: bool = False,
    wait: bool = False,
    overrides: Sequence[str] = (),
    max_cost: float | None = None,
    dataset: Dataset | None = None,
    model: Model | None = None,
    scorer: Scorer | None = None,
    progress: ProgressSink | None = None,
    say: Say = print,
) -> RunOutcome:
    """:func:`run_async` in an event loop of its own, for scripts. Refuses to run inside a running
    loop (a notebook, async code): ``await docab.run_async(...)`` there."""
    _refuse_running_loop("docab.run()", "await docab.run_async(...)")
    return asyncio.run(
        run_async(
            config,
            results_dir=results_dir,
            run_dir=run_dir,
            limit=limit,
            first=first,
            concurrency=concurrency,
            epochs=epochs,
            shard=shard,
            quiet=quiet,
            retry_errors=retry_errors,
            wait=wait,
            overrides=overrides,
            max_cost=max_cost,
            dataset=dataset,
            model=model,
            scorer=scorer,
            progress=progress,
            say=say,
        )
    )


def launch(
    request: RunRequest,
    *,
    dataset: Dataset | None = None,
    model: Model | None = None,
    scorer: Scorer | None = None,
    progress: ProgressSink | None = None,
    store: RunStore | None = None,
    say: Say = print,
) -> RunOutcome:
    """:func:`launch_async` in an event loop of its own (what the CLI calls)."""
    _refuse_running_loop("launch()", "await launch_async(...)")
    return asyncio.run(
        launch_async(
            request, dataset=dataset, model=model, scorer=scorer, progress=progress, store=store, say=say
        )
    )


def _refuse_running_loop(what: str, instead: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return  # no loop running: asyncio.run can start one
    raise RunError(
        f"{what} cannot run inside a running event loop (a notebook, or async code); use {instead} there"
    )


async def launch_async(
    request: RunRequest,
    *,
    dataset: Dataset | None = None,
    model: Model | None = None,
    scorer: Scorer | None = None,
    progress: ProgressSink | None = None,
    store: RunStore | None = None,
    say: Say = print,
) -> RunOutcome:
    """Run ``request`` in the running event loop: the steps in the module docstring."""
    config = request.config
    epochs = request.epochs or config.epochs
    concurrency = request.concurrency or config.concurrency
    if dataset is None:  # the built-in suite is generated and converted on first use: off the loop
        dataset = await asyncio.to_thread(
            load_dataset, config.dataset, results_dir=request.results_dir, base_dir=config.base_dir
        )
    samples = select_samples(
        dataset, limit=request.limit, first=request.first, shard=request.shard, seed=config.seed
    )
    missing = sorted({s.doc_id for s in samples if not (s.document_dir / "document.md").is_file()})
    if missing:
        where = f" in {dataset.corpus.absolute()}" if dataset.corpus else ""
        say(
            f"warning: {len(missing)} document(s) are not converted{where}; their questions will be "
            f"recorded as errors in every arm: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}"
        )

    injected = model is not None
    model = model or build_model(config.model, role="agent")
    extractor = (
        _build_extractor(config, model, dataset.extraction_prompt, injected=injected)
        if config.answer.protocol == "extraction"
        or (config.answer.prose_fallback_after and not model.is_baseline)
        else None
    )
    models = _distinct([model, extractor.model if extractor else None])
    try:
        return await _launch_with_models(
            request,
            config,
            dataset,
            samples,
            models,
            extractor,
            epochs,
            concurrency,
            scorer,
            progress,
            store,
            say,
        )
    finally:
        await _close(models)


async def _launch_with_models(
    request: RunRequest,
    config: RunConfig,
    dataset: Dataset,
    samples: list[Sample],
    models: list[Any],
    extractor: BenchmarkExtractor | None,
    epochs: int,
    concurrency: int,
    scorer: Scorer | None,
    progress: ProgressSink | None,
    store: RunStore | None,
    say: Say,
) -> RunOutcome:
    model = models[0]
    scorer = scorer or default_scorer()
    arms = [arm.name for arm in config.arms]
    store = store or RunStore(request.folder)
    manifest = manifest_for(
        run_id=request.run_id,
        config=config.model_dump(mode="json"),
        config_hash=config.config_hash(),
        dataset=DatasetInfo(source=config.dataset.source, name=dataset.name, version=dataset.version),
        models=_models_info(config, model),
        shard=request.shard,
        contents=await asyncio.to_thread(dataset_contents, samples),
    )
    session = session_info(
        epochs=epochs,
        concurrency=concurrency,
        limit=request.limit,
        first=request.first,
        questions=len(samples),
        overrides=request.overrides,
        retry_errors=request.retry_errors,
        endpoints=endpoints_for(config),
    )
    # Until every check has passed, the run folder is only read: a start that fails (an endpoint
    # down, a bad server command, a config that is not this folder's, another process writing it)
    # leaves it as it was.
    lock = RunLock(request.folder)
    lock.wait_while_busy(wait=request.wait, say=say)  # raises RunBusy naming the holder
    existing = _checked(store, manifest, request)
    wanted = {(arm, s.qid, e) for arm in arms for s in samples for e in range(epochs)}

    def work_left() -> _Work:
        return _work_left(
            store, wanted, samples, arms, epochs, config.seed, retry_errors=request.retry_errors
        )

    work = work_left()
    if not work.todo:
        _take(lock, request, say)
        try:
            return _nothing_to_run(store, manifest, session, request, work_left(), say)
        finally:
            lock.release()
    if work.redo:
        say(f"{request.folder}: running again {len(work.redo)} sample(s) that ended in an error or timeout")
    if work.kept:
        say(f"{request.folder}: resuming; {len(work.kept)} samples already recorded, {work.todo} to run")
    if existing is not None:
        for change in endpoint_changes(last_endpoints(existing), session.endpoints):
            say(f"note: {change} since the run's last session (recorded in the manifest's sessions)")
        for note in resume_notes(existing, manifest, session):
            say(f"note: {note}")
    spend = spend_guard(request, config, price_book(config), store.records())  # raises before any call
    if spend is not None:
        say(f"spend cap: ${spend.cap:.2f} for the whole run; ${spend.spent:.4f} spent so far")
    journal_path = request.folder / SPEND_JOURNAL
    journaled_so_far = read_spend(journal_path) if journal_path.is_file() else None
    if journaled_so_far is not None and journaled_so_far.interrupted:
        counted = "; the spend cap counts each at its most" if spend is not None else ""
        say(f"note: {journaled_so_far.interrupted_note()} (each call's input and max output tokens){counted}")
    if any(m.cache and m.provider != "baseline" for m in (config.model, config.extractor_model)):
        # Opened now, so an unusable folder stops the run before any sample (CacheError is a RunError).
        say(f"response cache: {shared_cache().directory}")
    endpoints = [line for line in map(describe, models) if line]
    if endpoints:
        say("models: " + "; ".join(endpoints))

    if request.preflight:
        try:
            for note in await check_endpoints(models):
                say(f"note: {note}")
        except ModelError as exc:
            raise RunError(
                f"{exc}\n(no sample was run and {request.folder} was left as it was: start the server or "
                "fix [model] base_url, api_key_env or the key, and run again)"
            ) from None
    used = [name for name in config.mcp_servers if any(name in arm.mcp_servers for arm in config.arms)]
    specs = server_specs(config, used)
    try:
        mcp_tools = await preflight(list(specs.values()))
    except MCPStartError as exc:
        raise RunError(
            f"{exc}\n(no sample was run and {request.folder} was left as it was; fix the [mcp_servers] "
            "config and run again)"
        ) from None
    tools = {name: [t.name for t in found] for name, found in mcp_tools.items()}
    arms_info = arms_manifest(config, mcp_tools)  # raises RunError before anything is written

    # Every check passed: hold the folder for the whole run, then create or resume it.
    _take(lock, request, say)
    try:
        work = work_left()  # again, under the lock: another process may have written meanwhile
        if not work.todo:
            return _nothing_to_run(store, manifest, session, request, work, say)
        manifest = _begin(store, manifest, session, request).with_tools(tools, arms_info)
        store.write_manifest(manifest)
        return await _run_work(
            request,
            config,
            model,
            scorer,
            store,
            progress,
            extractor,
            specs,
            lock,
            work,
            wanted,
            epochs,
            concurrency,
            arms,
            len(samples),
            manifest,
            say,
        )
    finally:
        lock.release()


async def _run_work(
    request: RunRequest,
    config: RunConfig,
    model: Any,
    scorer: Scorer,
    store: RunStore,
    progress: ProgressSink | None,
    extractor: BenchmarkExtractor | None,
    specs: dict[str, MCPServerSpec],
    lock: RunLock,
    work: _Work,
    wanted: set[tuple[str, str, int]],
    epochs: int,
    concurrency: int,
    arms: list[str],
    questions: int,
    manifest: Manifest,
    say: Say = print,
) -> RunOutcome:
    written, redo, kept, units, todo = work.written, work.redo, work.kept, work.units, work.todo
    attempts = Counter(r.key for r in written if r.key in redo)
    prices = price_book(config)
    journal = SpendJournal(request.folder / SPEND_JOURNAL)
    try:
        spent = journal.open(records_total(store.records(), prices))
    except OSError as exc:
        raise StoreError(
            f"cannot write the spend journal in {request.folder}: {exc.strerror or exc}"
        ) from None
    spend = spend_guard(request, config, prices, store.records(), spent)  # again, under the folder's lock
    ctx = RunContext(
        run_id=request.run_id,
        config=config,
        model=journaled(model),  # each priced call is journaled before it is sent, too
        scorer=scorer,
        store=store,
        progress=progress or progress_for(request.run_id, quiet=request.quiet),
        extractor=extractor,
        server_specs=specs,
        attempts=dict(attempts),
        on_scratch=lock.add_scratch,
        prices=prices,
        spend=spend,
        spend_journal=journal,
        breaker=breaker_for(config),
    )
    ctx.progress.start(ProgressState.for_run(totals_per_arm(arms, questions, epochs), kept))
    alarm = UsageAlarm(say)  # a call billed more tokens than any model uses: said once, as it returns
    alarm_scope = USAGE_ALARM.set(alarm)  # before the workers start: their tasks inherit it
    try:
        await run_units(ctx, units, concurrency=concurrency)
    except StoreError as exc:
        raise RunError(
            f"{exc}\n(the samples written so far are kept; run again with the same config and folder to resume)"
        ) from None
    finally:
        USAGE_ALARM.reset(alarm_scope)
        journal.close()
        ctx.progress.stop()
        store.write_manifest((store.read_manifest() or manifest).finished(utc_now()))
    every = store.records()
    records = newest_per_key(r for r in every if r.key in wanted)
    billed = read_spend(journal.path) or SpendTotals()
    unrecorded = max(0.0, billed.usd - records_total(every, prices).usd) if billed.journaled else 0.0
    if billed.interrupted:
        say(f"note: {billed.interrupted_note()} (spend.jsonl opened them and never closed them)")
    outcome = RunOutcome(
        request.folder,
        records,
        todo,
        len(kept),
        retried=len(redo),
        unrecorded_usd=unrecorded,
        interrupted_calls=billed.interrupted,
        interrupted_usd=billed.interrupted_usd,
        implausible_usage=alarm.first,
    )
    stop = spend.stop() if spend is not None else None
    if spend is not None and stop is not None:
        stop = dataclasses.replace(stop, not_started=todo - spend.started)
        return dataclasses.replace(outcome, ran=spend.started, spend_stop=stop)
    return outcome


def spend_guard(
    request: RunRequest,
    config: RunConfig,
    prices: PriceBook,
    records: Iterable[RunRecord],
    spent: SpendTotals | None = None,
) -> SpendGuard | None:
    """The run's spend cap (the request's, else the config's), counting what the run spent so far:
    ``spent``, else its spend journal's total, else what its records cost; None without a cap.
    Raises RunError when a model of the run has no known price: its calls would not count, and
    the cap would not hold."""
    journal_path = request.folder / SPEND_JOURNAL
    cap = request.max_cost if request.max_cost is not None else config.max_cost
    if cap is None:
        return None
    models = [config.model] + ([config.extractor_model] if config.answer.protocol == "extraction" else [])
    unknown = [m.name for m in models if not prices.quote(m.name).known]
    if unknown:
        raise RunError(
            f"a spend cap needs the price of every model, and {', '.join(unknown)} has none in docab's "
            "price table: give it one in the config ([model] price = { input = ..., output = ... }, "
            "USD per million tokens)"
        )
    return SpendGuard.from_costs(
        cap, ((r.arm, record_cost(r, prices)) for r in records), spent or read_spend(journal_path)
    )


def records_total(records: Iterable[RunRecord], prices: PriceBook) -> SpendTotals:
    """What the records cost: a spend journal's opening balance on a run begun without one."""
    return records_spend(record_cost(r, prices) for r in records)


def breaker_for(config: RunConfig) -> CircuitBreaker:
    """The run's circuit breaker, from ``[breaker]``."""
    table = config.breaker
    return CircuitBreaker(BreakerSettings(table.enabled, table.failures, table.window_s))


def _take(lock: RunLock, request: RunRequest, say: Say) -> None:
    """Hold the folder's lock; after a run that was killed, say so and remove its workspaces."""
    try:
        verdict = lock.acquire(wait=request.wait, say=say)
    except OSError as exc:  # read-only disk, a file where a folder should be, no permission
        raise StoreError(
            f"cannot create the run folder {request.folder}: {exc.strerror or exc}; "
            "choose a results folder that can be written"
        ) from None
    if verdict.action == "take_over" and verdict.holder is not None:
        removed = remove_scratch(verdict.holder, host=lock.host)
        cleaned = f"; removed its {len(removed)} temporary workspace folder(s)" if removed else ""
        say(
            f"note: {request.folder} was left by a run that stopped ({verdict.holder.describe()}: "
            f"{verdict.why}); taking it over{cleaned}"
        )


def _nothing_to_run(
    store: RunStore, manifest: Manifest, session: Session, request: RunRequest, work: _Work, say: Say
) -> RunOutcome:
    errored = sum(counts_as_error(r) for r in work.recorded)
    how = (
        "an error, a timeout or a failed answer extraction"
        if any(r.extraction_failed for r in work.recorded)
        else "an error or timeout"
    )
    retry = f"; {errored} of them ended in {how}: --retry-errors runs them again" if errored else ""
    begun = _begin(store, manifest, session, request)
    store.write_manifest(begun.finished(utc_now()))
    say(f"{request.folder}: all {len(work.recorded)} samples are already recorded; nothing to run{retry}")
    return RunOutcome(request.folder, work.recorded, 0, len(work.recorded))


@dataclass(frozen=True)
class _Work:
    """What a folder's records leave to do for this request."""

    written: list[RunRecord]  # every record of a wanted sample
    recorded: list[RunRecord]  # the newest of each
    redo: set[tuple[str, str, int]]  # errored samples run again (retry_errors)
    kept: list[RunRecord]
    units: list[WorkUnit]
    todo: int  # samples to run


def _work_left(
    store: RunStore,
    wanted: set[tuple[str, str, int]],
    samples: Sequence[Sample],
    arms: Sequence[str],
    epochs: int,
    seed: int,
    *,
    retry_errors: bool,
) -> _Work:
    written = [r for r in store.records() if r.key in wanted]
    recorded = newest_per_key(written)
    redo = {r.key for r in recorded if counts_as_error(r)} if retry_errors else set()
    kept = [r for r in recorded if r.key not in redo]
    units = plan(samples, arms, epochs=epochs, seed=seed, done={r.key for r in kept})
    return _Work(written, recorded, redo, kept, units, sum(len(u.arms) for u in units))


def _checked(store: RunStore, manifest: Manifest, request: RunRequest) -> Manifest | None:
    """``store.check`` with the hint an override needs (reads only)."""
    try:
        return store.check(manifest, accept_data_change=request.accept_data_change)
    except StoreError as exc:
        raise _with_override_hint(exc, request) from None


def _begin(store: RunStore, manifest: Manifest, session: Session, request: RunRequest) -> Manifest:
    try:
        return store.begin(  # raises StoreError (a RunError)
            manifest, session=session, accept_data_change=request.accept_data_change
        )
    except StoreError as exc:
        raise _with_override_hint(exc, request) from None


def _with_override_hint(exc: StoreError, request: RunRequest) -> StoreError:
    if request.overrides and "different config" in str(exc):
        return StoreError(
            f"{exc} (the overrides {' '.join(request.overrides)} are part of the config: "
            "name the run with --set name=... or --out)"
        )
    return exc


def endpoints_for(config: RunConfig) -> tuple[EndpointInfo, ...]:
    """Where each model role's calls go (the offline baseline calls none): transport, recorded per
    session, not part of the run's identity."""
    roles = [("agent", config.model)]
    if config.answer.protocol == "extraction":
        roles.append(("extractor", config.extractor_model))
    return tuple(
        EndpointInfo(
            role=role,
            model=model.name,
            base_url=model.base_url,
            key_env=model.key_variable,
            headers=tuple(sorted(model.headers)),
        )
        for role, model in roles
        if model.provider != "baseline"
    )


def last_endpoints(manifest: Manifest) -> tuple[EndpointInfo, ...]:
    """The endpoints of a run's latest session that recorded them; for a run written before
    sessions did, those of the config it stores."""
    for session in reversed(manifest.sessions):
        if session.endpoints:
            return session.endpoints
    found = []
    for role, table in (("agent", manifest.models.config), ("extractor", manifest.models.extractor_config)):
        if table and not manifest.models.is_baseline:
            found.append(
                EndpointInfo(
                    role=role,
                    model=str(table.get("name", "")),
                    base_url=table.get("base_url"),
                    key_env=str(table.get("api_key_env") or ""),
                )
            )
    return tuple(found)


def endpoint_changes(before: Sequence[EndpointInfo], now: Sequence[EndpointInfo]) -> list[str]:
    """One line per role whose URL or key variable changed (pure)."""
    was = {e.role: e for e in before}
    lines = []
    for endpoint in now:
        old = was.get(endpoint.role)
        if old is None:
            continue
        if old.base_url != endpoint.base_url:
            lines.append(
                f"the {endpoint.role} endpoint moved from {old.base_url or 'the default URL'} to "
                f"{endpoint.base_url or 'the default URL'}"
            )
        if old.key_env and endpoint.key_env and old.key_env != endpoint.key_env:
            lines.append(
                f"the {endpoint.role} key is read from ${endpoint.key_env}, no longer ${old.key_env}"
            )
    return lines


def _distinct(models: Iterable[Any]) -> list[Any]:
    """The models once each (the extractor may be the agent's model), the agent first."""
    return list({id(m): m for m in models if m is not None}.values())


async def _close(models: Sequence[Any]) -> None:
    """Close the models' HTTP clients in this event loop (``run_units`` closes them after a run;
    closing a closed client does nothing)."""
    for model in models:
        closing = getattr(model, "aclose", None)
        if closing is not None:
            await closing()


def select_samples(
    dataset: Dataset,
    *,
    limit: int | None,
    shard: tuple[int, int] | None,
    first: int | None = None,
    seed: int = 0,
) -> list[Sample]:
    """The questions this invocation runs: ``limit`` spread over the documents (seeded; see
    :func:`docab.runner.schedule.spread_over_documents`) or the ``first`` ones, then those of ``shard``."""
    samples = list(dataset.samples)
    duplicates = [qid for qid, n in Counter(s.qid for s in samples).items() if n > 1]
    if duplicates:
        raise DatasetError(f"the dataset repeats question ids: {', '.join(duplicates[:5])}")
    if limit is not None:
        samples = spread_over_documents(samples, limit, seed)
    if first is not None:
        samples = samples[:first]
    samples = in_shard(samples, shard)
    if not samples:
        raise DatasetError("no questions to run (check the dataset filters, the limit and the shard)")
    return samples


def default_scorer() -> Scorer:
    try:
        from docab_benchmark.mmlongbench.scoring import score_answer
    except ImportError:
        raise RunError(
            "the benchmark's scorer (docab_benchmark.mmlongbench.scoring) is not available"
        ) from None
    return score_answer


async def preflight(
    specs: Sequence[MCPServerSpec], scratch_parent: Path | None = None
) -> dict[str, list[ToolSpec]]:
    """Start each MCP server once in a scratch workspace, so a bad command fails before the run.

    Returns the tools each server offers (for the manifest); raises MCPStartError.
    """
    found: dict[str, list[ToolSpec]] = {}
    if not specs:
        return found
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


def _build_extractor(
    config: RunConfig, model: Model, prompt_file: Path | None, *, injected: bool = False
) -> BenchmarkExtractor:
    """The answer extractor: its own model, built for the extractor's endpoint (the run's unless it
    has one of its own: ``RunConfig.extractor_model``). Without an extractor of its own, an
    injected model (a test double) extracts too; a configured one gets a client of its own, which
    names the extractor in its errors."""
    if config.answer.extractor is None and (injected or model.is_baseline):
        extractor_model = model
    else:
        extractor_model = build_model(config.extractor_model, role="extractor")
    if extractor_model.is_baseline:
        raise RunError(
            "the extraction protocol needs an LLM to extract answers; set answer.extractor "
            '(e.g. { name = "openai/gpt-4o" }) or use protocol = "submit_tool"'
        )
    try:
        prompt = load_prompt(prompt_file)  # once, so an unreadable file stops the run before it starts
    except DataError as exc:
        raise DatasetError(str(exc)) from None
    # Its calls are journaled before they are sent (docab.runner.inflight); ``model`` is closed.
    adapter = CompletionAdapter(journaled(extractor_model))
    return BenchmarkExtractor(adapter, model=extractor_model, prompt=prompt)


def _models_info(config: RunConfig, model: Model) -> ModelsInfo:
    extraction = config.answer.protocol == "extraction"
    return ModelsInfo(
        agent=model.name,
        is_baseline=bool(model.is_baseline),
        config=config.model.to_dict(),
        extractor=config.extractor_model.name if extraction else None,
        extractor_config=config.extractor_model.to_dict() if extraction else None,
    )


def arms_manifest(config: RunConfig, mcp_tools: Mapping[str, Sequence[ToolSpec]]) -> list[ArmManifest]:
    """Each arm as the report reads it, with what its tool definitions cost on every model call.

    The cost is estimated from the JSON of the tool specs (characters / 4), the same for every
    provider; the exact per-turn overhead depends on the provider's tokenizer and format. Raises
    RunError for an arm whose tools share a name (every sample of it would fail).
    """
    arms = []
    for arm in config.arms:
        specs: list[ToolSpec] = [t.spec for t in FILESYSTEM_TOOLS] if "fs" in arm.tools else []
        for server in arm.mcp_servers:
            specs.extend(mcp_tools.get(server, []))
        if config.answer.protocol == "submit_tool":
            specs.append(SUBMIT_TOOL)
        names = [s.name for s in specs]
        clashes = sorted({n for n in names if names.count(n) > 1})
        if clashes:  # every sample of the arm would fail: say so once, before any runs
            raise RunError(
                f"arm {arm.name!r} has more than one tool named {', '.join(map(repr, clashes))} "
                "(from its MCP servers, the filesystem tools or the answer tool); tool names must be "
                "unique in an arm: drop a server from the arm or rename its tool"
            )
        chars = len(
            json.dumps(
                [{"name": s.name, "description": s.description, "parameters": s.input_schema} for s in specs]
            )
        )
        arms.append(
            ArmManifest(
                name=arm.name,
                tools=tuple(arm.tools),
                mcp_servers=tuple(arm.mcp_servers),
                prompt=arm.prompt,
                tool_names=tuple(names),
                tool_definition_chars=chars,
                tool_definition_tokens=math.ceil(chars / CHARS_PER_TOKEN),
            )
        )
    return arms
