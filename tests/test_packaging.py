"""Packaging promises: each server installs alone and light, every distribution ships its licence
and ``py.typed``, and the console scripts point at real code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = {"pandas", "numpy", "scipy", "datasets", "matplotlib", "pypdfium2", "pyarrow", "rich"}


SERVERS = {
    "md-vision": "tools/md_vision",
    "markfetch": "tools/markfetch",
    "vision-bridge": "tools/vision_bridge",
}
DISTRIBUTIONS = {"docab": ".", "docab-mcpguard": "tools/mcpguard", **SERVERS}
# What each server must not pull in: the harness stack, and the other servers' heavy dependencies.
NOT_IN = {
    "md-vision": HEAVY | {"openai", "anthropic", "trafilatura", "babel"},
    "markfetch": HEAVY | {"openai", "anthropic", "pillow"},
    "vision-bridge": HEAVY | {"trafilatura", "babel"},
}


def _lock_closure(distribution: str) -> set[str]:
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    packages = {p["name"]: p for p in lock["package"]}
    todo = [d["name"] for d in packages[distribution].get("dependencies", [])]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name == distribution:
            continue
        seen.add(name)
        todo += [d["name"] for d in packages[name].get("dependencies", [])]
    return seen


def test_each_server_installs_only_what_it_needs() -> None:
    for server, leaks in NOT_IN.items():
        closure = _lock_closure(server)
        assert {"mcp", "docab-mcpguard"} <= closure, server
        assert not (closure & leaks), f"{server} pulls in {sorted(closure & leaks)}"
    assert {"pandas", "pypdfium2", "md-vision", "markfetch", "vision-bridge"} <= _lock_closure("docab")


def test_every_distribution_ships_a_licence_and_py_typed() -> None:
    licence = (REPO / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0" in licence
    for name, folder in DISTRIBUTIONS.items():
        project = tomllib.loads((REPO / folder / "pyproject.toml").read_text())
        assert project["project"]["name"] == name
        assert (REPO / folder / "LICENSE").read_text() == licence, f"{folder}/LICENSE differs from LICENSE"
        assert project["project"]["license-files"] == ["LICENSE"], name
        for package in project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]:
            assert (REPO / folder / package / "py.typed").is_file(), f"{folder}/{package} has no py.typed"


def test_console_scripts_resolve_to_callables() -> None:
    for folder in DISTRIBUTIONS.values():
        project = tomllib.loads((REPO / folder / "pyproject.toml").read_text())["project"]
        for script, target in project.get("scripts", {}).items():
            module, _, attr = target.partition(":")
            code = f"import importlib; f = getattr(importlib.import_module({module!r}), {attr!r}); assert callable(f)"
            result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            assert result.returncode == 0, f"{script} -> {target}: {result.stderr[-500:]}"


def test_docab_help_runs_without_tracebacks() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "docab.cli.main", "--help"], capture_output=True, text=True
    )
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
            [sys.executable, "-m", "docab.cli.main", "score", str(predictions)],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        os.close(writer)
    assert result.returncode == 141, result.stderr
    assert "Traceback" not in result.stderr
    assert "Exception ignored" not in result.stderr
