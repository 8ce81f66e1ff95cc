"""What the workers of a run share (:class:`RunContext`) and what each one owns (:class:`Worker`).

The context turns the config's sections into the agent's objects once per run (the output budget,
the MCP server specs, each arm's system prompt) and keeps what samples share: the converted
documents' page maps, the MCP servers' stderr logs, and the per-sample servers still stopping. A
worker owns one workspace root, its filesystem tools (built once: the root never changes) and the
sessions of MCP servers declared ``scope = "worker"``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from docab.agent.answer import AnswerExtractor, protocol_instructions
from docab.agent.budget import OutputBudget
from docab.agent.evidence import PageMap
from docab.agent.toolbox.base import Tool
from docab.agent.toolbox.filesystem import filesystem_tools
from docab.agent.toolbox.mcp_session import MCPServerSpec, MCPSession
from docab.config import ArmConfig, BudgetConfig, MCPServerConfig, RunConfig
from docab.log.spend_journal import SpendJournal
from docab.log.store import RunStore
from docab.models.base import Model
from docab.pricing import PriceBook
from docab.runner.breaker import CircuitBreaker
from docab.runner.progress import ProgressSink
from docab.runner.spend import SpendGuard
from docab.runner.workspace import DocumentPool, WorkspaceSlot
from docab.tokens import image_rule_for

Scorer = Callable[[str, str, str], float]  # (gold, prediction, answer_format) -> score in [0, 1]


def server_spec(name: str, config: MCPServerConfig) -> MCPServerSpec:
    """How the agent's toolbox starts the server configured under ``[mcp_servers.NAME]``."""
    return MCPServerSpec(
        name=name,
        command=config.command,
        args=tuple(config.args),
        env=dict(config.env),
        scope=config.scope,
        tools=tuple(config.tools) if config.tools is not None else None,
        startup_timeout_s=config.startup_timeout_s,
        call_timeout_s=config.call_timeout_s,
        max_restarts=config.max_restarts,
    )


def server_specs(config: RunConfig, names: Iterable[str] | None = None) -> dict[str, MCPServerSpec]:
    """The specs of the servers ``names`` (default: every server the config defines)."""
    wanted = config.mcp_servers if names is None else names
    return {name: server_spec(name, config.mcp_servers[name]) for name in wanted}


def price_book(config: RunConfig) -> PriceBook:
    """The run's prices: its agent's and extractor's ``price`` (or 0 for an offline policy or a
    local server), then the shipped table."""
    models = [config.model]
    if config.answer.protocol == "extraction":
        models.append(config.extractor_model)
    return PriceBook.for_models(models)


def output_budget(config: BudgetConfig, provider: str = "") -> OutputBudget:
    """The run's budget; images cost what the model's provider documents (one rule for every arm)."""
    return OutputBudget(
        limit=config.limit,
        unit=config.unit,
        image_cost=config.image_cost,
        image_rule=image_rule_for(provider),
    )


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
    # Told each temporary folder the run makes (the run folder's lock records them, so a start
    # after a kill removes them).
    on_scratch: Callable[[Path], None] | None = None
    server_specs: dict[str, MCPServerSpec] = field(default_factory=dict)
    page_maps: dict[Path, PageMap] = field(default_factory=dict)  # per document, shared by workers
    # Samples run again (--retry-errors): how many records each already has. A retry's transcript
    # goes to a file of its own, so the errored attempt's transcript is kept.
    attempts: dict[tuple[str, str, int], int] = field(default_factory=dict)
    # What the run's calls cost (docab.pricing); default: the config's models' prices and the table.
    prices: PriceBook | None = None
    # The spend cap's book-keeping (docab.runner.spend), when the run has one.
    spend: SpendGuard | None = None
    # Where every billed call is written as it returns (docab.log.spend_journal); None: nowhere.
    spend_journal: SpendJournal | None = None
    # Watches every model call and stops the run when the endpoint is gone (docab.runner.breaker);
    # None: never stops (library callers that drive samples themselves).
    breaker: CircuitBreaker | None = None
    clock: Callable[[], float] = time.monotonic
    budget: OutputBudget = field(init=False)
    _logs: dict[str, TextIO] = field(default_factory=dict)
    _closing: set[asyncio.Task[None]] = field(default_factory=set)

    def __post_init__(self) -> None:
        if not self.server_specs:
            self.server_specs = server_specs(self.config)
        if self.config.answer.protocol == "extraction" and self.extractor is None:
            raise ValueError("the extraction protocol needs an answer extractor")
        self.budget = output_budget(self.config.output_budget, self.config.model.provider)
        if self.prices is None:
            self.prices = price_book(self.config)

    def system_prompt(self, arm: ArmConfig) -> str:
        return self.config.system_prompt(arm, protocol_instructions(self.config.answer.protocol))

    def errlog(self, server: str) -> TextIO:
        if server not in self._logs:
            self._logs[server] = self.store.log_file(f"mcp-{server}.stderr.log")
        return self._logs[server]

    def close_later(self, session: MCPSession) -> None:
        """Stop a per-sample server in the background (it takes the SDK about half a second);
        :func:`docab.runner.workers.run_units` waits for every one before it returns."""
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


class Worker:
    """One of the run's ``concurrency`` workers: a workspace root and what lives as long as it."""

    def __init__(self, ctx: RunContext, index: int, root: Path, pool: DocumentPool) -> None:
        self.ctx = ctx
        self.index = index
        self.root = root
        self.slot = WorkspaceSlot(root, pool)
        self._fs_tools: list[Tool] = []
        self.sessions: dict[str, MCPSession] = {}  # worker-scoped servers, by name

    @property
    def fs_tools(self) -> list[Tool]:
        """The filesystem tools over this worker's root, built on first use."""
        if not self._fs_tools:
            self._fs_tools = filesystem_tools(self.root)
        return self._fs_tools

    async def session(self, spec: MCPServerSpec) -> MCPSession:
        """The worker's session of a worker-scoped server, started (or restarted) for a new sample."""
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
