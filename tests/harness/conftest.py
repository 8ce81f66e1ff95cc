"""Shared fixtures of the harness tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole demo (29 questions, both arms), run once per session; returns the run folder.
    Tests must not write into it (copy it first)."""
    from tests.harness.test_demo import check_run, demo

    root = tmp_path_factory.mktemp("demo")
    result = demo(root)
    assert result.returncode == 0, result.stderr
    check_run(root, 29)
    return root / "results" / "demo"
