"""``docab demo`` end to end: the built-in suite, both arms, md-vision over stdio, the report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docab.log.store import read_records
from tests.conftest import REPO_ROOT


def demo(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("md-vision") is None:
        pytest.skip("the md-vision server (tools/md_vision) is not installed in this checkout")
    env = {**os.environ, "DOCAB_CACHE": str(tmp_path / "cache")}  # the suite is built here, not in ~/.cache
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "docab.cli.main",
            "demo",
            "--results",
            str(tmp_path / "results"),
            "--quiet",
            *flags,
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def check_run(tmp_path: Path, questions: int) -> list:  # type: ignore[type-arg]
    folder = tmp_path / "results" / "demo"
    records = list(read_records(folder / "records.jsonl"))
    assert len(records) == 2 * questions
    assert {r.arm for r in records} == {"fs", "fs+md-vision"}
    assert all(r.status == "ok" and r.model == "baseline/keyword" for r in records), [
        r.errors for r in records
    ]
    md = [r for r in records if r.arm == "fs+md-vision"]
    # The fair policy: the same search in both arms, each arm's reader for the read.
    assert all({c.name for c in r.tool_calls} == {"grep", "read_md_with_images", "submit_answer"} for r in md)
    fs = [r for r in records if r.arm == "fs"]
    assert all({c.name for c in r.tool_calls} == {"grep", "read_file", "submit_answer"} for r in fs)
    assert any(r.pages_read for r in md)
    assert all(r.status != "limit" and r.turns <= 4 for r in records)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["dataset"]["version"].startswith("docab-suite/")
    assert "read_md_with_images" in manifest["mcp_servers"]["md-vision"]
    assert (folder / "report.md").exists() and (folder / "summary.json").exists()
    return records


def test_demo_runs_both_arms_through_md_vision(tmp_path: Path) -> None:
    first = demo(tmp_path, "--limit", "4", "--concurrency", "1")
    assert first.returncode == 0, first.stderr
    assert "offline baseline policy, not a model result" in first.stdout
    check_run(tmp_path, 4)


@pytest.mark.slow
def test_the_whole_demo_and_its_rerun(tmp_path: Path) -> None:
    result = demo(tmp_path)
    assert result.returncode == 0, result.stderr
    records = check_run(tmp_path, 29)
    assert sum(r.score for r in records) > 0
    again = demo(tmp_path)  # the same command again: everything is recorded, nothing runs twice
    assert again.returncode == 0 and "nothing to run" in again.stdout
    assert len(check_run(tmp_path, 29)) == 58


def model_visible_text(transcript: dict) -> str:  # type: ignore[type-arg]
    """Everything a transcript says the model was shown: system prompt, tools, messages, results."""
    parts = [transcript["system"], json.dumps(transcript["tools"])]
    for event in transcript["events"]:
        if event["type"] in ("message", "tool_result"):
            parts += [block.get("text", "") for block in event.get("content", [])]
    return "\n".join(parts)


def test_nothing_the_model_sees_names_the_run_an_arm_a_question_or_the_workspace(demo_run: Path) -> None:
    """Finding 10 of issue 13: md-vision results showed the absolute workspace path, whose folder
    was named after the run. Now every path the model sees is relative, the same in every sample."""
    import tempfile

    records = list(read_records(demo_run / "records.jsonl"))
    sources = set()
    for record in records:
        transcript = json.loads((demo_run / record.transcript).read_text())
        seen = model_visible_text(transcript)
        for leak in (tempfile.gettempdir(), "docab-", record.qid, "fs+md-vision", "/w00", record.run_id):
            assert leak not in seen, (record.arm, record.qid, leak)
        for event in transcript["events"]:
            meta = (event.get("meta") or {}).get("io.github.docab/md-vision")
            if meta:
                sources.add(meta["source"])
    assert sources == {"document/document.md"}
