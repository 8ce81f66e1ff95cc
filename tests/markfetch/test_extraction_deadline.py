"""Extraction runs in a worker process that the server kills (red-team pass 5, finding 6): at
MARKFETCH_EXTRACT_TIMEOUT_MS, when the client cancels the call, and when the client goes away.

A page of 49,000 text spans just under the whole-body cut (2 MB) takes trafilatura about 40 s on
a 2-core machine: the "slow page" here. On the old code extraction ran on a thread of asyncio's
pool with no deadline: the slow call ran to its end, a cancelled call went on burning CPU, and
end of input ended the server only when the thread finished. The first three tests go through
the console script over stdio, with a real MCP client where one fits; the worker processes are
found under the server in /proc by their name (``markfetch.sandbox.WORKER_NAME``). Then the
queue's bound, on the pool itself, and the settings.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from markfetch.config import load_settings
from markfetch.errors import ConfigError, MarkfetchError
from markfetch.sandbox import WAITING_PER_WORKER, WORKER_NAME, ExtractionPool, ExtractLimits
from tests.markfetch.test_mcp import console_script
from tests.support.http_server import LocalServer, Reply
from tests.support.stdio_process import INITIALIZE, INITIALIZED

pytestmark = [
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are found in /proc"),
]
HTML = "text/html; charset=utf-8"
ARTICLE = (
    "<html><head><title>Harbour news</title></head><body><article><h1>Ferries run late</h1>"
    + "".join(f"<p>Paragraph {n} about the harbour ferries and their new timetable.</p>" for n in range(20))
    + "</article></body></html>"
)
SLOW = (
    "<html><body><article><h1>Slow</h1><p>"
    + "".join(f"<span>word{n} and more text here</span>" for n in range(49_000))
    + "</p></article></body></html>"
)
T = TypeVar("T")


@pytest.fixture(scope="module")
def site() -> Iterator[LocalServer]:
    with LocalServer() as server:
        server.route("/article", Reply(body=ARTICLE, content_type=HTML))
        server.route("/slow", Reply(body=SLOW, content_type=HTML))
        yield server


def _env(cwd: Path, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd), **extra}


def _session(cwd: Path, scenario: Callable[[Client], Awaitable[T]], **env: str) -> T:
    params = StdioServerParameters(
        command=console_script(), args=["--allow-host", "127.0.0.1"], env=_env(cwd, **env), cwd=str(cwd)
    )

    async def go() -> T:
        with Path(os.devnull).open("w") as sink:
            async with Client(stdio_client(params, errlog=sink), mode="legacy") as client:
                return await scenario(client)

    return asyncio.run(go())


# -- processes, from /proc ----------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, str, int, float] | None:
    """(name, state, parent, CPU seconds) of a live process, or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = raw[raw.index("(") + 1 : raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return name, fields[0], int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks


def _alive(pid: int) -> bool:
    return _stat(pid) is not None


def _server_pid() -> int:
    """This test's markfetch server: the child of this process running the console script."""
    script = console_script().encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) and stat[2] == os.getpid():
            try:
                if (entry / "cmdline").read_bytes().split(b"\0")[1:2] == [script]:
                    return int(entry.name)
            except (OSError, IndexError):
                continue
    raise AssertionError("no markfetch server among this process's children")


def _workers(root: int) -> dict[int, float]:
    """The extraction workers below process ``root``, with their CPU seconds."""
    stats = {
        int(e.name): s for e in Path("/proc").iterdir() if e.name.isdigit() and (s := _stat(int(e.name)))
    }

    def under(pid: int) -> bool:
        while pid > 1 and pid in stats:
            if pid == root:
                return True
            pid = stats[pid][2]
        return False

    return {pid: s[3] for pid, s in stats.items() if s[0] == WORKER_NAME.decode() and under(s[2])}


async def _busy_worker(root: int, *, within: float = 30) -> int:
    """The worker that has been extracting for a while (at least 1 s of CPU)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        busy = [pid for pid, cpu in _workers(root).items() if cpu >= 1.0]
        if busy:
            return busy[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"no worker got busy within {within} s: {_workers(root)}")


async def _gone(pid: int, *, within: float = 10) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and _alive(pid):
        await asyncio.sleep(0.05)
    return not _alive(pid)


# -- the tests ----------------------------------------------------------------------------------------


def test_a_page_past_the_extraction_deadline_is_a_timeout_and_the_next_call_is_served(
    site: LocalServer, tmp_path: Path
) -> None:
    async def scenario(client: Client) -> tuple[object, float, object]:
        started = time.monotonic()
        slow = await client.call_tool("fetch_markdown", {"url": site.url("/slow")})
        took = time.monotonic() - started
        return slow, took, await client.call_tool("fetch_markdown", {"url": site.url("/article")})

    slow, took, after = _session(tmp_path, scenario, MARKFETCH_EXTRACT_TIMEOUT_MS="300")
    assert slow.is_error is True  # type: ignore[attr-defined]
    text = slow.content[0].text  # type: ignore[attr-defined]
    assert text.startswith(f"[timeout] extracting {site.url('/slow')} took longer than 0.3 s ")
    assert "MARKFETCH_EXTRACT_TIMEOUT_MS=300" in text and "raw=true" in text
    assert took < 15  # the page takes about 40 s to extract
    assert after.is_error is False  # type: ignore[attr-defined]
    assert after.content[0].text.startswith("# Ferries run late\n")  # type: ignore[attr-defined]


def test_a_cancelled_call_kills_its_worker_and_the_server_serves_the_next(
    site: LocalServer, tmp_path: Path
) -> None:
    async def scenario(client: Client) -> tuple[bool, bool, object]:
        server = _server_pid()
        call = asyncio.create_task(client.call_tool("fetch_markdown", {"url": site.url("/slow")}))
        busy = await _busy_worker(server)
        call.cancel()  # the client sends notifications/cancelled
        with pytest.raises(asyncio.CancelledError):
            await call
        killed = await _gone(busy)
        after = await client.call_tool("fetch_markdown", {"url": site.url("/article")})
        return killed, busy not in _workers(server), after

    killed, not_reused, after = _session(
        tmp_path, scenario, MARKFETCH_EXTRACT_WORKERS="1", MARKFETCH_EXTRACT_TIMEOUT_MS="120000"
    )
    assert killed and not_reused
    assert after.is_error is False  # type: ignore[attr-defined]
    assert after.content[0].text.startswith("# Ferries run late\n")  # type: ignore[attr-defined]


def test_end_of_input_ends_the_server_while_a_page_is_extracted(site: LocalServer, tmp_path: Path) -> None:
    server = subprocess.Popen(
        [console_script(), "--allow-host", "127.0.0.1"],
        env=_env(tmp_path, MARKFETCH_EXTRACT_TIMEOUT_MS="120000"),
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert server.stdin is not None and server.stderr is not None
        for message in (
            INITIALIZE,
            INITIALIZED,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "fetch_markdown", "arguments": {"url": site.url("/slow")}},
            },
        ):
            server.stdin.write(json.dumps(message).encode() + b"\n")
        server.stdin.flush()
        busy = asyncio.run(_busy_worker(server.pid))
        server.stdin.close()
        started = time.monotonic()
        code = server.wait(timeout=20)  # the extraction alone would take about 40 s more
        assert code == 0 and time.monotonic() - started < 20
        assert asyncio.run(_gone(busy)), "the worker outlived the server"
        assert server.stderr.read() == b""
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_calls_past_the_queue_fail_at_once_saying_the_workers_are_busy() -> None:
    async def go() -> tuple[str, list[int], list[int]]:
        pool = ExtractionPool(ExtractLimits(workers=1, timeout_ms=60_000))
        body = SLOW.encode()
        calls = [
            asyncio.create_task(pool.extract(body, "utf-8", f"http://site.test/{n}", 5_000_000))
            for n in range(1 + WAITING_PER_WORKER)
        ]
        try:
            while pool.waiting < WAITING_PER_WORKER or not pool.worker_pids():
                await asyncio.sleep(0.01)
            with pytest.raises(MarkfetchError) as refused:
                await pool.extract(body, "utf-8", "http://site.test/more", 5_000_000)
            busy = pool.worker_pids()
        finally:
            for call in calls:
                call.cancel()
            await asyncio.gather(*calls, return_exceptions=True)
        left = pool.worker_pids()
        pool.close()
        return str(refused.value), busy, left

    refused, busy, left = asyncio.run(go())
    assert refused == (
        f"[timeout] extracting http://site.test/more did not start: {WAITING_PER_WORKER} calls already "
        "wait for the 1 extraction workers (MARKFETCH_EXTRACT_WORKERS); try again shortly"
    )
    # The cancelled call's worker was killed (a successor may have started since).
    assert len(busy) == 1 and busy[0] not in left and not _alive(busy[0])


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("MARKFETCH_EXTRACT_TIMEOUT_MS", "0", "must be above 0"),
        ("MARKFETCH_EXTRACT_TIMEOUT_MS", "700000", "above the maximum of 600000"),
        ("MARKFETCH_EXTRACT_WORKERS", "many", "is not a whole number"),
        ("MARKFETCH_EXTRACT_WORKERS", "65", "above the maximum of 64"),
        ("MARKFETCH_EXTRACT_MEMORY_MB", "-1", "must be above 0"),
    ],
)
def test_bad_extraction_settings_stop_the_start(variable: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as bad:
        load_settings({variable: value})
    assert str(bad.value).startswith(f"{variable}={value!r}")


def test_extraction_settings_and_their_defaults() -> None:
    default = load_settings({})
    assert (default.extract_timeout_ms, default.extract_memory_mb) == (30_000, 2048)
    assert 1 <= default.extract_workers <= 2
    chosen = load_settings(
        {
            "MARKFETCH_EXTRACT_TIMEOUT_MS": "5000",
            "MARKFETCH_EXTRACT_WORKERS": "3",
            "MARKFETCH_EXTRACT_MEMORY_MB": "0",  # no cap
        }
    )
    assert (chosen.extract_timeout_ms, chosen.extract_workers, chosen.extract_memory_mb) == (5000, 3, 0)
