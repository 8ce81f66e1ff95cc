"""Per-provider concurrency: one pool of request slots per provider endpoint, shared by every model.

The agent model, the answer extractor and any other model built against the same endpoint (provider
and base URL) draw from the same slots, so a run never has more requests in flight at a provider than
its configured limit, however many samples run at once.

asyncio semaphores belong to one event loop; a pool therefore keeps one semaphore per running loop
(tests and notebooks start several loops in one process).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

DEFAULT_CONCURRENCY = 16


class ConcurrencyLimits:
    """Named pools of request slots. The first model to name a pool sets its size."""

    def __init__(self) -> None:
        self._sizes: dict[str, int] = {}
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]]
        self._semaphores = weakref.WeakKeyDictionary()

    def register(self, key: str, size: int | None) -> int:
        """Declare a pool; returns its size. ``None`` takes the existing size or the default.

        Two explicit, different sizes for one endpoint are a configuration mistake (which one would
        the run honour?), so they raise ValueError instead of silently picking one.
        """
        if size is not None and size < 1:
            raise ValueError(f"concurrency must be at least 1, got {size}")
        current = self._sizes.get(key)
        if current is None:
            self._sizes[key] = size or DEFAULT_CONCURRENCY
        elif size is not None and size != current:
            raise ValueError(
                f"concurrency for {key} is already {current}; another model config asks for {size}. "
                "Models sharing a provider endpoint share its limit: set it once."
            )
        return self._sizes[key]

    def size(self, key: str) -> int:
        return self._sizes.get(key, DEFAULT_CONCURRENCY)

    def _semaphore(self, key: str) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        pools = self._semaphores.setdefault(loop, {})
        semaphore = pools.get(key)
        if semaphore is None:
            semaphore = pools[key] = asyncio.Semaphore(self.size(key))
        return semaphore

    @asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[None]:
        async with self._semaphore(key):
            yield


SHARED_LIMITS = ConcurrencyLimits()
"""The process-wide pools that ``build_model`` uses unless given others (tests pass their own)."""
