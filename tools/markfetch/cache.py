"""An optional on-disk cache of fetched responses, with a time-to-live.

The response (final URL, Content-Type, body) is cached, not the markdown, so ``raw`` and
markdown requests share entries and a newer extractor never serves stale output. The key covers
everything that changes what a server sends back or what may be fetched: the URL, the
User-Agent, the Accept-Language and the hosts allowed to reach internal addresses. Entries are
written atomically (temp file, then rename) with owner-only permissions; a corrupt or expired
entry is a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

FORMAT_VERSION = 1


@dataclass(frozen=True)
class CachedResponse:
    url: str  # final URL after redirects
    content_type: str  # the whole Content-Type header value
    body: bytes
    fetched_at: float


def cache_key(url: str, *, user_agent: str, accept_language: str, allow_hosts: Iterable[str]) -> str:
    material = json.dumps([FORMAT_VERSION, url, user_agent, accept_language, sorted(allow_hosts)])
    return hashlib.sha256(material.encode()).hexdigest()


@dataclass
class ResponseCache:
    directory: Path
    ttl_s: float
    clock: Callable[[], float] = time.time

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.cache"

    def get(self, key: str) -> CachedResponse | None:
        try:
            data = self._path(key).read_bytes()
            header_line, _, body = data.partition(b"\n")
            header = json.loads(header_line)
            entry = CachedResponse(
                url=str(header["url"]),
                content_type=str(header["content_type"]),
                body=body,
                fetched_at=float(header["fetched_at"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if len(body) != header.get("length") or not 0 <= self.clock() - entry.fetched_at < self.ttl_s:
            return None
        return entry

    def put(self, key: str, *, url: str, content_type: str, body: bytes) -> None:
        """Store an entry; a cache that cannot be written is skipped silently (it is only a cache)."""
        header = {"url": url, "content_type": content_type, "fetched_at": self.clock(), "length": len(body)}
        with contextlib.suppress(OSError):
            fd, temp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".cache")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(json.dumps(header).encode() + b"\n" + body)
                os.chmod(temp, 0o600)
                os.replace(temp, self._path(key))
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
