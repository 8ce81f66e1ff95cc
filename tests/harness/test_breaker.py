"""The circuit breaker (issue 23 item 3): its decisions as a pure state machine, and a run against a
loopback OpenAI-style server that dies after its k-th call: the run stops, keeps what finished,
records nothing for the samples it could not run, and resumes cleanly once the server is back."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from docab.cli.summary import resume_command
from docab.config import parse_config
from docab.log.store import read_records
from docab.runner.breaker import BreakerSettings, CircuitBreaker, RunStopped
from docab.runner.launch import RunRequest, launch
from docab.runner.progress import SilentProgress
from tests.conftest import REPO_ROOT
from tests.harness.corpus import exact_scorer, make_dataset, write_benchmark_folder
from tests.harness.test_runner_providers import openai_script
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub

# -- the state machine -------------------------------------------------------------------------------


def breaker(failures: int = 3, window_s: float = 60.0, enabled: bool = True) -> CircuitBreaker:
    return CircuitBreaker(BreakerSettings(enabled=enabled, failures=failures, window_s=window_s))


def test_opens_after_n_connection_failures_from_two_samples() -> None:
    b = breaker()
    assert not b.failure("a", "connection", "refused", 0.0)
    assert not b.failure("b", "connection", "refused", 1.0)
    assert b.failure("a", "connection", "refused", 2.0)
    assert b.open and "3 model calls in a row from 2 samples" in (b.reason or "")
    assert not b.failure("c", "connection", "refused", 3.0)  # opens once


def test_one_sample_alone_never_opens_it() -> None:
    b = breaker()
    for t in range(10):
        assert not b.failure("a", "connection", "refused", float(t))
    assert not b.open
    assert b.failure("b", "connection", "refused", 10.0)  # a second sample joins the streak


def test_a_success_resets_the_streak() -> None:
    b = breaker()
    b.failure("a", "connection", "refused", 0.0)
    b.failure("b", "connection", "refused", 1.0)
    b.success()
    assert not b.in_streak("a")
    assert not b.failure("a", "connection", "refused", 2.0)
    assert not b.failure("b", "connection", "refused", 3.0)
    assert b.failure("c", "connection", "refused", 4.0)


@pytest.mark.parametrize("kind", ["rate_limit", "server", "auth", "api"])
def test_an_answer_from_the_server_is_not_a_dead_endpoint(kind: str) -> None:
    """429, a 5xx (with or without Retry-After), a 4xx: the server answered, so the streak ends."""
    b = breaker()
    b.failure("a", "connection", "refused", 0.0)
    b.failure("b", "connection", "refused", 1.0)
    assert not b.failure("c", kind, "HTTP 429", 2.0)
    assert not b.open and not b.streak
    assert not b.failure("c", "connection", "refused", 3.0)


def test_timeouts_do_not_count() -> None:
    b = breaker()
    for t, sample in enumerate("abcdef"):
        b.failure(sample, "timeout", "no answer", float(t))
    assert not b.open


def test_failures_older_than_the_window_drop_out() -> None:
    b = breaker(window_s=10.0)
    b.failure("a", "connection", "refused", 0.0)
    b.failure("b", "connection", "refused", 5.0)
    assert not b.failure("c", "connection", "refused", 11.0)  # the first is 11 s old
    assert b.failure("d", "connection", "refused", 12.0)


def test_disabled_it_never_opens() -> None:
    b = breaker(enabled=False)
    for t, sample in enumerate("abcdefgh"):
        assert not b.failure(sample, "connection", "refused", float(t))
    assert not b.open


def test_the_config_table_has_defaults_and_is_not_part_of_the_identity() -> None:
    base = {"name": "p", "model": "baseline/keyword", "arms": [{"name": "fs"}]}
    plain = parse_config(base)
    assert (plain.breaker.enabled, plain.breaker.failures, plain.breaker.window_s) == (True, 5, 300.0)
    tuned = parse_config({**base, "breaker": {"failures": 3, "window_s": 60}})
    assert tuned.config_hash() == plain.config_hash()
    with pytest.raises(Exception, match="failures"):
        parse_config({**base, "breaker": {"failures": 1}})


# -- end to end: a server that dies -------------------------------------------------------------------


class DyingServer:
    """Answers like ``openai_script`` for ``k`` calls, then dies: the listening socket closes
    (new connections are refused) and connections kept alive are dropped mid-reply."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.calls = 0
        self.dead = False
        self._lock = threading.Lock()
        self.stub = LLMStub(self)

    def __call__(self, protocol: Any, request: Request) -> Reply:
        with self._lock:
            self.calls += 1
            dying = self.calls > self.k
            first_death = dying and not self.dead
            self.dead = self.dead or dying
        if first_death:
            threading.Thread(target=self.stub.stop, daemon=True).start()
        if dying:
            return Reply(body=json.dumps({"id": "x"}) + " " * 64, close_early=True)
        reply: Reply = openai_script(protocol, request)
        return reply


def config_for(base_url: str, *, enabled: bool = True) -> Any:
    return parse_config(
        {
            "name": "dies",
            "model": {
                "name": "openai/stub-model",
                "base_url": base_url,
                "api_key_env": "DOCAB_TEST_KEY",
                "max_retries": 1,
                "retry_base_delay": 0.01,
            },
            "breaker": {"enabled": enabled, "failures": 3},
            "arms": [{"name": "fs"}, {"name": "fs2"}],
        }
    )


def run(config: Any, tmp_path: Path) -> Any:
    dataset = make_dataset(tmp_path / "corpus", documents=2)  # 8 questions, 2 arms: 16 samples
    request = RunRequest(config, results_dir=tmp_path / "results", concurrency=2)
    return launch(
        request, dataset=dataset, scorer=exact_scorer, progress=SilentProgress(), say=lambda s: None
    )


def test_a_dead_endpoint_stops_the_run_and_it_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCAB_TEST_KEY", "k")
    dying = DyingServer(k=8)  # two calls a sample: about four samples finish
    with dying.stub:
        port = dying.stub.server.port
        with pytest.raises(RunStopped) as stopped:
            run(config_for(dying.stub.openai_base_url), tmp_path)
    assert stopped.value.exit_code == 3
    assert "connection" in stopped.value.reason
    folder = tmp_path / "results" / "dies"
    kept = list(read_records(folder / "records.jsonl"))
    assert kept and all(r.status == "ok" for r in kept)  # finished samples kept, no error recorded
    assert len(kept) < 16 and stopped.value.kept == len(kept)
    # It stopped instead of trying every remaining sample (16 samples would be ~24 failed calls).
    assert dying.calls - dying.k <= 3 * 2 + 2 * 2

    with LLMStub(openai_script, port=port) as back:  # the server is back, at the same address
        outcome = run(config_for(back.openai_base_url), tmp_path)
    records = list(read_records(folder / "records.jsonl"))
    assert len(records) == 16 and len({r.key for r in records}) == 16
    assert all(r.status == "ok" for r in outcome.records)


def test_without_the_breaker_every_sample_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCAB_TEST_KEY", "k")
    dying = DyingServer(k=8)
    with dying.stub:
        outcome = run(config_for(dying.stub.openai_base_url, enabled=False), tmp_path)
    assert len(outcome.records) == 16
    assert sum(r.status == "error" for r in outcome.records) >= 10


def test_the_command_exits_3_and_prints_the_resume_command(tmp_path: Path) -> None:
    data, corpus = write_benchmark_folder(tmp_path / "bench", documents=2)
    dying = DyingServer(k=4)
    with dying.stub:
        config = tmp_path / "dies.toml"
        config.write_text(
            f"""
name = "dies"
[dataset]
source = "mmlongbench"
path = "{data}"
corpus = "{corpus}"
[model]
name = "openai/stub-model"
base_url = "{dying.stub.openai_base_url}"
api_key_env = "DOCAB_TEST_KEY"
max_retries = 1
retry_base_delay = 0.01
[breaker]
failures = 3
[[arms]]
name = "fs"
[[arms]]
name = "fs2"
"""
        )
        argv = ["run", str(config), "--results", str(tmp_path / "results"), "--concurrency", "2"]
        done = subprocess.run(
            [sys.executable, "-m", "docab.cli.main", *argv],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "DOCAB_TEST_KEY": "k"},
        )
    assert done.returncode == 3, done.stderr
    assert "the run was stopped" in done.stderr and "connection" in done.stderr
    assert f"resume with: {shlex.join(['docab', *argv])}" in done.stderr
    assert "Traceback" not in done.stderr


def test_resume_command_is_the_same_words() -> None:
    assert (
        resume_command(["/x/docab", "run", "my file.toml", "--limit", "5"])
        == "docab run 'my file.toml' --limit 5"
    )


def test_refusals_in_a_row_open_it_with_the_providers_reason() -> None:
    # A key revoked or an account out of credit mid-run: the server answers, but every sample
    # would be refused and recorded as an error; the run stops instead, and resumes once fixed.
    b = breaker(failures=5)
    for index, sample in enumerate("abcd"):
        assert not b.failure(sample, "auth", "HTTP 429 (insufficient quota)", float(index))
    assert b.failure("e", "auth", "HTTP 429 (insufficient quota)", 4.0)
    assert b.reason is not None and "were refused by the provider (HTTP 429 (insufficient quota))" in b.reason
    assert b.in_streak("a") and not b.in_streak("z")


def test_a_refusal_streak_is_broken_by_any_other_outcome() -> None:
    b = breaker(failures=5)
    for index, sample in enumerate("abcd"):
        b.failure(sample, "auth", "HTTP 401", float(index))
    b.success()
    assert not b.failure("e", "auth", "HTTP 401", 5.0) and not b.open
    for index, sample in enumerate("fgh"):
        b.failure(sample, "auth", "HTTP 401", 6.0 + index)
    assert not b.failure("i", "rate_limit", "HTTP 429", 9.0) and not b.refusals
