"""Runner throughput: does the harness keep 64 samples in flight without adding its own time?

    uv run python -m tests.perf.runner_throughput            # 1,000 samples x 2 arms x 4 turns, 64 in flight
    uv run python -m tests.perf.runner_throughput --samples 200 --client inprocess

A model stub (tests/support/llm_stub.py) runs in a separate process and answers every Chat
Completions call after 100 ms: three ``read_file`` calls, then ``submit_answer``. The harness runs
the real launcher, runner, agent loop, filesystem tools, output budget, record store and
transcripts. The ideal time is samples x arms x turns x delay / concurrency; the goal is at most
1.15x that, with memory flat (RSS at the start, the middle and the end of the run).

Clients: ``raw`` (the default) posts Chat Completions over plain asyncio streams, one keep-alive
connection per worker, so the figures are the harness's own; ``openai`` uses docab.models' OpenAI client
(the official SDK), ``inprocess`` a model that only sleeps (no HTTP at all).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from docab.config import parse_config
from docab.log.records import RunRecord
from docab.messages import Message, ToolCall, ToolSpec, Turn
from docab.runner.launch import RunRequest, launch
from docab.runner.progress import ProgressState
from docab.usage import Usage
from tests.harness.corpus import exact_scorer, make_dataset


def rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of another process, from /proc (Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Connection:
    """One keep-alive HTTP/1.1 connection over asyncio streams (JSON in, JSON out)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def post_json(self, host: str, path: str, body: bytes) -> dict[str, Any]:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer test\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        await self.writer.drain()
        status = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        if not status.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"stub answered {status!r}")
        return json.loads(await self.reader.readexactly(length))


class RawChatModel:
    """Chat Completions over plain asyncio streams, one keep-alive connection per worker task.

    No SDK and no connection pool: the figures are the harness's own. (httpx's pool rescans every
    connection on every request and costs several ms of CPU per call at 64 in flight.)
    """

    name = "openai/stub"
    supports_images = True
    is_baseline = False

    def __init__(self, base_url: str) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(base_url)
        self.host, self.port, self.path = (
            parts.hostname or "127.0.0.1",
            parts.port or 80,
            parts.path + "/chat/completions",
        )
        self.connections: dict[int, _Connection] = {}
        self._tools_json: dict[tuple[str, ...], str] = {}

    async def _connection(self) -> _Connection:
        key = id(asyncio.current_task())
        if key not in self.connections:
            reader, writer = await asyncio.open_connection(self.host, self.port)
            self.connections[key] = _Connection(reader, writer)
        return self.connections[key]

    async def generate(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_output_tokens: int
    ) -> Turn:
        wire: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for m in messages:
            if m.role == "tool":
                wire.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text})
            elif m.role == "assistant":
                calls = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in m.tool_calls
                ]
                wire.append(
                    {
                        "role": "assistant",
                        "content": m.text or None,
                        **({"tool_calls": calls} if calls else {}),
                    }
                )
            else:
                wire.append({"role": "user", "content": m.text})
        key = tuple(t.name for t in tools)
        if key not in self._tools_json:  # the same few tool sets on every call: serialise each once
            self._tools_json[key] = json.dumps(
                [
                    {
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.input_schema,
                        },
                    }
                    for t in tools
                ]
            )
        head = json.dumps({"model": "stub", "messages": wire, "max_tokens": max_output_tokens})
        body = head[:-1] + ', "tools": ' + self._tools_json[key] + "}"
        began = time.perf_counter()
        connection = await self._connection()
        data = await connection.post_json(self.host, self.path, body.encode())
        latency = time.perf_counter() - began
        message = data["choices"][0]["message"]
        calls = tuple(
            ToolCall(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message.get("tool_calls") or ()
        )
        return Turn(
            message.get("content") or "", calls, Usage.from_openai(data["usage"], model=self.name), latency
        )


class SleepingModel:
    """No HTTP: sleeps ``delay`` and plays the same script as the stub."""

    name = "fake/sleeping"
    supports_images = True
    is_baseline = False

    def __init__(self, delay: float, turns: int) -> None:
        self.delay, self.turns = delay, turns

    async def generate(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_output_tokens: int
    ) -> Turn:
        began = time.perf_counter()
        await asyncio.sleep(self.delay)
        done = sum(1 for m in messages if m.role == "tool")
        if done < self.turns - 1:
            call = ToolCall(
                f"c{done}",
                "read_file",
                {"path": "document/document.md", "offset": 1 + 10 * done, "limit": 20},
            )
        else:
            call = ToolCall(f"c{done}", "submit_answer", {"status": "answered", "answer": "1998"})
        return Turn("", (call,), Usage(input_uncached=500, output=20), time.perf_counter() - began)


class MemoryProbe:
    """A progress sink that notes RSS at the start, halfway and at the end."""

    def __init__(self) -> None:
        self.samples: dict[str, float] = {}

    def start(self, state: ProgressState) -> None:
        self.state = state
        self.samples["start"] = rss_mib()

    def update(self, record: RunRecord) -> None:
        self.state.add(record)
        if "middle" not in self.samples and self.state.done >= self.state.total // 2:
            self.samples["middle"] = rss_mib()

    def stop(self) -> None:
        self.samples["end"] = rss_mib()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--arms", type=int, default=2)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--client", choices=("raw", "openai", "inprocess"), default="raw")
    parser.add_argument("--goal", type=float, default=1.15)
    parser.add_argument("--stub-server", choices=("asyncio", "threads"), default="asyncio")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="docab-perf-"))
    documents = 25
    dataset = make_dataset(work / "corpus", documents=documents)
    samples = (dataset.samples * (args.samples // len(dataset.samples) + 1))[: args.samples]
    samples = tuple(type(s)(**{**s.__dict__, "qid": f"{s.qid}~{i}"}) for i, s in enumerate(samples))
    dataset = type(dataset)(dataset.name, dataset.version, samples)
    config = parse_config(
        {
            "name": "perf",
            "model": {"name": "openai/stub"},
            "limits": {"max_turns": args.turns + 2},
            "arms": [{"name": f"arm{i}"} for i in range(args.arms)],
        }
    )

    stub = None
    if args.client == "inprocess":
        model: Any = SleepingModel(args.delay, args.turns)
    else:
        stub = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.perf.stub_process",
                "--delay",
                str(args.delay),
                "--turns",
                str(args.turns),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        base_url = stub.stdout.readline().strip()  # type: ignore[union-attr]
        if args.client == "raw":
            model = RawChatModel(base_url)
        else:
            from docab.models.registry import build_model  # type: ignore[import-not-found]

            model = build_model(
                {"name": "openai/stub", "base_url": base_url, "concurrency": args.concurrency}
            )

    probe = MemoryProbe()
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    began = time.perf_counter()
    try:
        outcome = launch(
            RunRequest(config, results_dir=work / "results", concurrency=args.concurrency),
            dataset=dataset,
            model=model,
            scorer=exact_scorer,
            progress=probe,
            say=lambda s: None,
        )
    finally:
        stub_cpu = None
        if stub is not None:
            stub_cpu = process_cpu_s(stub.pid)
            stub.stdin.close()  # type: ignore[union-attr]
            stub.wait(timeout=30)
    wall = time.perf_counter() - began
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)

    records = outcome.records
    ok = sum(r.status == "ok" for r in records)
    turns = sum(r.turns for r in records)
    tools = [c for r in records for c in r.tool_calls if c.name != "submit_answer"]
    model_overhead = (sum(r.model_time_s for r in records) / turns - args.delay) * 1000
    tool_ms = statistics.mean(c.duration_s for c in tools) * 1000
    loop_ms = sum(r.wall_time_s - r.model_time_s - r.tool_time_s for r in records) / turns * 1000
    ideal = args.samples * args.arms * args.turns * args.delay / args.concurrency
    ratio = wall / ideal
    print(
        f"runner throughput: {args.samples} samples x {args.arms} arms x {args.turns} turns, "
        f"{args.concurrency} in flight, model delay {args.delay * 1000:.0f} ms, client {args.client}, "
        f"stub server {args.stub_server if stub else '-'}"
    )
    retries = sum(r.retries for r in records)
    print(
        f"  records: {len(records)} ({ok} ok), model calls {turns} ({retries} retried), tool calls {len(tools)}"
    )
    print(
        f"  wall {wall:.2f} s, ideal {ideal:.2f} s, ratio {ratio:.3f} (goal <= {args.goal}): "
        f"{'PASS' if ratio <= args.goal and ok == len(records) else 'FAIL'}"
    )
    print(
        f"  RSS MiB: start {probe.samples['start']:.1f}, middle {probe.samples.get('middle', float('nan')):.1f}, "
        f"end {probe.samples['end']:.1f}"
    )
    print(f"  per model call: {model_overhead:.2f} ms over the stub's delay (client, HTTP, stub parsing)")
    print(f"  per tool call: {tool_ms:.3f} ms (read_file, budget and tracking included)")
    print(f"  agent loop bookkeeping per turn (wall - model - tool): {loop_ms:.3f} ms")
    if stub_cpu is not None:
        print(
            f"  stub process CPU: {stub_cpu:.2f} s (its own process; close to the wall time means the stub is the limit)"
        )
    print(
        f"  harness process CPU: {cpu:.2f} s = {cpu / (turns + len(tools)) * 1000:.2f} ms per call (model + tool)"
    )
    return 0 if ratio <= args.goal and ok == len(records) else 1


if __name__ == "__main__":
    sys.exit(main())
