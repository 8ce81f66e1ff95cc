"""The run's spend journal (``spend.jsonl``): one line per billed model call, written as the call
returns, so what a run spent is known even for samples that were never recorded.

A record carries its sample's cost, but a sample cut short (a kill, a Ctrl-C, the circuit
breaker, the spend cap) has no record while its calls were billed all the same; it is billed again
when a resume runs it. The spend cap and the run's closing line count the journal, not the
records. The journal's first line is the opening balance: what the run's records cost when the
journal was started (0 for a new run; the records' total for a run begun by a docab without one),
so every later total is the journal's sum alone.

Lines are JSON objects: ``{"usd": 0.0123, "unpriced": [], "sample": [arm, qid, epoch], "usage":
[...]}`` for a call, ``{"usd": ..., "unpriced": [...], "opening": true}`` for the balance. A line cut
by a kill is dropped when the journal is next opened, as the records' torn tail is.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class SpendEntry:
    """One billed call of sample ``sample`` (or, with ``opening``, the balance the journal began with)."""

    usd: float  # over the calls whose price is known
    unpriced: tuple[str, ...] = ()  # models of calls whose cost is unknown
    sample: SampleKey | None = None
    usage: tuple[Usage, ...] = ()
    opening: bool = False

    def to_json(self) -> str:
        data: dict[str, Any] = {"usd": self.usd, "unpriced": list(self.unpriced)}
        if self.opening:
            data["opening"] = True
        if self.sample is not None:
            data["sample"] = list(self.sample)
        if self.usage:
            data["usage"] = [u.to_dict() for u in self.usage]
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> SpendEntry | None:
        """The entry of a journal line; None for a line that is not one (cut, or hand-edited)."""
        try:
            data = json.loads(line)
            usd = float(data["usd"])
            unpriced = tuple(str(m) for m in data.get("unpriced") or ())
            sample = data.get("sample")
            key = (str(sample[0]), str(sample[1]), int(sample[2])) if sample else None
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None
        if usd != usd or usd < 0:  # NaN or negative: not a cost
            return None
        return cls(usd, unpriced, key, opening=bool(data.get("opening")))


@dataclass(frozen=True)
class SpendTotals:
    """What a journal (or a run's records) says was spent."""

    usd: float = 0.0
    unpriced: tuple[str, ...] = ()  # models of calls whose cost is unknown
    calls: int = 0  # billed calls journaled (the opening balance is not a call)
    journaled: bool = False  # from a journal (else from the records alone)

    def plus_cost(self, cost: SampleCost) -> SpendTotals:
        return self.plus(SpendEntry(cost.priced, cost.unpriced, opening=True))

    def plus(self, entry: SpendEntry) -> SpendTotals:
        unpriced = tuple(dict.fromkeys((*self.unpriced, *entry.unpriced)))
        calls = self.calls + (0 if entry.opening else 1)
        return SpendTotals(self.usd + entry.usd, unpriced, calls, self.journaled)


def read_spend(path: Path) -> SpendTotals | None:
    """The totals of the journal at ``path``; None when there is none (a run begun without one)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    if not text.strip():
        return None
    totals = SpendTotals(journaled=True)
    for line in text.splitlines():
        entry = SpendEntry.from_json(line) if line.strip() else None
        if entry is not None:
            totals = totals.plus(entry)
    return totals


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

    def open(self, records: SpendTotals) -> SpendTotals:
        """Open for appending and return what the run spent so far: the journal's total, or for a
        run without a journal ``records`` (the records' cost), written as its opening balance."""
        _cut_torn_line(self.path)
        existing = read_spend(self.path)
        self._handle = self.path.open("a", encoding="utf-8")
        if existing is not None:
            return existing
        self._write(SpendEntry(records.usd, records.unpriced, opening=True))
        return SpendTotals(records.usd, records.unpriced, 0, journaled=True)

    def append(
        self, sample: SampleKey | None, usd: float, unpriced: Sequence[str], usage: Sequence[Usage]
    ) -> None:
        self._write(SpendEntry(usd, tuple(unpriced), sample, tuple(usage)))

    def _write(self, entry: SpendEntry) -> None:
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
