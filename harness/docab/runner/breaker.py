"""The circuit breaker: stop a run whose endpoint is gone, instead of erroring every sample.

A dead endpoint (the server was killed, the tunnel dropped) makes every model call fail with a
connection error after its retries; without a breaker each remaining sample burns its retries and
is recorded as an error. The breaker watches the outcome of every model call (after the client's
own retries) and opens when ``failures`` consecutive calls, from at least ``min_samples`` different
samples, all failed with a connection error within ``window_s`` seconds. Any call that got an
answer from the server (a reply, or an HTTP error: 429, 5xx, 4xx) shows the endpoint is alive and
resets the count; so does a failure older than the window.

Only kind ``connection`` counts (refused, DNS, TLS, reset: :mod:`docab.models.causes`): a rate
limit or a 5xx with ``Retry-After`` is a server asking to wait, not a dead one, and a timeout may
be a slow model.

:class:`CircuitBreaker` is a pure state machine (times are passed in); the workers
(:mod:`docab.runner.workers`) feed it and, when it opens, stop taking samples, cancel the ones in
flight and leave the samples of the failing streak unrecorded, so a resume runs them.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from docab.errors import RunError

COUNTED_KINDS = frozenset({"connection"})
STOPPED_EXIT_CODE = 3


@dataclass(frozen=True)
class BreakerSettings:
    """``[breaker]`` of a run config, as the state machine reads it."""

    enabled: bool = True
    failures: int = 5
    window_s: float = 300.0
    min_samples: int = 2


@dataclass
class CircuitBreaker:
    """Closed until ``failures`` consecutive connection failures from ``min_samples`` samples
    within ``window_s``; open for good after that (a run is stopped, not resumed by itself)."""

    settings: BreakerSettings = field(default_factory=BreakerSettings)
    streak: list[tuple[float, Hashable]] = field(default_factory=list)  # (time, sample) per failure
    reason: str | None = None  # why it opened; None while closed

    @property
    def open(self) -> bool:
        return self.reason is not None

    def success(self) -> None:
        """A call that reached the server (a reply, or an HTTP error): the endpoint is alive."""
        if not self.open:
            self.streak.clear()

    def failure(self, sample: Hashable, kind: str, cause: str, now: float) -> bool:
        """A failed call of ``sample``; returns True when this failure opens the breaker."""
        if self.open:
            return False
        if kind not in COUNTED_KINDS:
            self.success()  # the server answered (429, 5xx, 4xx): alive
            return False
        self.streak = [(t, s) for t, s in self.streak if now - t <= self.settings.window_s]
        self.streak.append((now, sample))
        samples = {s for _, s in self.streak}
        if (
            self.settings.enabled
            and len(self.streak) >= self.settings.failures
            and len(samples) >= self.settings.min_samples
        ):
            self.reason = (
                f"{len(self.streak)} model calls in a row from {len(samples)} samples failed with a "
                f"connection error ({cause})"
            )
            return True
        return False

    def in_streak(self, sample: Hashable) -> bool:
        """Whether ``sample`` failed as part of the current streak (its record waits on the outcome)."""
        return any(s == sample for _, s in self.streak)


class RunStopped(RunError):
    """The breaker stopped the run: the endpoint stopped answering. Exit code 3."""

    exit_code = STOPPED_EXIT_CODE

    def __init__(self, reason: str, *, kept: int, left: int) -> None:
        super().__init__(
            f"the run was stopped: {reason}; the endpoint seems down. {kept} finished samples are kept, "
            f"{left} were not run or were interrupted and are not recorded; bring the endpoint back and "
            "run the same command again to resume"
        )
        self.reason = reason
        self.kept = kept
        self.left = left
