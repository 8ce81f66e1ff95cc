"""Packaging promises: the base install is light, and the console scripts point at real code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = {"pandas", "numpy", "scipy", "datasets", "matplotlib", "pypdfium2", "pyarrow", "rich"}


def _lock_closure(extra: str | None = None) -> set[str]:
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    packages = {p["name"]: p for p in lock["package"]}
    root = packages["docab"]
    todo = [d["name"] for d in root.get("dependencies", [])]
    if extra:
        todo += [d["name"] for d in root.get("optional-dependencies", {}).get(extra, [])]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name == "docab":
            continue
        seen.add(name)
        todo += [d["name"] for d in packages[name].get("dependencies", [])]
    return seen


def test_base_install_excludes_the_harness_stack() -> None:
    base = _lock_closure()
    assert "mcp" in base and "pillow" in base
    assert not (base & HEAVY), f"base dependencies pull in {sorted(base & HEAVY)}"
    assert {"pandas", "pypdfium2"} <= _lock_closure("harness")


def test_console_scripts_resolve_to_callables() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for script, target in project["scripts"].items():
        module, _, attr = target.partition(":")
        code = f"import importlib; f = getattr(importlib.import_module({module!r}), {attr!r}); assert callable(f)"
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert result.returncode == 0, f"{script} -> {target}: {result.stderr[-500:]}"


def test_docab_help_runs_without_tracebacks() -> None:
    result = subprocess.run([sys.executable, "-m", "harness.cli", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    assert "usage: docab" in result.stdout


def test_closed_pipe_is_not_a_traceback(tmp_path: Path) -> None:
    # `docab ... | head` closes the pipe before docab is done writing; it must exit quietly.
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(
        json.dumps({"question": "q", "answer": "4", "answer_format": "Int", "doc_id": "d.pdf", "pred": "4"})
        + "\n"
    )
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before the first byte is written
    try:
        result = subprocess.run(
            [sys.executable, "-m", "harness.cli", "score", str(predictions)],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        os.close(writer)
    assert result.returncode == 141, result.stderr
    assert "Traceback" not in result.stderr
    assert "Exception ignored" not in result.stderr
