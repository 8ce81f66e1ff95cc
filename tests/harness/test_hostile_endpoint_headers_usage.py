"""A hostile or buggy model endpoint's headers, content type, reply size and usage figures.

Before, against loopback stubs through the real SDK clients:

- ``Retry-After: -5`` (or ``NaN``, ``retry-after-ms: -3000``) made the retry go at once (0 s), and
  ``Retry-After: inf`` (or ``1e400``) waited the whole ``retry_after_cap``; now a number that is
  not finite and >= 0 counts as missing and the back-off applies. A huge valid one is still held
  at the cap.
- A Chat Completions or Messages reply that is valid JSON served as ``text/plain`` (or with no
  ``Content-Type``) was refused: ``the reply body is not a JSON object (str)``; now it is read.
  A body that is not a JSON object is still refused with that message.
- The Gemini route read a reply of any size (a 64 MiB body, a 1 GiB gzip bomb); now it stops at
  16 MiB like the other routes (``malformed``, not retried).
- A reply claiming 10^15 input tokens was billed (held at 10^9) without a word; now the run warns
  once, naming the model, its URL and the figure, and the call is still billed as reported.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from docab.messages import Message, Text, Turn
from docab.models import ModelError, build_model
from docab.models.limits import ConcurrencyLimits
from docab.models.meter import METER
from docab.models.provider import USAGE_ALARM, UsageAlarm
from docab.models.replies import MAX_REPLY_BYTES
from docab.usage import MAX_COUNT, Usage
from tests.harness.model_fakes import FakeClock, generate_once
from tests.support.bombs import bomb
from tests.support.gemini_stub import GeminiStub, gemini_error, gemini_reply
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, anthropic_reply, error_reply, models_list_reply, openai_reply

ASK = [Message("user", (Text("What is the revenue?"),))]
MIB = 1 << 20
PROTOCOLS = ["openai", "anthropic"]


def model(llm_stub: LLMStub, protocol: str, clock: FakeClock | None = None, **options: Any) -> Any:
    name, base = (
        ("openai/gpt-test", llm_stub.openai_base_url)
        if protocol == "openai"
        else ("anthropic/claude-test", llm_stub.anthropic_base_url)
    )
    config = {"name": name, "base_url": base, "max_retries": 2, **options}
    return build_model(config, env={}, limits=ConcurrencyLimits(), clock=clock or FakeClock())


def gemini_model(stub: GeminiStub, clock: FakeClock | None = None, **options: Any) -> Any:
    config = {"name": "google/gemini-stub", "base_url": stub.base, "max_retries": 2, **options}
    return build_model(config, env={}, limits=ConcurrencyLimits(), clock=clock or FakeClock())


@pytest.fixture
def gemini_stub() -> Iterator[GeminiStub]:
    with GeminiStub() as server:
        yield server


def with_headers(reply: Reply, headers: dict[str, str]) -> Reply:
    return Reply(status=reply.status, body=reply.body, headers=headers, content_type=reply.content_type)


def good_reply(protocol: str, text: str = "Paris") -> Reply:
    return openai_reply(text) if protocol == "openai" else anthropic_reply(text)


# -- 1. Retry-After that is not a wait ------------------------------------------------------------------

NOT_A_WAIT = [
    {"Retry-After": "-5"},
    {"Retry-After": "NaN"},
    {"Retry-After": "inf"},
    {"Retry-After": "1e400"},
    {"retry-after-ms": "-3000"},
    {"retry-after-ms": "nan"},
    {"retry-after-ms": "-inf", "Retry-After": "-1"},
]


@pytest.mark.parametrize("headers", NOT_A_WAIT, ids=lambda h: ",".join(f"{k}={v}" for k, v in h.items()))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_retry_after_that_is_not_a_wait_counts_as_missing(
    llm_stub: LLMStub, protocol: str, headers: dict[str, str]
) -> None:
    llm_stub.push(protocol, with_headers(error_reply(protocol, 429), headers), good_reply(protocol))  # type: ignore[arg-type]
    clock = FakeClock()
    turn = generate_once(model(llm_stub, protocol, clock, retry_base_delay=1.0), "system", ASK)
    assert turn.text == "Paris" and turn.retries == 1
    # The back-off's first wait (1 s, jittered to between 0.5 and 1 s); before: 0 s, or the 60 s cap.
    assert 0.5 <= sum(clock.sleeps) <= 1.0, clock.sleeps


def test_a_gemini_retry_after_that_is_not_a_wait_counts_as_missing(gemini_stub: GeminiStub) -> None:
    gemini_stub.push(gemini_error(429, retry_after=-5), gemini_reply("Paris"))
    clock = FakeClock()
    turn = generate_once(gemini_model(gemini_stub, clock, retry_base_delay=1.0), "system", ASK)
    assert turn.text == "Paris" and turn.retries == 1
    assert 0.5 <= sum(clock.sleeps) <= 1.0, clock.sleeps


@pytest.mark.parametrize(
    ("headers", "wait"),
    [({"Retry-After": "2"}, 2.0), ({"retry-after-ms": "1500"}, 1.5), ({"Retry-After": "1e9"}, 7.0)],
)
def test_a_valid_retry_after_is_honoured_and_a_huge_one_held_at_the_cap(
    llm_stub: LLMStub, headers: dict[str, str], wait: float
) -> None:
    llm_stub.push("openai", with_headers(error_reply("openai", 429), headers), good_reply("openai"))
    clock = FakeClock()
    turn = generate_once(model(llm_stub, "openai", clock, retry_after_cap=7.0), "system", ASK)
    assert turn.text == "Paris"
    assert clock.sleeps and max(clock.sleeps) == wait and all(s <= 7.0 for s in clock.sleeps)


# -- 2. JSON served as text/plain -------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", ["text/plain; charset=utf-8", "text/html", None])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_json_reply_with_another_content_type_is_read(
    llm_stub: LLMStub, protocol: str, content_type: str | None
) -> None:
    good = good_reply(protocol)
    llm_stub.push(protocol, Reply(body=good.body, content_type=content_type))  # type: ignore[arg-type]
    turn = generate_once(model(llm_stub, protocol), "system", ASK)
    assert turn.text == "Paris" and turn.retries == 0
    assert (turn.usage.input_total, turn.usage.output) == (10, 5)


@pytest.mark.parametrize("body", [b"<html><body>Bad gateway</body></html>", b"", b"[1, 2]", b'"text"'])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_text_body_that_is_not_a_json_object_is_still_refused(
    llm_stub: LLMStub, protocol: str, body: bytes
) -> None:
    llm_stub.push(protocol, *[Reply(body=body, content_type="text/plain")] * 3)  # type: ignore[arg-type]
    with pytest.raises(ModelError) as info:
        generate_once(model(llm_stub, protocol), "system", ASK)
    assert info.value.kind == "malformed" and info.value.retries == 2
    assert "the reply body is not a JSON object (str)" in str(info.value)


def test_a_model_list_served_as_text_plain_is_read(llm_stub: LLMStub) -> None:
    listed = models_list_reply("openai", ["gpt-test", "gpt-other"])
    llm_stub.models_reply = Reply(body=listed.body, content_type="text/plain")

    async def probe() -> Any:
        probing = model(llm_stub, "openai")
        try:
            return await probing.probe()
        finally:
            await probing.aclose()

    assert asyncio.run(probe()).listed == ("gpt-test", "gpt-other")  # before: None (no list)


# -- 3. the Gemini route's reply size ---------------------------------------------------------------------


def huge_gemini_reply(size: int) -> Iterator[bytes]:
    """A generateContent reply whose answer is ``size`` bytes of one string, chunked (no length)."""
    yield b'{"candidates":[{"content":{"role":"model","parts":[{"text":"'
    block = b"a" * MIB
    for _ in range(size // MIB):
        yield block
    yield b'"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1}}'


def failed_gemini_call(stub: GeminiStub) -> ModelError:
    with pytest.raises(ModelError) as info:
        generate_once(gemini_model(stub), "system", ASK)
    return info.value


def test_a_gemini_reply_larger_than_the_cap_stops_at_it_and_is_not_retried(gemini_stub: GeminiStub) -> None:
    body = huge_gemini_reply(4 * MAX_REPLY_BYTES)
    gemini_stub.push(Reply(body=body, content_type="application/json"))  # type: ignore[arg-type]
    error = failed_gemini_call(gemini_stub)
    assert error.kind == "malformed" and error.retries == 0
    assert "larger than docab's limit of 16 MiB for one model reply" in str(error)
    assert str(error).startswith(f"agent model google/gemini-stub at {gemini_stub.base}")
    assert len(gemini_stub.generate_requests()) == 1


def test_a_gemini_reply_declaring_a_length_over_the_cap_is_refused_unread(gemini_stub: GeminiStub) -> None:
    declared = 500 * MIB
    gemini_stub.push(Reply(body=b"{}", content_type="application/json", content_length=declared))
    error = failed_gemini_call(gemini_stub)
    assert error.kind == "malformed" and error.retries == 0
    assert f"declares {declared:,} bytes, over docab's limit of 16 MiB" in str(error)


def test_a_gemini_decompression_bomb_stops_at_the_cap(gemini_stub: GeminiStub) -> None:
    body, encoding = bomb("gzip")  # 1 GiB of zeros
    gemini_stub.push(
        Reply(body=body, content_type="application/json", headers={"Content-Encoding": encoding})
    )
    error = failed_gemini_call(gemini_stub)
    assert error.kind == "malformed" and error.retries == 0
    assert "decodes to more than docab's limit of 16 MiB" in str(error)


def test_a_compressed_gemini_reply_under_the_cap_is_read_as_before(gemini_stub: GeminiStub) -> None:
    reply = gemini_reply("Paris")
    assert isinstance(reply.body, bytes)
    gemini_stub.push(Reply(body=reply.body, content_type="application/json", gzip_body=True))
    turn = generate_once(gemini_model(gemini_stub), "system", ASK)
    assert turn.text == "Paris" and turn.usage.output == 5


# -- 4. implausible usage ---------------------------------------------------------------------------------


class RecordingMeter:
    """The sample's spend meter as the provider sees it: what each call was billed."""

    def __init__(self) -> None:
        self.charged: list[Usage] = []

    def charge(self, usage: Sequence[Usage]) -> None:
        self.charged.extend(usage)


def calls_under_an_alarm(
    models_and_calls: Sequence[tuple[Any, int]],
) -> tuple[list[Turn], list[str], RecordingMeter]:
    """``count`` calls of each model in one run's scope (one alarm, one meter): the turns, what
    the alarm said and what the meter was charged."""
    said: list[str] = []
    meter = RecordingMeter()

    async def calls() -> list[Turn]:
        USAGE_ALARM.set(UsageAlarm(said.append))
        METER.set(meter)
        turns = []
        for each, count in models_and_calls:
            try:
                for _ in range(count):
                    turns.append(await each.generate("system", ASK, (), max_output_tokens=64))
            finally:
                await each.aclose()
        return turns

    return asyncio.run(calls()), said, meter


def test_an_implausible_usage_is_billed_as_reported_and_warned_once_per_run(llm_stub: LLMStub) -> None:
    llm_stub.push("openai", *[openai_reply("Paris", prompt_tokens=10**15, completion_tokens=5)] * 3)
    llm_stub.push("anthropic", anthropic_reply("Paris", input_tokens=5 * 10**8))
    turns, said, meter = calls_under_an_alarm(
        [(model(llm_stub, "openai"), 3), (model(llm_stub, "anthropic"), 1)]
    )
    # Billed as reported (each field held at MAX_COUNT, as before), none lost.
    assert [t.usage.input_uncached for t in turns] == [MAX_COUNT] * 3 + [5 * 10**8]
    assert [u.input_uncached for u in meter.charged] == [MAX_COUNT] * 3 + [5 * 10**8]
    assert len(said) == 1, said  # once per run, though four calls were implausible
    warning = said[0]
    assert warning.startswith("warning: the agent model openai/gpt-test at " + llm_stub.openai_base_url)
    assert "1,000,000,000 input tokens (or more" in warning and "10,000,000" in warning


def test_a_figure_below_the_hold_is_named_as_reported(llm_stub: LLMStub) -> None:
    llm_stub.push("anthropic", anthropic_reply("Paris", input_tokens=5 * 10**8, output_tokens=7))
    turns, said, _ = calls_under_an_alarm([(model(llm_stub, "anthropic"), 1)])
    assert turns[0].usage.input_uncached == 5 * 10**8
    assert len(said) == 1 and "anthropic/claude-test at " + llm_stub.anthropic_base_url in said[0]
    assert "500,000,000 input tokens for one call" in said[0]


def test_plausible_usage_says_nothing(llm_stub: LLMStub, gemini_stub: GeminiStub) -> None:
    llm_stub.push("openai", openai_reply("Paris", prompt_tokens=2_000_000, completion_tokens=100_000))
    gemini_stub.push(gemini_reply("Paris", prompt_tokens=9_000_000, candidates_tokens=60_000))
    turns, said, meter = calls_under_an_alarm(
        [(model(llm_stub, "openai"), 1), (gemini_model(gemini_stub), 1)]
    )
    assert said == [] and len(meter.charged) == 2
    assert turns[1].usage.input_total == 9_000_000


def test_implausible_output_on_the_gemini_route_is_warned(gemini_stub: GeminiStub) -> None:
    gemini_stub.push(gemini_reply("Paris", candidates_tokens=10**12))
    turns, said, _ = calls_under_an_alarm([(gemini_model(gemini_stub), 1)])
    assert turns[0].usage.output == MAX_COUNT
    assert len(said) == 1 and f"google/gemini-stub at {gemini_stub.base}" in said[0]
    assert "1,000,000,000 output tokens (or more" in said[0]


def hostile_script(request: Request) -> Reply:
    """Every call answers at once, claiming 10^15 input tokens."""
    args = {"status": "answered", "answer": "42"}
    return gemini_reply(None, function_calls=[("submit_answer", args)], prompt_tokens=10**15)


def test_a_run_warns_once_on_its_console_and_records_the_calls_as_billed(tmp_path: Path) -> None:
    from docab.config import parse_config
    from docab.runner.launch import RunRequest, launch
    from docab.runner.progress import SilentProgress
    from tests.harness.corpus import exact_scorer, make_dataset

    said: list[str] = []
    with GeminiStub(hostile_script) as server:
        config = parse_config(
            {
                "name": "g",
                "model": {"name": "google/gemini-stub", "base_url": server.base},
                "arms": [{"name": "fs"}, {"name": "fs2"}],
            }
        )
        outcome = launch(
            RunRequest(config, results_dir=tmp_path / "results", concurrency=2, limit=2),
            dataset=make_dataset(tmp_path / "corpus", documents=1),
            scorer=exact_scorer,
            progress=SilentProgress(),
            say=said.append,
        )
    assert len(outcome.records) == 4 and all(r.status == "ok" for r in outcome.records)
    warnings = [line for line in said if "more than any model uses" in line]
    assert len(warnings) == 1, said
    assert f"google/gemini-stub at {server.base} reported 1,000,000,000 input tokens" in warnings[0]
    assert outcome.implausible_usage is not None and outcome.implausible_usage.count == MAX_COUNT
    usage = [u for r in outcome.records for u in r.usage]
    assert len(usage) == 4 and all(u.input_uncached == MAX_COUNT for u in usage)
    lines = (outcome.run_dir / "records.jsonl").read_text().splitlines()
    assert all(u["input_uncached"] == MAX_COUNT for line in lines for u in json.loads(line)["usage"])
