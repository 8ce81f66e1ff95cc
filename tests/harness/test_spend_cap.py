"""The spend cap: ``docab run --max-cost USD`` starts no sample its estimate says would pass the cap,
lets the samples in flight finish, exits 3 with the command that resumes it, and a higher cap goes on.
Runs against the loopback OpenAI stub, each call priced by the config."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shlex
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.cli.run import resume_command
from docab.log.store import read_records
from docab.pricing.cost import SampleCost
from docab.runner.spend import SpendGuard, SpendStop
from tests.harness.corpus import write_benchmark_folder
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, openai_reply

# Every call of the stub reports 10 prompt and 5 completion tokens; at 1,000 USD per million tokens
# a call costs 0.015 USD and a sample (read, then submit) two calls: 0.03 USD.
PER_SAMPLE = 0.03


def answering(protocol: str, request: Request) -> Reply:
    body = request.json()
    if not any(m["role"] == "tool" for m in body["messages"]):
        return openai_reply(
            None, tool_calls=[("c1", "read_file", json.dumps({"path": "document/document.md"}))]
        )
    return openai_reply(
        None, tool_calls=[("c2", "submit_answer", json.dumps({"status": "answered", "answer": "1980"}))]
    )


CONFIG = """\
name = "capped"
[dataset]
source = "mmlongbench"
path = "bench/data"
corpus = "bench/corpus"
[model]
name = "openai/stub-model"
base_url = "{base_url}"
max_retries = 0
{price}
[[arms]]
name = "fs"
[[arms]]
name = "fs-again"
"""

PRICE = 'price = { input = 1000, output = 1000, source = "a test price" }'


def write_config(folder: Path, base_url: str, price: str = PRICE) -> Path:
    write_benchmark_folder(folder / "bench", documents=2)
    path = folder / "capped.toml"
    path.write_text(CONFIG.format(base_url=base_url, price=price))
    return path


def spent(run_dir: Path) -> float:
    return sum((r.cost.total or 0.0) for r in read_records(run_dir / "records.jsonl") if r.cost)


def test_the_cap_stops_the_run_and_a_higher_cap_resumes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    run_dir = results / "capped"
    with LLMStub(answering) as stub:
        config = write_config(tmp_path, stub.openai_base_url)
        argv = [
            "run",
            str(config),
            "--results",
            str(results),
            "--quiet",
            "--limit",
            "4",
            "--concurrency",
            "1",
        ]
        # 8 samples of 0.03 USD: under a cap of 0.10 three run (0.09), the fourth would pass it.
        assert main([*argv, "--max-cost", "0.10"]) == 3
        err = capsys.readouterr().err
        (line,) = [line for line in err.splitlines() if line.startswith("docab run:")]
        assert "stopped at the spend cap: $0.0900 spent of $0.1000 allowed" in line
        assert "5 sample(s) were not started" in line
        records = list(read_records(run_dir / "records.jsonl"))
        assert len(records) == 3 and {r.status for r in records} == {"ok"}
        assert all(r.cost is not None and r.cost.total == pytest.approx(PER_SAMPLE) for r in records)
        assert spent(run_dir) == pytest.approx(0.09)
        command = line.split("to go on, raise the cap: ", 1)[1]
        words = shlex.split(command)
        assert words[0] == "docab" and words[-2:] == ["--max-cost", "0.24"]

        # The same cap again: nothing fits, nothing runs.
        assert main([*argv, "--max-cost", "0.10"]) == 3
        assert len(list(read_records(run_dir / "records.jsonl"))) == 3
        capsys.readouterr()

        # The command it printed, with the cap it estimated, finishes the run.
        assert main(words[1:]) == 0
        records = list(read_records(run_dir / "records.jsonl"))
        assert len(records) == 8 and {r.status for r in records} == {"ok"}
        assert spent(run_dir) == pytest.approx(8 * PER_SAMPLE)
        out = capsys.readouterr().out
        assert "resuming; 3 samples already recorded, 5 to run" in out
        assert "Cost (USD)" in out
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["arms"][0]["cost"]["total"] == pytest.approx(4 * PER_SAMPLE)
        assert summary["prices"][0]["origin"] == "config"


def test_samples_in_flight_finish_and_are_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def slow(protocol: str, request: Request) -> Reply:
        return dataclasses.replace(answering(protocol, request), delay=0.05)

    results = tmp_path / "results"
    with LLMStub(slow) as stub:
        config = write_config(tmp_path, stub.openai_base_url)
        code = main(
            [
                "run",
                str(config),
                "--results",
                str(results),
                "--quiet",
                "--concurrency",
                "4",
                "--max-cost",
                "0.20",
            ]
        )
    assert code == 3
    records = list(read_records(results / "capped" / "records.jsonl"))
    # One sample ran alone for an estimate; then at most the cap's worth started, every one recorded whole.
    assert 1 < len(records) < 16 and {r.status for r in records} == {"ok"}
    assert spent(results / "capped") <= 0.20 + 1e-9
    transcripts = list((results / "capped" / "transcripts").rglob("*.json"))
    assert len(transcripts) == len(records)
    assert "stopped at the spend cap" in capsys.readouterr().err


def test_a_cap_needs_a_known_price(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, "https://models.example/v1", price="")
    code = main(["run", str(config), "--results", str(tmp_path / "r"), "--quiet", "--max-cost", "5"])
    assert code == 2
    err = capsys.readouterr().err
    assert "a spend cap needs the price of every model" in err and "openai/stub-model" in err
    assert "[model] price" in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["0", "-1", "abc", "inf"])
def test_max_cost_must_be_a_positive_amount(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "demo", "--max-cost", value]) == 2
    assert "--max-cost" in capsys.readouterr().err


def recorded(guard: SpendGuard, arm: str, cost: SampleCost | None) -> None:
    """A sample of ``arm`` recorded at ``cost``: its calls were charged as they returned (the
    sample's meter), then the record feeds the estimate."""
    if cost is not None:
        guard.charge(cost.priced, cost.unpriced)
    guard.finished(arm, cost)


def test_the_guard_estimates_per_arm_and_stops_for_good() -> None:
    guard = SpendGuard.from_costs(1.0, [("a", SampleCost({"agent": 0.1})), ("b", SampleCost({"agent": 0.3}))])
    assert guard.spent == pytest.approx(0.4)
    assert guard.estimate("a") == pytest.approx(0.1) and guard.estimate("b") == pytest.approx(0.3)
    assert guard.estimate("c") == pytest.approx(0.2)  # an arm with nothing done: every arm's mean
    assert guard.may_start("b") and guard.may_start("b")  # 0.4 + 0.3 + 0.3 = 1.0: allowed
    assert not guard.may_start("a")  # 0.4 + 0.6 in flight + 0.1 > 1.0
    assert not guard.may_start("a")  # once refused, always
    recorded(guard, "b", SampleCost({"agent": 0.3}))
    stop = guard.stop()
    assert stop == SpendStop(cap=1.0, spent=pytest.approx(0.7), per_sample=pytest.approx(0.7 / 3))
    assert guard.started == 2


def test_without_an_estimate_one_sample_runs_alone_first() -> None:
    async def scenario() -> list[str]:
        guard = SpendGuard(cap=1.0)
        order: list[str] = []

        async def sample(name: str, cost: float) -> None:
            if await guard.admit("a"):
                order.append(f"start {name}")
                await asyncio.sleep(0.01)
                recorded(guard, "a", SampleCost({"agent": cost}))
                order.append(f"end {name}")

        await asyncio.gather(sample("1", 0.6), sample("2", 0.6), sample("3", 0.6))
        return order

    # The first sample shows one costs 0.6: a second would pass the cap of 1.0, so none starts.
    assert asyncio.run(scenario()) == ["start 1", "end 1"]


def test_the_resume_command_repeats_the_command_with_the_new_cap() -> None:
    argv = ["run", "my run.toml", "--max-cost", "10", "--limit", "5"]
    assert resume_command(argv, 12.341) == "docab run 'my run.toml' --limit 5 --max-cost 12.35"
    assert resume_command(["run", "x.toml", "--max-cost=3"], 4) == "docab run x.toml --max-cost 4.00"


def test_a_sample_that_cost_nothing_gives_no_estimate_and_the_next_still_runs_alone() -> None:
    # The first sample fails on a 503 burst before any billed reply ($0); each later one costs 1.0.
    # Counted in the mean, it made the estimate $0: all eight started at once and a cap of 2 ran to 8.
    async def scenario() -> tuple[list[str], float]:
        guard = SpendGuard(cap=2.0)
        order: list[str] = []

        async def sample(name: str, cost: float) -> None:
            if await guard.admit("a"):
                order.append(f"start {name}")
                await asyncio.sleep(0.01)
                recorded(guard, "a", SampleCost({"agent": cost}) if cost else None)
                order.append(f"end {name}")

        await asyncio.gather(sample("1", 0.0), *(sample(str(n), 1.0) for n in range(2, 9)))
        return order, guard.spent

    order, spent = asyncio.run(scenario())
    assert order == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]
    assert spent == pytest.approx(2.0)


def test_a_call_of_unknown_cost_stops_a_capped_run_saying_why() -> None:
    # An endpoint whose replies carry no usage: the sample's cost is unknown, not $0.
    guard = SpendGuard(cap=1.0)
    assert guard.may_start("a") and guard.may_start("a")
    recorded(
        guard, "a", SampleCost({"agent": 0.1}, unpriced=("openai/gpt-4o (replies without token usage)",))
    )
    assert not guard.may_start("a")
    stop = guard.stop()
    assert stop is not None and stop.unknown == ("openai/gpt-4o (replies without token usage)",)
    assert "cannot be kept" in stop.message() and "replies without token usage" in stop.message()


PER_CALL = PER_SAMPLE / 2


def journal_total(run_dir: Path) -> float:
    lines = [json.loads(line) for line in (run_dir / "spend.jsonl").read_text().splitlines()]
    return sum(line["usd"] for line in lines if "opened" not in line)  # calls as they return


def test_long_samples_in_flight_stop_at_the_cap_and_what_they_spent_still_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first sample is short (2 calls), every later one long (12 calls). With the estimate as
    the only brake, eight workers ran a $30 cap to $109: the samples it let start ran to the end.
    Now a sample in flight makes no call once the cap is spent; it is left unrecorded, and what
    its calls cost is in the spend journal, which the next session counts."""
    conversations: list[str] = []

    def short_then_long(protocol: str, request: Request) -> Reply:
        messages = request.json()["messages"]
        first = json.dumps(messages[:2])
        if first not in conversations:
            conversations.append(first)
        turns = 2 if conversations.index(first) == 0 else 12
        done = sum(1 for m in messages if m["role"] == "tool")
        if done < turns - 1:
            call = (f"c{done}", "read_file", json.dumps({"path": "document/document.md"}))
        else:
            call = (f"c{done}", "submit_answer", json.dumps({"status": "answered", "answer": "1980"}))
        return openai_reply(None, tool_calls=[call], delay=0.01)

    results = tmp_path / "results"
    run_dir = results / "capped"
    cap, concurrency = 0.5, 4
    with LLMStub(short_then_long) as stub:
        config = write_config(tmp_path, stub.openai_base_url)
        argv = ["run", str(config), "--results", str(results), "--quiet", "--concurrency", str(concurrency)]
        assert main([*argv, "--max-cost", str(cap)]) == 3
        billed = len(stub.requests_for("openai")) * PER_CALL
        said = capsys.readouterr()
        assert "stopped at the spend cap" in said.err and "billed and not in the records: $" in said.out
        # At most one call per worker past the cap (the estimate alone: 4 samples of 12 calls).
        assert cap <= billed <= cap + concurrency * PER_CALL + 1e-9
        assert journal_total(run_dir) == pytest.approx(billed)
        records = list(read_records(run_dir / "records.jsonl"))
        assert {r.status for r in records} == {"ok"}  # the samples cut short are not recorded
        assert spent(run_dir) < billed - PER_CALL  # so the records alone undercount the bill

        # The report says what was billed beyond the records (its cost table counts records).
        from docab.report.summary import build_report, load_run

        report = build_report(load_run(run_dir)).summary
        assert report.unrecorded_usd == pytest.approx(billed - spent(run_dir))
        assert any("billed for samples that have no record" in w for w in report.warnings)

        # The same cap again: what was billed counts, so nothing more is spent.
        calls = len(stub.requests_for("openai"))
        assert main([*argv, "--max-cost", str(cap)]) == 3
        assert f"${billed:.4f} spent so far" in capsys.readouterr().out
        assert len(stub.requests_for("openai")) == calls


def test_the_journal_of_a_run_begun_without_one_opens_with_what_its_records_cost(tmp_path: Path) -> None:
    from docab.log.spend_journal import SpendJournal, SpendTotals, read_spend

    path = tmp_path / "spend.jsonl"
    journal = SpendJournal(path)
    assert journal.open(SpendTotals(usd=1.5)).usd == 1.5  # the records' cost, as opening balance
    journal.append(("a", "q", 0), 0.25, (), ())
    journal.close()
    with path.open("a") as handle:
        handle.write('{"usd": 9')  # a line a kill cut short
    reopened = SpendJournal(path)
    totals = reopened.open(SpendTotals(usd=100.0))  # the records no longer count: the journal does
    reopened.close()
    assert (totals.usd, totals.calls) == (1.75, 1) and read_spend(path) == totals
    assert path.read_text().endswith("}\n")  # the cut line is gone


def test_a_recorded_sample_charges_what_its_calls_did_not_the_tool_side_tokens(tmp_path: Path) -> None:
    """Model calls are charged as they return; MCP servers' own model tokens (role tool-side)
    reach the run only with the sample's record, and are charged then, once."""
    from docab.log.spend_journal import SpendJournal, SpendTotals, read_spend
    from docab.pricing import PriceBook
    from docab.runner.spend import SampleMeter
    from docab.usage import Usage

    journal = SpendJournal(tmp_path / "spend.jsonl")
    journal.open(SpendTotals())
    guard = SpendGuard(cap=10.0)
    prices = PriceBook.for_models([])
    meter = SampleMeter(("fs", "q1", 0), prices, journal, guard)
    call = Usage(input_uncached=1000, output=100, model="openai/gpt-4o")
    meter.charge([call])
    agent_usd = guard.spent
    assert agent_usd > 0
    tool_side = Usage(input_uncached=2000, output=10, role="tool-side", model="openai/gpt-4o")
    meter.settle(prices.sample_cost([call, tool_side]))
    meter.settle(prices.sample_cost([call, tool_side]))  # settled once: nothing more
    journal.close()
    assert guard.spent == pytest.approx(prices.sample_cost([call, tool_side]).priced)
    totals = read_spend(tmp_path / "spend.jsonl")
    assert totals is not None and totals.usd == pytest.approx(guard.spent) and totals.calls == 2
