"""The pure pacing core: token buckets, adaptive concurrency, rate-limit headers, token estimates.

Time is a number passed in, so these run without a clock."""

from __future__ import annotations

import asyncio
import io

import pytest

from docab.models.pacing import (
    IMAGE_TOKENS,
    AdaptiveConcurrency,
    Pacer,
    RateLimits,
    TokenBucket,
    estimate_tokens,
    parse_duration,
    read_rate_limits,
)
from tests.harness.model_fakes import EPOCH


def starts_within(bucket: TokenBucket, seconds: float, step: float = 0.01) -> list[float]:
    """Start times of unit calls made as soon as the bucket allows, over ``seconds``."""
    now, starts = 0.0, []
    while now < seconds:
        wait = bucket.wait(1, now)
        if wait > 0:
            now += max(wait, 1e-6)
            continue
        bucket.take(1, now)
        starts.append(now)
        now += step / 10
    return starts


@pytest.mark.parametrize("limit", [1, 2, 30, 60, 600, 3000])
def test_a_bucket_never_lets_more_than_its_limit_through_in_any_minute(limit: int) -> None:
    starts = starts_within(TokenBucket.per_minute(limit, 0.0), 180.0)
    assert starts
    end = 0
    for i, first in enumerate(starts):  # every window of a minute starting at a call
        while end < len(starts) and starts[end] < first + 60.0:
            end += 1
        assert end - i <= limit


def test_a_bucket_keeps_its_rate_over_time() -> None:
    starts = starts_within(TokenBucket.per_minute(120, 0.0), 600.0)
    assert len(starts) == pytest.approx(1200, rel=0.02)  # 120 a minute for ten minutes


def test_a_large_call_runs_into_debt_and_the_next_waits_for_it() -> None:
    bucket = TokenBucket.per_minute(6000, 0.0)  # 100 a second, holds 100
    assert bucket.wait(5000, 0.0) == 0.0  # larger than the bucket: starts when the bucket is full
    bucket.take(5000, 0.0)
    assert bucket.wait(10, 0.0) == pytest.approx((10 + 4900) / bucket.rate)


def test_a_corrected_estimate_gives_tokens_back() -> None:
    bucket = TokenBucket.per_minute(6000, 0.0)
    bucket.take(100, 0.0)
    assert bucket.wait(100, 0.0) > 0
    bucket.give_back(100 - 20, 0.0)  # estimated 100, used 20
    assert bucket.level == pytest.approx(80)
    bucket.give_back(-50, 0.0)  # estimated too little: the difference is taken
    assert bucket.level == pytest.approx(30)


def test_concurrency_halves_on_429_once_per_burst_and_recovers() -> None:
    control = AdaptiveConcurrency(ceiling=16)
    generations = [control.start() for _ in range(16)]
    assert not control.free
    for generation in generations:  # all sixteen come back 429: one cut, not sixteen
        control.finish()
        control.rate_limited(generation)
    assert control.limit == 8
    later = control.start()
    control.finish()
    control.rate_limited(later)  # a 429 at the new limit cuts again
    assert control.limit == 4
    for _ in range(4):  # a run of successes as long as the limit: one more
        control.succeeded()
    assert control.limit == 5
    for _ in range(200):
        control.succeeded()
    assert control.limit == 16  # never above the configured concurrency


def test_concurrency_never_falls_below_one() -> None:
    control = AdaptiveConcurrency(ceiling=2)
    for _ in range(5):
        control.rate_limited(control.generation)
    assert control.limit == 1


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 3723.5),
        ("0.5", 0.5),
        ("soon", None),
        ("", None),
    ],
)
def test_openai_reset_durations(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_openai_headers_are_read() -> None:
    limits = read_rate_limits(
        {
            "X-RateLimit-Limit-Requests": "60",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": "1s",
            "x-ratelimit-remaining-tokens": "149984",
            "x-ratelimit-reset-tokens": "6m0s",
        },
        EPOCH,
    )
    assert limits == RateLimits(0, 1.0, 149984, 360.0)


def test_anthropic_headers_are_read_with_rfc3339_resets() -> None:
    limits = read_rate_limits(
        {
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": "2023-11-14T22:13:32Z",  # EPOCH + 12
            "anthropic-ratelimit-tokens-remaining": "5000",
            "anthropic-ratelimit-tokens-reset": "2023-11-14T22:14:20+00:00",  # EPOCH + 60
        },
        EPOCH,
    )
    assert limits == RateLimits(0, pytest.approx(12.0), 5000, pytest.approx(60.0))


def test_no_rate_limit_headers_read_as_none() -> None:
    assert read_rate_limits({"content-type": "application/json"}, EPOCH) is None
    assert read_rate_limits(None, EPOCH) is None


def test_estimates_count_text_images_and_the_output_budget() -> None:
    text = {"messages": [{"role": "user", "content": "x" * 400}], "max_tokens": 50}
    assert estimate_tokens(text) == pytest.approx(100 + 50 + 6, abs=6)  # keys and role count a little
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 100_000}}
    assert estimate_tokens({"messages": [{"content": [image]}]}) < IMAGE_TOKENS + 20
    anthropic_image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "A" * 99},
    }
    assert estimate_tokens({"messages": [{"content": [anthropic_image]}]}) < IMAGE_TOKENS + 20


def test_pacer_waits_on_the_longest_of_its_limits_and_says_which() -> None:
    pacer = Pacer.create(concurrency=4, rpm=60, tpm=6000, now=0.0)
    assert pacer.delay(100, 0.0) == 0.0
    generation = pacer.start(100, 0.0)
    wait = pacer.delay(100, 0.0)
    assert wait is not None and wait > 0 and pacer.waiting_on in ("rpm", "tpm")
    pacer.finish(
        generation=generation, estimate=100, actual=100, now=0.0, rate_limited=True, retry_after_s=30
    )
    assert pacer.delay(1, 1.0) == pytest.approx(29.0)
    assert pacer.waiting_on == "a rate-limit reset"
    assert pacer.concurrency.limit == 2


def test_pacer_pauses_until_the_reset_when_the_provider_has_nothing_left() -> None:
    pacer = Pacer.create(concurrency=4, rpm=None, tpm=None, now=0.0)
    pacer.observe(RateLimits(requests_remaining=0, requests_reset_s=5.0), 10.0)
    assert pacer.delay(1, 10.0) == pytest.approx(5.0)
    assert pacer.delay(1, 15.0) == 0.0


def test_pacer_waits_for_a_slot_when_all_are_in_flight() -> None:
    pacer = Pacer.create(concurrency=1, rpm=None, tpm=None, now=0.0)
    generation = pacer.start(1, 0.0)
    assert pacer.delay(1, 0.0) is None and pacer.waiting_on == "concurrency"
    pacer.finish(generation=generation, estimate=1, actual=None, now=0.0)
    assert pacer.delay(1, 0.0) == 0.0


def test_rpm_and_tpm_are_transport_not_part_of_the_runs_identity() -> None:
    from docab.config import parse_config

    plain = parse_config({"name": "x", "model": "openai/m", "arms": [{"name": "a"}]})
    paced = parse_config(
        {"name": "x", "model": {"name": "openai/m", "rpm": 500, "tpm": 200000}, "arms": [{"name": "a"}]}
    )
    assert paced.config_hash() == plain.config_hash()  # pacing a run resumes it
    assert paced.model_dump(mode="json")["model"]["rpm"] == 500  # the manifest keeps it
    assert "rpm" not in plain.model_dump(mode="json")["model"]  # unset: written out as before


@pytest.mark.parametrize("value", [0, -5, True])
def test_a_limit_must_be_a_positive_number(value: object) -> None:
    from docab.models.config import ModelConfig, ModelConfigError

    with pytest.raises(ModelConfigError, match="rpm must be a positive number"):
        ModelConfig.from_mapping({"name": "openai/m", "rpm": value})


def test_two_models_of_one_endpoint_cannot_ask_for_different_limits() -> None:
    from docab.models import ModelConfigError, build_model
    from docab.models.limits import ConcurrencyLimits

    limits = ConcurrencyLimits()
    build_model({"name": "openai/a", "base_url": "http://h/v1", "rpm": 100}, env={}, limits=limits)
    build_model({"name": "openai/b", "base_url": "http://h/v1"}, env={}, limits=limits)  # takes 100
    assert limits.rates("openai http://h/v1") == (100, None)
    with pytest.raises(ModelConfigError, match="rpm for openai http://h/v1 is already 100"):
        build_model({"name": "openai/c", "base_url": "http://h/v1", "rpm": 50}, env={}, limits=limits)


class HeldClock:
    """Time stands still and a sleep never ends: a call held by a limit stays held."""

    def monotonic(self) -> float:
        return 0.0

    def now(self) -> float:
        return EPOCH

    async def sleep(self, seconds: float) -> None:
        await asyncio.Event().wait()


def test_the_display_hears_what_calls_wait_on() -> None:
    from docab.models.limits import ConcurrencyLimits
    from docab.runner.progress import LineProgress, ProgressState, status_line

    limits = ConcurrencyLimits()
    limits.register("openai http://h/v1", 4)
    limits.register_rates("openai http://h/v1", 60, None)
    clock = HeldClock()

    async def one_call() -> None:
        async with limits.paced("openai http://h/v1", tokens=10, clock=clock) as ticket:
            ticket.failed(status=429, retry_after_s=None, headers=None)

    async def main() -> list[str]:
        await one_call()  # takes the bucket's one request; its 429 halves the concurrency
        held = asyncio.create_task(one_call())
        for _ in range(5):
            await asyncio.sleep(0)
        seen = limits.waiting()
        held.cancel()
        return seen

    seen = asyncio.run(main())
    assert seen == ["openai http://h/v1: 1 call wait on rpm, concurrency 2/4 after 429"]
    line = status_line("run", ProgressState.for_run({"a": 3}), seen)
    assert line.endswith("waiting: openai http://h/v1: 1 call wait on rpm, concurrency 2/4 after 429")
    stream = io.StringIO()
    progress = LineProgress("run", stream, every_s=0.0, waiting=lambda: seen)
    progress.start(ProgressState.for_run({"a": 3}))
    assert "waiting: openai http://h/v1" in stream.getvalue()


def test_other_failures_neither_grow_nor_cut_the_concurrency_and_pauses_are_capped() -> None:
    pacer = Pacer.create(concurrency=4, rpm=None, tpm=None, now=0.0)
    pacer.concurrency.limit = 2
    for _ in range(5):  # five 500s in a row are no run of successes
        pacer.finish(generation=pacer.start(1, 0.0), estimate=1, actual=None, now=0.0, ok=False)
    assert pacer.concurrency.limit == 2
    generation = pacer.start(1, 0.0)
    pacer.finish(
        generation=generation,
        estimate=1,
        actual=None,
        now=0.0,
        rate_limited=True,
        retry_after_s=3600,
        max_pause_s=60,
    )
    assert pacer.delay(1, 0.0) == pytest.approx(60.0)
    pacer.observe(RateLimits(tokens_remaining=0, tokens_reset_s=360.0), 0.0, max_pause_s=60)
    assert pacer.delay(1, 0.0) == pytest.approx(60.0)
