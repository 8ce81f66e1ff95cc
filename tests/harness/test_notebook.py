"""The A/B notebook executes headless through the README's `jupyter nbconvert --execute` command on
the demo run (the kernel in notebooks/, as Jupyter starts it), and its percent-format twin holds
the same cells.

Regenerate the .ipynb after editing notebooks/ab_analysis.py:
    uv run python -m tests.harness.test_notebook --write
"""

from __future__ import annotations

import json
import os
import runpy
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.harness.synthetic_runs import random_run

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
SOURCE = NOTEBOOKS / "ab_analysis.py"
NOTEBOOK = NOTEBOOKS / "ab_analysis.ipynb"


def percent_cells(text: str) -> list[tuple[str, str]]:
    """(cell type, source) pairs from a percent-format script."""
    cells: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# %%"):
            cells.append(("markdown" if "[markdown]" in line else "code", []))
        elif cells:
            cells[-1][1].append(line)
    result = []
    for kind, lines in cells:
        if kind == "markdown":
            lines = [line[2:] if line.startswith("# ") else line.lstrip("#") for line in lines]
        result.append((kind, "\n".join(lines).strip("\n")))
    return result


def to_ipynb(cells: list[tuple[str, str]]) -> dict:
    def cell(kind: str, source: str, index: int) -> dict:
        entry = {
            "cell_type": kind,
            "id": f"cell-{index:02d}",
            "metadata": {},
            "source": source.splitlines(keepends=True),
        }
        if kind == "code":
            entry.update({"execution_count": None, "outputs": []})
        return entry

    return {
        "cells": [cell(kind, source, i) for i, (kind, source) in enumerate(cells)],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_ipynb_matches_the_percent_script_and_has_no_outputs() -> None:
    expected = to_ipynb(percent_cells(SOURCE.read_text()))
    actual = json.loads(NOTEBOOK.read_text())
    assert actual == expected, (
        "notebooks/ab_analysis.ipynb is stale: run python -m tests.harness.test_notebook --write"
    )


def readme_command(word: str) -> list[str]:
    """The documentation's command line (docs/results.md, moved there from the README) that runs
    ``jupyter <word>`` on the notebook, split as a shell would."""
    readme = (REPO_ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    lines = [line.split("#")[0].strip() for line in readme.splitlines() if f"uv run jupyter {word}" in line]
    assert lines, f"docs/results.md shows no `uv run jupyter {word}` command"
    return shlex.split(lines[0].strip("`"))


def test_the_readmes_jupyter_commands_work_from_the_lock() -> None:
    """JupyterLab and nbconvert are dev dependencies: `uv sync` installs them, offline from the lock."""
    lab = readme_command("lab")
    assert lab == ["uv", "run", "jupyter", "lab", "notebooks/ab_analysis.ipynb"]
    pyproject = (REPO_ROOT / "pyproject.toml").read_text()
    assert '"jupyterlab>=4"' in pyproject and '"nbconvert>=7"' in pyproject
    lock = (REPO_ROOT / "uv.lock").read_text()
    assert 'name = "jupyterlab"' in lock and 'name = "nbconvert"' in lock
    jupyter = Path(sys.executable).parent / "jupyter"
    found = subprocess.run([str(jupyter), "--paths"], capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    listed = subprocess.run([str(jupyter), "lab", "--version"], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and listed.stdout.strip()[0].isdigit(), listed.stderr


def test_the_readmes_nbconvert_command_executes_the_notebook_on_the_demo_run(
    demo_run: Path, tmp_path: Path
) -> None:
    """As Jupyter runs it: the kernel starts in notebooks/, and a relative DOCAB_RUN is read from the
    repository's root, not from there."""
    pytest.importorskip("nbconvert", reason="nbconvert is in the dev dependencies")
    import nbformat

    run = Path(shutil.copytree(demo_run, tmp_path / "demo"))  # the notebook writes plots into the run
    command = readme_command("nbconvert")
    assert command[:3] == ["uv", "run", "jupyter"] and "--execute" in command
    out = tmp_path / "executed"
    at = command.index("--output-dir")
    command[at + 1] = str(out)  # the README writes under results/; the test under its own folder
    env = {
        **os.environ,
        "DOCAB_RUN": os.path.relpath(run, REPO_ROOT),  # relative: to the repository's root
        "MPLBACKEND": "Agg",
    }
    jupyter = Path(sys.executable).parent / "jupyter"  # `uv run` is the environment this test runs in
    result = subprocess.run(
        [str(jupyter), *command[3:]], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    notebook = nbformat.read(out / NOTEBOOK.name, as_version=4)
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = json.dumps(outputs)
    assert "run demo: arms fs, fs+md-vision; 58 records" in text
    assert "# A/B report: run demo" in text and "fs+md-vision vs fs" in text
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 9  # the plots, shown
    assert (run / "plots" / "latency.png").is_file()


def test_notebook_runs_as_a_script_on_shards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    whole = random_run(tmp_path / "whole", documents=6, per_document=4)
    lines = (whole / "records.jsonl").read_text().splitlines(keepends=True)
    one, two = tmp_path / "one", tmp_path / "two"
    for shard, part in ((one, lines[: len(lines) // 2]), (two, lines[len(lines) // 2 :])):
        shard.mkdir()
        shutil.copyfile(whole / "manifest.json", shard / "manifest.json")
        (shard / "records.jsonl").write_text("".join(part))
    monkeypatch.setenv("DOCAB_RUN", f"{one}:{two}")
    namespace = runpy.run_path(str(SOURCE), run_name="__main__")
    assert "fs+md-vision vs fs" in capsys.readouterr().out
    assert namespace["questions"]["doc_id"].nunique() == 6
    assert all(p.exists() for p in namespace["paths"])


if __name__ == "__main__" and "--write" in sys.argv:
    NOTEBOOK.write_text(json.dumps(to_ipynb(percent_cells(SOURCE.read_text())), indent=1) + "\n")
    print(f"wrote {NOTEBOOK}")
