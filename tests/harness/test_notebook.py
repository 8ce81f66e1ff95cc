"""The analysis notebook runs headless on a run, and its .ipynb twin holds the same cells.

Regenerate the .ipynb after editing notebooks/analysis.py:
    uv run python -m tests.harness.test_notebook --write
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

from tests.harness.synthetic_runs import random_run

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
SOURCE = NOTEBOOKS / "analysis.py"
NOTEBOOK = NOTEBOOKS / "analysis.ipynb"


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
    def cell(kind: str, source: str) -> dict:
        entry = {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
        if kind == "code":
            entry.update({"execution_count": None, "outputs": []})
        return entry

    return {
        "cells": [cell(kind, source) for kind, source in cells],
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
        "notebooks/analysis.ipynb is stale: run python -m tests.harness.test_notebook --write"
    )


def test_notebook_runs_headless_on_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    folder = random_run(tmp_path / "run", documents=6, per_document=4)
    monkeypatch.setenv("DOCAB_RUN", str(folder))
    monkeypatch.setenv("DOCAB_RESAMPLES", "300")
    namespace = runpy.run_path(str(SOURCE), run_name="__main__")
    out = capsys.readouterr().out
    assert "# A/B report: run run" in out and "fs+md-vision vs fs" in out
    assert set(namespace["questions"]["arm"]) == {"fs", "fs+md-vision"}
    assert all(p.exists() for p in namespace["paths"])


if __name__ == "__main__" and "--write" in sys.argv:
    NOTEBOOK.write_text(json.dumps(to_ipynb(percent_cells(SOURCE.read_text())), indent=1) + "\n")
    print(f"wrote {NOTEBOOK}")
