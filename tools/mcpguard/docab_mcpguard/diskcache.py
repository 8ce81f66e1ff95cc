"""A private on-disk cache: one file per key, written atomically, read back only while fresh.

Servers cache answers that can describe private data (a fetched page, what an image shows), so
the folder is created with mode 0700 and each file is written 0600. A write goes to a temp file
in the same folder and is renamed into place, so a reader never sees half an entry. An entry
whose header cannot be read, names another key, has the wrong length or is older than the TTL
(judged at read time, with the cache's clock) is a miss and is removed. A cache that cannot be
written is skipped: it is only a cache.

What an entry holds is the caller's business: ``put`` takes bytes and ``get`` gives them back.

The folder is kept under ``max_bytes`` (entries' file sizes added up) and free of expired
entries: a ``put`` prunes it on this process's first write, every :data:`PRUNE_EVERY` writes, and
whenever the bytes written since the last prune could pass the cap. A prune removes expired and
unreadable entries and temp files left by a killed writer, then the oldest entries until the rest
fit in :data:`PRUNE_TO` of the cap. Which files go is decided by :func:`plan_prune`, a pure
function; the scan and the removals are the thin face around it. An entry larger than the cap is
not stored. Several processes may share a folder: a file another one removed first is no error.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

FORMAT = 1

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
"""The cap on a cache folder unless the server sets its own (its users, through a setting)."""

PRUNE_EVERY = 256
"""Writes between two prunes at most (expired entries go even when the cap is far)."""

PRUNE_TO = 0.9
"""A prune over the cap removes the oldest entries until the rest fit in this share of it, so the
next write does not prune again at once."""

STALE_TEMP_S = 3600.0
"""A temp file older than this (by its modification time) was left by a killed writer."""

_HEADER_READ = 4096  # bytes read of an entry to find its header line when pruning


@dataclass(frozen=True)
class Stored:
    payload: bytes
    stored_at: float  # the cache clock's time of the write


@dataclass(frozen=True)
class EntryFile:
    """One file of a cache folder, as a prune sees it: ``stored_at`` from the entry's header (None
    when it cannot be read), ``temp`` for a writer's temp file (aged by ``modified``)."""

    name: str
    size: int
    stored_at: float | None
    modified: float
    temp: bool = False


def plan_prune(
    files: list[EntryFile],
    *,
    now: float,
    wall_now: float,
    ttl_s: float,
    max_bytes: int,
    keep: str | None = None,
) -> list[str]:
    """The files to remove, in order: stale temp files, expired or unreadable entries, then the
    oldest entries (by their header's time) until the rest fit in ``PRUNE_TO`` of ``max_bytes``.

    ``now`` is the cache's clock (entries' ages); ``wall_now`` the file system's (temp files'
    ages); ``keep``: an entry never removed for size (the one just written). Pure."""
    doomed: list[str] = []
    live: list[EntryFile] = []
    for entry in files:
        if entry.temp:
            if wall_now - entry.modified >= STALE_TEMP_S:
                doomed.append(entry.name)
        elif entry.stored_at is None or not 0 <= now - entry.stored_at < ttl_s:
            doomed.append(entry.name)
        else:
            live.append(entry)
    total = sum(entry.size for entry in live)
    if total > max_bytes:
        target = int(max_bytes * PRUNE_TO)
        for entry in sorted(live, key=lambda e: (e.stored_at or 0.0, e.name)):
            if total <= target:
                break
            if entry.name == keep:
                continue
            doomed.append(entry.name)
            total -= entry.size
    return doomed


@dataclass
class DiskCache:
    directory: Path
    ttl_s: float  # 0 or less disables the cache
    clock: Callable[[], float] = time.time
    suffix: str = ".cache"
    log: logging.Logger | None = None  # where corrupt entries and failed writes are reported
    max_bytes: int = DEFAULT_MAX_BYTES  # the folder's cap (entries' sizes added up)

    def __post_init__(self) -> None:
        self._written_since_prune = 0  # bytes
        self._puts_since_prune: int | None = None  # None: no prune yet in this process
        self._size_after_prune = 0

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0

    def path(self, key: str) -> Path:
        return Path(self.directory) / f"{key}{self.suffix}"

    def get(self, key: str) -> Stored | None:
        if not self.enabled:
            return None
        path = self.path(key)
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        stored = _parse(raw, key)
        if stored is None:
            if self.log is not None:
                self.log.warning("cache entry %s is corrupt; ignoring it", path.name)
            _discard(path)
            return None
        age = self.clock() - stored.stored_at
        if not 0 <= age < self.ttl_s:
            _discard(path)
            return None
        return stored

    def discard(self, key: str) -> None:
        """Remove an entry, say one whose payload the caller found corrupt (missing is fine)."""
        _discard(self.path(key))

    def put(self, key: str, payload: bytes) -> bool:
        """Store ``payload`` under ``key``; False (and nothing half-written) when that failed."""
        if not self.enabled:
            return False
        header = {"format": FORMAT, "key": key, "stored_at": self.clock(), "length": len(payload)}
        record = json.dumps(header).encode() + b"\n" + payload
        if len(record) > self.max_bytes:
            if self.log is not None:
                self.log.info("not caching %s: %s bytes is over the cache's cap", key, f"{len(record):,}")
            return False
        try:
            self._ensure_directory()
            fd, temp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=self.suffix)
            try:
                with os.fdopen(fd, "wb") as handle:  # mkstemp creates the file 0600
                    handle.write(record)
                os.replace(temp, self.path(key))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        except OSError as exc:
            if self.log is not None:
                self.log.warning(
                    "could not write the cache in %s (%s); continuing without it",
                    self.directory,
                    exc.strerror or exc,
                )
            return False
        self._after_write(key, len(record))
        return True

    def _after_write(self, key: str, size: int) -> None:
        self._written_since_prune += size
        puts = self._puts_since_prune
        due = (
            puts is None
            or puts + 1 >= PRUNE_EVERY
            or self._size_after_prune + self._written_since_prune > self.max_bytes
        )
        if due:
            self.prune(keep=self.path(key).name)
        else:
            self._puts_since_prune = (puts or 0) + 1

    def prune(self, *, keep: str | None = None) -> list[str]:
        """Remove expired and unreadable entries, stale temp files, and the oldest entries over
        the cap (see :func:`plan_prune`); the names removed. A folder that cannot be read is left."""
        self._puts_since_prune = 0
        self._written_since_prune = 0
        try:
            files = self._scan()
        except OSError:
            return []
        doomed = plan_prune(
            files,
            now=self.clock(),
            wall_now=time.time(),
            ttl_s=self.ttl_s,
            max_bytes=self.max_bytes,
            keep=keep,
        )
        gone = set(doomed)
        for name in doomed:
            _discard(Path(self.directory) / name)
        self._size_after_prune = sum(
            entry.size for entry in files if entry.name not in gone and not entry.temp
        )
        if doomed and self.log is not None:
            self.log.debug("pruned %d files from the cache in %s", len(doomed), self.directory)
        return doomed

    def _scan(self) -> list[EntryFile]:
        files = []
        with os.scandir(self.directory) as entries:
            for entry in entries:
                if not entry.name.endswith(self.suffix) or not entry.is_file(follow_symlinks=False):
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if entry.name.startswith(".tmp-"):
                    files.append(EntryFile(entry.name, info.st_size, None, info.st_mtime, temp=True))
                    continue
                files.append(EntryFile(entry.name, info.st_size, _stored_at(entry.path), info.st_mtime))
        return files

    def _ensure_directory(self) -> None:
        directory = Path(self.directory)
        if directory.is_dir():
            return
        directory.mkdir(parents=True, mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)  # mkdir's mode is filtered by the umask


def _parse(raw: bytes, key: str) -> Stored | None:
    header_line, newline, payload = raw.partition(b"\n")
    if not newline:
        return None
    try:
        header = json.loads(header_line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("key") != key:
        return None
    stored_at, length = header.get("stored_at"), header.get("length")
    if not isinstance(stored_at, int | float) or isinstance(stored_at, bool) or length != len(payload):
        return None
    return Stored(payload, float(stored_at))


def _stored_at(path: str) -> float | None:
    """The write time in an entry's header, or None when its header cannot be read."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEADER_READ)
    except OSError:
        return None
    line, newline, _ = head.partition(b"\n")
    if not newline:
        return None
    try:
        header = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        return None
    stored_at = header.get("stored_at")
    if not isinstance(stored_at, int | float) or isinstance(stored_at, bool):
        return None
    return float(stored_at)


def _discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
