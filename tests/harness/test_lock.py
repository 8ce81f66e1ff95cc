"""One writer per run folder (issue 23 item 2).

The decision is a pure function (:func:`docab.log.lock.decide`), tested on every state; the lock
itself is a real ``flock``, tested between two lock objects and between real ``docab run``
processes against a loopback model server whose answers the test holds back: a second run is
refused in one sentence naming the first, waits for it with ``--wait``, and takes over the folder
of a killed run, removing the killed run's workspaces; ``docab merge`` does not write into a live
run's folder.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.log.lock import (
    LOCK_FILE,
    LockRecord,
    LockState,
    RunBusy,
    RunLock,
    busy_message,
    decide,
    remove_scratch,
)
from docab.log.store import read_records
from tests.conftest import REPO_ROOT
from tests.harness.corpus import write_benchmark_folder
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, openai_reply

HOST = "this-host"
RECORD = LockRecord(pid=4242, host=HOST, since="2026-12-03T07:00:00+00:00", command=("docab", "run", "x"))

# -- the decision, pure ------------------------------------------------------------------------------


def test_a_free_lock_without_a_live_record_is_taken() -> None:
    assert decide(LockState(free=True, record=None), host=HOST).action == "take"
    released = RECORD.model_copy(update={"released_at": "2026-12-03T08:00:00+00:00"})
    assert decide(LockState(free=True, record=released, age_s=5), host=HOST).action == "take"


def test_a_held_lock_is_busy_and_the_message_is_one_sentence_naming_the_holder() -> None:
    verdict = decide(LockState(free=False, record=RECORD, age_s=1), host=HOST)
    assert verdict.action == "busy" and verdict.holder == RECORD
    message = busy_message(Path("results/r"), verdict)
    assert message == (
        "results/r is being written by another docab process (pid 4242 on host this-host since "
        "2026-12-03T07:00:00+00:00, docab run x): wait for it to finish, or add --wait to start when it does"
    )
    # Held while the holder is still writing its record: busy all the same.
    assert decide(LockState(free=False, record=None), host=HOST).action == "busy"
    assert "another docab process: wait" in busy_message(Path("r"), decide(LockState(False, None), host=HOST))


def test_a_free_lock_with_a_live_record_of_this_host_was_left_by_a_killed_run() -> None:
    verdict = decide(LockState(free=True, record=RECORD, age_s=1), host=HOST)
    assert verdict.action == "take_over" and verdict.holder == RECORD and "killed" in verdict.why


def test_a_record_of_another_host_is_trusted_until_its_heartbeat_is_stale() -> None:
    other = RECORD.model_copy(update={"host": "node-7"})
    fresh = decide(LockState(free=True, record=other, age_s=40), host=HOST, stale_after_s=300)
    assert fresh.action == "busy" and "cannot check a process on host node-7, last seen 40 s ago" in fresh.why
    assert decide(LockState(True, other, None), host=HOST).action == "busy"
    stale = decide(LockState(free=True, record=other, age_s=301), host=HOST, stale_after_s=300)
    assert stale.action == "take_over" and "no heartbeat from host node-7 for 301 s" in stale.why
    # Held is held, whatever host wrote the record.
    assert decide(LockState(free=False, record=other, age_s=10_000), host=HOST).action == "busy"


# -- the lock file, in one process (flock locks open files, so two RunLocks exclude each other) ----


def test_two_locks_on_one_folder_exclude_each_other_and_the_file_stays(tmp_path: Path) -> None:
    first = RunLock(tmp_path / "run", host=HOST, pid=1, command=["a"])
    second = RunLock(tmp_path / "run", host=HOST, pid=2, command=["b"])
    assert first.peek().action == "take" and not (tmp_path / "run").exists()  # peeking creates nothing
    assert first.acquire().action == "take"
    assert second.peek().action == "busy"
    with pytest.raises(RunBusy, match="pid 1 on host this-host"):
        second.acquire()
    first.add_scratch(tmp_path / "docab-w")
    held = json.loads((tmp_path / "run" / LOCK_FILE).read_text())
    assert held["pid"] == 1 and held["scratch"] == [str(tmp_path / "docab-w")] and held["released_at"] is None
    first.release()
    released = json.loads((tmp_path / "run" / LOCK_FILE).read_text())
    assert released["released_at"] and released["scratch"] == []
    assert second.acquire().action == "take"
    second.release()


def test_a_record_from_another_host_waits_for_its_heartbeat_to_go_stale(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    lock_file = folder / LOCK_FILE
    lock_file.write_text(RECORD.model_copy(update={"host": "node-7"}).model_dump_json())
    now = time.time()
    os.utime(lock_file, (now - 60, now - 60))
    lock = RunLock(folder, host=HOST, clock=lambda: now, stale_after_s=300)
    with pytest.raises(RunBusy, match="cannot check a process on host node-7, last seen 60 s ago"):
        lock.acquire()
    os.utime(lock_file, (now - 600, now - 600))
    verdict = lock.acquire()
    assert verdict.action == "take_over" and verdict.holder and verdict.holder.host == "node-7"
    lock.release()


def test_only_a_stopped_holders_own_temporary_folders_are_removed(tmp_path: Path) -> None:
    mine, other_name, elsewhere = tmp_path / "docab-abc", tmp_path / "keep-me", tmp_path / "docab-link"
    for folder in (mine, other_name):
        (folder / "w000").mkdir(parents=True)
    elsewhere.symlink_to(other_name)
    record = RECORD.model_copy(
        update={"scratch": (str(mine), str(other_name), str(elsewhere), "docab-relative")}
    )
    assert remove_scratch(record.model_copy(update={"host": "node-7"}), host=HOST) == []
    assert mine.exists()
    assert remove_scratch(record, host=HOST) == [str(mine)]
    assert not mine.exists() and other_name.exists() and elsewhere.is_symlink()


# -- real processes ------------------------------------------------------------------------------------

QUESTIONS = 8  # 2 documents x 4 questions, one arm


class Gate:
    """A loopback OpenAI-style server that answers every question (submit_answer) once the test
    opens the gate; until then model calls wait. The model list (the preflight) always answers."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.stub = LLMStub(self.answer, models=["stub-model"])

    def answer(self, protocol: str, request: Request) -> Reply:
        self.open.wait(timeout=120)
        args = json.dumps({"status": "answered", "answer": "1980"})
        return openai_reply(None, tool_calls=[("c1", "submit_answer", args)])


@pytest.fixture
def gate() -> Iterator[Gate]:
    gate = Gate()
    gate.stub.start()
    yield gate
    gate.open.set()
    gate.stub.stop()


def write_config(tmp_path: Path, base_url: str) -> Path:
    data, corpus = write_benchmark_folder(tmp_path / "bench", documents=2)
    config = tmp_path / "twice.toml"
    config.write_text(
        f"""
name = "twice"
[dataset]
source = "mmlongbench"
path = "{data}"
corpus = "{corpus}"
[model]
name = "openai/stub-model"
base_url = "{base_url}"
[[arms]]
name = "fs"
"""
    )
    return config


def start(config: Path, results: Path, *flags: str, tmp: Path | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OPENAI_API_KEY": "sk-stub"}
    if tmp is not None:
        tmp.mkdir(exist_ok=True)
        env["TMPDIR"] = str(tmp)
    command = [sys.executable, "-m", "docab.cli.main", "run", str(config), "--results", str(results)]
    return subprocess.Popen(
        [*command, "--concurrency", "1", "--quiet", *flags],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(condition: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def holder_pid(folder: Path) -> int | None:
    try:
        record = json.loads((folder / LOCK_FILE).read_text())
    except (OSError, ValueError):
        return None
    return None if record.get("released_at") else int(record["pid"])


def test_a_second_run_on_a_live_folder_is_refused_in_one_sentence_naming_the_first(
    tmp_path: Path, gate: Gate
) -> None:
    config, results = write_config(tmp_path, gate.stub.openai_base_url), tmp_path / "results"
    folder = results / "twice"
    first = start(config, results)
    # The run takes the lock, then writes its manifest twice (begun, then with its tools), then
    # calls the model, which the gate holds: wait for that call, or a loaded machine reads the
    # folder before the manifest is final.
    wait_for(
        lambda: (
            holder_pid(folder) == first.pid
            and any(r.path.endswith("/chat/completions") for r in gate.stub.requests)
        ),
        "the first run to hold the folder and call the model",
    )
    manifest_before = (folder / "manifest.json").read_bytes()
    second = start(config, results)
    _, err = second.communicate(timeout=120)
    assert second.returncode == 2
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    assert (
        f"is being written by another docab process (pid {first.pid} on host {platform.node()} since " in line
    )
    assert "add --wait" in line
    assert (folder / "manifest.json").read_bytes() == manifest_before  # the refused run wrote nothing
    gate.open.set()
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    keys = [r.key for r in read_records(folder / "records.jsonl")]
    assert len(keys) == QUESTIONS == len(set(keys))  # every sample once: no second writer
    chat_calls = [r for r in gate.stub.requests if r.path.endswith("/chat/completions")]
    assert len(chat_calls) == QUESTIONS
    manifest = json.loads((folder / "manifest.json").read_text())
    assert len(manifest["sessions"]) == 1
    assert json.loads((folder / LOCK_FILE).read_text())["released_at"]


def test_with_wait_the_second_run_starts_when_the_first_has_finished(tmp_path: Path, gate: Gate) -> None:
    config, results = write_config(tmp_path, gate.stub.openai_base_url), tmp_path / "results"
    folder = results / "twice"
    first = start(config, results)
    wait_for(lambda: holder_pid(folder) == first.pid, "the first run to hold the folder")
    second = start(config, results, "--wait")
    assert second.stdout is not None
    waiting = second.stdout.readline()
    assert f"pid {first.pid}" in waiting and "waiting for it to finish (--wait)" in waiting
    assert second.poll() is None
    gate.open.set()
    assert first.wait(timeout=120) == 0
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert "all 8 samples are already recorded; nothing to run" in out
    keys = [r.key for r in read_records(folder / "records.jsonl")]
    assert len(keys) == QUESTIONS == len(set(keys))


def test_a_killed_runs_folder_is_taken_over_and_its_workspaces_removed(tmp_path: Path, gate: Gate) -> None:
    config, results = write_config(tmp_path, gate.stub.openai_base_url), tmp_path / "results"
    folder = results / "twice"
    killed_tmp = tmp_path / "tmp-killed"
    first = start(config, results, tmp=killed_tmp)
    wait_for(lambda: any(killed_tmp.glob("docab-*/w000")), "the first run's workspace")
    wait_for(
        lambda: json.loads((folder / LOCK_FILE).read_text())["scratch"], "the workspace in the lock record"
    )
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    assert [p.name.startswith("docab-") for p in killed_tmp.iterdir()] == [True]  # left behind by the kill
    gate.open.set()
    second = start(config, results, tmp=tmp_path / "tmp-second")
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert f"was left by a run that stopped (pid {first.pid} on host {platform.node()} since " in out
    assert "taking it over; removed its 1 temporary workspace folder(s)" in out
    assert list(killed_tmp.iterdir()) == []
    assert list((tmp_path / "tmp-second").iterdir()) == []  # the finished run removed its own
    keys = [r.key for r in read_records(folder / "records.jsonl")]
    assert len(keys) == QUESTIONS == len(set(keys))


def test_docab_merge_does_not_write_into_a_live_runs_folder(
    tmp_path: Path, gate: Gate, capsys: pytest.CaptureFixture[str]
) -> None:
    config, results = write_config(tmp_path, gate.stub.openai_base_url), tmp_path / "results"
    gate.open.set()
    part = results / "part"
    done = start(config, results, "--out", str(part), "--first", "2")
    assert done.wait(timeout=120) == 0
    gate.open.clear()
    folder = results / "twice"
    live = start(config, results)
    wait_for(lambda: holder_pid(folder) == live.pid, "the run to hold the folder")
    assert main(["merge", str(part), "--out", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"is being written by another docab process (pid {live.pid}" in err
    assert json.loads((folder / "manifest.json").read_text())["merged_from"] == []  # nothing merged in
    # A part still being written is merged with a warning naming it.
    merged = results / "merged"
    assert main(["merge", str(part), str(folder), "--out", str(merged)]) == 0
    assert f"{folder} is still being written (pid {live.pid}" in capsys.readouterr().out
    gate.open.set()
    assert live.wait(timeout=120) == 0
