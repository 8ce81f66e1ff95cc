"""Pacing of model calls per endpoint: request and token budgets, provider rate-limit headers, and
a concurrency that backs off on 429 and recovers.

Pure state, time passed in: :class:`TokenBucket` (a per-minute budget), :class:`AdaptiveConcurrency`
(how many requests may be in flight), :class:`Pacer` (both budgets, the concurrency and a pause
set by the provider) and :func:`read_rate_limits` (the ``x-ratelimit-*`` headers of OpenAI and the
``anthropic-ratelimit-*`` headers of Anthropic). Nothing here sleeps; the waiting lives in
:mod:`docab.models.limits`, which asks a pacer how long to wait and waits on the injected clock.

A bucket for a limit of ``L`` per minute holds at most ``burst`` (one second's worth, at least
one) and refills at ``(L - burst) / 60`` per second, so within any minute it lets through at most
``L``: a provider counting per minute never sees more than the limit (for tokens: as estimated
before the call and corrected with the real usage after it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

BURST_S = 1.0  # a bucket holds one second's worth of its limit (at least one unit)
CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 1600  # what an image costs, roughly, at either provider (not its base64 length / 4)
_MAX_TOKEN_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


@dataclass
class TokenBucket:
    """A budget of ``limit`` units per minute (requests or tokens).

    A call asks :meth:`wait` how long until ``amount`` may start, then :meth:`take` it; the level
    may go below zero for a call larger than the bucket (a long prompt), and the calls after it
    wait for the debt to refill. :meth:`give_back` corrects an estimate once the real amount is
    known (a negative value takes more)."""

    limit: float
    burst: float
    rate: float  # units per second
    level: float
    updated: float

    @classmethod
    def per_minute(cls, limit: float, now: float) -> TokenBucket:
        if limit <= 0:
            raise ValueError(f"a rate limit must be positive, got {limit!r}")
        burst = max(1.0, limit * BURST_S / 60.0)
        if burst >= limit:  # a limit of a request or two a minute: half of it, so that it refills
            burst = limit / 2.0
        return cls(limit=limit, burst=burst, rate=(limit - burst) / 60.0, level=burst, updated=now)

    def _refill(self, now: float) -> None:
        if now > self.updated:
            self.level = min(self.burst, self.level + (now - self.updated) * self.rate)
            self.updated = now

    def wait(self, amount: float, now: float) -> float:
        """Seconds from ``now`` until ``amount`` may start (0: at once)."""
        self._refill(now)
        needed = min(amount, self.burst)
        if self.level >= needed - 1e-9:  # rounding must not leave a wait too short to pass
            return 0.0
        return (needed - self.level) / self.rate

    def take(self, amount: float, now: float) -> None:
        self._refill(now)
        self.level -= amount

    def give_back(self, amount: float, now: float) -> None:
        self._refill(now)
        self.level = min(self.burst, self.level + amount)

    def cap(self, remaining: float, now: float) -> None:
        """The provider says only ``remaining`` is left: the level is no higher than that."""
        self._refill(now)
        self.level = min(self.level, remaining)


@dataclass
class AdaptiveConcurrency:
    """How many requests may be in flight: halved on a 429 (not below 1), one more after a run of
    successes as long as the current limit (not above ``ceiling``, the configured concurrency).

    429s of requests that started before the last cut say nothing new (they were sent at the old
    limit), so each request carries the :attr:`generation` it started in and only a 429 of the
    current generation cuts again: a burst of 429s halves the limit once, not once per request."""

    ceiling: int
    limit: int = 0
    in_flight: int = 0
    successes: int = 0
    generation: int = 0

    def __post_init__(self) -> None:
        if self.ceiling < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.ceiling}")
        if self.limit <= 0:
            self.limit = self.ceiling

    @property
    def free(self) -> bool:
        return self.in_flight < self.limit

    def start(self) -> int:
        """A request starts; returns its generation (for :meth:`rate_limited`)."""
        self.in_flight += 1
        return self.generation

    def finish(self) -> None:
        self.in_flight = max(0, self.in_flight - 1)

    def succeeded(self) -> None:
        self.successes += 1
        if self.successes >= self.limit and self.limit < self.ceiling:
            self.limit += 1
            self.successes = 0

    def rate_limited(self, generation: int) -> None:
        self.successes = 0
        if generation < self.generation:
            return
        self.limit = max(1, self.limit // 2)
        self.generation += 1


@dataclass(frozen=True)
class RateLimits:
    """What a provider's headers say: requests and tokens left, and seconds until each resets."""

    requests_remaining: float | None = None
    requests_reset_s: float | None = None
    tokens_remaining: float | None = None
    tokens_reset_s: float | None = None


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(value: str) -> float | None:
    """OpenAI's reset durations (``1s``, ``6m0s``, ``20ms``, ``1h2m3.5s``) in seconds; None if unreadable."""
    text = value.strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    return sum(float(number) * _UNIT_S[unit] for number, unit in parts)


def _seconds_until(value: str, now: float) -> float | None:
    """An RFC 3339 time (Anthropic's resets) as seconds from ``now`` (epoch seconds)."""
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def read_rate_limits(headers: Mapping[str, str] | None, now: float) -> RateLimits | None:
    """The rate-limit headers of a reply, OpenAI's or Anthropic's; None when it sent none.

    ``now`` is wall-clock epoch seconds (Anthropic's resets are dates)."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    if any(key.startswith("x-ratelimit-") for key in lowered):
        reset_requests = lowered.get("x-ratelimit-reset-requests")
        reset_tokens = lowered.get("x-ratelimit-reset-tokens")
        return RateLimits(
            requests_remaining=_number(lowered.get("x-ratelimit-remaining-requests")),
            requests_reset_s=parse_duration(reset_requests) if reset_requests else None,
            tokens_remaining=_number(lowered.get("x-ratelimit-remaining-tokens")),
            tokens_reset_s=parse_duration(reset_tokens) if reset_tokens else None,
        )
    if any(key.startswith("anthropic-ratelimit-") for key in lowered):
        reset_requests = lowered.get("anthropic-ratelimit-requests-reset")
        reset_tokens = lowered.get("anthropic-ratelimit-tokens-reset") or lowered.get(
            "anthropic-ratelimit-input-tokens-reset"
        )
        tokens_left = lowered.get("anthropic-ratelimit-tokens-remaining") or lowered.get(
            "anthropic-ratelimit-input-tokens-remaining"
        )
        return RateLimits(
            requests_remaining=_number(lowered.get("anthropic-ratelimit-requests-remaining")),
            requests_reset_s=_seconds_until(reset_requests, now) if reset_requests else None,
            tokens_remaining=_number(tokens_left),
            tokens_reset_s=_seconds_until(reset_tokens, now) if reset_tokens else None,
        )
    return None


def estimate_tokens(request: Any) -> int:
    """Tokens a request will count for, before it is sent: its text at four characters a token,
    an image at :data:`IMAGE_TOKENS` (not its base64 length) and the output it may produce
    (``max_tokens`` or the like)."""
    total = 0.0

    def walk(value: Any, key: str = "") -> None:
        nonlocal total
        if isinstance(value, Mapping):
            if value.get("type") == "base64" and isinstance(value.get("data"), str):  # Anthropic image
                total += IMAGE_TOKENS * CHARS_PER_TOKEN
                return
            for child_key, child in value.items():
                if child_key in _MAX_TOKEN_FIELDS and isinstance(child, int) and not isinstance(child, bool):
                    total += child * CHARS_PER_TOKEN
                else:
                    walk(child, str(child_key))
        elif isinstance(value, list | tuple):
            for child in value:
                walk(child)
        elif isinstance(value, str):
            if value.startswith("data:image/") or (key == "image_url" and len(value) > 1000):
                total += IMAGE_TOKENS * CHARS_PER_TOKEN
            else:
                total += len(value)
        elif value is not None:
            total += len(str(value))

    walk(request)
    return max(1, math.ceil(total / CHARS_PER_TOKEN))


RATE_LIMIT_PAUSE = "a rate-limit reset"
"""What a call waits on while the endpoint is paused by a provider's 429 or its exhausted-limit headers."""


@dataclass
class Pacer:
    """The pacing of one endpoint: its request and token budgets (when configured), its adaptive
    concurrency, and a pause until a time the provider named (``Retry-After``, a reset).

    :meth:`delay` says how long a call of ``tokens`` must wait (None: until a slot frees up);
    :meth:`start` records that it started; :meth:`finish` that it ended, with the real tokens."""

    concurrency: AdaptiveConcurrency
    requests: TokenBucket | None = None
    tokens: TokenBucket | None = None
    paused_until: float = -math.inf
    waiting_on: str | None = field(default=None)  # what the last delay was for, for the display

    @classmethod
    def create(cls, *, concurrency: int, rpm: float | None, tpm: float | None, now: float) -> Pacer:
        return cls(
            concurrency=AdaptiveConcurrency(concurrency),
            requests=TokenBucket.per_minute(rpm, now) if rpm else None,
            tokens=TokenBucket.per_minute(tpm, now) if tpm else None,
        )

    def delay(self, tokens: int, now: float) -> float | None:
        """Seconds until a call of ``tokens`` may start; 0: now; None: when a call in flight ends."""
        if not self.concurrency.free:
            self.waiting_on = "concurrency"
            return None
        waits = {RATE_LIMIT_PAUSE: self.paused_until - now}
        if self.requests is not None:
            waits["rpm"] = self.requests.wait(1, now)
        if self.tokens is not None:
            waits["tpm"] = self.tokens.wait(tokens, now)
        reason, longest = max(waits.items(), key=lambda item: item[1])
        if longest <= 0:
            self.waiting_on = None
            return 0.0
        self.waiting_on = reason
        return longest

    def start(self, tokens: int, now: float) -> int:
        if self.requests is not None:
            self.requests.take(1, now)
        if self.tokens is not None:
            self.tokens.take(tokens, now)
        return self.concurrency.start()

    def finish(
        self,
        *,
        generation: int,
        estimate: int,
        actual: int | None,
        now: float,
        ok: bool = True,
        rate_limited: bool = False,
        retry_after_s: float | None = None,
        limits: RateLimits | None = None,
        max_pause_s: float = math.inf,
    ) -> None:
        """A call ended: ``actual`` tokens used (None: unknown, the estimate stands), answered
        (``ok``), refused with a 429, or failed otherwise (neither grows nor cuts the concurrency),
        and what the provider's headers said. No pause lasts more than ``max_pause_s`` (a
        confused or hostile server must not park a run)."""
        self.concurrency.finish()
        if self.tokens is not None and actual is not None:
            self.tokens.give_back(estimate - actual, now)
        if rate_limited:
            self.concurrency.rate_limited(generation)
            if retry_after_s is not None:
                self.pause(now + min(retry_after_s, max_pause_s))
        elif ok:
            self.concurrency.succeeded()
        if limits is not None:
            self.observe(limits, now, max_pause_s=max_pause_s)

    def pause(self, until: float) -> None:
        self.paused_until = max(self.paused_until, until)

    def observe(self, limits: RateLimits, now: float, *, max_pause_s: float = math.inf) -> None:
        """Follow the provider's own count: nothing left means a pause until its reset."""
        for remaining, reset_s, bucket in (
            (limits.requests_remaining, limits.requests_reset_s, self.requests),
            (limits.tokens_remaining, limits.tokens_reset_s, self.tokens),
        ):
            if remaining is None:
                continue
            if remaining < 1 and reset_s is not None:
                self.pause(now + min(reset_s, max_pause_s))
            if bucket is not None:
                bucket.cap(remaining, now)
