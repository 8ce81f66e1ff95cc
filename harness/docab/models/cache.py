"""The response cache (``docab run --cache``, ``[model] cache = true``): a model reply stored on
disk under a key of everything that determines it, and served again instead of a call.

The key (:func:`response_key`) is a SHA-256 of: the route (provider and platform), the endpoint's
URL, the model, the API, the request body exactly as it would be sent (messages, tools, max tokens,
temperature and every other parameter, the config's ``extra_body`` and so any seed) and, unless the
temperature is 0, the sample's epoch (:data:`EPOCH`, set by the runner), so each epoch of a
sampled run gets replies of its own. Headers and keys are never part of it.

A hit costs nothing: the turn's usage is zero tokens, marked as a hit, with the original usage
kept inside it (:meth:`docab.usage.Usage.cache_hit`); the record keeps that original apart
(``RunRecord.cached_model_usage``) so the report shows what the run spent and what it would have
cost uncached. Only replies that parsed are stored.

The store is ``diskcache`` (SQLite and files): safe across threads and processes, in
``$DOCAB_CACHE_DIR`` (default the platform's user cache folder, ``.../docab/responses``); entries
expire after :data:`DEFAULT_EXPIRE_S` and the least recently used are culled beyond
:data:`DEFAULT_SIZE_LIMIT`. ``docab cache info`` and ``docab cache prune`` look after it. Values are
JSON text, never pickles.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docab.errors import RunError

CACHE_DIR_ENV = "DOCAB_CACHE_DIR"
KEY_VERSION = 1
DEFAULT_EXPIRE_S = 30 * 24 * 3600.0  # 30 days
DEFAULT_SIZE_LIMIT = 5 * 1024**3  # 5 GiB
DAY_S = 24 * 3600.0

EPOCH: ContextVar[int | None] = ContextVar("docab_response_cache_epoch", default=None)
"""The epoch of the sample being run; the runner sets it around each sample."""


class CacheError(RunError):
    """A cache folder that cannot be used; the message says which and why."""


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$DOCAB_CACHE_DIR``, else the platform's user cache folder for docab, ``responses``."""
    env = os.environ if env is None else env
    configured = env.get(CACHE_DIR_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("docab", appauthor=False)) / "responses"


def response_key(
    *,
    route: str,
    url: str,
    model: str,
    api: str,
    request: Mapping[str, Any],
    temperature: float | None,
    epoch: int | None,
) -> str:
    """The key of a reply: everything that determines it (see the module docstring)."""
    canonical = json.dumps(
        {
            "v": KEY_VERSION,
            "route": route,
            "url": url,
            "model": model,
            "api": api,
            "request": request,
            # A sampled reply differs between epochs: each gets its own (temperature None is the
            # provider's default, which samples).
            "epoch": None if temperature == 0 else epoch,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CacheInfo:
    directory: Path
    entries: int
    bytes: int
    size_limit: int


@dataclass(frozen=True)
class PruneResult:
    expired: int  # removed for being past their expiry or older than asked
    culled: int  # removed to bring the cache under its size
    info: CacheInfo


class ResponseCache:
    """One cache folder; thread- and process-safe (the store is diskcache's)."""

    def __init__(
        self,
        directory: Path,
        *,
        expire_s: float = DEFAULT_EXPIRE_S,
        size_limit: int | None = None,  # default: the folder's own, or DEFAULT_SIZE_LIMIT for a new one
        clock: Any = time.time,
    ) -> None:
        import diskcache

        self.directory = Path(directory)
        self.expire_s = expire_s
        self._clock = clock
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._store = diskcache.Cache(str(self.directory), eviction_policy="least-recently-used")
            if size_limit is not None:
                self._store.reset("size_limit", int(size_limit))
            elif self._store.size_limit == diskcache.DEFAULT_SETTINGS["size_limit"]:
                self._store.reset("size_limit", DEFAULT_SIZE_LIMIT)  # a new folder: docab's default
        except OSError as exc:
            raise CacheError(
                f"cannot use the response cache folder {self.directory}: {exc.strerror or exc}; "
                f"set {CACHE_DIR_ENV} to a folder that can be written"
            ) from None

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply of ``key``, or None (a miss; an unreadable entry is removed)."""
        text = self._store.get(key)
        if not isinstance(text, str):
            return None
        try:
            entry = json.loads(text)
            raw = entry["raw"]
        except (ValueError, KeyError, TypeError):
            self._store.delete(key)
            return None
        return raw if isinstance(raw, dict) else None

    def put(self, key: str, raw: Mapping[str, Any], *, model: str = "") -> None:
        entry = {"raw": raw, "model": model, "stored_at": self._clock()}
        self._store.set(key, json.dumps(entry, ensure_ascii=False), expire=self.expire_s, tag=model or None)

    async def aget(self, key: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.get, key)

    async def aput(self, key: str, raw: Mapping[str, Any], *, model: str = "") -> None:
        await asyncio.to_thread(self.put, key, raw, model=model)

    def info(self) -> CacheInfo:
        return CacheInfo(
            directory=self.directory,
            entries=len(self._store),
            bytes=int(self._store.volume()),
            size_limit=int(self._store.size_limit),
        )

    def prune(self, *, older_than_s: float | None = None, max_bytes: int | None = None) -> PruneResult:
        """Remove expired entries, entries stored more than ``older_than_s`` ago, and the least
        recently used beyond ``max_bytes`` (default: the cache's size limit)."""
        removed = int(self._store.expire())
        if older_than_s is not None:
            cutoff = self._clock() - older_than_s
            for key in list(self._store.iterkeys()):
                text = self._store.get(key)
                try:
                    stored_at = float(json.loads(text)["stored_at"]) if isinstance(text, str) else -1.0
                except (ValueError, KeyError, TypeError):
                    stored_at = -1.0
                if stored_at < cutoff and self._store.delete(key):
                    removed += 1
        culled = 0
        if max_bytes is not None:
            self._store.reset("size_limit", int(max_bytes))
        culled = int(self._store.cull())
        return PruneResult(expired=removed, culled=culled, info=self.info())

    def close(self) -> None:
        self._store.close()


_OPEN: dict[Path, ResponseCache] = {}


def shared_cache(directory: Path | None = None) -> ResponseCache:
    """The process's cache of ``directory`` (default :func:`cache_dir`), opened once."""
    where = (directory or cache_dir()).absolute()
    found = _OPEN.get(where)
    if found is None:
        found = _OPEN[where] = ResponseCache(where)
    return found
