"""The on-disk result cache: one JSON file per answer, keyed by everything that shapes the answer.

The key covers the images' content hashes (an image URL's downloaded content), the
tool, the prompt and tool options, and the backend identity: backend name (= API format),
endpoint, model and answer-token limit. Switching the model or the format therefore misses,
which the reference got wrong.

Storage is ``docab_mcpguard.diskcache``: entries live ``ttl_s`` seconds, judged at read time; a file that
cannot be parsed or does not match its key is a miss (and is removed); writes are atomic; the
folder is created with mode 0700 and the files with 0600, since answers can describe private images;
the folder is kept under ``VISION_CACHE_MAX_MB`` (expired entries pruned, then the oldest answers).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docab_mcpguard.diskcache import DEFAULT_MAX_BYTES, DiskCache
from vision_bridge.usage import TokenUsage

log = logging.getLogger("vision_bridge")

ENTRY_FORMAT = 1


@dataclass(frozen=True)
class BackendIdentity:
    """What, besides the request, decides an answer: used in cache keys and usage reports."""

    backend: str  # openai | anthropic | tesseract
    model: str
    endpoint: str = ""  # the base URL; "" for a local engine
    max_tokens: int = 0


def cache_key(
    *,
    tool: str,
    prompt: str,
    options: Mapping[str, Any],
    images: Sequence[str],
    identity: BackendIdentity,
) -> str:
    """A hex SHA-256 over a canonical JSON of every input that shapes the answer."""
    material = {
        "v": ENTRY_FORMAT,
        "tool": tool,
        "prompt": prompt,
        "options": dict(options),
        "images": list(images),
        "backend": identity.backend,
        "model": identity.model,
        "endpoint": identity.endpoint,
        "max_tokens": identity.max_tokens,
    }
    canonical = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedAnswer:
    text: str
    created: float
    usage: TokenUsage  # what the original call spent (a hit itself spends nothing)
    answer_from: str = "content"


class ResultCache:
    """Answers in a private :class:`docab_mcpguard.diskcache.DiskCache` (one JSON file per key)."""

    def __init__(
        self,
        directory: Path,
        ttl_s: float,
        *,
        clock: Callable[[], float] = time.time,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.directory = Path(directory)
        self.ttl_s = ttl_s
        self.clock = clock
        self._store = DiskCache(
            self.directory, ttl_s, clock=clock, suffix=".json", log=log, max_bytes=max_bytes
        )

    @property
    def enabled(self) -> bool:
        return self._store.enabled

    def get(self, key: str) -> CachedAnswer | None:
        stored = self._store.get(key)
        if stored is None:
            return None
        answer = _parse_entry(stored.payload, stored.stored_at)
        if answer is None:
            log.warning("cache entry %s is corrupt; ignoring it", self._store.path(key).name)
            self._store.discard(key)  # else every later get warns again until it expires
        return answer

    def put(self, key: str, *, text: str, usage: TokenUsage, answer_from: str = "content") -> None:
        """Store an answer; a cache that cannot be written is logged, never fatal."""
        if not self.enabled:
            return
        entry = {"format": ENTRY_FORMAT, "text": text, "answer_from": answer_from, "usage": usage.to_dict()}
        try:
            data = json.dumps(entry, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # a provider's answer with a lone surrogate: answered, not kept
            log.warning("an answer with text that is not valid Unicode was not cached")
            return
        self._store.put(key, data)


def _parse_entry(raw: bytes, created: float) -> CachedAnswer | None:
    try:
        entry = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != ENTRY_FORMAT:
        return None
    text, usage = entry.get("text"), entry.get("usage")
    if not isinstance(text, str) or not isinstance(usage, dict):
        return None
    answer_from = entry.get("answer_from")
    return CachedAnswer(
        text=text,
        created=created,
        usage=TokenUsage.from_dict(usage),
        answer_from=answer_from if isinstance(answer_from, str) else "content",
    )
