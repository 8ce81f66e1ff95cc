"""``docab run`` killed with SIGKILL mid-flight, then re-run: nothing recorded is lost, nothing is duplicated."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from docab.config import parse_config
from docab.log.store import RunStore, read_records
from docab.messages import Message, Turn
from docab.runner.context import RunContext
from docab.runner.progress import ProgressState, SilentProgress
from docab.runner.schedule import WorkUnit
from docab.runner.workers import run_units
from tests.conftest import REPO_ROOT
from tests.harness.corpus import exact_scorer, make_dataset, write_benchmark_folder
from tests.harness.fakes import submit

DOCUMENTS, QUESTIONS, ARMS, EPOCHS = 4, 4, 2, 12
EXPECTED = DOCUMENTS * QUESTIONS * ARMS * EPOCHS


def write_config(tmp_path: Path) -> Path:
    data, corpus = write_benchmark_folder(tmp_path / "bench", documents=DOCUMENTS)
    config = tmp_path / "killed.toml"
    config.write_text(
        f"""
name = "killed"
epochs = {EPOCHS}
[dataset]
source = "mmlongbench"
path = "{data}"
corpus = "{corpus}"
[model]
name = "baseline/keyword"
[[arms]]
name = "fs"
[[arms]]
name = "fs-too"
prompt = "Same tools, another arm."
"""
    )
    return config


def docab_run(config: Path, results: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "docab.cli.main",
            "run",
            str(config),
            "--results",
            str(results),
            "--concurrency",
            "1",
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_sigkill_then_resume_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    config, results = write_config(tmp_path), tmp_path / "results"
    records = results / "killed" / "records.jsonl"
    process = docab_run(config, results)
    deadline = time.monotonic() + 120
    while count_lines(records) < 24 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert process.poll() is None, "the run finished before it could be killed; make it longer"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    before = records.read_bytes()
    complete_before = before[: before.rfind(b"\n") + 1]
    keys_before = [r.key for r in read_records(records)]
    assert 24 <= len(keys_before) < EXPECTED

    resumed = docab_run(config, results)
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr.decode()
    assert f"resuming; {len(keys_before)} samples already recorded" in stdout.decode()
    after = records.read_bytes()
    assert after.startswith(complete_before)  # every line written before the kill is still there, unchanged
    keys = [r.key for r in read_records(records)]
    assert len(keys) == EXPECTED and len(set(keys)) == EXPECTED  # every sample, each once
    assert after.endswith(b"\n") and count_lines(records) == EXPECTED  # no torn line left behind
    manifest = json.loads((results / "killed" / "manifest.json").read_text())
    assert len(manifest["sessions"]) == 2 and "finished_at" in manifest["sessions"][1]
    # The report ran at the end and wrote its files.
    assert (results / "killed" / "summary.json").exists() and "fs-too" in stdout.decode()

    again = docab_run(config, results)
    stdout, _ = again.communicate(timeout=120)
    assert again.returncode == 0 and "nothing to run" in stdout.decode()
    assert count_lines(records) == EXPECTED


class ClosingModel:
    """An SDK-like model: its client closes slowly (over several event-loop turns, as an HTTP
    client's does) and refuses every call once closed."""

    name = "fake/closing"
    supports_images = True
    is_baseline = False

    def __init__(self) -> None:
        self.closed = False
        self.calls_after_close = 0

    async def __aenter__(self) -> ClosingModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.closed = True
        for _ in range(20):
            await asyncio.sleep(0.01)

    async def generate(
        self, system: str, messages: Sequence[Message], tools: Any, *, max_output_tokens: int
    ) -> Turn:
        if self.closed:
            self.calls_after_close += 1
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        await asyncio.sleep(0.05)  # 32 samples, 4 at a time: at least 0.4 s, interrupted at 0.15 s
        return submit("x")


def test_ctrl_c_mid_run_records_no_sample_as_an_error(tmp_path: Path) -> None:
    """A cancelled run (Ctrl-C) stops its workers before the models close. They used to go on
    taking samples while the clients closed: each failed at once on the closed client and was
    recorded as a model error (ten after one Ctrl-C), and a plain resume kept them."""
    config = parse_config(
        {"name": "ctrl-c", "model": "baseline/keyword", "arms": [{"name": "a"}, {"name": "b"}]}
    )
    model = ClosingModel()
    ctx = RunContext(
        run_id="r",
        config=config,
        model=model,
        scorer=exact_scorer,
        store=RunStore(tmp_path / "run"),
        progress=SilentProgress(),
        workspace_parent=tmp_path,
    )
    dataset = make_dataset(tmp_path / "corpus", documents=4)
    units = [WorkUnit(s, 0, ("a", "b")) for s in dataset.samples]
    ctx.progress.start(ProgressState.for_run({"a": len(units), "b": len(units)}))

    async def interrupted() -> None:
        run = asyncio.create_task(run_units(ctx, units, concurrency=4))
        await asyncio.sleep(0.15)
        run.cancel()  # what asyncio.run does to the main task on Ctrl-C
        with contextlib.suppress(asyncio.CancelledError):
            await run

    asyncio.run(interrupted())
    records = list(read_records(tmp_path / "run" / "records.jsonl"))
    assert 0 < len(records) < 2 * len(units)
    assert {r.status for r in records} == {"ok"}, [r.errors for r in records]
    assert model.calls_after_close == 0
