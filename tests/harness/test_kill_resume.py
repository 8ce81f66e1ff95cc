"""``docab run`` killed with SIGKILL mid-flight, then re-run: nothing recorded is lost, nothing is duplicated."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from docab.log.store import read_records
from tests.conftest import REPO_ROOT
from tests.harness.corpus import write_benchmark_folder

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
