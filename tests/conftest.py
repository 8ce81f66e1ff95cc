"""Shared fixtures: loopback servers speaking real wire protocols, and the shared-data locator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.http_server import LocalServer
from tests.support.llm_stub import LLMStub

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture
def local_server() -> Iterator[LocalServer]:
    with LocalServer() as server:
        yield server


@pytest.fixture
def llm_stub() -> Iterator[LLMStub]:
    with LLMStub() as stub:
        yield stub


def shared_data(name: str) -> Path:
    """Path to ../shared/data/<name>, or skip the test with a reason when it is absent."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"shared benchmark data not found at {path} (only present on development machines)")
    return path
