"""The on-disk result cache: one JSON file per answer, keyed by everything that shapes the answer.

The key covers the images' content hashes (a URL passed through stands for its content), the
tool, the prompt and tool options, and the backend identity: backend name (= API format),
endpoint, model and answer-token limit. Switching the model or the format therefore misses,
which the reference got wrong.

Entries live ``ttl_s`` seconds, judged at read time with the current TTL. A file that cannot be
parsed or does not match its key is a miss (and is removed). Writes go to a private temp file in
the same folder and are renamed into place, so a reader never sees half an entry. The folder is
created with mode 0700 and the files with 0600: answers can describe private images.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    def __init__(self, directory: Path, ttl_s: float, *, clock: Callable[[], float] = time.time) -> None:
        self.directory = Path(directory)
        self.ttl_s = ttl_s
        self.clock = clock

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: str) -> CachedAnswer | None:
        if not self.enabled:
            return None
        path = self._path(key)
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        answer = _parse_entry(raw, key)
        if answer is None:
            log.warning("cache entry %s is corrupt; ignoring it", path.name)
            self._discard(path)
            return None
        age = self.clock() - answer.created
        if age < 0 or age >= self.ttl_s:
            self._discard(path)
            return None
        return answer

    def put(self, key: str, *, text: str, usage: TokenUsage, answer_from: str = "content") -> None:
        """Store an answer, stamped with the cache's clock; a cache that cannot be written is
        logged, never fatal."""
        if not self.enabled:
            return
        entry = {
            "format": ENTRY_FORMAT,
            "key": key,
            "created": self.clock(),
            "text": text,
            "answer_from": answer_from,
            "usage": usage.to_dict(),
        }
        try:
            self._ensure_directory()
            fd, temp_name = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(json.dumps(entry, ensure_ascii=False).encode("utf-8"))
                os.replace(temp_name, self._path(key))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp_name)
                raise
        except OSError as exc:
            log.warning(
                "could not write the cache in %s (%s); continuing without it", self.directory, exc.strerror
            )

    def _ensure_directory(self) -> None:
        if self.directory.is_dir():
            return
        self.directory.mkdir(parents=True, mode=0o700, exist_ok=True)
        # mkdir's mode is filtered by the umask; make sure the result is private.
        os.chmod(self.directory, 0o700)

    @staticmethod
    def _discard(path: Path) -> None:
        with contextlib.suppress(OSError):
            path.unlink()


def _parse_entry(raw: bytes, key: str) -> CachedAnswer | None:
    try:
        entry = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != ENTRY_FORMAT or entry.get("key") != key:
        return None
    text, created, usage = entry.get("text"), entry.get("created"), entry.get("usage")
    if not isinstance(text, str) or not isinstance(created, int | float) or isinstance(created, bool):
        return None
    if not isinstance(usage, dict):
        return None
    answer_from = entry.get("answer_from")
    return CachedAnswer(
        text=text,
        created=float(created),
        usage=TokenUsage.from_dict(usage),
        answer_from=answer_from if isinstance(answer_from, str) else "content",
    )
