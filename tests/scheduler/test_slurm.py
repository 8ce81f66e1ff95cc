"""The documentation's Slurm recipe (docs/sharding.md) on a real Slurm: a single-node cluster from Debian's packages runs the
its array script for the demo with 4 tasks (each ``--shard auto``, reading the variables Slurm
itself sets), a dependent job merges the shards and reports, and the merged run equals the
unsharded demo record for record.

Marked ``slurm`` (not in the default run: it starts three daemons and runs the demo five times);
``uv run pytest -m slurm`` runs it, and ``.ci/run`` does after installing ``slurm-wlm`` and
``munge``. It needs root (slurmd starts jobs as their user) and skips with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from docab.log.records import RunRecord
from docab.log.store import read_records
from tests.conftest import REPO_ROOT
from tests.support.slurm_cluster import SlurmCluster, SlurmUnavailable

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(900)]

TASKS = 4


def readme_array_script() -> str:
    """The sbatch script of the documentation's "A Slurm array" recipe (docs/sharding.md, moved
    there from the README with the rest of the sharding page), as a user would copy it."""
    readme = (REPO_ROOT / "docs" / "sharding.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
    scripts = [b for b in blocks if b.startswith("#!/bin/bash") and "docab-shards.sbatch" in b]
    assert len(scripts) == 1, "docs/sharding.md must hold exactly one docab-shards.sbatch script"
    return scripts[0]


@pytest.fixture(scope="module")
def cluster() -> Iterator[SlurmCluster]:
    try:
        with SlurmCluster() as running:
            yield running
    except SlurmUnavailable as exc:
        pytest.skip(f"no single-node Slurm here: {exc}")


def comparable(record: RunRecord) -> dict[str, object]:
    """What a record says about its question, without when, how fast or in which run it ran."""
    return {
        "status": record.status,
        "score": record.score,
        "raw_answer": record.raw_answer,
        "extracted_answer": record.extracted_answer,
        "turns": record.turns,
        "tool_calls": [(c.name, json.dumps(c.arguments, sort_keys=True)) for c in record.tool_calls],
        "tokens": [(u.role, u.input_total, u.output) for u in record.usage],
        "pages_read": record.pages_read,
        "page_shares": record.page_shares,
        "errors": record.errors,
    }


def by_key(folder: Path) -> dict[tuple[str, str, int], dict[str, object]]:
    records = list(read_records(folder / "records.jsonl"))
    keyed = {r.key: comparable(r) for r in records}
    assert len(keyed) == len(records), f"{folder}: duplicated records"
    return keyed


def test_the_readme_array_script_shards_the_demo_on_a_real_slurm(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    if shutil.which("uv") is None:
        pytest.skip("the README's script runs `uv run docab`; uv is not on PATH")
    script = tmp_path / "docab-shards.sbatch"
    script.write_text(readme_array_script())
    results = tmp_path / "results"
    logs = tmp_path / "logs"
    logs.mkdir()
    # sbatch passes the submitting environment to the jobs: the built-in suite is made here.
    cluster.env["DOCAB_CACHE"] = str(tmp_path / "cache")

    # As the README submits it: an array of shards, then a merge that waits for all of them.
    run = cluster.sbatch(
        f"--array=1-{TASKS}",
        f"--chdir={REPO_ROOT}",
        f"--output={logs}/%x-%A_%a.out",  # the command line wins over the script's #SBATCH line
        str(script),
        "run",
        "demo",
        "--results",
        str(results),
        "--quiet",
        cwd=tmp_path,
    )
    merge = cluster.sbatch(
        f"--dependency=afterok:{run}",
        f"--chdir={REPO_ROOT}",
        f"--output={logs}/merge.out",
        "--wrap",
        f"uv run docab merge {results}/demo.shard-*-of-{TASKS} --out {results}/demo "
        f"&& uv run docab report {results}/demo",
        cwd=tmp_path,
    )
    states = cluster.wait([run, merge], timeout=600)
    outputs = "\n".join(f"--- {p.name}\n{p.read_text()}" for p in sorted(logs.glob("*.out")))
    assert [s.state for s in states] == ["COMPLETED"] * (TASKS + 1), f"{states}\n{outputs}"

    # Each task took the shard Slurm gave it, 1 to 4 in task order.
    for task in range(1, TASKS + 1):
        out = next(logs.glob(f"*_{task}.out")).read_text()
        assert f"shard {task} of {TASKS} (Slurm array task {task} of 1-{TASKS})" in out, out
        assert (results / f"demo.shard-{task}-of-{TASKS}" / "records.jsonl").is_file()
    assert (results / "demo" / "report.md").is_file()

    # The whole demo, unsharded, in the same environment: the merged run equals it.
    whole = subprocess.run(
        [
            sys.executable,
            "-m",
            "docab.cli.main",
            "run",
            "demo",
            "--results",
            str(tmp_path / "whole"),
            "--quiet",
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "DOCAB_CACHE": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert whole.returncode == 0, whole.stderr
    merged, unsharded = by_key(results / "demo"), by_key(tmp_path / "whole" / "demo")
    assert merged.keys() == unsharded.keys() and len(merged) > 2 * TASKS
    differing = [key for key in merged if merged[key] != unsharded[key]]
    assert not differing, f"{len(differing)} of {len(merged)} records differ, e.g. {differing[:3]}"
    manifest = json.loads((results / "demo" / "manifest.json").read_text())
    assert (
        manifest["config_hash"]
        == json.loads((tmp_path / "whole" / "demo" / "manifest.json").read_text())["config_hash"]
    )
