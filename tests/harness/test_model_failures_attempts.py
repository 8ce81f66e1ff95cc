"""Model failures that must stay model failures: bounded attempts, retried unreadable replies,
billed tokens of failed attempts, a wall time that runs out while a call is retried, no credit.

Real SDKs against loopback stubs speaking the providers' wire formats; assertions are on outcomes
(kinds, statuses, request counts, recorded tokens), never on timings.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from docab.agent.budget import OutputBudget
from docab.agent.loop import AgentTrace, SampleLimits, run_agent
from docab.models import ModelError, build_model
from docab.models.limits import ConcurrencyLimits
from docab.runner.failures import counts_as_error
from tests.harness.test_models_retry import ask, ok_reply
from tests.harness.test_retry_errors import record
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, error_reply, openai_reply

PROTOCOLS = ["openai", "anthropic"]


def make_model(base_url: str, protocol: str, **options: Any) -> Any:
    config = {"name": f"{protocol}/m", "base_url": base_url, "retry_base_delay": 0.01, **options}
    return build_model(config, env={}, limits=ConcurrencyLimits())


def stub_model(stub: LLMStub, protocol: str, **options: Any) -> Any:
    base = stub.openai_base_url if protocol == "openai" else stub.anthropic_base_url
    return make_model(base, protocol, **options)


def failure_of(model: Any) -> ModelError:
    with pytest.raises(ModelError) as caught:
        ask(model)
    return caught.value


def agent(model: Any, **limits: Any) -> AgentTrace:
    async def once() -> AgentTrace:
        async with model:
            return await run_agent(
                model,
                system="",
                prompt="q",
                tools=[],
                protocol="submit_tool",
                limits=SampleLimits(**limits),
                budget=OutputBudget(),
            )

    return asyncio.run(once())


# -- 1. a whole attempt is bounded by the model's timeout ------------------------------------------


def trickle(request: Request) -> Reply:
    """200 and headers at once, then one byte of JSON whitespace at a time, for (nearly) ever."""
    return Reply(body=iter([b" "] * 10_000), content_type="application/json", chunk_delay=0.2)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_trickling_reply_times_out_per_attempt_and_is_retried(protocol: str) -> None:
    with LLMStub(lambda p, r: trickle(r)) as stub:
        error = failure_of(stub_model(stub, protocol, timeout=1, max_retries=1))
        assert error.kind == "timeout" and error.retries == 1
        assert "no answer within 1 s (after 1 retries)" in str(error)
        assert len(stub.requests_for(protocol)) == 2  # type: ignore[arg-type]


def test_a_trickling_reply_ends_the_sample_as_a_timeout_not_a_limit() -> None:
    with LLMStub(lambda p, r: trickle(r)) as stub:
        trace = agent(stub_model(stub, "openai", timeout=1, max_retries=1), max_wall_s=600)
        assert trace.status == "timeout" and trace.limit_hit is None and trace.retries == 1
        assert len(stub.requests_for("openai")) == 2


# -- 2. a wall time that runs out while a call is retried is the call's failure ---------------------


@pytest.mark.parametrize(("status", "kind"), [(429, "rate_limit"), (503, "server")])
def test_wall_time_running_out_while_a_call_is_retried_is_an_error_of_its_kind(
    status: int, kind: str
) -> None:
    def busy(protocol: str, request: Request) -> Reply:
        return error_reply("openai", status, "busy", retry_after=30)

    with LLMStub(busy) as stub:
        trace = agent(stub_model(stub, "openai", max_retries=4), max_wall_s=1)
        assert trace.status == "error" and trace.limit_hit is None
        assert trace.retries == 1  # waiting out the first Retry-After when the time ran out
        (error,) = trace.errors
        assert error.startswith(f"model call failed ({kind}): agent model openai/m at ")
        assert "(after 1 retries); the sample's wall time of 1 s ran out" in error
        assert counts_as_error(record("q", trace.status, tuple(trace.errors)))  # --retry-errors reruns it
        assert len(stub.requests_for("openai")) == 1


def test_a_call_still_waiting_for_the_endpoints_rate_limit_pause_is_an_error_not_a_limit() -> None:
    def busy(protocol: str, request: Request) -> Reply:
        return error_reply("openai", 429, "busy", retry_after=30)

    async def two_samples(model: Any) -> tuple[AgentTrace, AgentTrace]:
        def sample() -> Any:
            return run_agent(
                model,
                system="",
                prompt="q",
                tools=[],
                protocol="submit_tool",
                limits=SampleLimits(max_wall_s=1),
                budget=OutputBudget(),
            )

        async with model:
            first = await sample()  # its 429 pauses the endpoint for 30 s
            return first, await sample()  # never sent: waits for the pause until its time runs out

    with LLMStub(busy) as stub:
        first, queued = asyncio.run(two_samples(stub_model(stub, "openai", max_retries=4)))
        assert first.status == "error" and first.retries == 1
        assert queued.status == "error" and queued.limit_hit is None and queued.retries == 0
        (error,) = queued.errors
        assert error.startswith("model call failed (rate_limit): agent model openai/m at ")
        assert "waited for the endpoint's rate-limit pause" in error
        assert counts_as_error(record("q", queued.status, tuple(queued.errors)))
        assert len(stub.requests_for("openai")) == 1


def test_a_model_that_keeps_working_past_its_wall_time_is_a_limit() -> None:
    def slow(protocol: str, request: Request) -> Reply:
        return openai_reply("thinking", delay=3)

    with LLMStub(slow) as stub:
        trace = agent(stub_model(stub, "openai"), max_wall_s=1)
        assert trace.status == "limit" and trace.limit_hit == "wall_time" and trace.retries == 0


# -- 3. tokens billed for replies that could not be used are recorded -----------------------------


def no_choices(protocol: str, request: Request) -> Reply:
    return Reply.json(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020},
        }
    )


def test_billed_tokens_of_unusable_replies_are_recorded_when_every_attempt_fails() -> None:
    with LLMStub(no_choices) as stub:
        trace = agent(stub_model(stub, "openai", max_retries=2))
        assert trace.status == "error" and "(malformed)" in trace.errors[0] and trace.retries == 2
        assert len(stub.requests_for("openai")) == 3
        assert sum(u.input_uncached for u in trace.usage) == 3000
        assert sum(u.output for u in trace.usage) == 60
        assert {u.role for u in trace.usage} == {"agent"}
        assert trace.agent_tokens() == 3060  # the token limit sees them too


def test_billed_tokens_of_the_answer_extractors_unusable_replies_are_recorded() -> None:
    from docab.agent.answer import BenchmarkExtractor
    from docab.models.completion_adapter import CompletionAdapter

    async def once(model: Any) -> Any:
        async with model:
            return await BenchmarkExtractor(CompletionAdapter(model)).extract("q", "the answer is 4")

    with LLMStub(no_choices) as stub:
        extraction = asyncio.run(once(stub_model(stub, "openai", max_retries=1)))
        assert (
            extraction.error is not None and "no choices in the reply (after 1 retries)" in extraction.error
        )
        assert len(stub.requests_for("openai")) == 2
        assert sum(u.input_uncached for u in extraction.usage) == 2000
        assert sum(u.output for u in extraction.usage) == 40
        assert {u.role for u in extraction.usage} == {"extractor"}


# -- 4. replies that cannot be decoded are malformed (retried), and a preflight says so in a line ----


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("bad", [b"", b'{"id": "msg_1", "cho'])
def test_an_empty_or_cut_200_body_is_retried_as_malformed(protocol: str, bad: bytes) -> None:
    with LLMStub() as stub:
        stub.push(protocol, Reply(body=bad, content_type="application/json"), ok_reply(protocol))  # type: ignore[arg-type]
        turn = ask(stub_model(stub, protocol))
        assert turn.text == "fine" and turn.retries == 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("body", [b"", b"<html>gateway</html>"])
def test_a_model_list_that_is_not_json_stops_the_preflight_in_one_line(protocol: str, body: bytes) -> None:
    with LLMStub() as stub:
        stub.models_reply = Reply(body=body, content_type="application/json")
        model = stub_model(stub, protocol)

        async def probe() -> Any:
            async with model:
                return await model.probe()

        with pytest.raises(ModelError) as caught:
            asyncio.run(probe())
        assert caught.value.kind == "malformed"
        assert "\n" not in str(caught.value) and "not JSON" in str(caught.value)


@pytest.fixture
def not_http() -> Iterator[str]:
    """A port that answers like an SSH server, not HTTP."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
                conn.settimeout(1)
                with contextlib.suppress(OSError):
                    conn.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    listener.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_port_that_does_not_speak_http_is_a_one_line_failure(not_http: str, protocol: str) -> None:
    base = f"{not_http}/v1" if protocol == "openai" else not_http
    error = failure_of(make_model(base, protocol, max_retries=1))
    assert error.kind in ("connection", "malformed") and error.retries == 1
    assert "\n" not in str(error)

    async def probe() -> Any:
        model = make_model(base, protocol)
        async with model:
            return await model.probe()

    with pytest.raises(ModelError) as caught:
        asyncio.run(probe())
    assert "\n" not in str(caught.value)


# -- 5. no credit is final, like a refused key ------------------------------------------------------


def test_insufficient_quota_is_not_retried_and_says_why() -> None:
    def broke(protocol: str, request: Request) -> Reply:
        body = {
            "error": {
                "message": "You exceeded your current quota, please check your plan and billing details.",
                "type": "insufficient_quota",
                "param": None,
                "code": "insufficient_quota",
            }
        }
        return Reply(status=429, body=json.dumps(body).encode(), content_type="application/json")

    with LLMStub(broke) as stub:
        model = stub_model(stub, "openai", max_retries=4)
        error = failure_of(model)
        assert error.kind == "auth" and error.retries == 0 and error.status == 429
        assert "insufficient quota" in str(error) and "billing" in str(error)
        assert len(stub.requests_for("openai")) == 1
        assert "no credit" in str(error)


def test_an_ordinary_429_is_still_retried() -> None:
    with LLMStub() as stub:
        stub.push("openai", error_reply("openai", 429, "slow down", retry_after=0), ok_reply("openai"))
        turn = ask(stub_model(stub, "openai"))
        assert turn.text == "fine" and turn.retries == 1
