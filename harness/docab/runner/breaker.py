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

Refusals (kind ``auth``: a key revoked mid-run, an account out of credit, which a provider
answers with a final 401, 403 or 429 ``insufficient_quota``) keep a streak of their own, under
the same thresholds: the server is alive, but every later sample would be refused too, each
recorded as an error, so the run stops with the provider's reason and resumes once it is fixed.

:class:`CircuitBreaker` is a pure state machine (times are passed in); the workers
(:mod:`docab.runner.workers`) feed it and, when it opens, stop taking samples, cancel the ones in
flight and leave the samples of the failing streak unrecorded, so a resume runs them.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from docab.errors import RunError

COUNTED_KINDS = frozenset({"connection"})
REFUSED_KINDS = frozenset({"auth"})
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
    refusals: list[tuple[float, Hashable]] = field(default_factory=list)  # the same, of refusals
    reason: str | None = None  # why it opened; None while closed

    @property
    def open(self) -> bool:
        return self.reason is not None

    def success(self) -> None:
        """A call that reached the server (a reply, or an HTTP error): the endpoint is alive."""
        if not self.open:
            self.streak.clear()
            self.refusals.clear()

    def failure(self, sample: Hashable, kind: str, cause: str, now: float) -> bool:
        """A failed call of ``sample``; returns True when this failure opens the breaker."""
        if self.open:
            return False
        if kind in REFUSED_KINDS:
            self.streak.clear()  # the server answered: alive
            self.refusals = [*self._within_window(self.refusals, now), (now, sample)]
            return self._opens(self.refusals, f"were refused by the provider ({cause})")
        if kind not in COUNTED_KINDS:
            self.success()  # the server answered (429, 5xx, 4xx): alive
            return False
        self.refusals.clear()
        self.streak = [*self._within_window(self.streak, now), (now, sample)]
        return self._opens(self.streak, f"failed with a connection error ({cause}); the endpoint seems down")

    def _within_window(
        self, failures: list[tuple[float, Hashable]], now: float
    ) -> list[tuple[float, Hashable]]:
        return [(t, s) for t, s in failures if now - t <= self.settings.window_s]

    def _opens(self, failures: list[tuple[float, Hashable]], what: str) -> bool:
        samples = {s for _, s in failures}
        if (
            self.settings.enabled
            and len(failures) >= self.settings.failures
            and len(samples) >= self.settings.min_samples
        ):
            self.reason = f"{len(failures)} model calls in a row from {len(samples)} samples {what}"
            return True
        return False

    def in_streak(self, sample: Hashable) -> bool:
        """Whether ``sample`` failed as part of the current streak (its record waits on the outcome)."""
        return any(s == sample for _, s in (*self.streak, *self.refusals))


class RunStopped(RunError):
    """The breaker stopped the run: the endpoint stopped answering. Exit code 3."""

    exit_code = STOPPED_EXIT_CODE

    def __init__(self, reason: str, *, kept: int, left: int) -> None:
        super().__init__(
            f"the run was stopped: {reason}. {kept} finished samples are kept, {left} were not run or "
            "were interrupted and are not recorded; fix the cause (bring the endpoint back, check the "
            "key and the account) and run the same command again to resume"
        )
        self.reason = reason
        self.kept = kept
        self.left = left
