"""Per-provider concurrency: one pool of request slots per provider endpoint, shared by every model.

The agent model, the answer extractor and any other model built against the same endpoint (provider
and base URL) draw from the same slots, so a run never has more requests in flight at a provider than
its configured limit, however many samples run at once.

Within those slots, :meth:`ConcurrencyLimits.paced` paces the calls (``rpm``, ``tpm``, the
provider's ``Retry-After`` and rate-limit headers, a concurrency that halves on 429 and recovers):
the decisions are :class:`docab.models.pacing.Pacer`'s; this module only waits on the clock.

asyncio primitives belong to one event loop; a pool therefore keeps its semaphore and its pacer per
running loop (tests and notebooks start several loops in one process).
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol

from docab.models.pacing import Pacer, read_rate_limits

DEFAULT_CONCURRENCY = 16


class PaceClock(Protocol):
    def monotonic(self) -> float: ...

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


@dataclass
class _Gate:
    """One endpoint's pacer in one event loop, and who waits on it."""

    pacer: Pacer
    freed: asyncio.Condition = field(default_factory=asyncio.Condition)
    waiting: dict[str, int] = field(default_factory=dict)  # calls waiting, by what they wait on


@dataclass
class Ticket:
    """A paced call in flight: report how it ended with :meth:`succeeded` or :meth:`failed`."""

    gate: _Gate
    clock: PaceClock
    estimate: int
    generation: int
    max_pause_s: float = math.inf
    done: bool = False

    def succeeded(self, tokens: int | None, headers: Mapping[str, str] | None = None) -> None:
        """It answered, using ``tokens`` (None: unknown); ``headers`` of the reply, if at hand."""
        self._end(actual=tokens, headers=headers)

    def failed(
        self, *, status: int | None, retry_after_s: float | None, headers: Mapping[str, str] | None
    ) -> None:
        """It failed; a 429 slows the endpoint down, and its ``Retry-After`` pauses every call to it."""
        self._end(actual=None, headers=headers, status=status, retry_after_s=retry_after_s, ok=False)

    def abandoned(self) -> None:
        """It ended without an answer to judge (cancelled): no sign either way."""
        self._end(actual=None, headers=None, ok=False)

    def _end(
        self,
        *,
        actual: int | None,
        headers: Mapping[str, str] | None,
        status: int | None = None,
        retry_after_s: float | None = None,
        ok: bool = True,
    ) -> None:
        if self.done:
            return
        self.done = True
        rate_limited = status == 429
        self.gate.pacer.finish(
            generation=self.generation,
            estimate=self.estimate,
            actual=actual,
            now=self.clock.monotonic(),
            ok=ok,
            rate_limited=rate_limited,
            retry_after_s=retry_after_s if rate_limited else None,
            limits=read_rate_limits(headers, self.clock.now()),
            max_pause_s=self.max_pause_s,
        )


class ConcurrencyLimits:
    """Named pools of request slots. The first model to name a pool sets its size (and its
    ``rpm`` and ``tpm``)."""

    def __init__(self) -> None:
        self._sizes: dict[str, int] = {}
        self._rates: dict[str, tuple[float | None, float | None]] = {}
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]]
        self._semaphores = weakref.WeakKeyDictionary()
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Gate]]
        self._gates = weakref.WeakKeyDictionary()

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

    def register_rates(self, key: str, rpm: float | None, tpm: float | None) -> None:
        """Declare an endpoint's requests and tokens per minute; ``None`` keeps what another model
        set (or no limit). Two different explicit values raise ValueError, as for concurrency."""
        current = self._rates.get(key, (None, None))
        merged: list[float | None] = []
        for name, old, new in (("rpm", current[0], rpm), ("tpm", current[1], tpm)):
            if new is not None and new <= 0:
                raise ValueError(f"{name} must be a positive number, got {new}")
            if old is not None and new is not None and old != new:
                raise ValueError(
                    f"{name} for {key} is already {old:g}; another model config asks for {new:g}. "
                    "Models sharing a provider endpoint share its limits: set them once."
                )
            merged.append(old if new is None else new)
        self._rates[key] = (merged[0], merged[1])

    def rates(self, key: str) -> tuple[float | None, float | None]:
        return self._rates.get(key, (None, None))

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

    def _gate(self, key: str, clock: PaceClock) -> _Gate:
        loop = asyncio.get_running_loop()
        gates = self._gates.setdefault(loop, {})
        gate = gates.get(key)
        if gate is None:
            rpm, tpm = self.rates(key)
            pacer = Pacer.create(concurrency=self.size(key), rpm=rpm, tpm=tpm, now=clock.monotonic())
            gate = gates[key] = _Gate(pacer)
        return gate

    @asynccontextmanager
    async def paced(
        self,
        key: str,
        *,
        tokens: int,
        clock: PaceClock,
        max_pause_s: float = math.inf,
        on_wait: Callable[[str | None], None] | None = None,
    ) -> AsyncIterator[Ticket]:
        """A slot of ``key`` for a call of about ``tokens``, once its limits allow it; the caller
        reports the outcome on the :class:`Ticket` (a call that reports nothing, cancelled say,
        counts neither way). A provider's pause lasts at most ``max_pause_s``. ``on_wait`` hears
        what the call waits on (``concurrency``, ``rpm``, ``tpm``, :data:`RATE_LIMIT_PAUSE`) as
        each wait starts, and None once it is admitted."""
        if on_wait is not None:
            on_wait("concurrency")
        async with self.slot(key):
            gate = self._gate(key, clock)
            generation = await self._admit(gate, tokens, clock, on_wait)
            ticket = Ticket(gate, clock, tokens, generation, max_pause_s)
            try:
                yield ticket
            finally:
                ticket.abandoned()
                async with gate.freed:
                    gate.freed.notify_all()

    async def _admit(
        self, gate: _Gate, tokens: int, clock: PaceClock, on_wait: Callable[[str | None], None] | None
    ) -> int:
        pacer = gate.pacer
        while True:
            delay = pacer.delay(tokens, clock.monotonic())
            if delay == 0.0:
                if on_wait is not None:
                    on_wait(None)
                return pacer.start(tokens, clock.monotonic())
            reason = pacer.waiting_on or "a limit"
            if on_wait is not None:
                on_wait(reason)
            gate.waiting[reason] = gate.waiting.get(reason, 0) + 1
            try:
                if delay is None:
                    async with gate.freed:
                        await gate.freed.wait()
                else:
                    await clock.sleep(delay)
            finally:
                gate.waiting[reason] -= 1
                if not gate.waiting[reason]:
                    del gate.waiting[reason]

    def waiting(self) -> list[str]:
        """What the endpoints' calls wait on now, for the progress display: one line per endpoint
        that has calls waiting on a limit or runs below its concurrency after a 429
        (``openai http://h/v1: 3 calls wait on rpm``). Safe to call from the display's thread."""
        lines = []
        try:
            gates = [(key, gate) for pools in list(self._gates.values()) for key, gate in list(pools.items())]
        except RuntimeError:  # a loop's pools changed while being read: the next refresh shows them
            return []
        for key, gate in gates:
            control = gate.pacer.concurrency
            reasons = {reason: n for reason, n in list(gate.waiting.items()) if reason != "concurrency" and n}
            cut = control.limit < control.ceiling
            if not reasons and not cut:
                continue
            parts = [
                f"{n} call{'s' if n != 1 else ''} wait on {reason}" for reason, n in sorted(reasons.items())
            ]
            if cut:
                parts.append(f"concurrency {control.limit}/{control.ceiling} after 429")
            lines.append(f"{key}: {', '.join(parts)}")
        return lines


SHARED_LIMITS = ConcurrencyLimits()
"""The process-wide pools that ``build_model`` uses unless given others (tests pass their own)."""
