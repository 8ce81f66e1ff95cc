"""One MCP client session over stdio, kept open across tests, with synchronous calls.

Spawning a server per test costs a second or more; a module's tests that only need the same
server share one session. The SDK's client runs on an event loop in a background thread; each
call is sent to it and waited for. The server's stderr goes to a file, so that tests can check
that nothing was written there.

    with StdioSession(StdioServerParameters(command="md-vision", args=[...])) as session:
        result = session.call("index_md", {"uri": "."})
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, Implementation, Tool

_T = TypeVar("_T")


class StdioSession:
    def __init__(self, params: StdioServerParameters, *, timeout: float = 60.0) -> None:
        self.params = params
        self.timeout = timeout
        self._stderr = tempfile.NamedTemporaryFile("w+", prefix="mcp-stderr-", suffix=".log", delete=False)  # noqa: SIM115
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._closing: asyncio.Event | None = None
        self._client: Client | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="mcp-stdio-session", daemon=True)

    def __enter__(self) -> StdioSession:
        self._thread.start()
        self._ready.wait(self.timeout)
        if self._failure is not None:
            raise RuntimeError(f"the server did not start: {self._failure!r}; stderr: {self.stderr()}")
        if self._client is None:
            raise RuntimeError(f"the server did not answer in {self.timeout} s; stderr: {self.stderr()}")
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._closing is not None:
            self._loop.call_soon_threadsafe(self._closing.set)
        self._thread.join(self.timeout)
        self._stderr.close()
        Path(self._stderr.name).unlink(missing_ok=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        except BaseException as exc:  # reported to the thread that waits in __enter__
            self._failure = exc
        finally:
            self._ready.set()
            self._loop.close()

    async def _main(self) -> None:
        self._closing = asyncio.Event()
        async with Client(stdio_client(self.params, errlog=self._stderr)) as client:
            self._client = client
            self._ready.set()
            await self._closing.wait()

    def _wait(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(self.timeout)

    @property
    def client(self) -> Client:
        assert self._client is not None, "the session is not open"
        return self._client

    def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        result = self._wait(self.client.call_tool(tool, arguments))
        assert isinstance(result, CallToolResult)
        return result

    def tools(self) -> list[Tool]:
        return list(self._wait(self.client.list_tools()).tools)

    @property
    def server_info(self) -> Implementation | None:
        return self.client.server_info

    def stderr(self) -> str:
        """What the server wrote to stderr so far."""
        self._stderr.flush()
        return Path(self._stderr.name).read_text(encoding="utf-8", errors="replace")
