"""DiskCache: private, atomic, fresh only within its TTL, corrupt entries are misses."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from docab_mcpguard.diskcache import DiskCache


class Clock:
    def __init__(self, now: float = 1_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_round_trip_and_ttl_edge(tmp_path: Path) -> None:
    clock = Clock()
    cache = DiskCache(tmp_path / "c", ttl_s=60, clock=clock)
    assert cache.put("k", b"payload\nwith a newline")
    stored = cache.get("k")
    assert stored is not None and stored.payload == b"payload\nwith a newline" and stored.stored_at == 1_000.0
    clock.now += 59.999
    assert cache.get("k") is not None
    clock.now += 0.001  # exactly the TTL old: stale
    assert cache.get("k") is None
    assert not cache.path("k").exists()  # stale entries are removed


def test_entries_from_the_future_are_stale(tmp_path: Path) -> None:
    clock = Clock()
    cache = DiskCache(tmp_path, ttl_s=60, clock=clock)
    cache.put("k", b"x")
    clock.now -= 1  # the clock went back: the entry claims to come from the future
    assert cache.get("k") is None


def test_folder_and_files_are_private_and_no_temp_file_is_left(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "deep" / "cache", ttl_s=60, suffix=".bin")
    cache.put("k", b"x")
    folder = tmp_path / "deep" / "cache"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "k.bin").stat().st_mode) == 0o600
    assert [p.name for p in folder.iterdir()] == ["k.bin"]


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"no header line",
        b"not json\npayload",
        b'{"format": 1, "key": "other", "stored_at": 1000, "length": 1}\nx',  # another key's entry
        b'{"format": 1, "key": "k", "stored_at": 1000, "length": 5}\nx',  # truncated payload
        b'{"format": 99, "key": "k", "stored_at": 1000, "length": 1}\nx',  # unknown format
        b'{"format": 1, "key": "k", "stored_at": true, "length": 1}\nx',
    ],
)
def test_corrupt_entries_are_misses_and_removed(tmp_path: Path, content: bytes, caplog) -> None:
    cache = DiskCache(tmp_path, ttl_s=60, clock=Clock(), log=logging.getLogger("test-cache"))
    cache.path("k").write_bytes(content)
    with caplog.at_level(logging.WARNING):
        assert cache.get("k") is None
    assert not cache.path("k").exists()
    assert "corrupt" in caplog.text


def test_unwritable_cache_is_skipped_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("a file where the folder should be")
    cache = DiskCache(tmp_path / "blocked" / "cache", ttl_s=60)
    assert cache.put("k", b"x") is False
    assert cache.get("k") is None


def test_ttl_zero_disables_reads_and_writes(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "c", ttl_s=0)
    assert not cache.enabled
    assert cache.put("k", b"x") is False
    assert not (tmp_path / "c").exists()
