"""A run killed with SIGKILL mid-flight, then resumed: nothing recorded is lost, nothing is duplicated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.store import read_records
from tests.conftest import REPO_ROOT

EXPECTED = 6 * 4 * 2  # documents x questions x arms


def start(tmp_path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.harness.fixtures.run_entry",
            str(tmp_path / "corpus"),
            str(tmp_path / "results"),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_sigkill_then_resume_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    records = tmp_path / "results" / "killed" / "records.jsonl"
    process = start(tmp_path)
    deadline = time.monotonic() + 90
    while count_lines(records) < 12 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, "the run finished before it could be killed; slow it down"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    before = records.read_bytes()
    complete_before = before[: before.rfind(b"\n") + 1]
    keys_before = [r.key for r in read_records(records)]
    assert 12 <= len(keys_before) < EXPECTED

    resumed = start(tmp_path)
    _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr.decode()
    after = records.read_bytes()
    assert after.startswith(complete_before)  # every line written before the kill is still there, unchanged
    keys = [r.key for r in read_records(records)]
    assert len(keys) == EXPECTED and len(set(keys)) == EXPECTED  # all samples, each once
    assert after.endswith(b"\n") and count_lines(records) == EXPECTED  # no torn line left in the file
    assert f"{EXPECTED}/{EXPECTED}" in stderr.decode()
