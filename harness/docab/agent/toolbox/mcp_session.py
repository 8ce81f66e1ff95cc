"""MCP servers as tools: real subprocesses over stdio, through the official ``mcp`` client.

A server is described by an :class:`MCPServerSpec` (command, args, env, with placeholders such as
``{workspace}``) and run by an :class:`MCPSession`:

- started once per sample (``scope = "sample"``), or once per worker and reused across the
  samples that worker runs (``scope = "worker"``, for servers that keep no state between calls;
  the worker's workspace path stays the same, only its content changes);
- health-checked at start: the session is ready only once ``list_tools`` answered;
- restarted when it crashes (the connection closes) or hangs (a call times out); the event is
  kept in :attr:`MCPSession.events` for the sample's record, and the model gets an error result
  saying what happened, so it can retry;
- its results converted to the harness's neutral :class:`ToolResult` (text and image blocks,
  ``is_error``, and the result's ``_meta`` — where tools report the tokens they spent).

Opening and closing a session must happen in the same asyncio task (the SDK holds an anyio task
group): the runner's worker does both.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from docab.messages import Block, Image, Text, ToolResult, ToolSpec

SessionScope = Literal["sample", "worker"]
CLOSE_TIMEOUT_S = 10.0  # the SDK's own shutdown escalates to SIGKILL within about 6 s
_PLACEHOLDER = re.compile(r"\{(workspace|python|cwd|env:[A-Za-z_][A-Za-z0-9_]*)\}")


class MCPStartError(Exception):
    """A server could not be started or did not pass its health check; the message says why."""


@dataclass(frozen=True)
class MCPServerSpec:
    """How to start one MCP server. Placeholders in ``command``, ``args`` and ``env`` values:
    ``{workspace}`` (the sample's workspace root), ``{python}`` (this Python interpreter), ``{cwd}``
    (the directory the harness was started from) and ``{env:NAME}`` (an environment variable of
    the harness, e.g. an API key). The server runs with the workspace as its working directory,
    so relative paths the model passes resolve inside the workspace."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    scope: SessionScope = "sample"
    tools: tuple[str, ...] | None = None  # expose only these tools (None: all the server lists)
    startup_timeout_s: float = 60.0
    call_timeout_s: float = 120.0
    max_restarts: int = 3  # per sample; after that the server's tools answer with an error

    def render(
        self, workspace: Path | str, environ: Mapping[str, str] | None = None
    ) -> tuple[str, list[str], dict[str, str]]:
        """Command, args and env with placeholders filled in; ``KeyError``-free: raises MCPStartError."""
        environ = os.environ if environ is None else environ

        def fill(text: str) -> str:
            def one(match: re.Match[str]) -> str:
                key = match.group(1)
                if key == "workspace":
                    return str(workspace)
                if key == "python":
                    return sys.executable
                if key == "cwd":
                    return os.getcwd()
                var = key.removeprefix("env:")
                if var not in environ:
                    raise MCPStartError(
                        f"MCP server {self.name!r} needs the environment variable {var} "
                        f"(its config uses {{env:{var}}}); set it before the run"
                    )
                return environ[var]

            return _PLACEHOLDER.sub(one, text)

        return (
            _locate(fill(self.command)),
            [fill(a) for a in self.args],
            {k: fill(v) for k, v in self.env.items()},
        )


def _locate(command: str) -> str:
    """A bare command name found on PATH, or else beside this Python (the servers' console scripts
    are installed in the same environment as docab, which may not be on PATH: ``.venv/bin/docab``)."""
    if os.sep in command or shutil.which(command):
        return command
    return shutil.which(command, path=os.path.dirname(sys.executable)) or command


def convert_result(result: Any) -> ToolResult:
    """An MCP ``CallToolResult`` as a neutral ToolResult (content order kept)."""
    blocks: list[Block] = []
    for item in result.content or ():
        kind = getattr(item, "type", None)
        if kind == "text":
            blocks.append(Text(item.text))
        elif kind == "image":
            try:
                blocks.append(Image(base64.b64decode(item.data, validate=True), item.mime_type))
            except (binascii.Error, ValueError):
                blocks.append(Text(f"[an image ({item.mime_type}) the tool sent could not be decoded]"))
        elif kind == "resource":
            resource = item.resource
            text = getattr(resource, "text", None)
            if text is not None:
                blocks.append(Text(text))
            else:
                mime = getattr(resource, "mime_type", None) or ""
                blob = getattr(resource, "blob", "")
                if mime.startswith("image/"):
                    try:
                        blocks.append(Image(base64.b64decode(blob, validate=True), mime))
                        continue
                    except (binascii.Error, ValueError):
                        pass
                blocks.append(Text(f"[binary resource {resource.uri} ({mime or 'unknown type'}) not shown]"))
        elif kind == "resource_link":
            blocks.append(Text(f"[resource link: {item.uri}]"))
        else:
            blocks.append(Text(f"[{kind or 'unknown'} content not shown]"))
    if not blocks and getattr(result, "structured_content", None) is not None:
        blocks.append(Text(json.dumps(result.structured_content, ensure_ascii=False)))
    meta = dict(getattr(result, "meta", None) or {})
    return ToolResult(blocks=tuple(blocks), is_error=bool(result.is_error), meta=meta)


class MCPTool:
    """One tool of a running session, behind the harness Tool protocol."""

    def __init__(self, session: MCPSession, spec: ToolSpec) -> None:
        self.session = session
        self.spec = spec

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        return await self.session.call(self.spec.name, arguments)


class MCPSession:
    """A server process and its client session, restarted on crash; see the module docstring."""

    def __init__(self, spec: MCPServerSpec, workspace: Path | str, *, errlog: TextIO | None = None) -> None:
        self.spec = spec
        self.workspace = Path(workspace)
        self._errlog = errlog
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._tool_names: tuple[str, ...] = ()
        self.tools: list[MCPTool] = []
        self.events: list[str] = []  # crashes and restarts, taken by the runner into the sample's errors
        self.restarts = 0  # since the last ``begin_sample``
        self.startup_s = 0.0

    @property
    def running(self) -> bool:
        return self._client is not None

    async def start(self) -> None:
        """Start the server and check it answers ``list_tools``; raises MCPStartError."""
        command, args, env = self.spec.render(self.workspace)
        ready: asyncio.Future[tuple[Any, Any]] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        owner = asyncio.create_task(self._own(command, args, env, ready, stop), name=f"mcp:{self.spec.name}")
        started = time.perf_counter()
        try:
            client, listed = await asyncio.wait_for(asyncio.shield(ready), self.spec.startup_timeout_s)
        except TimeoutError:
            await _stop_owner(owner, stop, started=False)
            raise MCPStartError(
                f"MCP server {self.spec.name!r} ({command}) did not answer within "
                f"{self.spec.startup_timeout_s:g} s of starting"
            ) from None
        except FileNotFoundError:
            await _stop_owner(owner, stop, started=False)
            raise MCPStartError(
                f"could not start MCP server {self.spec.name!r}: the command {command!r} was not found "
                "(is the package that provides it installed in this environment?)"
            ) from None
        except Exception as exc:
            await _stop_owner(owner, stop, started=False)
            raise MCPStartError(
                f"MCP server {self.spec.name!r} ({command} {' '.join(args)}) failed to start: {_describe(exc)}"
            ) from None
        self.startup_s = time.perf_counter() - started
        specs = [
            ToolSpec(name=t.name, description=t.description or "", input_schema=dict(t.input_schema or {}))
            for t in listed.tools
            if self.spec.tools is None or t.name in self.spec.tools
        ]
        if self.spec.tools is not None:
            missing = sorted(set(self.spec.tools) - {s.name for s in specs})
            if missing:
                await _stop_owner(owner, stop)
                raise MCPStartError(
                    f"MCP server {self.spec.name!r} does not offer the tool(s) {', '.join(missing)} named in "
                    f"its config; it offers: {', '.join(t.name for t in listed.tools) or 'none'}"
                )
        names = tuple(s.name for s in specs)
        if self.tools and names != self._tool_names:
            self.events.append(
                f"{self.spec.name}: the restarted server lists different tools: {', '.join(names)}"
            )
        self._client, self._owner, self._stop = client, owner, stop
        self._tool_names = names
        if not self.tools:
            self.tools = [MCPTool(self, s) for s in specs]

    async def _own(
        self,
        command: str,
        args: list[str],
        env: dict[str, str],
        ready: asyncio.Future[tuple[Any, Any]],
        stop: asyncio.Event,
    ) -> None:
        """The task that owns the client for its whole life.

        The SDK's client holds an anyio task group, which must be entered and exited by one task
        and cannot sit inside a timeout scope that ends first; so one task opens it, signals
        ``ready`` and waits for ``stop``, while callers in any task send requests through it.
        """
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=command, args=args, env=env, cwd=str(self.workspace))
        errlog = self._errlog if self._errlog is not None else sys.stderr
        try:
            transport = stdio_client(params, errlog=errlog)
            async with Client(transport, read_timeout_seconds=self.spec.call_timeout_s) as client:
                listed = await client.list_tools()
                ready.set_result((client, listed))
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            # After start, a failure here is the transport closing on a dead server: callers saw it.

    async def close(self) -> None:
        owner, stop = self._owner, self._stop
        self._client = self._owner = self._stop = None
        if owner is not None and stop is not None:
            await _stop_owner(owner, stop)

    def begin_sample(self) -> None:
        """Reset the per-sample restart count and events (for worker-scoped sessions)."""
        self.restarts = 0
        self.events = []

    async def _restart(self, why: str) -> bool:
        await self.close()
        if self.restarts >= self.spec.max_restarts:
            self.events.append(
                f"{self.spec.name}: {why}; not restarted (limit of {self.spec.max_restarts} restarts)"
            )
            return False
        self.restarts += 1
        try:
            await self.start()
        except MCPStartError as exc:
            self.events.append(f"{self.spec.name}: {why}; restart {self.restarts} failed: {exc}")
            return False
        self.events.append(f"{self.spec.name}: {why}; restarted (restart {self.restarts})")
        return True

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        if self._client is None and not await self._restart("the server was not running"):
            return ToolResult.error(f"the {self.spec.name} tool server is unavailable; use other tools")
        try:
            result = await self._client.call_tool(name, arguments)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                why = f"the server crashed during {name}"
            elif exc.code == REQUEST_TIMEOUT:
                why = f"{name} did not answer within {self.spec.call_timeout_s:g} s"
            else:
                return ToolResult.error(f"{name} failed: {exc.message}")
            restarted = await self._restart(why)
            state = "it has been restarted: you may retry" if restarted else "it is no longer available"
            return ToolResult.error(f"{why}; {state}")
        except Exception as exc:  # a transport failure not mapped to an MCPError
            why = f"the connection to the server failed during {name} ({_describe(exc)})"
            restarted = await self._restart(why)
            state = "it has been restarted: you may retry" if restarted else "it is no longer available"
            return ToolResult.error(f"{why}; {state}")
        return convert_result(result)

    async def __aenter__(self) -> MCPSession:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def _stop_owner(owner: asyncio.Task[None], stop: asyncio.Event, *, started: bool = True) -> None:
    """Let the owner task close the client (the SDK stops the process, bounded); cancel if stuck.

    A server that never finished starting is not waiting on ``stop``: cancel it at once (the
    SDK's shutdown runs shielded and still stops the process)."""
    stop.set()
    if not started:
        owner.cancel()
    done, _ = await asyncio.wait({owner}, timeout=CLOSE_TIMEOUT_S)
    if not done:
        owner.cancel()
        await asyncio.wait({owner}, timeout=CLOSE_TIMEOUT_S)
    if owner.done() and not owner.cancelled():
        owner.exception()  # retrieved so asyncio does not log it; the owner reported what mattered


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def start_sessions(
    specs: Sequence[MCPServerSpec], workspace: Path | str, *, errlog: TextIO | None = None
) -> list[MCPSession]:
    """Start several servers in order; on failure close those already started and re-raise."""
    sessions: list[MCPSession] = []
    try:
        for spec in specs:
            session = MCPSession(spec, workspace, errlog=errlog)
            await session.start()
            sessions.append(session)
    except BaseException:
        for session in reversed(sessions):
            await session.close()
        raise
    return sessions
