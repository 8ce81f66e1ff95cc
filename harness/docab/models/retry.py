"""Retries for model calls: which failures are worth another attempt, and how long to wait.

One loop serves both providers. The SDKs' own retries are switched off (``max_retries=0``) where
the clients are built, so every attempt passes through here: it is counted in ``Turn.retries``,
re-queues for the provider's concurrency slot, and honours our cap on ``Retry-After``.

Time reaches this module only through :class:`Clock`, so tests run retry schedules without waiting.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol, TypeVar

from docab.models.base import ModelError
from docab.models.causes import Failure, exception_chain, provider_message, shorten, transport_cause
from docab.models.replies import ReplyTooLarge, UnreadableReply
from docab.usage import Usage

T = TypeVar("T")

RETRYABLE_STATUSES = frozenset({408, 409, 429})  # and every 5xx


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def now(self) -> float:
        """Wall-clock time in epoch seconds (for ``Retry-After`` given as an HTTP date)."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` attempts after the first; exponential back-off with jitter between them.

    The n-th back-off (n = 0, 1, ...) is ``min(max_delay_s, base_delay_s * 2**n)`` scaled by a random
    factor in [0.5, 1] (so synchronised clients spread out). A server's ``Retry-After`` replaces the
    computed delay, capped at ``retry_after_cap_s`` so a hostile or confused server cannot park a run.
    """

    max_retries: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    retry_after_cap_s: float = 60.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        ceiling: float = min(self.max_delay_s, self.base_delay_s * 2.0**attempt)
        return ceiling * (0.5 + 0.5 * rng.random())


class MalformedReply(Exception):
    """A provider answered 200 with something we cannot read (no choices, no content, not JSON)."""


class AttemptTimedOut(Exception):
    """One attempt did not complete within the model's ``timeout`` as a whole (headers, body and
    all): a server that trickles a byte at a time never trips the transports' per-read timeouts."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"no answer within {timeout_s:g} s")
        self.timeout_s = timeout_s


def attempt_timeout_failure(exc: AttemptTimedOut) -> Failure:
    return Failure("timeout", str(exc), retryable=True)


QUOTA_CODES = frozenset({"insufficient_quota"})  # OpenAI's "no credit": final until someone pays


def parse_retry_after(headers: Mapping[str, str] | None, now: float) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI), ``retry-after`` in seconds, or an HTTP date.

    A number that is not finite and at least 0 (``-5``, ``NaN``, ``inf``, ``1e400``) says nothing:
    it counts as missing (None: the retry loop's own back-off applies), where it was read as "no
    wait" or as "for ever". A date in the past is 0 (retry now). However long a valid value is, the
    callers hold it at the policy's ``retry_after_cap_s`` (:func:`call_with_retries`, the pacer)."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        seconds = _wait_seconds(millis, per_second=1000.0)
        if seconds is not None:
            return seconds
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        float(value)
    except ValueError:
        pass
    else:  # a number: used only when it is a wait
        return _wait_seconds(value, per_second=1.0)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


def _wait_seconds(text: str, *, per_second: float) -> float | None:
    """``text`` (a count of ``1 / per_second`` seconds) in seconds; None unless finite and >= 0."""
    try:
        seconds = float(text) / per_second
    except ValueError:
        return None
    return max(0.0, seconds) if math.isfinite(seconds) and seconds >= 0 else None


def classify_sdk_error(
    exc: BaseException,
    sdk: ModuleType,
    *,
    now: float,
    timeout_s: float | None = None,
    key_variable: str | None = None,
    credentials: str | None = None,
) -> Failure:
    """Map an ``openai`` or ``anthropic`` SDK exception (same class names in both) to a Failure
    whose message is the real cause: refused, DNS, TLS, timeout (from the transport's exception,
    not the SDK's wording), or the HTTP status with the provider's own message. A refused
    credential (401, 403) says what to check: ``credentials`` (``the key in OPENAI_API_KEY (...)``,
    ``the AWS credentials (...)``), else the key in ``key_variable``."""
    if isinstance(exc, MalformedReply):
        return Failure("malformed", f"the reply cannot be read: {exc}", retryable=True)
    if isinstance(exc, AttemptTimedOut):
        return attempt_timeout_failure(exc)
    if isinstance(exc, json.JSONDecodeError):  # a 200 whose body is empty, cut or not JSON
        return Failure("malformed", "the reply cannot be read (it is not JSON)", retryable=True)
    unreadable = unreadable_failure(exc)
    if unreadable is not None:
        return unreadable
    if isinstance(exc, sdk.APIConnectionError):  # APITimeoutError is one too
        cause = transport_cause(exc, timeout_s=timeout_s)
        if cause is not None:
            kind = "timeout" if cause.kind == "timeout" else "connection"
            return Failure(kind, cause.text, retryable=True)
        if isinstance(exc, sdk.APITimeoutError):
            within = f" within {timeout_s:g} s" if timeout_s is not None else " within the time limit"
            return Failure("timeout", f"no answer{within}", retryable=True)
        return Failure("connection", f"the connection failed: {shorten(str(exc))}", retryable=True)
    if isinstance(exc, sdk.APIResponseValidationError):
        return Failure("malformed", "the reply cannot be read (it does not match the API's schema)", True)
    if isinstance(exc, sdk.APIStatusError):
        headers = getattr(getattr(exc, "response", None), "headers", None)
        return status_failure(
            int(exc.status_code),
            provider_message(exc),
            headers=headers,
            now=now,
            key_variable=key_variable,
            credentials=credentials,
            code=provider_code(exc),
        )
    if isinstance(exc, sdk.APIError):
        return Failure("api", f"API error: {provider_message(exc)}", retryable=False)
    protocol = _protocol_failure(exc)
    if protocol is not None:
        return protocol
    raise exc  # a bug in our code, not a provider failure: let it surface


def unreadable_failure(exc: BaseException) -> Failure | None:
    """A reply body :mod:`docab.models.replies` could not read, wherever it is in ``exc``'s chain:
    ``malformed``, not retried when it is over the size cap (the next one would be too), retried
    when its coding is broken; None for any other exception."""
    unreadable = next((c for c in exception_chain(exc) if isinstance(c, UnreadableReply)), None)
    if unreadable is None:
        return None
    return Failure("malformed", str(unreadable), retryable=not isinstance(unreadable, ReplyTooLarge))


def _protocol_failure(exc: BaseException) -> Failure | None:
    """A transport error the SDKs let through unwrapped: aiohttp's answer that is not HTTP (a bad
    status line, a non-HTTP port) or a body cut short; None for anything else."""
    module = type(exc).__module__.split(".")[0]
    name = type(exc).__name__
    if module != "aiohttp":
        return None
    if name == "ClientPayloadError":
        return Failure("malformed", f"the reply was cut short: {shorten(str(exc))}", retryable=True)
    if name in ("ClientResponseError", "ServerFingerprintMismatch") or "HttpProcessingError" in name:
        status = getattr(exc, "status", None)
        detail = shorten(str(getattr(exc, "message", "") or exc)) or name
        return Failure(
            "connection",
            f"the answer is not valid HTTP (is that the model server's port?): {detail}",
            retryable=True,
            status=status if isinstance(status, int) and status >= 400 else None,
        )
    return Failure("connection", f"the connection failed: {shorten(str(exc)) or name}", retryable=True)


def provider_code(exc: BaseException) -> str | None:
    """The ``code`` (else ``type``) of a provider's JSON error body, e.g. ``insufficient_quota``."""
    body: Any = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if not isinstance(body, dict):
        return None
    for key in ("code", "type"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def status_failure(
    status: int,
    detail: str,
    *,
    headers: Mapping[str, str] | None,
    now: float,
    key_variable: str | None = None,
    credentials: str | None = None,
    code: str | None = None,
) -> Failure:
    """An HTTP error answer as a Failure: 429 and 5xx (and 408, 409) retried, honouring
    ``Retry-After``; 401 and 403 say which credentials to check; any other status is final. A 429
    whose ``code`` says the account has no credit (``insufficient_quota``) is final too, like a
    refused key: waiting does not pay the bill."""
    retry_after = parse_retry_after(headers, now)
    if status == 429 and code in QUOTA_CODES:
        if credentials is None:
            credentials = f"the key in {key_variable}" if key_variable else "the API key"
        return Failure(
            "auth",
            f"HTTP 429 (insufficient quota: the account has no credit left): {detail}; "
            f"check the plan and billing of the account of {credentials}",
            retryable=False,
            status=status,
        )
    if status == 429:
        return Failure("rate_limit", f"HTTP 429 (rate limited): {detail}", True, status, retry_after)
    if status >= 500 or status in RETRYABLE_STATUSES:
        return Failure("server", f"HTTP {status}: {detail}", True, status, retry_after)
    if status in (401, 403):
        if credentials is None:
            variable = f"the key in {key_variable}" if key_variable else "the API key"
            credentials = f"{variable} (the variable named by api_key_env in the model config)"
        return Failure(
            "auth",
            f"HTTP {status} (credentials refused): {detail}; check {credentials}",
            retryable=False,
            status=status,
        )
    hint = " (check the model name and base_url)" if status == 404 else ""
    return Failure("api", f"HTTP {status}: {detail}{hint}", False, status)


@dataclass(frozen=True)
class Caller:
    """Who makes a call, for the message of its :class:`ModelError`: the role the model plays
    (``agent``, ``extractor``), the model (``openai/gpt-4o``) and the endpoint's URL."""

    role: str | None = None
    model: str | None = None
    url: str | None = None


@dataclass
class RetryTrace:
    """What happened across the attempts of one call."""

    retries: int = 0
    waited_s: float = 0.0
    queued_s: float = 0.0  # time spent waiting for a concurrency slot, excluded from latency
    failures: tuple[Failure, ...] = ()
    billed: tuple[Usage, ...] = ()  # tokens billed for replies that could not be used
    waiting_on: str | None = None  # what the attempt waits on before it is sent; None once sent

    def waiting(self, reason: str | None) -> None:
        self.waiting_on = reason


CALL_TRACE: ContextVar[RetryTrace | None] = ContextVar("call_trace", default=None)
"""The :class:`RetryTrace` of the model call this task made last (set as the call starts). A caller
that gives up on a call (its own deadline) reads there whether the call was failing, with what, how
often it retried and which tokens its failed attempts were billed: set it to None before the call."""


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    classify: Callable[[BaseException], Failure],
    policy: RetryPolicy,
    clock: Clock,
    rng: random.Random,
    trace: RetryTrace,
    context: Caller | None = None,
) -> T:
    """Run ``attempt`` until it succeeds, a failure is not retryable, or retries run out.

    Raises ModelError carrying the last failure's kind, the number of retries made and ``context``.
    """
    while True:
        try:
            return await attempt()
        except Exception as exc:  # CancelledError is a BaseException: a cancelled sample stops at once
            failure = classify(exc)
            trace.failures = (*trace.failures, failure)
            if not failure.retryable or trace.retries >= policy.max_retries:
                suffix = f" (after {trace.retries} retries)" if trace.retries else ""
                raise ModelError(
                    failure.kind,
                    failure.message + suffix,
                    retries=trace.retries,
                    status=failure.status,
                    role=context.role if context else None,
                    model=context.model if context else None,
                    url=context.url if context else None,
                ) from None
            if failure.retry_after_s is not None:
                delay = min(failure.retry_after_s, policy.retry_after_cap_s)
            else:
                delay = policy.backoff(trace.retries, rng)
            trace.retries += 1
            trace.waited_s += delay
            await clock.sleep(delay)
