"""A private on-disk cache: one file per key, written atomically, read back only while fresh.

Servers cache answers that can describe private data (a fetched page, what an image shows), so
the folder is created with mode 0700 and each file is written 0600. A write goes to a temp file
in the same folder and is renamed into place, so a reader never sees half an entry. An entry
whose header cannot be read, names another key, has the wrong length or is older than the TTL
(judged at read time, with the cache's clock) is a miss and is removed. A cache that cannot be
written is skipped: it is only a cache.

What an entry holds is the caller's business: ``put`` takes bytes and ``get`` gives them back.
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


@dataclass(frozen=True)
class Stored:
    payload: bytes
    stored_at: float  # the cache clock's time of the write


@dataclass
class DiskCache:
    directory: Path
    ttl_s: float  # 0 or less disables the cache
    clock: Callable[[], float] = time.time
    suffix: str = ".cache"
    log: logging.Logger | None = None  # where corrupt entries and failed writes are reported

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
        try:
            self._ensure_directory()
            fd, temp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=self.suffix)
            try:
                with os.fdopen(fd, "wb") as handle:  # mkstemp creates the file 0600
                    handle.write(json.dumps(header).encode() + b"\n" + payload)
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
        return True

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


def _discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
