"""CI gate on retrieval quality: the whole demo against its committed baseline run.

The demo's agent is a deterministic policy, so every question's score and the pages it read are
reproducible. A change that makes any question score lower, or read fewer of the pages it read
before, fails here with the questions named; improvements pass and are reported. This is the
strict, per-question side of the gate; `.ci/run` also runs `docab compare` on the same baseline
(the statistical side, the one users copy for their own runs). To accept a deliberate change,
refresh the baseline run:

    DOCAB_UPDATE_BASELINE=1 uv run pytest tests/harness/test_demo_gate.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from docab.log.store import read_records
from tests.conftest import REPO_ROOT

BASELINE = REPO_ROOT / "results" / "baselines" / "demo"  # records.jsonl and manifest.json of a demo run


def snapshot(records) -> dict:  # type: ignore[no-untyped-def]
    arms: dict[str, dict[str, dict]] = {}
    for record in records:
        arms.setdefault(record.arm, {})[record.qid] = {
            "score": round(record.score, 6),
            "pages_read": sorted(record.pages_read),
        }
    return {arm: dict(sorted(questions.items())) for arm, questions in sorted(arms.items())}


def regressions(baseline: dict, current: dict) -> tuple[list[str], list[str]]:
    """What got worse (score down, evidence pages lost, questions gone) and what got better."""
    worse, better = [], []
    for arm, questions in baseline.items():
        for qid, before in questions.items():
            now = current.get(arm, {}).get(qid)
            if now is None:
                worse.append(f"{arm} {qid}: missing from the run")
                continue
            if now["score"] < before["score"]:
                worse.append(f"{arm} {qid}: score {before['score']} -> {now['score']}")
            elif now["score"] > before["score"]:
                better.append(f"{arm} {qid}: score {before['score']} -> {now['score']}")
            lost = sorted(set(before["pages_read"]) - set(now["pages_read"]))
            if lost:
                worse.append(f"{arm} {qid}: no longer reads pages {lost}")
    return worse, better


def test_regressions_name_each_question() -> None:
    base = {"fs": {"q1": {"score": 1.0, "pages_read": [1, 2]}, "q2": {"score": 0.0, "pages_read": []}}}
    now = {"fs": {"q1": {"score": 0.0, "pages_read": [2]}, "q2": {"score": 1.0, "pages_read": [3]}}}
    worse, better = regressions(base, now)
    assert worse == ["fs q1: score 1.0 -> 0.0", "fs q1: no longer reads pages [1]"]
    assert better == ["fs q2: score 0.0 -> 1.0"]
    assert regressions(base, {"fs": {}})[0] == ["fs q1: missing from the run", "fs q2: missing from the run"]


def test_the_demo_does_not_regress_against_its_baseline(demo_run: Path) -> None:
    current = snapshot(read_records(demo_run / "records.jsonl"))
    if os.environ.get("DOCAB_UPDATE_BASELINE") == "1":
        BASELINE.mkdir(parents=True, exist_ok=True)
        for name in ("records.jsonl", "manifest.json"):
            shutil.copyfile(demo_run / name, BASELINE / name)
    baseline = snapshot(read_records(BASELINE / "records.jsonl"))
    worse, better = regressions(baseline, current)
    if better:
        print("improved (refresh the baseline to keep the gain):\n  " + "\n  ".join(better))
    assert not worse, "retrieval quality regressed against results/baselines/demo/:\n  " + "\n  ".join(worse)


def test_docab_compare_passes_the_demo_against_its_baseline(demo_run: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from docab.cli.main import main

    gate = REPO_ROOT / "results" / "baselines" / "gate.toml"
    code = main(
        [
            "compare",
            str(BASELINE),
            str(demo_run),
            "--gate",
            str(gate),
            "--format",
            "json",
        ]
    )
    assert code == 0, capsys.readouterr().err
    document = json.loads(capsys.readouterr().out)
    assert len(document["comparisons"]) == 2 and document["passed"] is True
    gated = {c["metric"]: c["verdict"] for c in document["comparisons"][1]["checks"]}
    assert gated == {
        "accuracy": "pass",
        "F1": "pass",
        "evidence recall": "pass",
        "tokens": "pass",
        "latency": "not gated",
    }


def test_two_runs_differing_only_in_seed_pass_docab_compare(demo_run: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The seed orders arms and questions; it must not move any figure the gate tests (issue 13)."""
    from docab.cli.main import main

    config = REPO_ROOT / "harness" / "docab" / "configs" / "demo.toml"
    env = {**os.environ, "DOCAB_CACHE": str(demo_run.parent.parent / "cache")}  # the demo's built suite
    done = subprocess.run(
        [
            *(sys.executable, "-m", "docab.cli.main", "run", str(config)),
            *("--set", "seed=9173", "--out", str(tmp_path / "reseeded"), "--quiet"),
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    manifests = [json.loads((run / "manifest.json").read_text()) for run in (demo_run, tmp_path / "reseeded")]
    assert [m["config"]["seed"] for m in manifests] == [0, 9173]
    gate = REPO_ROOT / "results" / "baselines" / "gate.toml"
    code = main(
        ["compare", str(demo_run), str(tmp_path / "reseeded"), "--gate", str(gate), "--format", "json"]
    )
    assert code == 0, capsys.readouterr().err
    document = json.loads(capsys.readouterr().out)
    assert document["passed"] is True and len(document["comparisons"]) == 2
    assert snapshot(read_records(demo_run / "records.jsonl")) == snapshot(
        read_records(tmp_path / "reseeded" / "records.jsonl")
    )
