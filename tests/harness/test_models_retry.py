"""Retries, timeouts and concurrency of model calls, through the real SDKs against the loopback stub.

Back-off runs on a FakeClock, so a schedule of several seconds takes no time; only the timeout tests
wait for real (a fraction of a second), because the timeout lives in the SDK's HTTP client.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import pytest

from docab.messages import Message
from docab.models import ModelError, build_model
from docab.models.base import ModelError as BaseModelError
from docab.models.causes import Failure
from docab.models.limits import ConcurrencyLimits
from docab.models.retry import RetryPolicy, RetryTrace, call_with_retries, parse_retry_after
from tests.harness.model_fakes import EPOCH, FakeClock
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, anthropic_reply, error_reply, openai_reply

PROTOCOLS = ["openai", "anthropic"]


def make_model(stub: LLMStub, protocol: str, clock: FakeClock, **options: Any):
    base = stub.openai_base_url if protocol == "openai" else stub.anthropic_base_url
    config = {"name": f"{protocol}/m", "base_url": base, **options}
    return build_model(config, env={}, limits=ConcurrencyLimits(), clock=clock)


def ok_reply(protocol: str, text: str = "fine", **kwargs: Any) -> Reply:
    return openai_reply(text, **kwargs) if protocol == "openai" else anthropic_reply(text, **kwargs)


def ask(model: Any) -> Any:
    async def once() -> Any:
        async with model:
            return await model.generate("", [Message.user("q")], [], max_output_tokens=8)

    return asyncio.run(once())


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_429_honours_retry_after_seconds(llm_stub: LLMStub, protocol: str) -> None:
    llm_stub.push(protocol, error_reply(protocol, 429, "slow down", retry_after=7), ok_reply(protocol))
    clock = FakeClock()
    turn = ask(make_model(llm_stub, protocol, clock))
    assert turn.text == "fine"
    assert turn.retries == 1
    assert clock.sleeps == [7.0]
    assert turn.latency_s == pytest.approx(7.0)  # latency includes back-off (fake clock: nothing else)
    assert len(llm_stub.requests_for(protocol)) == 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_500_retries_with_backoff_and_jitter(llm_stub: LLMStub, protocol: str) -> None:
    llm_stub.push(protocol, error_reply(protocol, 500), error_reply(protocol, 503), ok_reply(protocol))
    clock = FakeClock()
    model = make_model(llm_stub, protocol, clock, retry_base_delay=2.0, retry_max_delay=3.0)
    turn = ask(model)
    assert turn.retries == 2
    first, second = clock.sleeps
    assert 1.0 <= first <= 2.0  # base * 2**0, jittered into [50 %, 100 %]
    assert 1.5 <= second <= 3.0  # base * 2**1 = 4, capped at 3, jittered


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_retries_run_out_into_a_model_error_that_counts_them(llm_stub: LLMStub, protocol: str) -> None:
    llm_stub.push(protocol, *[error_reply(protocol, 429, "busy", retry_after=1)] * 3)
    clock = FakeClock()
    with pytest.raises(ModelError) as caught:
        ask(make_model(llm_stub, protocol, clock, max_retries=2))
    assert caught.value.kind == "rate_limit"
    assert caught.value.retries == 2 and caught.value.status == 429
    assert "after 2 retries" in str(caught.value)
    assert clock.sleeps == [1.0, 1.0]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_client_errors_are_not_retried(llm_stub: LLMStub, protocol: str) -> None:
    llm_stub.push(protocol, error_reply(protocol, 400, "messages: bad shape"))
    clock = FakeClock()
    with pytest.raises(ModelError) as caught:
        ask(make_model(llm_stub, protocol, clock))
    assert caught.value.kind == "api" and caught.value.status == 400
    assert "messages: bad shape" in str(caught.value)
    assert clock.sleeps == [] and len(llm_stub.requests_for(protocol)) == 1


def test_auth_failure_says_which_variable_to_check(llm_stub: LLMStub) -> None:
    llm_stub.push("anthropic", error_reply("anthropic", 401, "invalid x-api-key"))
    with pytest.raises(ModelError) as caught:
        ask(make_model(llm_stub, "anthropic", FakeClock()))
    assert caught.value.kind == "auth" and "api_key_env" in str(caught.value)


def test_retry_after_is_capped(llm_stub: LLMStub) -> None:
    llm_stub.push("openai", error_reply("openai", 503, retry_after=3600), ok_reply("openai"))
    clock = FakeClock()
    ask(make_model(llm_stub, "openai", clock, retry_after_cap=30))
    assert clock.sleeps == [30.0]


def test_retry_after_http_date_is_honoured(llm_stub: LLMStub) -> None:
    when = format_datetime(datetime.fromtimestamp(EPOCH + 12, tz=UTC), usegmt=True)
    llm_stub.push(
        "openai", Reply.json({"error": {"message": "later"}}, status=429, headers={"Retry-After": when})
    )
    llm_stub.push("openai", ok_reply("openai"))
    clock = FakeClock()
    ask(make_model(llm_stub, "openai", clock))
    assert clock.sleeps == [12.0]


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "2.5"}, 2.5),
        ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),  # OpenAI's finer header wins
        ({"Retry-After": "Tue, 14 Nov 2023 22:13:40 GMT"}, 20.0),  # EPOCH + 20 s
        ({"Retry-After": "Tue, 14 Nov 2023 22:13:00 GMT"}, 0.0),  # in the past
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "-3"}, None),  # not a wait: missing, so the back-off applies
        ({}, None),
        (None, None),
    ],
)
def test_parse_retry_after(headers: Any, expected: float | None) -> None:
    assert parse_retry_after(headers, EPOCH) == expected


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timeout_is_retried_then_reported(protocol: str) -> None:
    slow = ok_reply(protocol, delay=1.0)
    with LLMStub() as stub:
        stub.push(protocol, slow, slow)
        with pytest.raises(ModelError) as caught:
            ask(make_model(stub, protocol, FakeClock(), timeout=0.2, max_retries=1))
        assert caught.value.kind == "timeout" and caught.value.retries == 1
        assert len(stub.requests_for(protocol)) == 2


def test_timeout_then_success_counts_one_retry() -> None:
    with LLMStub() as stub:
        stub.push("openai", ok_reply("openai", "late", delay=1.0), ok_reply("openai", "on time"))
        turn = ask(make_model(stub, "openai", FakeClock(), timeout=0.2, max_retries=3))
        assert (turn.text, turn.retries) == ("on time", 1)


def test_connection_refused_is_a_connection_error() -> None:
    stub = LLMStub().start()
    base = stub.openai_base_url
    stub.stop()  # nothing listens on that port any more
    model = build_model(
        {"name": "openai/m", "base_url": base, "max_retries": 1},
        env={},
        limits=ConcurrencyLimits(),
        clock=FakeClock(),
    )
    with pytest.raises(ModelError) as caught:
        ask(model)
    assert caught.value.kind == "connection" and caught.value.retries == 1


class InFlight:
    """A stub responder that holds each request for a while and records the peak concurrency."""

    def __init__(self, hold_s: float = 0.15) -> None:
        self.hold_s = hold_s
        self.current = 0
        self.peak = 0
        self.served = 0
        self._lock = threading.Lock()

    def __call__(self, protocol: str, request: Request) -> Reply:
        with self._lock:
            self.current += 1
            self.peak = max(self.peak, self.current)
        time.sleep(self.hold_s)
        with self._lock:
            self.current -= 1
            self.served += 1
        return ok_reply(protocol)


def test_concurrency_limit_is_shared_by_models_of_one_endpoint() -> None:
    counter = InFlight()
    limits = ConcurrencyLimits()
    with LLMStub(responder=counter) as stub:
        config = {"name": "openai/agent", "base_url": stub.openai_base_url, "concurrency": 2}
        agent = build_model(config, env={}, limits=limits)
        extractor = build_model(
            {**config, "name": "openai/extractor", "concurrency": None}, env={}, limits=limits
        )

        async def burst() -> None:
            async with agent, extractor:
                await asyncio.gather(
                    *[
                        m.generate("", [Message.user("q")], [], max_output_tokens=8)
                        for m in [agent, extractor] * 4
                    ]
                )

        asyncio.run(burst())
    assert counter.served == 8
    assert counter.peak <= 2
    assert limits.size(f"openai {stub.openai_base_url}") == 2


class SlowQueue(ConcurrencyLimits):
    """Pools where getting a slot takes 5 s of (fake) time, as if other calls held them."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock

    @asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[None]:
        self.clock.elapsed += 5.0
        yield


def test_time_queued_for_a_slot_is_not_latency(llm_stub: LLMStub) -> None:
    llm_stub.push("openai", error_reply("openai", 500, retry_after=1), ok_reply("openai"))
    clock = FakeClock()
    config = {"name": "openai/m", "base_url": llm_stub.openai_base_url}
    model = build_model(config, env={}, limits=SlowQueue(clock), clock=clock)
    turn = ask(model)
    assert clock.elapsed == pytest.approx(11.0)  # two 5 s queues and one 1 s back-off
    assert turn.latency_s == pytest.approx(1.0)


def test_conflicting_concurrency_for_one_endpoint_is_a_config_error() -> None:
    from docab.models import ModelConfigError

    limits = ConcurrencyLimits()
    build_model({"name": "openai/a", "base_url": "http://h/v1", "concurrency": 4}, env={}, limits=limits)
    with pytest.raises(ModelConfigError, match="already 4"):
        build_model({"name": "openai/b", "base_url": "http://h/v1", "concurrency": 8}, env={}, limits=limits)
    # another endpoint has its own pool
    build_model({"name": "openai/c", "base_url": "http://other/v1", "concurrency": 8}, env={}, limits=limits)


def test_retry_loop_gives_up_at_once_on_a_fatal_failure() -> None:
    attempts = 0

    async def attempt() -> str:
        nonlocal attempts
        attempts += 1
        raise RuntimeError("boom")

    def classify(exc: BaseException) -> Failure:
        return Failure("api", "refused", retryable=False, status=422)

    trace = RetryTrace()
    with pytest.raises(BaseModelError) as caught:
        asyncio.run(
            call_with_retries(
                attempt,
                classify=classify,
                policy=RetryPolicy(),
                clock=FakeClock(),
                rng=random.Random(0),
                trace=trace,
            )
        )
    assert attempts == 1 and caught.value.status == 422 and trace.retries == 0


def test_backoff_stays_within_its_bounds() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=10.0)
    rng = random.Random(1)
    for attempt, ceiling in enumerate([1, 2, 4, 8, 10, 10]):
        delays = [policy.backoff(attempt, rng) for _ in range(200)]
        assert min(delays) >= ceiling / 2 and max(delays) <= ceiling
