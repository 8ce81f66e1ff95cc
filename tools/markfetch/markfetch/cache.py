"""An optional on-disk cache of fetched responses, with a time-to-live.

The response (final URL, Content-Type, body) is cached, not the markdown, so ``raw`` and
markdown requests share entries and a newer extractor never serves stale output. The key covers
everything that changes what a server sends back or what may be fetched: the URL, the
User-Agent, the Accept-Language and the hosts allowed to reach internal addresses. Storage
(private folder, atomic writes, TTL, corrupt entries as misses, a size cap with expired entries
pruned) is ``docab_mcpguard.diskcache``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from docab_mcpguard.diskcache import DEFAULT_MAX_BYTES, DiskCache

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
    """Fetched responses in a private :class:`docab_mcpguard.diskcache.DiskCache` (one file per key)."""

    directory: Path
    ttl_s: float
    clock: Callable[[], float] = time.time
    max_bytes: int = DEFAULT_MAX_BYTES  # the folder's cap: expired entries pruned, then the oldest

    def __post_init__(self) -> None:
        self._store = DiskCache(
            Path(self.directory), self.ttl_s, clock=self.clock, suffix=".cache", max_bytes=self.max_bytes
        )

    def get(self, key: str) -> CachedResponse | None:
        stored = self._store.get(key)
        if stored is None:
            return None
        header_line, _, body = stored.payload.partition(b"\n")
        try:
            header = json.loads(header_line)
            return CachedResponse(
                url=str(header["url"]),
                content_type=str(header["content_type"]),
                body=body,
                fetched_at=stored.stored_at,
            )
        except (ValueError, KeyError, TypeError):
            self._store.discard(key)  # a corrupt entry is a miss, and goes
            return None

    def put(self, key: str, *, url: str, content_type: str, body: bytes) -> None:
        """Store an entry; a cache that cannot be written is skipped silently (it is only a cache)."""
        header = json.dumps({"url": url, "content_type": content_type}).encode()
        self._store.put(key, header + b"\n" + body)
