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


# -- size cap and pruning (issue 27 item 6) ------------------------------------------------------

from docab_mcpguard.diskcache import PRUNE_EVERY, STALE_TEMP_S, EntryFile, plan_prune  # noqa: E402


def test_plan_prune_removes_stale_temps_expired_unreadable_then_the_oldest_over_the_cap() -> None:
    files = [
        EntryFile("old.c", 100, stored_at=900.0, modified=0.0),
        EntryFile("mid.c", 100, stored_at=950.0, modified=0.0),
        EntryFile("new.c", 100, stored_at=990.0, modified=0.0),
        EntryFile("expired.c", 100, stored_at=900.0 - 60, modified=0.0),
        EntryFile("future.c", 100, stored_at=1_001.0, modified=0.0),  # the clock went back
        EntryFile("broken.c", 100, stored_at=None, modified=0.0),
        EntryFile(".tmp-a.c", 100, stored_at=None, modified=10_000.0 - STALE_TEMP_S, temp=True),
        EntryFile(".tmp-b.c", 100, stored_at=None, modified=10_000.0 - 1, temp=True),  # a write in flight
    ]
    plan = plan_prune(files, now=1_000.0, wall_now=10_000.0, ttl_s=150, max_bytes=1000)
    assert plan == ["expired.c", "future.c", "broken.c", ".tmp-a.c"]
    # Over the cap: the oldest go until the rest fit in 90 % of it (200 of 300 bytes kept -> 180).
    plan = plan_prune(files[:3], now=1_000.0, wall_now=10_000.0, ttl_s=150, max_bytes=200)
    assert plan == ["old.c", "mid.c"]
    # The entry just written is never removed for size, even when it is the oldest.
    plan = plan_prune(files[:3], now=1_000.0, wall_now=10_000.0, ttl_s=150, max_bytes=200, keep="old.c")
    assert plan == ["mid.c", "new.c"]
    assert plan_prune(files[:3], now=1_000.0, wall_now=10_000.0, ttl_s=150, max_bytes=300) == []


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir())


def test_the_folder_stays_under_its_cap_and_keeps_the_newest(tmp_path: Path) -> None:
    clock = Clock()
    cache = DiskCache(tmp_path, ttl_s=3600, clock=clock, max_bytes=2_000)
    for number in range(40):
        clock.now += 1
        assert cache.put(f"k{number}", b"x" * 200)
        assert _size(tmp_path) <= 2_000, number
    assert cache.get("k39") is not None and cache.get("k0") is None
    kept = sorted(int(p.stem[1:]) for p in tmp_path.iterdir())
    assert kept == list(range(kept[0], 40)) and len(kept) >= 6  # a run of the newest


def test_an_entry_over_the_cap_is_not_stored(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, ttl_s=3600, max_bytes=1_000)
    assert not cache.put("big", b"x" * 1_000)  # with its header line, over the cap
    assert cache.get("big") is None and list(tmp_path.iterdir()) == []


def test_expired_entries_and_stale_temp_files_go_on_a_new_processs_first_write(tmp_path: Path) -> None:
    import os
    import time

    clock = Clock()
    first = DiskCache(tmp_path, ttl_s=60, clock=clock)
    for number in range(5):
        first.put(f"old{number}", b"x")
    stale = tmp_path / ".tmp-killed.cache"
    stale.write_bytes(b"half an entry")
    old = time.time() - STALE_TEMP_S - 1
    os.utime(stale, (old, old))
    in_flight = tmp_path / ".tmp-writing.cache"
    in_flight.write_bytes(b"being written")
    clock.now += 120  # every entry expired; nobody read them, so they are still there
    assert len(list(tmp_path.iterdir())) == 7
    second = DiskCache(tmp_path, ttl_s=60, clock=clock)  # another process, later
    second.put("fresh", b"y")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tmp-writing.cache", "fresh.cache"]


def test_expired_entries_go_every_prune_every_writes_even_far_from_the_cap(tmp_path: Path) -> None:
    clock = Clock()
    cache = DiskCache(tmp_path, ttl_s=10, clock=clock)
    cache.put("first", b"x")  # the first write prunes (nothing to do yet)
    clock.now += 20
    for number in range(PRUNE_EVERY - 1):
        cache.put(f"k{number}", b"x")
    assert cache.path("first").exists()  # not yet: no prune since the first write
    cache.put("last", b"x")
    assert not cache.path("first").exists()
