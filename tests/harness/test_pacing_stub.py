"""Pacing against a loopback provider that enforces a requests-per-minute limit the way providers
do: over the limit it answers 429 with ``Retry-After`` and its rate-limit headers (OpenAI's
``x-ratelimit-*``, Anthropic's ``anthropic-ratelimit-*``), through the real SDKs.

Time runs sixty times faster for both sides (:class:`FastClock`): a minute's window at the stub is
one real second, so a run of a hundred calls at 60 rpm takes about two seconds. The stub counts
every request it receives in every window of a minute.
"""

from __future__ import annotations

import asyncio
import bisect
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from docab.messages import Message
from docab.models import build_model
from docab.models.limits import ConcurrencyLimits
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, Protocol, anthropic_reply, error_reply, openai_reply

SPEED = 60.0  # simulated seconds per real second
EPOCH = 1_700_000_000.0


class FastClock:
    """Monotonic and wall time running ``SPEED`` times faster than real time; sleeps shortened to match."""

    def __init__(self) -> None:
        self.origin = time.monotonic()

    def monotonic(self) -> float:
        return (time.monotonic() - self.origin) * SPEED

    def now(self) -> float:
        return EPOCH + self.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds / SPEED)


class LimitedProvider:
    """A responder allowing ``rpm`` requests in any minute (a sliding window of accepted requests)."""

    def __init__(self, clock: FastClock, rpm: int) -> None:
        self.clock = clock
        self.rpm = rpm
        self.accepted: list[float] = []
        self.received: list[float] = []
        self.refused = 0
        self.lock = threading.Lock()

    def __call__(self, protocol: Protocol, request: Request) -> Reply:
        with self.lock:
            now = self.clock.monotonic()
            self.received.append(now)
            recent = [t for t in self.accepted if t > now - 60.0]
            if len(recent) >= self.rpm:
                self.refused += 1
                wait = recent[0] + 60.0 - now
                reply = error_reply(protocol, 429, "rate limit reached for requests", retry_after=wait)
                reply.headers = {**reply.headers, **self.headers(protocol, 0, wait)}
                return reply
            self.accepted.append(now)
            remaining = self.rpm - len(recent) - 1
        reply = openai_reply("ok") if protocol == "openai" else anthropic_reply("ok")
        reply.headers = self.headers(protocol, remaining, (recent[0] if recent else now) + 60.0 - now)
        return reply

    def headers(self, protocol: Protocol, remaining: int, reset_s: float) -> dict[str, str]:
        if protocol == "openai":
            return {
                "x-ratelimit-limit-requests": str(self.rpm),
                "x-ratelimit-remaining-requests": str(remaining),
                "x-ratelimit-reset-requests": f"{reset_s:.3f}s",
            }
        reset = datetime.fromtimestamp(self.clock.now() + reset_s, tz=UTC).isoformat()
        return {
            "anthropic-ratelimit-requests-limit": str(self.rpm),
            "anthropic-ratelimit-requests-remaining": str(remaining),
            "anthropic-ratelimit-requests-reset": reset,
        }

    def busiest_minute(self, times: list[float]) -> int:
        ordered = sorted(times)
        return max(bisect.bisect_left(ordered, t + 60.0) - i for i, t in enumerate(ordered))


def run_calls(stub: LLMStub, protocol: Protocol, clock: FastClock, n: int, **options: Any) -> list[Any]:
    base = stub.openai_base_url if protocol == "openai" else stub.anthropic_base_url
    limits = ConcurrencyLimits()
    model = build_model(
        {"name": f"{protocol}/m", "base_url": base, **options}, env={}, limits=limits, clock=clock
    )

    async def all_calls() -> list[Any]:
        async with model:
            return await asyncio.gather(
                *[model.generate("", [Message.user(f"q{i}")], [], max_output_tokens=8) for i in range(n)],
                return_exceptions=True,
            )

    return asyncio.run(all_calls())


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_an_rpm_limit_keeps_every_minute_under_the_providers_limit(protocol: Protocol) -> None:
    clock = FastClock()
    provider = LimitedProvider(clock, rpm=60)
    with LLMStub(responder=provider) as stub:
        turns = run_calls(stub, protocol, clock, 100, rpm=55, concurrency=16)
    failed = [t for t in turns if isinstance(t, BaseException)]
    assert not failed
    assert provider.refused == 0  # the provider never had to say no
    assert provider.busiest_minute(provider.received) <= 55
    assert len(provider.received) == 100


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_without_a_limit_429s_and_their_headers_pace_the_run_to_the_end(protocol: Protocol) -> None:
    clock = FastClock()
    provider = LimitedProvider(clock, rpm=30)
    with LLMStub(responder=provider) as stub:
        turns = run_calls(stub, protocol, clock, 60, concurrency=8)
    failed = [t for t in turns if isinstance(t, BaseException)]
    assert not failed  # every call got its answer in the end
    assert provider.busiest_minute(provider.accepted) <= 30
    # Retry-After pauses the whole endpoint: a 429 is not answered by a storm of retries
    assert provider.refused <= 8 * 3


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_successful_replys_headers_saying_nothing_is_left_pause_the_next_call(protocol: Protocol) -> None:
    from tests.harness.model_fakes import EPOCH as FAKE_EPOCH
    from tests.harness.model_fakes import FakeClock

    if protocol == "openai":
        headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "7s"}
        first = openai_reply("one")
    else:
        reset = datetime.fromtimestamp(FAKE_EPOCH + 7, tz=UTC).isoformat()
        headers = {"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": reset}
        first = anthropic_reply("one")
    first.headers = headers
    clock = FakeClock()
    with LLMStub() as stub:
        stub.push(protocol, first)
        base = stub.openai_base_url if protocol == "openai" else stub.anthropic_base_url
        model = build_model(
            {"name": f"{protocol}/m", "base_url": base}, env={}, limits=ConcurrencyLimits(), clock=clock
        )

        async def two_calls() -> list[str]:
            async with model:
                texts = []
                for question in ("a", "b"):
                    turn = await model.generate("", [Message.user(question)], [], max_output_tokens=8)
                    texts.append(turn.text)
                return texts

        assert asyncio.run(two_calls()) == ["one", "stub answer"]
    assert clock.sleeps == [pytest.approx(7.0)]  # the second call waited for the reset


class RealTimeLimit:
    """Wraps a scripted responder: at most ``limit`` accepted requests in any ``window_s`` real
    seconds, else 429 with ``Retry-After`` and OpenAI's rate-limit headers."""

    def __init__(self, script: Any, limit: int, window_s: float) -> None:
        self.script, self.limit, self.window_s = script, limit, window_s
        self.accepted: list[float] = []
        self.refused = 0
        self.lock = threading.Lock()

    def __call__(self, protocol: Protocol, request: Request) -> Reply:
        with self.lock:
            now = time.monotonic()
            recent = [t for t in self.accepted if t > now - self.window_s]
            if len(recent) >= self.limit:
                self.refused += 1
                wait = recent[0] + self.window_s - now
                reply = error_reply(protocol, 429, "rate limit reached", retry_after=round(wait, 3))
                reply.headers = {
                    **reply.headers,
                    "x-ratelimit-remaining-requests": "0",
                    "x-ratelimit-reset-requests": f"{wait * 1000:.0f}ms",
                }
                return reply
            self.accepted.append(now)
        return self.script(protocol, request)  # type: ignore[no-any-return]

    def busiest_window(self) -> int:
        ordered = sorted(self.accepted)
        return max(bisect.bisect_left(ordered, t + self.window_s) - i for i, t in enumerate(ordered))


def test_a_run_against_a_rate_limited_provider_finishes_with_no_failed_sample(
    tmp_path: Any, monkeypatch: Any
) -> None:
    from tests.harness.test_runner_providers import openai_script, run_with

    monkeypatch.setenv("DOCAB_TEST_KEY", "k")
    provider = RealTimeLimit(openai_script, limit=3, window_s=0.5)
    with LLMStub(provider) as stub:
        model = {
            "name": "openai/stub-model",
            "base_url": stub.openai_base_url,
            "api_key_env": "DOCAB_TEST_KEY",
        }
        outcome = run_with(stub, model, tmp_path)
    records = outcome.records
    assert len(records) == 8 and all(r.status == "ok" and r.score == 1.0 for r in records)
    assert provider.refused > 0  # the limit was met, and every sample still finished
    assert provider.busiest_window() <= 3


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_tpm_limit_charges_the_estimate_then_the_real_usage(protocol: Protocol) -> None:
    from docab.models.pacing import estimate_tokens
    from tests.harness.model_fakes import FakeClock

    clock = FakeClock()
    with LLMStub() as stub:  # every reply says 10 input and 5 output tokens
        base = stub.openai_base_url if protocol == "openai" else stub.anthropic_base_url
        model = build_model(
            {"name": f"{protocol}/m", "base_url": base, "tpm": 60},
            env={},
            limits=ConcurrencyLimits(),
            clock=clock,
        )

        async def two_calls() -> None:
            async with model:
                for question in ("a" * 400, "b"):
                    await model.generate("", [Message.user(question)], [], max_output_tokens=8)

        asyncio.run(two_calls())
        first = stub.requests_for(protocol)[0].json()
    assert estimate_tokens(first) > 100  # the first call was estimated at over a hundred tokens...
    # ...and corrected to the 15 it used: the bucket (1 token, refilling 59 a minute) is 14 short of
    # empty, so the second call waits for 15 tokens' refill, not for its estimate's
    assert clock.sleeps == [pytest.approx(15 * 60 / 59)]
