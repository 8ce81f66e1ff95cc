"""Exit codes a CI can trust, and ``--retry-errors``: a failed run fails, and is completed in place.

A run whose samples end in errors exits 1 with one line of causes; ``--retry-errors`` runs those
samples again once the endpoint is back, appending records; the newest record of a sample then
stands everywhere: resume, the report, the merge, the export and the viewer.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.log.merge import merge_runs
from docab.log.records import RunRecord
from docab.log.store import read_records
from docab.report.summary import load_run
from docab.runner.failures import cause_of, tally_errors
from docab.runner.schedule import newest_per_key
from docab.viewer.writer import write_viewer
from tests.harness.corpus import write_benchmark_folder
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, error_reply, openai_reply


def record(qid: str, status: str = "ok", errors: tuple[str, ...] = (), arm: str = "fs") -> RunRecord:
    return RunRecord(
        run_id="r",
        arm=arm,
        qid=qid,
        doc_id="d",
        epoch=0,
        model="openai/m",
        status=status,  # type: ignore[arg-type]
        score=0.0,
        answer_protocol="submit_tool",
        raw_answer="",
        extracted_answer="",
        gold="x",
        answer_format="Str",
        errors=errors,
    )


def test_errors_are_tallied_by_cause_and_wrong_answers_and_limits_do_not_count() -> None:
    refused = "model call failed (connection): agent model openai/m at http://h/v1: connection refused"
    records = [
        record("a", "error", (refused + " (after 4 retries)",)),
        record("b", "error", (refused + " (after 2 retries)",)),
        record("c", "timeout", ("model call failed (timeout): no answer within 120 s",)),
        record("d", "limit", ("turn limit reached",)),
        record("e", "ok"),
    ]
    tally = tally_errors(records)
    assert (tally.samples, tally.errored) == (5, 3)
    assert tally.causes[0] == (refused, 2)  # retry counts stripped, so equal causes group
    assert tally.exceeds(0.0) and tally.exceeds(0.5) and not tally.exceeds(0.6)
    line = tally.summary(0.0)
    assert "\n" not in line
    assert line.startswith("3 of 5 samples (60%) ended in an error or timeout (none allowed): 2 × model call")
    assert not tally_errors([record("e"), record("d", "limit")]).exceeds(0.0)
    assert cause_of(record("z", "error")) == "status error with no error recorded"


def test_the_newest_record_of_a_sample_stands() -> None:
    first, retried, other = record("a", "error"), record("a", "ok"), record("b", "ok")
    assert newest_per_key([first, other, retried]) == [retried, other]


# -- a run against an endpoint that goes away and comes back ------------------------------------------


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
name = "flaky"
[dataset]
source = "mmlongbench"
path = "bench/data"
corpus = "bench/corpus"
[model]
name = "openai/stub-model"
base_url = "{base_url}"
max_retries = 0
# These tests need every sample of a dead endpoint recorded as an error; the circuit breaker would
# stop such a run instead (tests/harness/test_breaker.py). A run control: not in the config's hash.
[breaker]
enabled = false
[[arms]]
name = "fs"
[[arms]]
name = "fs-again"
"""


def write_config(folder: Path, base_url: str) -> Path:
    write_benchmark_folder(folder / "bench", documents=2)
    path = folder / "flaky.toml"
    path.write_text(CONFIG.format(base_url=base_url))
    return path


def docab_run(config: Path, results: Path, *flags: str) -> int:
    return main(["run", str(config), "--results", str(results), "--quiet", *flags])


def test_a_run_whose_samples_error_exits_1_with_one_line_of_causes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def refusing(protocol: str, request: Request) -> Reply:
        return error_reply("openai", 400, "this server cannot use tools")

    with LLMStub(refusing) as stub:
        config = write_config(tmp_path, stub.openai_base_url)
        code = docab_run(config, tmp_path / "results", "--limit", "2")
        err = capsys.readouterr().err
        assert code == 1
        (line,) = [line for line in err.splitlines() if line.startswith("docab run:")]
        assert line.startswith(
            "docab run: 4 of 4 samples (100%) ended in an error or timeout (none allowed): "
        )
        assert (
            f"4 × model call failed (api): agent model openai/stub-model at {stub.openai_base_url}: HTTP 400: "
            in line
        )
        assert "this server cannot use tools" in line and line.endswith("--retry-errors")
        # Allowed by a flag, or by the config's own key: the same run exits 0.
        assert docab_run(config, tmp_path / "results", "--limit", "2", "--max-error-share", "100%") == 0
        assert "nothing to run; 4 of them ended in an error or timeout" in capsys.readouterr().out
        config.write_text(
            config.read_text().replace('name = "flaky"\n', 'name = "flaky"\nmax_error_share = 1.0\n')
        )
        assert docab_run(config, tmp_path / "results", "--limit", "2") == 0  # not in the hash: same run
    assert main(["run", str(config), "--max-error-share", "1.5"]) == 2
    assert "between 0 and 1" in capsys.readouterr().err


def test_retry_errors_completes_the_run_once_the_stub_is_back_and_every_reader_agrees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = LLMStub(answering).start()
    port, base = stub.server.port, stub.openai_base_url
    stub.stop()
    config = write_config(tmp_path, base)
    results = tmp_path / "results"
    run_dir = results / "flaky"

    # The server went away mid-run (no preflight to stop it first): every sample is an error.
    assert docab_run(config, results, "--no-preflight") == 1
    assert "16 × model call failed (connection)" in capsys.readouterr().err
    errored = (run_dir / "records.jsonl").read_bytes()
    assert {r.status for r in read_records(run_dir / "records.jsonl")} == {"error"}
    # Resuming does not retry them, and says how to.
    assert docab_run(config, results) == 1
    assert "--retry-errors runs them again" in capsys.readouterr().out

    with LLMStub(answering, port=port):  # the server is back, at the same address
        assert docab_run(config, results, "--retry-errors") == 0
        out = capsys.readouterr().out
        assert "running again 16 sample(s) that ended in an error or timeout" in out
        assert docab_run(config, results, "--retry-errors") == 0  # nothing left to retry
        assert "nothing to run" in capsys.readouterr().out

    # Append-only: the errored records are all still there, first.
    written = (run_dir / "records.jsonl").read_bytes()
    assert written.startswith(errored) and len(written.splitlines()) == 32
    newest = newest_per_key(read_records(run_dir / "records.jsonl"))
    assert len(newest) == 16 and {r.status for r in newest} == {"ok"}
    # The errored attempts' transcripts are kept; each retry's is its own file.
    assert all(r.transcript and r.transcript.endswith(".retry1.json") for r in newest)
    assert all((run_dir / r.transcript).is_file() for r in newest)
    assert all((run_dir / r.transcript.replace(".retry1.json", ".json")).is_file() for r in newest)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert [s["retry_errors"] for s in manifest["sessions"]] == [False, False, True, True]

    # The report, the export, the merge and the viewer read the same newest records.
    run = load_run(run_dir)
    assert len(run.records) == 16 and {r.status for r in run.records} == {"ok"} and not run.warnings
    assert main(["export", str(run_dir), "--format", "csv"]) == 0
    (exported,) = run_dir.glob("records.csv")
    rows = list(csv.DictReader(exported.open()))
    assert len(rows) == 16 and {row["status"] for row in rows} == {"ok"}
    merged = merge_runs([run_dir], tmp_path / "merged")
    assert merged.records == 16 and merged.duplicates == 0 and not merged.warnings
    assert {r.status for r in read_records(tmp_path / "merged" / "records.jsonl")} == {"ok"}
    viewer = write_viewer(run_dir, draw_plots=False)
    assert viewer.records == 16 and viewer.transcripts == 16 and not viewer.problems
    shown = "".join(p.read_text() for p in (run_dir / "viewer" / "transcripts").iterdir())
    assert "connection refused" not in shown  # the retries' transcripts, not the errored ones
