"""A model endpoint's reply is read up to 16 MiB, decoded in bounded steps (docab.models.replies).

Before: the SDKs read a reply whole and their HTTP client decoded it in one go. Against a hostile
endpoint on 127.0.0.1, one call with a 500 MB JSON reply peaked at 13.7 GB of resident memory, a
2 GiB gzip bomb (2 MB on the wire) at 4.2 GB, and a 200 MB answer string was accepted as the
model's answer (748 MB). After: each stops at the cap with one line naming the endpoint and the
limit, under 110 MB of resident memory, and is not retried.
"""

from __future__ import annotations

import gzip
import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from docab.messages import Message, Text
from docab.models import ModelError, build_model
from docab.models.limits import ConcurrencyLimits
from docab.models.replies import MAX_REPLY_BYTES
from tests.harness.model_fakes import FakeClock, generate_once
from tests.support.bombs import bomb
from tests.support.http_server import Reply
from tests.support.llm_stub import LLMStub, anthropic_reply, openai_reply

ASK = [Message("user", (Text("What is the revenue?"),))]
MIB = 1 << 20
PROTOCOLS = ["openai", "anthropic"]


def model(llm_stub: LLMStub, protocol: str, **options: Any) -> Any:
    name, base = (
        ("openai/gpt-test", llm_stub.openai_base_url)
        if protocol == "openai"
        else ("anthropic/claude-test", llm_stub.anthropic_base_url)
    )
    config = {"name": name, "base_url": base, "max_retries": 2, **options}
    return build_model(config, env={}, limits=ConcurrencyLimits(), clock=FakeClock())


def huge_answer(size: int) -> Iterator[bytes]:
    """A Chat Completions reply whose answer is ``size`` bytes of one string, sent in 1 MiB chunks
    (the same bytes object each time: the server holds 1 MiB)."""
    yield b'{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
    yield b'"message":{"role":"assistant","content":"'
    block = b"a" * MIB
    for _ in range(size // MIB):
        yield block
    yield b'"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}'


def failed_call(llm_stub: LLMStub, protocol: str) -> tuple[ModelError, int]:
    """The call's error and the peak of Python's allocations (tracemalloc) while it ran."""
    tracemalloc.start()
    try:
        with pytest.raises(ModelError) as info:
            generate_once(model(llm_stub, protocol), "system", ASK)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return info.value, peak


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_reply_larger_than_the_cap_stops_at_the_cap_and_is_not_retried(
    llm_stub: LLMStub, protocol: str
) -> None:
    body = huge_answer(16 * MAX_REPLY_BYTES)  # 256 MiB, chunked: no Content-Length to refuse it by
    llm_stub.push(protocol, Reply(body=body, content_type="application/json"))  # type: ignore[arg-type]
    error, peak = failed_call(llm_stub, protocol)
    assert error.kind == "malformed" and error.retries == 0
    assert "larger than docab's limit of 16 MiB for one model reply" in str(error)
    assert len(llm_stub.requests_for(protocol)) == 1  # the same request would get the same reply
    assert peak < 6 * MAX_REPLY_BYTES  # the cap's pieces and its copies; before: 256 MiB several times


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_declared_length_over_the_cap_is_refused_before_the_body_is_read(
    llm_stub: LLMStub, protocol: str
) -> None:
    declared = 500 * MIB
    llm_stub.push(  # type: ignore[arg-type]
        protocol, Reply(body=b"{}", content_type="application/json", content_length=declared)
    )
    error, _ = failed_call(llm_stub, protocol)
    assert f"declares {declared:,} bytes, over docab's limit of 16 MiB" in str(error)
    assert error.kind == "malformed"


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_a_decompression_bomb_stops_at_the_cap(llm_stub: LLMStub, coding: str) -> None:
    body, encoding = bomb(coding)  # 1 GiB of zeros, 33 KB to 1 MB on the wire
    llm_stub.push(
        "openai",
        Reply(body=body, content_type="application/json", headers={"Content-Encoding": encoding}),
    )
    error, peak = failed_call(llm_stub, "openai")
    assert "decodes to more than docab's limit of 16 MiB" in str(error)
    assert str(error).startswith(f"agent model openai/gpt-test at {llm_stub.openai_base_url}")
    assert peak < 2 * MAX_REPLY_BYTES  # before: 1 GiB decoded in one go, then joined


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_compressed_reply_under_the_cap_is_read_as_before(llm_stub: LLMStub, protocol: str) -> None:
    reply = openai_reply("Paris") if protocol == "openai" else anthropic_reply("Paris")
    assert isinstance(reply.body, bytes)
    compressed = Reply(
        body=reply.body, content_type="application/json", gzip_body=True, headers=dict(reply.headers)
    )
    llm_stub.push(protocol, compressed)  # type: ignore[arg-type]
    turn = generate_once(model(llm_stub, protocol), "system", ASK)
    assert turn.text == "Paris" and turn.usage.output == 5


def test_a_corrupt_compressed_reply_is_malformed_and_retried(llm_stub: LLMStub) -> None:
    good = gzip.compress(json.dumps({"choices": []}).encode())
    corrupt = good[:10] + bytes(b ^ 0xFF for b in good[10:20]) + good[20:]
    for _ in range(3):
        llm_stub.push(
            "openai",
            Reply(body=corrupt, content_type="application/json", headers={"Content-Encoding": "gzip"}),
        )
    with pytest.raises(ModelError) as info:
        generate_once(model(llm_stub, "openai"), "system", ASK)
    assert info.value.kind == "malformed" and info.value.retries == 2
    assert "the reply cannot be decoded" in str(info.value)
