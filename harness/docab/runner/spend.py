"""The spend cap (``docab run --max-cost USD``, or ``max_cost`` in the config): no sample starts
that the run's estimate says would take its spending over the cap.

The cap bounds the whole run, every session of it: what records already written cost counts, so a
run stopped by its cap and resumed with a higher one goes on from where it stopped. Before a sample
starts, the guard adds to what was spent an estimate of every sample in flight and of the new one:
the mean cost of the samples of its arm done so far (of every arm while its arm has none). Until
the run has a sample done there is no estimate, so one sample runs alone first (:meth:`admit`
waits for it). A sample that cost nothing (one that failed before any billed reply) says nothing
about what the next one costs: it adds to neither the mean nor the count, and the samples after
it still run one at a time until one has cost something. (Counted at $0, a first sample lost to
a 503 burst made the estimate $0, and eight samples started at once ran a $2 cap to $8.) When the estimate would pass the cap, the sample is not started and no further one
is: samples in flight finish and are recorded, and the run ends with :class:`SpendStop`.

What was spent is counted call by call, as each model call returns (:class:`SampleMeter`, which
also writes the run's spend journal, :mod:`docab.log.spend_journal`), not when a sample is
recorded: a sample cut short by a kill, a Ctrl-C or the breaker was billed all the same, and is
billed again when a resume runs it. Samples in flight are not left to finish past the cap either:
once what was spent reaches it, a sample's next model call is not made, the sample is left
unrecorded (:class:`SpendCapReached`; a resume with a higher cap runs it) and the run stops. So a
run spends at most the cap plus, per worker, the one call each had in flight when it was reached.
A run killed (SIGKILL, a power loss) with calls in flight was billed for them too, and no reply
said what they cost: each priced call is journaled before it is sent (:mod:`docab.runner.inflight`),
and the next session counts a call opened and never closed at the most it could cost.
(Samples vary: with the mean as the only brake, eight workers ran a $30 cap to $109 when the first
sample was short and the rest long.)

Only priced calls count (``docab.pricing``): a run whose model has no known price cannot be capped
(``docab run`` refuses ``--max-cost`` then, before any sample). A call of unknown cost (an endpoint
whose replies carry no token usage) stops the run the same way: the cap can no longer be kept, and
going on would spend without limit while counting $0.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from docab.log.spend_journal import SampleKey, SpendJournal, SpendTotals
from docab.pricing import PriceBook
from docab.pricing.cost import SampleCost
from docab.usage import Usage

_CENT_FRACTION = 1e-9  # USD: sums of many calls' costs are not exact; a cap's cent is the same cent


@dataclass(frozen=True)
class SpendStop:
    """Why a run stopped before its last sample: its cap, what it spent, and its estimate."""

    cap: float
    spent: float  # USD of every record of the run, this session's included
    per_sample: float  # the mean cost of a sample done so far
    not_started: int = 0  # samples this session left to run (filled in by the launcher)
    unknown: tuple[str, ...] = ()  # calls of unknown cost that made the cap impossible to keep

    def needed(self) -> float:
        """A cap that the estimate says lets the remaining samples run."""
        return self.spent + self.not_started * self.per_sample

    def message(self) -> str:
        if self.unknown:
            return (
                f"stopped: the spend cap (${self.cap:.4f}) cannot be kept, since the cost of some calls is "
                f"unknown ({', '.join(self.unknown)}); ${self.spent:.4f} counted so far, "
                f"{self.not_started} sample(s) not started. Check what the endpoint reports, or run "
                "without --max-cost"
            )
        return (
            f"stopped at the spend cap: ${self.spent:.4f} spent of ${self.cap:.4f} allowed; about "
            f"${self.per_sample:.4f} per sample, so {self.not_started} sample(s) were not started "
            f"(about ${self.needed():.2f} in all would finish the run)"
        )


@dataclass
class SpendGuard:
    """The cap's book-keeping for one session; not thread-safe (the workers share one event loop)."""

    cap: float
    spent: float = 0.0
    _done: Counter[str] = field(default_factory=Counter)  # samples done per arm
    _cost: dict[str, float] = field(default_factory=dict)  # their USD per arm
    _in_flight: Counter[str] = field(default_factory=Counter)
    stopped: bool = False
    started: int = 0  # samples this guard let start
    _changed: asyncio.Event = field(default_factory=asyncio.Event)  # a sample finished
    _unknown: tuple[str, ...] = ()  # calls of unknown cost seen (see the module)

    @classmethod
    def from_costs(
        cls, cap: float, done: Iterable[tuple[str, SampleCost]], spent: SpendTotals | None = None
    ) -> SpendGuard:
        """A guard for a run whose records so far are ``done`` (arm, cost of each record), which
        spent ``spent`` in all (its spend journal's total; default: what the records cost)."""
        guard = cls(cap)
        records = SpendTotals()
        for arm, cost in done:
            guard._book(arm, cost)
            records = records.plus_cost(cost)
        guard.charge(*_usd_and_unknown(spent if spent is not None else records))
        return guard

    def estimate(self, arm: str) -> float:
        """The expected cost of one more sample of ``arm``: its arm's mean, else every arm's, else 0."""
        if self._done[arm]:
            return self._cost[arm] / self._done[arm]
        count = sum(self._done.values())
        return sum(self._cost.values()) / count if count else 0.0

    def per_sample(self) -> float:
        """The mean cost of the samples done that cost something."""
        count = sum(self._done.values())
        return sum(self._cost.values()) / count if count else 0.0

    async def admit(self, arm: str) -> bool:
        """:meth:`may_start`, once there is an estimate: while no sample of the run is done and one
        is in flight, wait for it."""
        while not self._done.total() and self._in_flight.total():
            self._changed.clear()
            await self._changed.wait()
        return self.may_start(arm)

    def may_start(self, arm: str) -> bool:
        """Whether a sample of ``arm`` may start; when it may, it counts as in flight until
        :meth:`finished`. Once one is refused, every later one is too."""
        if self.stopped:
            return False
        committed = sum(n * self.estimate(a) for a, n in self._in_flight.items())
        if self.spent + committed + self.estimate(arm) > self.cap + _CENT_FRACTION:
            self.stopped = True
            return False
        self._in_flight[arm] += 1
        self.started += 1
        return True

    def may_call(self) -> bool:
        """Whether a sample in flight may make its next model call: not once what was spent
        reached the cap, nor once a call's cost was unknown."""
        if self.spent >= self.cap - _CENT_FRACTION or self._unknown:
            self.stopped = True
            return False
        return True  # a sample refused only by the estimate does not stop those in flight

    def charge(self, usd: float, unknown: Sequence[str] = ()) -> None:
        """One billed call (see :class:`SampleMeter`): ``usd`` over its priced part, and the
        models of any part whose cost is unknown."""
        self.spent += usd
        if unknown:
            self._unknown = tuple(dict.fromkeys((*self._unknown, *unknown)))
            self.stopped = True

    def finished(self, arm: str, cost: SampleCost | None) -> None:
        """A sample of ``arm`` that :meth:`may_start` let start is recorded, at ``cost`` (already
        charged call by call: this feeds the estimate)."""
        self._leave(arm)
        self._book(arm, cost)

    def abandoned(self, arm: str) -> None:
        """A sample of ``arm`` that :meth:`may_start` let start ended unrecorded."""
        self._leave(arm)
        self._changed.set()

    def _leave(self, arm: str) -> None:
        if self._in_flight[arm] > 0:
            self._in_flight[arm] -= 1

    def stop(self) -> SpendStop | None:
        """What stopped the run, when the cap did."""
        if not self.stopped:
            return None
        return SpendStop(self.cap, self.spent, self.per_sample(), unknown=self._unknown)

    def _book(self, arm: str, cost: SampleCost | None) -> None:
        usd = cost.priced if cost is not None else 0.0
        if usd > 0:  # see the module: a sample that cost nothing tells nothing of the next one
            self._done[arm] += 1
            self._cost[arm] = self._cost.get(arm, 0.0) + usd
        self._changed.set()


def _usd_and_unknown(totals: SpendTotals) -> tuple[float, tuple[str, ...]]:
    return totals.upper_bound, totals.unpriced  # calls a kill interrupted count at their most


_CALL: ContextVar[int | None] = ContextVar("journaled_call", default=None)
"""The id of the journaled call this task is making (:meth:`SampleMeter.call`), if any."""


@dataclass
class SampleMeter:
    """The spend meter of one sample (:data:`docab.models.meter.METER`): prices each billed call
    as it returns, journals it and charges the cap."""

    sample: SampleKey
    prices: PriceBook
    journal: SpendJournal | None = None
    guard: SpendGuard | None = None

    charged: float = 0.0  # USD charged so far
    unknown: tuple[str, ...] = ()  # models charged at an unknown cost so far
    _open: set[int] = field(default_factory=set)  # ids of journaled calls not yet closed

    @contextmanager
    def call(self, model: str, bound: float | None) -> Iterator[None]:
        """One model call of ``model``, at most ``bound`` USD, journaled before it is sent and closed
        as it returns (by :meth:`charge`, or at $0 when it billed nothing); see
        :mod:`docab.runner.inflight`."""
        if self.journal is None:
            yield
            return
        call = self.journal.opened(self.sample, model, bound)
        self._open.add(call)
        scope = _CALL.set(call)
        try:
            yield
        finally:
            _CALL.reset(scope)
            if call in self._open:  # failed before any billed reply, or cut short: billed nothing known
                self._open.discard(call)
                self.journal.append(self.sample, 0.0, (), (), call=call)

    def charge(self, usage: Sequence[Usage]) -> None:
        calls = [u for u in usage if u.total or not u.reported]
        if calls:
            self._charge(self.prices.sample_cost(calls), calls, _CALL.get())

    def settle(self, cost: SampleCost | None) -> None:
        """The sample is recorded at ``cost``: charge what its record counts that no model call
        of this process reported (the tokens MCP servers spent on their own models, reported
        with their results as role ``tool-side``)."""
        if cost is None:
            return
        rest = cost.priced - self.charged
        unknown = tuple(m for m in cost.unpriced if m not in self.unknown)
        if rest > 1e-12 or unknown:
            self._charge(SampleCost({"tool-side": max(0.0, rest)}, unknown), ())

    def _charge(self, cost: SampleCost, calls: Sequence[Usage], call: int | None = None) -> None:
        self.charged += cost.priced
        self.unknown = tuple(dict.fromkeys((*self.unknown, *cost.unpriced)))
        if call is not None:
            if call in self._open:
                self._open.discard(call)
            else:  # closed already: a second report of one call is a line of its own
                call = None
        if self.journal is not None:
            self.journal.append(self.sample, cost.priced, cost.unpriced, calls, call=call)
        if self.guard is not None:
            self.guard.charge(cost.priced, cost.unpriced)
