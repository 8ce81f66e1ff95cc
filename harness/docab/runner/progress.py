"""Progress of a run: done / total per arm, running accuracy, tokens, errors and ETA.

:class:`ProgressState` is the pure tally; :class:`LiveProgress` draws it with rich on a terminal,
:class:`LineProgress` prints a plain line now and then when the output is not a terminal (CI
logs, files), and :class:`SilentProgress` prints nothing. All write to stderr, leaving stdout to
the summary.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Protocol

from docab.log.records import RunRecord


@dataclass
class ArmTally:
    total: int = 0
    done: int = 0  # including records from earlier invocations
    done_now: int = 0  # in this invocation (for the rate)
    score: float = 0.0
    errors: int = 0  # status error or timeout
    limits: int = 0
    tokens: int = 0

    @property
    def accuracy(self) -> float | None:
        return self.score / self.done if self.done else None


@dataclass
class ProgressState:
    arms: dict[str, ArmTally] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def for_run(cls, totals: dict[str, int], earlier: Iterable[RunRecord] = ()) -> ProgressState:
        state = cls({arm: ArmTally(total=n) for arm, n in totals.items()})
        for record in earlier:
            state.add(record, now=False)
        return state

    def add(self, record: RunRecord, *, now: bool = True) -> None:
        tally = self.arms.setdefault(record.arm, ArmTally())
        tally.done += 1
        tally.done_now += now
        tally.score += record.score
        tally.errors += record.status in ("error", "timeout")
        tally.limits += record.status == "limit"
        tally.tokens += record.tokens()

    @property
    def done(self) -> int:
        return sum(t.done for t in self.arms.values())

    @property
    def total(self) -> int:
        return sum(t.total for t in self.arms.values())

    def eta_s(self, now: float | None = None) -> float | None:
        done_now = sum(t.done_now for t in self.arms.values())
        if not done_now:
            return None
        elapsed = (now if now is not None else time.monotonic()) - self.started
        return max(0.0, (self.total - self.done) * elapsed / done_now)


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def format_tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}k"
    return str(n)


Waiting = Callable[[], list[str]]
"""What the run waits on now (``docab.models.limits.ConcurrencyLimits.waiting``): one line per
endpoint held back by a rate limit, a provider's pause or a concurrency cut after 429s."""


def no_waiting() -> list[str]:
    return []


def shared_waiting() -> list[str]:
    from docab.models.limits import SHARED_LIMITS

    return SHARED_LIMITS.waiting()


def status_line(name: str, state: ProgressState, waiting: Sequence[str] = ()) -> str:
    parts = [f"[{name}] {state.done}/{state.total}"]
    for arm, tally in state.arms.items():
        acc = "–" if tally.accuracy is None else f"{tally.accuracy:.3f}"
        parts.append(
            f"{arm} {tally.done}/{tally.total} acc {acc} err {tally.errors} tok {format_tokens(tally.tokens)}"
        )
    parts.append(f"ETA {format_duration(state.eta_s())}")
    if waiting:
        parts.append("waiting: " + "; ".join(waiting))
    return " | ".join(parts)


class ProgressSink(Protocol):
    def start(self, state: ProgressState) -> None: ...
    def update(self, record: RunRecord) -> None: ...
    def stop(self) -> None: ...


class SilentProgress:
    def start(self, state: ProgressState) -> None:
        self.state = state

    def update(self, record: RunRecord) -> None:
        self.state.add(record)

    def stop(self) -> None:
        pass


class LineProgress:
    """A plain status line every ``every_s`` seconds and at the end."""

    def __init__(
        self, name: str, stream: IO[str] | None = None, every_s: float = 10.0, waiting: Waiting = no_waiting
    ) -> None:
        self.name = name
        self.stream = stream or sys.stderr
        self.every_s = every_s
        self.waiting = waiting
        self._last = 0.0

    def start(self, state: ProgressState) -> None:
        self.state = state
        self._last = time.monotonic()
        print(status_line(self.name, state, self.waiting()), file=self.stream, flush=True)

    def update(self, record: RunRecord) -> None:
        self.state.add(record)
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            print(status_line(self.name, self.state, self.waiting()), file=self.stream, flush=True)

    def stop(self) -> None:
        print(status_line(self.name, self.state), file=self.stream, flush=True)


class LiveProgress:
    """A rich table redrawn in place: one row per arm, and the run's ETA."""

    def __init__(self, name: str, stream: IO[str] | None = None, waiting: Waiting = no_waiting) -> None:
        self.name = name
        self.stream = stream or sys.stderr
        self.waiting = waiting

    def _render(self):  # type: ignore[no-untyped-def]
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        table = Table(
            title=f"docab run {self.name} · ETA {format_duration(self.state.eta_s())}", title_justify="left"
        )
        for column in ("arm", "", "done", "accuracy", "errors", "limits", "tokens"):
            table.add_column(column, justify="left" if column in ("arm", "") else "right")
        for arm, tally in self.state.arms.items():
            table.add_row(
                arm,
                ProgressBar(total=max(tally.total, 1), completed=tally.done, width=24),
                f"{tally.done}/{tally.total}",
                "–" if tally.accuracy is None else f"{tally.accuracy:.3f}",
                str(tally.errors),
                str(tally.limits),
                format_tokens(tally.tokens),
            )
        waiting = self.waiting()
        if waiting:
            table.caption = "waiting: " + "; ".join(waiting)
            table.caption_justify = "left"
        return table

    def start(self, state: ProgressState) -> None:
        from rich.console import Console
        from rich.live import Live

        self.state = state
        self._live = Live(
            get_renderable=self._render,
            console=Console(file=self.stream),
            refresh_per_second=4,
            transient=False,
        )
        self._live.start()

    def update(self, record: RunRecord) -> None:
        self.state.add(record)

    def stop(self) -> None:
        self._live.refresh()
        self._live.stop()


def progress_for(
    name: str, *, quiet: bool = False, stream: IO[str] | None = None, waiting: Waiting = shared_waiting
) -> ProgressSink:
    """The display for a run; ``waiting`` says what its model calls wait on (default: the
    process-wide endpoint pools every model is built with)."""
    stream = stream or sys.stderr
    if quiet:
        return SilentProgress()
    if stream.isatty():
        return LiveProgress(name, stream, waiting)
    return LineProgress(name, stream, waiting=waiting)


def totals_per_arm(arms: Sequence[str], questions: int, epochs: int) -> dict[str, int]:
    return {arm: questions * epochs for arm in arms}
