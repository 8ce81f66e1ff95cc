"""The A/B notebook executes headless in a Jupyter kernel on the demo run, and its percent-format
twin holds the same cells.

Regenerate the .ipynb after editing notebooks/ab_analysis.py:
    uv run python -m tests.harness.test_notebook --write
"""

from __future__ import annotations

import json
import runpy
import shutil
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


def test_notebook_executes_headless_on_the_demo_run(
    demo_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the dev dependencies")
    import nbformat

    run = Path(shutil.copytree(demo_run, tmp_path / "demo"))  # the notebook writes plots into the run
    monkeypatch.setenv("DOCAB_RUN", str(run))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO_ROOT)}}
    ).execute()  # raises CellExecutionError, naming the cell, if any cell fails
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
