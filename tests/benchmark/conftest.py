"""Fixtures of the benchmark tests: the built-in suite, generated once per session into a temp folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from docab_benchmark.suite import ensure_suite


@pytest.fixture(scope="session")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ensure_suite(tmp_path_factory.mktemp("suite") / "suite")


@pytest.fixture(scope="session")
def suite_corpus(suite_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from docab_benchmark.mmlongbench.corpus import convert_corpus

    out = tmp_path_factory.mktemp("corpus") / "corpus"
    report = convert_corpus(suite_dir / "documents", out, jobs=1)
    assert not report.failed
    return out
