"""A process that writes to a shared response cache (tests/harness/test_response_cache.py): a
module of its own, so a spawned child imports the cache alone, not the harness the test imports."""

from __future__ import annotations

from pathlib import Path

from docab.models.cache import ResponseCache


def write_entries(directory: str, start: int) -> None:
    cache = ResponseCache(Path(directory))
    for i in range(start, start + 100):
        cache.put(f"k{i}", {"i": i})
    cache.close()
