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
    assert all({"index_md", "read_md_with_images"} <= {c.name for c in r.tool_calls} for r in md)
    assert any(r.pages_read for r in md)
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
