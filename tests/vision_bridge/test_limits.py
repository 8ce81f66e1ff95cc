"""Response caps, error-detail caps and the one deadline, against a real loopback server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2
import pytest

from tests.support.http_server import LocalServer, Reply
from tests.support.llm_stub import LLMStub, anthropic_reply, error_reply, openai_reply
from tests.vision_bridge.conftest import settings_for, with_service
from vision_bridge.backends.base import (
    MAX_ERROR_DETAIL_BYTES,
    MAX_RESPONSE_BYTES,
    ResponseLimits,
    ResponseTooLarge,
)
from vision_bridge.backends.transport import CappedTransport
from vision_bridge.metering import CallMeter, metering


def get(server: LocalServer, path: str, limits: ResponseLimits) -> tuple[httpx2.Response, CallMeter]:
    async def go() -> tuple[httpx2.Response, CallMeter]:
        transport = CappedTransport(httpx2.AsyncHTTPTransport(), limits)
        async with httpx2.AsyncClient(transport=transport) as client:
            with metering(CallMeter()) as meter:
                response = await client.get(server.url(path))
                return response, meter

    return asyncio.run(go())


def test_defaults_are_the_reference_limits() -> None:
    assert MAX_RESPONSE_BYTES == 16 * 1024 * 1024
    assert MAX_ERROR_DETAIL_BYTES == 1024 * 1024


def test_response_cap_at_its_edge_declared_and_streamed(local_server: LocalServer) -> None:
    limits = ResponseLimits(max_body=1000, max_error_body=100)
    local_server.route("/edge", Reply(body=b"a" * 1000))
    local_server.route("/declared", Reply(body=b"a" * 1001))
    local_server.route("/streamed", Reply(body=[b"a" * 600, b"a" * 401]))  # chunked: no length declared
    response, meter = get(local_server, "/edge", limits)
    assert len(response.content) == 1000 and meter.requests == 1
    with pytest.raises(ResponseTooLarge, match="declared 1,001 bytes, over the limit of 1,000"):
        get(local_server, "/declared", limits)
    with pytest.raises(ResponseTooLarge, match="over the limit of 1,000"):
        get(local_server, "/streamed", limits)
    assert local_server.requests[-1].headers["accept-encoding"] == "identity"


def test_error_bodies_are_cut_not_refused(local_server: LocalServer) -> None:
    limits = ResponseLimits(max_body=1000, max_error_body=100)
    local_server.route("/edge", Reply(status=500, body=b"e" * 100))
    local_server.route("/long", Reply(status=400, body=[b"e" * 60, b"f" * 60, b"g" * 60]))
    response, meter = get(local_server, "/edge", limits)
    assert len(response.content) == 100 and not meter.error_body_truncated
    response, meter = get(local_server, "/long", limits)
    assert response.content == b"e" * 60 + b"f" * 40
    assert meter.error_body_truncated


def test_oversized_model_response_is_an_api_error_without_retry(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    chunk = b" " * (1024 * 1024)
    llm_stub.push("openai", Reply(body=[chunk] * 17, content_type="application/json"))

    async def scenario(service):
        return await service.analyze(str(picture))

    outcome = with_service(settings_for(llm_stub, tmp_path, VISION_MAX_RETRIES="2"), scenario)
    assert outcome.is_error
    assert outcome.text == (
        "[vision_error] api: the provider's response sent more, over the limit of 16,777,216 bytes"
    )
    assert outcome.usage.calls == 1  # not retried: the same answer would come back
    assert len(llm_stub.requests_for("openai")) == 1


def test_long_error_bodies_are_capped_in_the_message(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    llm_stub.push("openai", error_reply("openai", 400, "bad image " + "x" * (1536 * 1024)))
    llm_stub.push(
        "anthropic", Reply(status=502, body=b"<html>" + b"y" * (2 * 1024 * 1024), content_type="text/html")
    )

    async def scenario(service):
        return await service.analyze(str(picture))

    openai_outcome = with_service(settings_for(llm_stub, tmp_path), scenario)
    anthropic_outcome = with_service(settings_for(llm_stub, tmp_path, "anthropic"), scenario)
    for outcome in (openai_outcome, anthropic_outcome):
        assert outcome.is_error
        assert len(outcome.text) < 2600
        assert outcome.text.endswith("… (detail cut at 2,000 characters)")
    assert "HTTP 400: bad image xxx" in openai_outcome.text
    assert "HTTP 502: <html>yyy" in anthropic_outcome.text


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_timeout_while_waiting_for_headers(
    llm_stub: LLMStub, tmp_path: Path, picture: Path, fmt: str
) -> None:
    llm_stub.push(fmt, openai_reply("late", delay=3) if fmt == "openai" else anthropic_reply("late", delay=3))

    async def scenario(service):
        service.backend.warm_up()  # as the server does at start: imports are not what is timed here
        return await service.analyze(str(picture))

    outcome = with_service(settings_for(llm_stub, tmp_path, fmt, VISION_TIMEOUT="0.5"), scenario)
    assert outcome.is_error
    assert outcome.text == (
        "[vision_error] timeout: no answer within VISION_TIMEOUT (0.5 s) while waiting for the vision model"
    )
    assert outcome.details["error_cause"] == "timeout"


def test_timeout_covers_a_body_that_trickles(llm_stub: LLMStub, tmp_path: Path, picture: Path) -> None:
    # Each chunk comes well within the timeout, so only a deadline over the whole call can stop it.
    body = openai_reply("slow").body
    assert isinstance(body, bytes)
    pieces = [body[i : i + 20] for i in range(0, len(body), 20)]
    llm_stub.push("anthropic", Reply(body=pieces, chunk_delay=0.15, content_type="application/json"))
    llm_stub.push("openai", Reply(body=pieces, chunk_delay=0.15, content_type="application/json"))

    async def scenario(service):
        service.backend.warm_up()
        return await service.analyze(str(picture))

    for fmt in ("openai", "anthropic"):
        outcome = with_service(settings_for(llm_stub, tmp_path, fmt, VISION_TIMEOUT="0.6"), scenario)
        assert outcome.is_error, fmt
        assert outcome.text.startswith("[vision_error] timeout: no answer within VISION_TIMEOUT (0.6 s)")


def test_server_error_is_retried_within_the_deadline(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    llm_stub.push("openai", error_reply("openai", 503, "overloaded", retry_after=0))

    async def scenario(service):
        return await service.analyze(str(picture))

    outcome = with_service(settings_for(llm_stub, tmp_path, VISION_MAX_RETRIES="1"), scenario)
    assert (outcome.text, outcome.usage.calls) == ("stub answer", 2)


# -- coded responses: decoded by the guard's bounded decoder, decoded bytes counted (issue 26 item 6)


def test_a_compressed_response_is_decoded_here_and_its_decoded_bytes_counted(
    local_server: LocalServer,
) -> None:
    import gzip

    limits = ResponseLimits(max_body=1000, max_error_body=100)
    local_server.route("/fits", Reply(body=gzip.compress(b"a" * 1000), headers={"Content-Encoding": "gzip"}))
    local_server.route("/over", Reply(body=gzip.compress(b"a" * 1001), headers={"Content-Encoding": "gzip"}))
    response, _ = get(local_server, "/fits", limits)
    assert response.content == b"a" * 1000
    # The SDK sees a plain body: no coding left for httpx2 to undo, no length of the coded one.
    assert "content-encoding" not in response.headers and "content-length" not in response.headers
    with pytest.raises(ResponseTooLarge, match="decodes to more, over the limit of 1,000 bytes"):
        get(local_server, "/over", limits)


def test_a_compressed_error_body_is_cut_at_its_decoded_cap(local_server: LocalServer) -> None:
    import gzip

    limits = ResponseLimits(max_body=1000, max_error_body=100)
    local_server.route(
        "/err", Reply(status=500, body=gzip.compress(b"e" * 5000), headers={"Content-Encoding": "gzip"})
    )
    response, meter = get(local_server, "/err", limits)
    assert response.content == b"e" * 100 and meter.error_body_truncated


def test_a_corrupt_compressed_response_is_refused_in_one_sentence(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    llm_stub.push(
        "openai",
        Reply(
            body=b"\x1f\x8b\x08\x00garbage" * 10,
            headers={"Content-Encoding": "gzip"},
            content_type="application/json",
        ),
    )
    outcome = with_service(settings_for(llm_stub, tmp_path), lambda s: s.analyze(str(picture)))
    assert outcome.text == (
        "[vision_error] api: the provider's response could not be decoded: the gzip data is corrupt"
    )
    assert outcome.usage.calls == 1


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_compressed_answer_still_reads(llm_stub: LLMStub, tmp_path: Path, picture: Path, fmt: str) -> None:
    reply = openai_reply("zipped") if fmt == "openai" else anthropic_reply("zipped")
    reply.gzip_body = True
    llm_stub.push(fmt, reply)
    outcome = with_service(settings_for(llm_stub, tmp_path, fmt), lambda s: s.analyze(str(picture)))
    assert (outcome.text, outcome.is_error) == ("zipped", False)
