"""``docab plan RUN_DIR`` end to end: a pilot on the loopback OpenAI stub (a fixed price, a cost
that varies by question), its projection, then the run of the full size, whose actual cost must
fall inside the projected interval; and the built-in suite's offline demo."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.log.store import read_records
from docab.report.schema import Plan, parse_summary
from tests.harness.corpus import write_benchmark_folder
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, openai_reply

CONFIG = """\
name = "{name}"
[dataset]
source = "mmlongbench"
path = "bench/data"
corpus = "bench/corpus"
[model]
name = "openai/stub-model"
base_url = "{base_url}"
max_retries = 0
price = {{ input = 1000, output = 1000, source = "a test price" }}
[[arms]]
name = "fs"
[[arms]]
name = "fs-again"
"""


def question_tokens(body: dict[str, object]) -> int:
    """Prompt tokens that vary by question (and a little by arm), the same on every run."""
    text = json.dumps(body["messages"])
    question = text.split("Question: ", 1)[-1][:80]
    arms = "fs-again" if "fs-again" in text else "fs"
    digest = hashlib.sha256((question + arms).encode()).digest()
    return 20 + digest[0] + (digest[1] % 64)


def answering(protocol: str, request: Request) -> Reply:
    body = request.json()
    tokens = question_tokens(body)
    if not any(m["role"] == "tool" for m in body["messages"]):
        return openai_reply(
            None,
            tool_calls=[("c1", "read_file", json.dumps({"path": "document/document.md"}))],
            prompt_tokens=tokens,
        )
    return openai_reply(
        None,
        tool_calls=[("c2", "submit_answer", json.dumps({"status": "answered", "answer": "1980"}))],
        prompt_tokens=tokens,
    )


def spent(run_dir: Path) -> float:
    return sum((r.cost.total or 0.0) for r in read_records(run_dir / "records.jsonl") if r.cost)


def write_config(folder: Path, name: str, base_url: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(CONFIG.format(name=name, base_url=base_url))
    return path


def test_a_pilot_projects_the_cost_of_the_full_run_on_the_stub(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_benchmark_folder(tmp_path / "bench", documents=12)  # 48 questions on 12 documents
    results = tmp_path / "results"
    with LLMStub(answering) as stub:
        pilot = write_config(tmp_path, "pilot", stub.openai_base_url)
        full = write_config(tmp_path, "full", stub.openai_base_url)
        common = ["--results", str(results), "--quiet", "--concurrency", "2"]
        assert main(["run", str(pilot), *common, "--limit", "12"]) == 0
        assert f"docab plan {results / 'pilot'}" in capsys.readouterr().out  # the run points here
        # (docab run started from a shell finds its config through the manifest; here, in-process, say it)
        plan_argv = ["plan", str(results / "pilot"), "--config", str(pilot), "--format", "json"]
        assert main([*plan_argv, "--mde", "20"]) == 0
        out, err = capsys.readouterr()
        plan = Plan.model_validate_json(out)
        assert "wrote" in err
        assert main(["run", str(full), *common]) == 0
        capsys.readouterr()
    assert plan.pilot_questions == 12 and plan.pilot_documents == 12
    assert plan.full.questions == 48 and plan.full.documents == 12 and plan.full.samples == 96
    cost = plan.full.cost
    assert cost is not None and cost.low is not None and cost.high is not None
    actual = spent(results / "full")
    assert cost.low < actual < cost.high
    assert cost.low < cost.value < cost.high  # type: ignore[operator]
    # what extending the pilot's folder still costs: the full cost less what the pilot spent
    to_go = plan.full.cost_to_go
    assert to_go is not None and to_go.low is not None and to_go.high is not None
    assert to_go.low < actual - spent(results / "pilot") < to_go.high
    assert plan.discordance_source == "pilot bound"  # the stub answers alike in both arms
    assert plan.for_target is not None and plan.for_target.mde is not None
    assert plan.for_target.mde <= 0.20
    # the pilot's report carries the same figures
    summary = parse_summary((results / "pilot" / "summary.json").read_text())
    assert summary.plan == plan
    assert "## Plan: the pilot projected" in (results / "pilot" / "report.md").read_text()


def test_plan_tables_in_the_terminal_and_markdown_and_its_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_benchmark_folder(tmp_path / "bench", documents=3)
    results = tmp_path / "results"
    with LLMStub(answering) as stub:
        pilot = write_config(tmp_path, "pilot", stub.openai_base_url)
        assert main(["run", str(pilot), "--results", str(results), "--quiet", "--limit", "3"]) == 0
    capsys.readouterr()
    run_dir = results / "pilot"
    assert main(["plan", str(run_dir), "--no-write", "--questions", "300", "--documents", "30"]) == 0
    out = capsys.readouterr().out
    assert "planned run: cost (USD)" in out and "300 / 30 / 600" in out
    assert "default discordance" in out  # three documents: too few to plan with its own
    markdown = ["plan", str(run_dir), "--no-write", "--config", str(pilot), "--format", "markdown"]
    assert main([*markdown, "--mde", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Plan from pilot pilot")
    assert "| for a 5-point MDE: MDE, accuracy B − A |" in out
    # written into the pilot's report, which docab report keeps while the pilot is unchanged
    assert main(["plan", str(run_dir), "--questions", "300", "--documents", "30"]) == 0
    assert main(["report", str(run_dir), "--no-plots"]) == 0
    capsys.readouterr()
    assert "## Plan: the pilot projected" in (run_dir / "report.md").read_text()
    summary = parse_summary((run_dir / "summary.json").read_text())
    assert summary.plan is not None and summary.plan.full.questions == 300
    assert main(["plan", str(run_dir), "--mde", "0"]) == 2
    assert "--mde is in points" in capsys.readouterr().err
    assert main(["plan", str(tmp_path / "nowhere")]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_plan_without_a_readable_dataset_asks_for_the_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_benchmark_folder(tmp_path / "bench", documents=2)
    results = tmp_path / "results"
    with LLMStub(answering) as stub:
        pilot = write_config(tmp_path, "pilot", stub.openai_base_url)
        assert main(["run", str(pilot), "--results", str(results), "--quiet", "--limit", "2"]) == 0
    capsys.readouterr()
    # the config file the run was started with is gone: its relative dataset.path cannot be found
    moved = pilot.rename(tmp_path / "elsewhere.toml")
    assert main(["plan", str(results / "pilot"), "--no-write"]) == 2
    err = capsys.readouterr().err
    assert "give --questions N" in err
    assert main(["plan", str(results / "pilot"), "--no-write", "--config", str(moved)]) == 0
    assert "8 / 2 / 16" in capsys.readouterr().out
