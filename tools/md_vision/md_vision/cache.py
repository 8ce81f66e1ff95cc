"""A small least-recently-used cache bounded by total size (thread-safe), and work shared by the
callers that ask for the same key at once (:class:`SharedWork`)."""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class SizedLRU(Generic[V]):
    """Keeps the most recently used values whose sizes add up to at most ``max_size``."""

    def __init__(self, max_size: int, size_of: Callable[[V], int] = lambda _value: 1) -> None:
        self.max_size = max_size
        self._size_of = size_of
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: V) -> None:
        size = self._size_of(value)
        if size > self.max_size:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._total -= old[1]
            self._items[key] = (value, size)
            self._total += size
            while self._total > self.max_size:
                _key, (_value, dropped) = self._items.popitem(last=False)
                self._total -= dropped

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0

    def __len__(self) -> int:
        return len(self._items)


class SharedWork(Generic[V]):
    """One computation per key at a time, on one event loop: a caller asking for a key that is
    being computed waits for that result (or that exception) instead of computing it again. A
    computation cancelled with its caller is started again by the next caller still waiting.

    Agents ask for several sections of one document at once, and a document refers to one image
    many times: each used to be parsed or prepared once per ask, all at the same time."""

    def __init__(self) -> None:
        self._pending: dict[Hashable, asyncio.Future[V]] = {}

    async def run(self, key: Hashable, compute: Callable[[], Awaitable[V]]) -> V:
        while (pending := self._pending.get(key)) is not None:
            try:
                return await asyncio.shield(pending)
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # this caller was cancelled, not the computation it waited for
        result: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        result.add_done_callback(_retrieve)
        self._pending[key] = result
        try:
            value = await compute()
        except Exception as exc:
            result.set_exception(exc)
            raise
        except BaseException:
            result.cancel()  # a waiter computes it itself
            raise
        finally:
            del self._pending[key]
        result.set_result(value)
        return value


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a shared exception as seen: with no caller waiting, no one else reads it."""
    if not future.cancelled():
        future.exception()
