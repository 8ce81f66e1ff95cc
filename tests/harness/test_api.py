"""The library's entry points: ``docab.run_async`` in a running loop, ``docab.run`` outside one,
domain errors worded without command-line flags, and a cheap ``import docab``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import docab
from docab.config import parse_config
from docab.errors import ConfigError, DatasetError, DocabError, RunError
from docab.log.manifest import load_manifest
from docab.runner.launch import RunRequest, launch, select_samples
from docab.runner.progress import SilentProgress
from tests.harness.corpus import exact_scorer, make_dataset

FLAG_WORDS = ("--limit", "--epochs", "--concurrency", "--shard", "--out", "--results")


def config(**overrides: Any) -> docab.RunConfig:
    data: dict[str, Any] = {
        "name": "api",
        "model": "baseline/keyword",
        "arms": [{"name": "fs"}, {"name": "fs-again"}],
    }
    return parse_config({**data, **overrides})


def quietly(**options: Any) -> dict[str, Any]:
    return {"scorer": exact_scorer, "progress": SilentProgress(), "say": lambda s: None, **options}


def test_run_async_awaited_inside_a_running_loop_runs_end_to_end(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "corpus", documents=1)

    async def notebook_cell() -> docab.RunOutcome:
        asyncio.get_running_loop()  # as in Jupyter: a loop is already running
        return await docab.run_async(config(), results_dir=tmp_path / "results", **quietly(dataset=dataset))

    outcome = asyncio.run(notebook_cell())
    assert outcome.run_dir == tmp_path / "results" / "api"
    assert (outcome.ran, outcome.skipped) == (8, 0) and len(outcome.records) == 8
    assert {r.arm for r in outcome.records} == {"fs", "fs-again"}
    assert all(r.status == "ok" for r in outcome.records) and sum(r.score for r in outcome.records) >= 6
    manifest = load_manifest(outcome.run_dir / "manifest.json")
    assert manifest.arm_names == ["fs", "fs-again"] and manifest.sessions[-1].finished_at

    async def again() -> docab.RunOutcome:
        return await docab.run_async(config(), results_dir=tmp_path / "results", **quietly(dataset=dataset))

    resumed = asyncio.run(again())  # the same config in the same folder: nothing left to run
    assert (resumed.ran, resumed.skipped, len(resumed.records)) == (0, 8, 8)


def test_sync_run_works_outside_a_loop_and_takes_a_config_file(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "corpus", documents=1)
    toml = tmp_path / "mine.toml"
    toml.write_text(
        'name = "mine"\nmodel = "baseline/keyword"\n[[arms]]\nname = "fs"\n[[arms]]\nname = "fs2"\n'
    )
    outcome = docab.run(toml, results_dir=tmp_path / "results", limit=2, **quietly(dataset=dataset))
    assert outcome.run_dir == tmp_path / "results" / "mine" and len(outcome.records) == 4
    with pytest.raises(ConfigError, match="not found"):
        docab.run(tmp_path / "missing.toml")


def test_sync_run_inside_a_running_loop_points_to_run_async(tmp_path: Path) -> None:
    async def notebook_cell() -> None:
        docab.run(config(), results_dir=tmp_path / "results")

    with pytest.raises(RunError, match=r"cannot run inside a running event loop.*await docab\.run_async"):
        asyncio.run(notebook_cell())

    async def cli_entry_in_a_loop() -> None:
        launch(RunRequest(config(), results_dir=tmp_path / "results"))

    with pytest.raises(RunError, match=r"await launch_async"):
        asyncio.run(cli_entry_in_a_loop())
    assert not (tmp_path / "results").exists()  # refused before touching anything


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda: RunRequest(config(), limit=0), RunError, "limit must be at least 1"),
        (lambda: RunRequest(config(), epochs=0), RunError, "epochs must be at least 1"),
        (lambda: RunRequest(config(), concurrency=-1), RunError, "concurrency must be at least 1"),
        (lambda: RunRequest(config(), shard=(3, 2)), RunError, "shard must be (i, N)"),
        (lambda: parse_config({"name": "x", "arms": []}), ConfigError, "model: required key is missing"),
    ],
)
def test_domain_errors_speak_of_the_library_not_of_flags(make: Any, error: type, words: str) -> None:
    with pytest.raises(error) as caught:
        make()
    message = str(caught.value)
    assert words in message and not any(flag in message for flag in FLAG_WORDS)
    assert isinstance(caught.value, DocabError)


def test_no_question_left_is_a_dataset_error_without_flag_words(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "corpus", documents=1)
    with pytest.raises(DatasetError) as caught:
        select_samples(dataset, limit=None, shard=(1, 10_000))  # four questions, none in this shard
    message = str(caught.value)
    assert "no questions to run" in message and "the limit and the shard" in message
    assert not any(flag in message for flag in FLAG_WORDS)
    doubled = type(dataset)(dataset.name, dataset.version, dataset.samples * 2)
    with pytest.raises(DatasetError, match="repeats question ids"):
        select_samples(doubled, limit=None, shard=None)


def test_the_launch_leaves_the_manifest_it_was_given_alone(tmp_path: Path) -> None:
    """Manifests are frozen: a launch makes copies (one per change), never edits one in place."""
    from docab.log.manifest import Manifest

    manifest = Manifest(run_id="r", config_hash="h")
    with pytest.raises(ValueError, match="frozen"):
        manifest.run_id = "other"  # type: ignore[misc]
    later = manifest.finished("2026-01-01T00:00:00+00:00")
    assert manifest.updated_at is None and later.updated_at == "2026-01-01T00:00:00+00:00"


def test_import_docab_is_cheap_and_names_load_on_first_use() -> None:
    probe = (
        "import sys, docab\n"
        "print(sorted(m for m in sys.modules if m.startswith('docab.') or m in ('pydantic', 'mcp', 'numpy')))\n"
        "assert callable(docab.run) and callable(docab.run_async)\n"
        "assert all(getattr(docab, name) is not None for name in docab.__all__)\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded, ok = result.stdout.splitlines()
    assert loaded == "[]" and ok == "ok"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        docab.nope  # type: ignore[attr-defined]  # noqa: B018
