"""How long a run takes to stop when its endpoint dies, with the circuit breaker on and off.

    uv run python -m tests.perf.dead_endpoint                 # 64 samples, dies after call 10, both modes
    uv run python -m tests.perf.dead_endpoint --mode on --samples 32

A loopback OpenAI-style server (tests/support/llm_stub.py, in this process) answers each Chat
Completions call with ``submit_answer`` until its ``--kill-after``-th call, then dies: its listening
socket closes and connections kept alive are dropped mid-reply. The harness runs the real launcher,
runner, agent loop, OpenAI client with the default retry policy (4 retries, back-off from 1 s)
and ``--concurrency`` workers. The figure is the wall time from the first sample to the end of the
run (the breaker's stop, or the last sample erroring), with how many model calls were made after
the server died and how many samples were recorded as errors.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from docab.config import parse_config
from docab.runner.breaker import RunStopped
from docab.runner.launch import RunRequest, launch
from docab.runner.progress import SilentProgress
from tests.harness.corpus import exact_scorer, make_dataset
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, openai_reply


class DyingServer:
    def __init__(self, kill_after: int) -> None:
        self.kill_after = kill_after
        self.calls = 0
        self.died_at: float | None = None
        self._lock = threading.Lock()
        self.stub = LLMStub(self)

    def __call__(self, protocol: Any, request: Request) -> Reply:
        with self._lock:
            self.calls += 1
            dying = self.calls > self.kill_after
            first = dying and self.died_at is None
            if first:
                self.died_at = time.perf_counter()
        if first:
            threading.Thread(target=self.stub.stop, daemon=True).start()
        if dying:
            return Reply(body=json.dumps({"id": "x"}) + " " * 64, close_early=True)
        args = json.dumps({"status": "answered", "answer": "1980"})
        return openai_reply(None, tool_calls=[("c1", "submit_answer", args)])


def measure(breaker: bool, samples: int, kill_after: int, concurrency: int) -> dict[str, Any]:
    os.environ.setdefault("DOCAB_PERF_KEY", "k")
    dying = DyingServer(kill_after)
    with tempfile.TemporaryDirectory() as tmp, dying.stub:
        documents = max(1, samples // 8)  # 4 questions a document, 2 arms
        dataset = make_dataset(Path(tmp) / "corpus", documents=documents)
        config = parse_config(
            {
                "name": "dead",
                "model": {
                    "name": "openai/stub-model",
                    "base_url": dying.stub.openai_base_url,
                    "api_key_env": "DOCAB_PERF_KEY",
                },
                "breaker": {"enabled": breaker},
                "arms": [{"name": "a"}, {"name": "b"}],
            }
        )
        request = RunRequest(config, results_dir=Path(tmp) / "results", concurrency=concurrency)
        began = time.perf_counter()
        stopped = False
        try:
            outcome = launch(
                request, dataset=dataset, scorer=exact_scorer, progress=SilentProgress(), say=lambda s: None
            )
            records = outcome.records
        except RunStopped:
            stopped = True
            from docab.log.store import read_records

            records = list(read_records(Path(tmp) / "results" / "dead" / "records.jsonl"))
        ended = time.perf_counter()
    died = dying.died_at or ended
    return {
        "breaker": "on" if breaker else "off",
        "samples": documents * 8,
        "total_s": round(ended - began, 2),
        "after_death_s": round(ended - died, 2),
        "calls_after_death": dying.calls - kill_after,
        "stopped": stopped,
        "records": len(records),
        "errored_records": sum(r.status in ("error", "timeout") for r in records),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=["on", "off", "both"], default="both")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--kill-after", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()} {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.2f}"
    )
    modes = [True, False] if args.mode == "both" else [args.mode == "on"]
    for mode in modes:
        print(json.dumps(measure(mode, args.samples, args.kill_after, args.concurrency)), flush=True)


if __name__ == "__main__":
    main()
