"""The run's spend journal (``spend.jsonl``): one line per billed model call, written as the call
returns, so what a run spent is known even for samples that were never recorded.

A record carries its sample's cost, but a sample cut short (a kill, a Ctrl-C, the circuit
breaker, the spend cap) has no record while its calls were billed all the same; it is billed again
when a resume runs it. The spend cap and the run's closing line count the journal, not the
records. The journal's first line is the opening balance: what the run's records cost when the
journal was started (0 for a new run; the records' total for a run begun by a docab without one),
so every later total is the journal's sum alone.

Lines are JSON objects: ``{"usd": 0.0123, "unpriced": [], "sample": [arm, qid, epoch], "usage":
[...], "call": 7}`` for a call, ``{"usd": ..., "unpriced": [...], "opening": true}`` for the balance. A line cut
by a kill is dropped when the journal is next opened, as the records' torn tail is.

Calls in flight (interrupted calls): a priced model call is journaled twice, ``{"opened": 7,
"sample": [...], "model": "...", "bound": 0.0456}`` before it is sent and its entry above, with
``"call": 7``, when it returns (billed, failed, or billed nothing: ``usd`` 0). ``bound`` is the
most the call can cost (:func:`docab.runner.inflight.call_bound`; null when its model has no
known price). A call opened and never closed was in flight when the run was killed (SIGKILL, a
power loss): the provider may have billed it while nothing here says what it cost. Reading the
journal counts such calls and their bounds (:attr:`SpendTotals.interrupted`,
:attr:`SpendTotals.interrupted_usd`); the spend cap counts them at their bound, and the run's
closing notes and the report say how much more may have been billed. An ``opened`` line has no
``usd``, so a docab that predates it skips it; a journal written before calls had ids (no
``opened`` line, no ``call``) reads as it always did, with no interrupted calls. Call ids count up
from 1 through every session of the journal, so they are unique within the run.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from docab.pricing.cost import SampleCost
from docab.usage import Usage

SPEND_JOURNAL = "spend.jsonl"

SampleKey = tuple[str, str, int]  # arm, qid, epoch


def _sample_key(sample: Any) -> SampleKey | None:
    """The key of a line's ``"sample"`` value ([arm, qid, epoch]); raises for a malformed one
    (the caller turns that into "not a journal line")."""
    return (str(sample[0]), str(sample[1]), int(sample[2])) if sample else None


@dataclass(frozen=True)
class SpendEntry:
    """One billed call of sample ``sample`` (or, with ``opening``, the balance the journal began with)."""

    usd: float  # over the calls whose price is known
    unpriced: tuple[str, ...] = ()  # models of calls whose cost is unknown
    sample: SampleKey | None = None
    usage: tuple[Usage, ...] = ()
    opening: bool = False
    call: int | None = None  # the id of the ``opened`` line this closes; None in older journals

    @property
    def billed(self) -> bool:
        """Whether this line is a billed call: a closing line that cost nothing (a call that
        failed before any billed reply) is not one, nor is the opening balance."""
        return not self.opening and (self.call is None or bool(self.usd or self.unpriced))

    def to_json(self) -> str:
        data: dict[str, Any] = {"usd": self.usd, "unpriced": list(self.unpriced)}
        if self.opening:
            data["opening"] = True
        if self.sample is not None:
            data["sample"] = list(self.sample)
        if self.usage:
            data["usage"] = [u.to_dict() for u in self.usage]
        if self.call is not None:
            data["call"] = self.call
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> SpendEntry | None:
        """The entry of a journal line; None for a line that is not one (cut, or hand-edited)."""
        try:
            data = json.loads(line)
            usd = float(data["usd"])
            unpriced = tuple(str(m) for m in data.get("unpriced") or ())
            key = _sample_key(data.get("sample"))
            call = data.get("call")
            call = None if call is None else int(call)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None
        if usd != usd or usd < 0:  # NaN or negative: not a cost
            return None
        return cls(usd, unpriced, key, opening=bool(data.get("opening")), call=call)


@dataclass(frozen=True)
class OpenedCall:
    """A model call about to be sent (an ``opened`` line; see the module)."""

    call: int  # unique within the run; the call's closing :class:`SpendEntry` carries it
    sample: SampleKey | None
    model: str
    bound: float | None  # USD: the most the call can cost; None when its model has no known price

    def to_json(self) -> str:
        data: dict[str, Any] = {"opened": self.call}
        if self.sample is not None:
            data["sample"] = list(self.sample)
        data["model"] = self.model
        data["bound"] = self.bound
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_data(cls, data: Any) -> OpenedCall | None:
        """The call of a parsed ``opened`` line; None for a line that is not one."""
        try:
            call = int(data["opened"])
            key = _sample_key(data.get("sample"))
            bound = data.get("bound")
            bound = None if bound is None else float(bound)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None
        if bound is not None and (bound != bound or bound < 0):
            return None
        return cls(call, key, str(data.get("model") or "?"), bound)


@dataclass(frozen=True)
class SpendTotals:
    """What a journal (or a run's records) says was spent."""

    usd: float = 0.0
    unpriced: tuple[str, ...] = ()  # models of calls whose cost is unknown
    calls: int = 0  # billed calls journaled (the opening balance is not a call)
    journaled: bool = False  # from a journal (else from the records alone)
    # Calls opened and never closed: in flight when a run was killed, maybe billed (see the
    # module); not in ``usd`` or ``calls``. ``interrupted_usd`` is the sum of their bounds (a
    # call of unknown price adds its model to ``unpriced`` instead).
    interrupted: int = 0
    interrupted_usd: float = 0.0

    @property
    def upper_bound(self) -> float:
        """USD that may have been billed: ``usd`` and every interrupted call at its bound (what
        the spend cap counts)."""
        return self.usd + self.interrupted_usd

    def interrupted_note(self) -> str:
        """What the interrupted calls may have cost, as the run's notes and the report say it;
        "" when there are none."""
        if not self.interrupted:
            return ""
        calls = "1 call" if self.interrupted == 1 else f"{self.interrupted} calls"
        return f"{calls} interrupted by a kill: up to ${self.interrupted_usd:.4f} more may have been billed"

    def plus_cost(self, cost: SampleCost) -> SpendTotals:
        return self.plus(SpendEntry(cost.priced, cost.unpriced, opening=True))

    def plus(self, entry: SpendEntry) -> SpendTotals:
        unpriced = tuple(dict.fromkeys((*self.unpriced, *entry.unpriced)))
        calls = self.calls + entry.billed
        return dataclasses.replace(self, usd=self.usd + entry.usd, unpriced=unpriced, calls=calls)


def read_spend(path: Path) -> SpendTotals | None:
    """The totals of the journal at ``path``; None when there is none (a run begun without one)."""
    read = _read(path)
    return read[0] if read is not None else None


def _read(path: Path) -> tuple[SpendTotals, int] | None:
    """The totals of the journal at ``path`` and the last call id it holds (0 for none)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    if not text.strip():
        return None
    totals = SpendTotals(journaled=True)
    opened: dict[int, OpenedCall] = {}
    last = 0
    for line in text.splitlines():
        if '"opened"' in line:  # cheap test first: most lines are closing entries
            call = _opened(line)
            if call is not None:
                opened[call.call] = call
                last = max(last, call.call)
                continue
        entry = SpendEntry.from_json(line) if line.strip() else None
        if entry is not None:
            totals = totals.plus(entry)
            if entry.call is not None:
                opened.pop(entry.call, None)
                last = max(last, entry.call)
    if opened:
        known = [c.bound for c in opened.values() if c.bound is not None]
        unknown = [c.model for c in opened.values() if c.bound is None]
        totals = dataclasses.replace(
            totals,
            unpriced=tuple(dict.fromkeys((*totals.unpriced, *unknown))),
            interrupted=len(opened),
            interrupted_usd=sum(known),
        )
    return totals, last


def _opened(line: str) -> OpenedCall | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return OpenedCall.from_data(data) if isinstance(data, dict) and "opened" in data else None


def records_spend(costs: Iterable[SampleCost]) -> SpendTotals:
    """What records cost, as totals (the opening balance of a journal begun on an existing run)."""
    totals = SpendTotals()
    for cost in costs:
        totals = totals.plus_cost(cost)
    return totals


class SpendJournal:
    """Appends the billed calls of one session to ``spend.jsonl`` (from the event loop's thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None
        self._last_call = 0  # the last call id written (ids go on from the journal's last)

    def open(self, records: SpendTotals) -> SpendTotals:
        """Open for appending and return what the run spent so far: the journal's total, or for a
        run without a journal ``records`` (the records' cost), written as its opening balance."""
        _cut_torn_line(self.path)
        existing = _read(self.path)
        self._handle = self.path.open("a", encoding="utf-8")
        if existing is not None:
            self._last_call = existing[1]
            return existing[0]
        self._write(SpendEntry(records.usd, records.unpriced, opening=True))
        return SpendTotals(records.usd, records.unpriced, 0, journaled=True)

    def opened(self, sample: SampleKey | None, model: str, bound: float | None) -> int:
        """Journal a call about to be sent, at most ``bound`` USD; returns its id, which the
        :meth:`append` of its return carries."""
        self._last_call += 1
        self._write(OpenedCall(self._last_call, sample, model, bound))
        return self._last_call

    def append(
        self,
        sample: SampleKey | None,
        usd: float,
        unpriced: Sequence[str],
        usage: Sequence[Usage],
        call: int | None = None,
    ) -> None:
        self._write(SpendEntry(usd, tuple(unpriced), sample, tuple(usage), call=call))

    def _write(self, entry: SpendEntry | OpenedCall) -> None:
        if self._handle is None:
            raise RuntimeError("the spend journal is not open")
        self._handle.write(entry.to_json() + "\n")
        self._handle.flush()  # a kill loses at most the line being written

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _cut_torn_line(path: Path) -> None:
    """Drop a last line a kill cut short (everything after the last newline)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    if data and not data.endswith(b"\n"):
        with path.open("rb+") as handle:
            handle.truncate(data.rfind(b"\n") + 1)
            handle.flush()
            os.fsync(handle.fileno())
