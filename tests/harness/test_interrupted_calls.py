"""Calls in flight at a kill: each priced model call is journaled before it is sent (an ``opened``
line) and closed with the same id as it returns; a call opened and never closed is an interrupted
call, counted at the most it can cost by the spend cap, the run's notes and the report.

The kill is real: ``docab run`` in a subprocess against the loopback stub, SIGKILLed while the stub
holds a call open, then resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.log.spend_journal import SpendJournal, SpendTotals, read_spend
from docab.messages import Image, Message, Text, ToolSpec
from docab.pricing import Price, PriceBook
from docab.runner.inflight import call_bound, input_tokens
from docab.runner.spend import SampleMeter, SpendGuard
from docab.usage import Usage
from tests.conftest import REPO_ROOT
from tests.harness.test_spend_cap import PER_SAMPLE, answering, write_config
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub

PER_CALL = PER_SAMPLE / 2  # the stub's every reply: 10 prompt and 5 completion tokens at $1,000/M
SAMPLE = ("fs", "q1", 0)


def journal_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


# -- reading the journal ------------------------------------------------------------------------------


def test_an_opened_call_closed_with_its_id_is_one_billed_call(tmp_path: Path) -> None:
    path = write(
        tmp_path / "spend.jsonl",
        '{"usd": 0.0, "unpriced": [], "opening": true}',
        '{"opened": 1, "sample": ["fs", "q1", 0], "model": "openai/m", "bound": 4.2}',
        '{"usd": 0.015, "unpriced": [], "sample": ["fs", "q1", 0], "call": 1}',
    )
    totals = read_spend(path)
    assert totals == SpendTotals(usd=0.015, calls=1, journaled=True)
    assert totals.interrupted_note() == ""


def test_an_opened_call_never_closed_is_interrupted_at_its_bound(tmp_path: Path) -> None:
    path = write(
        tmp_path / "spend.jsonl",
        '{"usd": 0.5, "unpriced": [], "opening": true}',
        '{"opened": 1, "sample": ["fs", "q1", 0], "model": "openai/m", "bound": 4.2}',
        '{"usd": 0.015, "unpriced": [], "sample": ["fs", "q1", 0], "call": 1}',
        '{"opened": 2, "sample": ["fs", "q1", 0], "model": "openai/m", "bound": 4.25}',
        '{"opened": 3, "sample": ["fs", "q2", 0], "model": "openai/m", "bound": 1.0}',
    )
    totals = read_spend(path)
    assert totals is not None
    assert (totals.usd, totals.calls, totals.interrupted) == (pytest.approx(0.515), 1, 2)
    assert totals.interrupted_usd == pytest.approx(5.25)
    assert totals.upper_bound == pytest.approx(5.765)
    assert (
        totals.interrupted_note() == "2 calls interrupted by a kill: up to $5.2500 more may have been billed"
    )
    # The cap counts them at their bound: with 5.765 of a 5.77 cap spent, no more call is made.
    assert SpendGuard.from_costs(5.77, [], totals).spent == pytest.approx(5.765)
    assert SpendGuard.from_costs(5.76, [], totals).may_call() is False


def test_an_interrupted_call_of_unknown_price_counts_as_unknown_cost(tmp_path: Path) -> None:
    path = write(
        tmp_path / "spend.jsonl",
        '{"usd": 0.0, "unpriced": [], "opening": true}',
        '{"opened": 1, "sample": ["fs", "q1", 0], "model": "openai/unpriced", "bound": null}',
    )
    totals = read_spend(path)
    assert totals is not None
    assert (totals.interrupted, totals.interrupted_usd, totals.unpriced) == (1, 0.0, ("openai/unpriced",))


def test_a_call_that_billed_nothing_is_closed_and_not_counted_as_billed(tmp_path: Path) -> None:
    path = write(
        tmp_path / "spend.jsonl",
        '{"usd": 0.0, "unpriced": [], "opening": true}',
        '{"opened": 1, "sample": ["fs", "q1", 0], "model": "openai/m", "bound": 4.2}',
        '{"usd": 0.0, "unpriced": [], "sample": ["fs", "q1", 0], "call": 1}',
    )
    assert read_spend(path) == SpendTotals(journaled=True)


OLD_JOURNAL = (  # written by a docab before calls had ids
    '{"usd": 0.25, "unpriced": [], "opening": true}',
    '{"usd": 0.015, "unpriced": [], "sample": ["fs", "q1", 0], "usage": []}',
    '{"usd": 0.0, "unpriced": ["openai/x (replies without token usage)"], "sample": ["fs", "q2", 0]}',
    '{"usd": 0.0, "unpriced": [], "sample": ["fs", "q2", 0]}',
    '{"usd": 0.02, "unpriced": [], "sample": ["fs", "q3", 0]}',
)


def test_an_old_journal_without_call_ids_reads_as_before(tmp_path: Path) -> None:
    path = write(tmp_path / "spend.jsonl", *OLD_JOURNAL)
    # What the reader before call ids made of it: every line but the opening one a call, summed in order.
    expected = SpendTotals(
        usd=0.0 + 0.25 + 0.015 + 0.0 + 0.0 + 0.02,
        unpriced=("openai/x (replies without token usage)",),
        calls=4,
        journaled=True,
    )
    assert read_spend(path) == expected  # interrupted 0, $0: nothing in flight is known of
    # Appending to it goes on from there, and ids start at 1.
    journal = SpendJournal(path)
    assert journal.open(SpendTotals(usd=99.0)) == expected
    assert journal.opened(SAMPLE, "openai/m", 1.0) == 1
    journal.close()


def test_a_torn_last_line_is_dropped_and_ids_go_on_after_the_journal_last(tmp_path: Path) -> None:
    path = write(
        tmp_path / "spend.jsonl",
        '{"usd": 0.0, "unpriced": [], "opening": true}',
        '{"opened": 1, "sample": ["fs", "q1", 0], "model": "openai/m", "bound": 4.2}',
        '{"usd": 0.015, "unpriced": [], "sample": ["fs", "q1", 0], "call": 1}',
        '{"opened": 2, "sample": ["fs", "q1", 0], "model": "openai/m", "bound": 4.2}',
    )
    with path.open("a") as handle:
        handle.write('{"opened": 3, "sample": ["fs", "q1"')  # cut by the kill: never sent
    totals = read_spend(path)
    assert totals is not None and (totals.interrupted, totals.interrupted_usd) == (1, pytest.approx(4.2))
    journal = SpendJournal(path)
    assert journal.open(SpendTotals()) == totals
    assert path.read_text().endswith('"bound": 4.2}\n')  # the torn line is gone
    assert journal.opened(SAMPLE, "openai/m", 1.0) == 3  # unique within the run
    journal.close()


def test_the_meter_closes_each_call_with_its_id_billed_or_not(tmp_path: Path) -> None:
    journal = SpendJournal(tmp_path / "spend.jsonl")
    journal.open(SpendTotals())
    meter = SampleMeter(SAMPLE, PriceBook.for_models([]), journal, SpendGuard(cap=10.0))
    billed = Usage(input_uncached=1000, output=100, model="openai/gpt-4o")
    with meter.call("openai/gpt-4o", 0.5):
        meter.charge([billed])
    with pytest.raises(RuntimeError), meter.call("openai/gpt-4o", 0.5):
        raise RuntimeError("a 503, no billed reply")
    journal.close()
    lines = journal_lines(tmp_path / "spend.jsonl")
    assert [line.get("opened") for line in lines] == [None, 1, None, 2, None]
    assert [line.get("call") for line in lines] == [None, None, 1, None, 2]
    assert lines[2]["usd"] == pytest.approx(meter.charged) and lines[4]["usd"] == 0.0
    totals = read_spend(tmp_path / "spend.jsonl")
    assert totals is not None and (totals.calls, totals.interrupted) == (1, 0)


def test_the_bound_is_the_input_estimate_at_the_input_price_plus_max_output() -> None:
    price = Price(input=3.0, output=15.0, cache_write=3.75)
    system = "s" * 400
    messages = [Message.user("q" * 4000), Message(role="user", blocks=(Text("t" * 40),))]
    tools = [ToolSpec("read_file", "Read a file.", {"type": "object"})]
    tokens = input_tokens(system, messages, tools)
    assert tokens >= (400 + 4000 + 40) // 4  # the text at four characters a token, and more
    assert call_bound(price, tokens, 1000) == pytest.approx((tokens * 3.75 + 1000 * 15.0) / 1e6)
    unreadable = Message(role="user", blocks=(Image(b"not an image", "image/png"),))
    assert input_tokens("", [unreadable], []) > 1000  # an image counts at the most a rule counts it


# -- a real kill -----------------------------------------------------------------------------------------


class HoldingStub:
    """Answers as the cap tests' stub does, except its second call, which it holds open until
    released (and says it got, so the test kills the run while the call is in flight)."""

    def __init__(self) -> None:
        self.holding = threading.Event()
        self.release = threading.Event()
        self._calls = 0
        self._lock = threading.Lock()

    def __call__(self, protocol: str, request: Request) -> Reply:
        with self._lock:
            self._calls += 1
            hold = self._calls == 2
        if hold:
            self.holding.set()
            self.release.wait(timeout=300)
        return answering(protocol, request)


def test_a_call_in_flight_at_a_sigkill_counts_at_its_bound_after_the_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    run_dir = results / "capped"
    journal = run_dir / "spend.jsonl"
    stub = HoldingStub()
    options = ["--results", str(results), "--limit", "1", "--concurrency", "1"]
    with LLMStub(stub) as server:
        config = write_config(tmp_path, server.openai_base_url)
        process = subprocess.Popen(
            [sys.executable, "-m", "docab.cli.main", "run", str(config), *options],
            cwd=REPO_ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            while not stub.holding.wait(timeout=1.0):  # the second call is in the stub's hands
                assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
        finally:
            stub.release.set()
            if process.poll() is None:
                process.kill()
                process.wait()
            if process.stderr is not None:
                process.stderr.close()
        assert process.returncode == -signal.SIGKILL

        lines = journal_lines(journal)
        opened = [line for line in lines if "opened" in line]
        closed = {line.get("call") for line in lines if "usd" in line}
        assert len(opened) == 2 and opened[0]["opened"] in closed and opened[1]["opened"] not in closed
        bound = opened[1]["bound"]
        assert isinstance(bound, float) and bound > PER_CALL  # input and max output at the price
        killed = read_spend(journal)
        assert killed is not None
        assert (killed.usd, killed.interrupted, killed.interrupted_usd) == (
            pytest.approx(PER_CALL),
            1,
            pytest.approx(bound),
        )

        # Resumed under a cap: spent so far is the returned call and the interrupted one at its bound.
        cap = PER_CALL + bound + 2 * PER_SAMPLE + 0.01
        assert main(["run", str(config), *options, "--quiet", "--max-cost", f"{cap:.4f}"]) == 0
    out = capsys.readouterr().out
    assert f"${PER_CALL + bound:.4f} spent so far" in out
    note = f"1 call interrupted by a kill: up to ${bound:.4f} more may have been billed"
    assert f"note: {note}" in out
    resumed = read_spend(journal)
    assert resumed is not None and (resumed.interrupted, resumed.interrupted_usd) == (1, pytest.approx(bound))
    assert resumed.usd == pytest.approx(PER_CALL + 2 * PER_SAMPLE)  # the cut sample ran again, whole

    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted_calls"] == 1 and summary["interrupted_usd"] == pytest.approx(bound)
    assert any(note in w for w in summary["warnings"])
    assert note in (run_dir / "report.md").read_text()
