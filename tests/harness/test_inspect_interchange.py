"""The Inspect AI interchange (issue 17): a run exported as Inspect eval logs and read back by Inspect
and by docab; the docab Inspect task run with ``mockllm`` and reported by ``docab report`` / ``compare``."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import defaultdict
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.interchange import InspectUnavailable, require_inspect_ai
from docab.report.summary import build_report, load_run
from tests.conftest import REPO_ROOT
from tests.harness.synthetic_runs import make_record, random_run, write_run

inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect-ai is a dev dependency of docab")

from docab.interchange.inspect_files import log_file_name  # noqa: E402  (needs inspect_ai)


def arm_log(folder: Path, arm: str) -> Path:
    """The one log of ``arm`` in ``folder``: ``<arm>-<eval id>.eval``, as the README names it."""
    (found,) = [
        p for p in folder.glob("*.eval") if p.name.rsplit("-", 1)[0] == log_file_name(arm, "eval", "x")[:-7]
    ]
    return found


def _accuracy_per_arm_from_inspect(paths: list[Path]) -> dict[str, float]:
    """Accuracy as Inspect's own reader gives it: per question the mean over epochs, then the mean."""
    found: dict[str, float] = {}
    for path in paths:
        log = inspect_log.read_eval_log(str(path))
        by_question: dict[str | int, list[float]] = defaultdict(list)
        for sample in log.samples or []:
            by_question[sample.id].append(float(sample.scores["docab"].value))
        arm = log.eval.metadata["docab"]["arm"]
        found[arm] = sum(sum(v) / len(v) for v in by_question.values()) / len(by_question)
        assert log.results is not None
        assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(found[arm])
    return found


# -- export -----------------------------------------------------------------------------------------------


def test_the_demos_export_reads_back_with_the_reports_accuracy(demo_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "logs"
    assert main(["export", str(demo_run), "--format", "inspect", "-o", str(out)]) == 0
    paths = sorted(out.glob("*.eval"))
    assert len(paths) == 2
    report = build_report(load_run(demo_run)).summary
    expected = {arm.arm: arm.accuracy.value for arm in report.arms}
    assert _accuracy_per_arm_from_inspect(paths) == pytest.approx(expected)

    log = inspect_log.read_eval_log(str(arm_log(out, "fs")))
    assert log.status == "success" and log.eval.model == "baseline/keyword" and len(log.samples or []) == 29
    sample = (log.samples or [])[0]
    roles = [m.role for m in sample.messages]
    assert roles[:2] == ["system", "user"] and "assistant" in roles and "tool" in roles
    calls = [c.function for m in sample.messages if m.role == "assistant" for c in (m.tool_calls or [])]
    assert "submit_answer" in calls
    assert sample.model_usage["baseline/keyword"].input_tokens > 0 and sample.target
    assert sample.metadata["doc_id"] and sample.total_time is not None
    # What inspect view reads first: the header alone and the sample summaries.
    header = inspect_log.read_eval_log(str(arm_log(out, "fs")), header_only=True)
    assert header.samples is None and header.results is not None
    assert len(inspect_log.read_eval_log_sample_summaries(str(arm_log(out, "fs")))) == 29

    # docab reads its own export back: the same records, so the same report.
    again = build_report(load_run(out)).summary
    assert [(a.arm, a.accuracy.value, a.f1.value) for a in again.arms] == [
        (a.arm, a.accuracy.value, a.f1.value) for a in report.arms
    ]
    assert sorted(r.to_dict()["qid"] for r in load_run(out).records) == sorted(
        r.qid for r in load_run(demo_run).records
    )


def test_export_round_trips_every_record_and_warns_of_missing_transcripts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [
        make_record("fs", "q1", "d1", status="limit", limit_hit="turns", epoch=0),
        make_record("fs", "q1", "d1", epoch=1, extractor_tokens=40),
        make_record("fs", "q2", "d2", status="error"),
        make_record("md", "q1", "d1", tools=("index_md", "read_md_with_images"), pages_read=(3,)),
        make_record("md", "q2", "d2", gold="Not answerable", evidence_pages=()),
    ]
    records[1] = dataclasses.replace(records[1], transcript="transcripts/fs/q1.e1.json")
    folder = write_run(tmp_path / "run", records)
    assert main(["export", str(folder), "--format", "inspect"]) == 0
    err = capsys.readouterr().err
    assert "transcripts/fs/q1.e1.json: transcript missing; exported without it" in err
    assert "inspect view --log-dir" in err
    back = load_run(folder / "inspect")
    assert sorted(back.records, key=lambda r: r.key) == sorted(records, key=lambda r: r.key)
    log = inspect_log.read_eval_log(str(arm_log(folder / "inspect", "fs")))
    limited = next(s for s in log.samples or [] if s.id == "q1" and s.epoch == 1)
    assert limited.limit is not None and limited.limit.type == "turn"
    errored = next(s for s in log.samples or [] if s.id == "q2")
    assert errored.error is not None and errored.error.message == "error: boom"
    assert log.stats.role_usage["extractor"].input_tokens == 40
    # Log files as arguments: the report goes beside them.
    files = [str(p) for p in sorted((folder / "inspect").glob("*.eval"))]
    assert main(["report", *files, "--no-plots"]) == 0
    assert (folder / "inspect" / "summary.json").is_file()


def test_export_inspect_refuses_questions_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = random_run(tmp_path / "run", documents=2, per_document=2)
    assert main(["export", str(folder), "--format", "inspect", "--level", "questions"]) == 2
    assert "drop --level" in capsys.readouterr().err


def test_inspect_view_lists_and_serves_the_exported_logs(tmp_path: Path) -> None:
    folder = random_run(tmp_path / "run", documents=2, per_document=3)
    assert main(["export", str(folder), "--format", "inspect"]) == 0
    inspect_cli = shutil.which("inspect", path=os.path.dirname(sys.executable))
    if inspect_cli is None:
        pytest.skip("the inspect command of inspect-ai is not installed beside this Python")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            inspect_cli,
            "view",
            "start",
            "--log-dir",
            str(folder / "inspect"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        listing = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/logs", timeout=5) as response:
                    listing = json.loads(response.read())
                break
            except OSError:
                time.sleep(0.5)
        assert listing is not None, server.stderr.read().decode() if server.stderr else "no server"
        names = {Path(entry["name"]).name: entry["name"] for entry in listing["files"]}
        fs_log = arm_log(folder / "inspect", "fs").name
        assert sorted(names) == sorted([fs_log, arm_log(folder / "inspect", "fs+md-vision").name])
        served = urllib.parse.quote(names[fs_log].removeprefix("file://"))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/logs/{served}", timeout=30) as response:
            log = json.loads(response.read())
        assert log["status"] == "success" and len(log["samples"]) == 6
    finally:
        server.terminate()
        server.wait(timeout=30)


# -- import -----------------------------------------------------------------------------------------------


def test_a_log_of_another_inspect_task_reads_as_a_run(tmp_path: Path) -> None:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    def one_arm(task: str, answers: list[str]) -> Path:
        samples = [
            EvalSample(
                id=i,
                epoch=1,
                input=f"question {i}",
                target="yes",
                output=ModelOutput.from_content("mockllm/model", answer),
                scores={"match": Score(value="C" if answer == "yes" else "I", answer=answer)},
                total_time=1.5,
            )
            for i, answer in enumerate(answers)
        ]
        log = EvalLog(
            status="success",
            eval=EvalSpec(
                created="2026-01-01T00:00:00+00:00",
                task=task,
                dataset=EvalDataset(name="qa"),
                model="mockllm/model",
                config=EvalConfig(),
            ),
            samples=samples,
        )
        path = tmp_path / "logs" / f"{task}.eval"
        write_eval_log(log, str(path))
        return path

    one_arm("baseline", ["yes", "no", "no", "yes"])
    one_arm("treatment", ["yes", "yes", "yes", "yes"])
    run = load_run(tmp_path / "logs")
    assert run.arms == ["baseline", "treatment"]
    assert any("no doc_id" in w for w in run.warnings)
    summary = build_report(run).summary
    assert [a.accuracy.value for a in summary.arms] == [0.5, 1.0]
    assert summary.comparisons and summary.comparisons[0].b == "treatment"


def test_bad_inspect_logs_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.eval"
    bad.write_bytes(b"not a zip")
    assert main(["report", str(bad), "--no-write"]) == 2
    err = capsys.readouterr().err
    assert "broken.eval is not a readable Inspect log" in err and "Traceback" not in err
    run = random_run(tmp_path / "run", documents=2, per_document=2)
    assert main(["report", str(run), str(bad), "--no-write"]) == 2
    assert "not both" in capsys.readouterr().err


# -- without inspect-ai -----------------------------------------------------------------------------------


def test_require_inspect_ai_names_the_package() -> None:
    require_inspect_ai("this test")  # installed here: no error
    with pytest.raises(
        InspectUnavailable, match=r"^exporting needs the inspect-ai package: pip install inspect-ai"
    ):
        require_inspect_ai("exporting", importable=lambda name: False)


def test_docab_works_without_inspect_ai(tmp_path: Path) -> None:
    """Blocks the import of inspect_ai in a fresh interpreter: export to parquet still works, and the
    Inspect format and Inspect logs fail with one line naming the package."""
    folder = random_run(tmp_path / "run", documents=2, per_document=2)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.eval").write_bytes(b"PK")
    script = (
        "import sys; sys.modules['inspect_ai'] = None\n"
        "from docab.cli.main import main\n"
        "codes = [main(['export', sys.argv[1], '-o', sys.argv[2]]), main(['export', sys.argv[1], '--format', "
        "'inspect']), main(['report', sys.argv[3], '--no-write'])]\n"
        "print(codes, 'inspect_ai' in sys.modules and sys.modules['inspect_ai'] is not None)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(folder), str(tmp_path / "r.parquet"), str(tmp_path / "logs")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.stdout.strip() == "[0, 2, 2] False", result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert errors == [
        "docab export: error: --format inspect needs the inspect-ai package: pip install inspect-ai "
        "(in a uv project: uv add inspect-ai)",
        "docab report: error: reading Inspect logs needs the inspect-ai package: pip install inspect-ai "
        "(in a uv project: uv add inspect-ai)",
    ]


def test_only_the_interchange_imports_inspect_ai() -> None:
    harness = REPO_ROOT / "harness" / "docab"
    wrong = []
    for path in sorted(harness.rglob("*.py")):
        inside = (harness / "interchange") in path.parents and path.name != "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n.split(".")[0] == "inspect_ai" for n in names) and not inside:
                wrong.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert not wrong, wrong


# -- the Inspect task -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mock_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run of the docab Inspect task with the scripted mockllm (``inspect_mock_run``), in one
    process: ``demo/`` holds the demo config's two arms on 3 questions, ``extraction/`` the fs arm of
    the same config under the extraction protocol on 2."""
    if shutil.which("md-vision", path=os.path.dirname(sys.executable)) is None:
        pytest.skip("the md-vision server (tools/md_vision) is not installed in this checkout")
    root = tmp_path_factory.mktemp("inspect-task")
    config = root / "extraction.toml"
    demo = (REPO_ROOT / "harness" / "docab" / "configs" / "demo.toml").read_text()
    config.write_text(demo.replace('protocol = "submit_tool"', 'protocol = "extraction"'))
    env = {**os.environ, "DOCAB_CACHE": str(root / "cache"), "INSPECT_LOG_DIR": str(root / "logs")}
    groups = [f"{root / 'demo'}=demo:fs,fs+md-vision", f"{root / 'extraction'}={config}:fs"]
    result = subprocess.run(
        [sys.executable, "-m", "tests.harness.inspect_mock_run", "3", *groups],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(result.stdout.split()) == 3
    return root


def test_the_inspect_task_with_mockllm_gives_logs_docab_reports(
    mock_logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "logs"
    shutil.copytree(mock_logs / "demo", folder)
    logs = sorted(folder.glob("*.eval"))
    assert len(logs) == 2
    run = load_run(folder)
    assert run.arms == ["fs", "fs+md-vision"] and len(run.records) == 6
    assert all(r.status == "ok" and r.model == "mockllm/model" for r in run.records), [
        r.errors for r in run.records
    ]
    assert all(r.turns == 2 and r.tokens() == 100 + 12 + 150 + 12 for r in run.records)
    by_arm = {arm: [r for r in run.records if r.arm == arm] for arm in run.arms}
    assert all([c.name for c in r.tool_calls] == ["read_file"] for r in by_arm["fs"])
    # md-vision ran over stdio through Inspect's MCP client; its reads count as evidence.
    assert all([c.name for c in r.tool_calls] == ["read_md_with_images"] for r in by_arm["fs+md-vision"])
    assert all(
        r.pages_read == (1,) and r.extracted_answer == "Not answerable" for r in by_arm["fs+md-vision"]
    )
    assert all(r.score == (1.0 if r.gold == "Not answerable" else 0.0) for r in run.records)
    summary = build_report(run).summary
    assert summary.comparisons[0].a == "fs" and summary.comparisons[0].b == "fs+md-vision"
    assert main(["report", str(folder), "--no-plots"]) == 0
    assert (folder / "summary.json").exists()
    assert main(["compare", str(logs[0]), str(logs[1])]) == 0
    assert "fs+md-vision" in capsys.readouterr().out
    # Inspect still lists only its logs in the folder docab reported into.
    listed = inspect_log.list_eval_logs(str(folder))
    assert len(listed) == 2


def test_the_inspect_task_under_the_extraction_protocol(mock_logs: Path) -> None:
    run = load_run(mock_logs / "extraction")
    assert len(run.records) == 3
    for record in run.records:
        assert record.answer_protocol == "extraction" and record.status == "ok", record.errors
        assert record.raw_answer == "The document does not say: not answerable."
        assert record.extracted_answer == "Not answerable"
        assert {u.role for u in record.usage} == {"agent", "extractor"}


def test_inspect_finds_the_task_through_the_entry_point() -> None:
    from importlib.metadata import entry_points

    found = {ep.name: ep.value for ep in entry_points(group="inspect_ai")}
    assert found.get("docab") == "docab.interchange.inspect_task"
    from docab.interchange import inspect_task

    assert callable(inspect_task.mmlongbench_doc)
