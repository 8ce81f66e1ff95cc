"""From a config to a finished (or resumed) run folder: what ``docab run`` and ``docab demo`` do.

1. load the questions and their converted documents; apply ``--limit`` then ``--shard``;
2. open ``results/<run-id>/`` (creating the manifest, or checking it matches this config);
3. plan the work units still to do (records already written are skipped: resume);
4. check that every MCP server starts (before spending anything on the model);
5. run the units and print progress; records are flushed as samples finish.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docab.agent.messages import ToolSpec
from docab.agent.toolbox.mcp_session import MCPStartError
from docab.config import RunConfig
from docab.errors import RunError
from docab.log.records import RunRecord
from docab.log.store import RunStore, StoreError, manifest_for, session_info, utc_now
from docab.models.base import Model
from docab.runner.dataset import Dataset, load_dataset
from docab.runner.progress import ProgressSink, ProgressState, progress_for, totals_per_arm
from docab.runner.sample import RunContext, Scorer, preflight, run_units
from docab.runner.schedule import in_shard, plan

if TYPE_CHECKING:
    from docab.models.config import ModelConfig


@dataclass(frozen=True)
class RunRequest:
    config: RunConfig
    results_dir: Path = Path("results")
    run_dir: Path | None = None  # default: results_dir / run id
    limit: int | None = None
    concurrency: int | None = None
    epochs: int | None = None
    shard: tuple[int, int] | None = None
    quiet: bool = False

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
    run_dir: Path
    records: list[RunRecord]
    ran: int  # samples run in this invocation
    skipped: int  # samples already recorded


def default_scorer() -> Scorer:
    try:
        from docab_benchmark.mmlongbench.scoring import score_answer
    except ImportError:
        raise RunError(
            "the benchmark's scorer (docab_benchmark.mmlongbench.scoring) is not available"
        ) from None
    return score_answer


def launch(
    request: RunRequest,
    *,
    dataset: Dataset | None = None,
    model: Model | None = None,
    scorer: Scorer | None = None,
    progress: ProgressSink | None = None,
    store: RunStore | None = None,
    say: Callable[[str], None] = print,
) -> RunOutcome:
    config = request.config
    epochs = request.epochs or config.epochs
    concurrency = request.concurrency or config.concurrency
    if epochs < 1 or concurrency < 1:
        raise RunError("--epochs and --concurrency must be at least 1")
    dataset = dataset or load_dataset(config.dataset, results_dir=request.results_dir)
    samples = list(dataset.samples)
    duplicates = [qid for qid, n in Counter(s.qid for s in samples).items() if n > 1]
    if duplicates:
        raise RunError(f"the dataset repeats question ids: {', '.join(duplicates[:5])}")
    if request.limit is not None:
        if request.limit < 1:
            raise RunError("--limit must be at least 1")
        samples = samples[: request.limit]
    samples = in_shard(samples, request.shard)
    if not samples:
        raise RunError("no questions to run (check the dataset filters, --limit and --shard)")
    missing = sorted({s.doc_id for s in samples if not (s.document_dir / "document.md").is_file()})
    if missing:
        say(
            f"warning: {len(missing)} document(s) are not converted; their questions will be recorded as "
            f"errors in every arm: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}"
        )

    model = model or _build_model(config.model_spec())
    extractor = (
        _build_extractor(config, model, dataset.extraction_prompt)
        if config.answer.protocol == "extraction"
        else None
    )
    scorer = scorer or default_scorer()
    arms = [arm.name for arm in config.arms]
    store = store or RunStore(request.folder)
    manifest = manifest_for(
        run_id=request.run_id,
        config=config.model_dump(mode="json"),
        config_hash=config.config_hash(),
        dataset={"source": config.dataset.source, "name": dataset.name, "version": dataset.version},
        models=_model_ids(config, model),
        shard=request.shard,
    )
    session = session_info()
    session.update(
        {"epochs": epochs, "concurrency": concurrency, "limit": request.limit, "questions": len(samples)}
    )
    try:
        manifest = store.begin(manifest, session=session)
    except StoreError as exc:
        raise RunError(str(exc)) from None
    earlier = store.records()
    wanted = {(arm, s.qid, e) for arm in arms for s in samples for e in range(epochs)}
    earlier = [r for r in earlier if r.key in wanted]
    units = plan(samples, arms, epochs=epochs, seed=config.seed, done={r.key for r in earlier})
    todo = sum(len(u.arms) for u in units)
    if not todo:
        say(f"{request.folder}: all {len(earlier)} samples are already recorded; nothing to run")
        return RunOutcome(request.folder, earlier, 0, len(earlier))
    if earlier:
        say(f"{request.folder}: resuming; {len(earlier)} samples already recorded, {todo} to run")

    used = [name for name in config.mcp_servers if any(name in arm.mcp_servers for arm in config.arms)]
    specs = {name: config.mcp_servers[name].to_spec(name) for name in used}
    mcp_tools: dict[str, list[ToolSpec]] = {}
    if specs:
        try:
            mcp_tools = asyncio.run(preflight(list(specs.values())))
        except MCPStartError as exc:
            raise RunError(f"{exc}\n(no sample was run; fix the [mcp_servers] config and re-run)") from None
        manifest["mcp_servers"] = {name: [t.name for t in tools] for name, tools in mcp_tools.items()}
    manifest["arms"] = arms_manifest(config, mcp_tools)
    store.write_manifest(manifest)

    ctx = RunContext(
        run_id=request.run_id,
        config=config,
        model=model,
        scorer=scorer,
        store=store,
        progress=progress or progress_for(request.run_id, quiet=request.quiet),
        extractor=extractor,
        server_specs=specs,
    )
    ctx.progress.start(ProgressState.for_run(totals_per_arm(arms, len(samples), epochs), earlier))
    try:
        asyncio.run(run_units(ctx, units, concurrency=concurrency))
    except StoreError as exc:
        raise RunError(
            f"{exc}\n(the samples written so far are kept; re-run the same command to resume)"
        ) from None
    finally:
        ctx.progress.stop()
        manifest = store.read_manifest() or manifest
        manifest["sessions"][-1]["finished_at"] = utc_now()
        manifest["updated_at"] = utc_now()
        store.write_manifest(manifest)
    records = [r for r in store.records() if r.key in wanted]
    return RunOutcome(request.folder, records, todo, len(earlier))


def _build_model(spec: ModelConfig) -> Model:
    from docab.models.config import ModelConfigError
    from docab.models.registry import build_model

    try:
        return build_model(spec)
    except ModelConfigError as exc:
        raise RunError(str(exc)) from None


def _build_extractor(config: RunConfig, model: Model, prompt_file: Path | None) -> Any:
    from docab.agent.answer import BenchmarkExtractor
    from docab.models.completion_adapter import CompletionAdapter

    extractor_model = _build_model(config.extractor_spec()) if config.answer.extractor else model
    if extractor_model.is_baseline:
        raise RunError(
            "the extraction protocol needs an LLM to extract answers; set answer.extractor "
            '(e.g. { name = "openai/gpt-4o" }) or use protocol = "submit_tool"'
        )
    from docab_benchmark.mmlongbench.errors import DataError
    from docab_benchmark.mmlongbench.extraction import load_prompt

    try:
        prompt = load_prompt(prompt_file)  # once, so an unreadable file stops the run before it starts
    except DataError as exc:
        raise RunError(str(exc)) from None
    return BenchmarkExtractor(CompletionAdapter(extractor_model), model=extractor_model, prompt=prompt)


def _model_ids(config: RunConfig, model: Model) -> dict[str, Any]:
    ids: dict[str, Any] = {
        "agent": model.name,
        "is_baseline": bool(model.is_baseline),
        "config": config.model_spec().to_dict(),
    }
    if config.answer.protocol == "extraction":
        ids["extractor"] = config.extractor_spec().name
    return ids


def arms_manifest(config: RunConfig, mcp_tools: dict[str, list[ToolSpec]]) -> list[dict[str, Any]]:
    """Each arm as the report reads it, with what its tool definitions cost on every model call.

    The cost is estimated from the JSON of the tool specs (characters / 4), the same for every
    provider; the exact per-turn overhead depends on the provider's tokenizer and format.
    """
    from docab.agent.answer import SUBMIT_TOOL
    from docab.agent.budget import CHARS_PER_TOKEN
    from docab.agent.toolbox.filesystem import FILESYSTEM_TOOLS

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
            {
                "name": arm.name,
                "tools": list(arm.tools),
                "mcp_servers": list(arm.mcp_servers),
                "prompt": arm.prompt,
                "tool_names": [s.name for s in specs],
                "tool_definition_chars": chars,
                "tool_definition_tokens": math.ceil(chars / CHARS_PER_TOKEN),
            }
        )
    return arms
