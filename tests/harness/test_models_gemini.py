"""``google/<model>`` through the real ``google-genai`` SDK against a loopback Gemini API: the wire
request (contents, function declarations, system instruction), tool-call round trips with their
thought signatures, images, usage normalisation, retries and causes, the preflight, and one run of
the harness through the route."""

from __future__ import annotations

import asyncio
import base64
import socket
from pathlib import Path
from typing import Any

import pytest

from docab.messages import Message, Text, ToolResult, ToolSpec
from docab.models import ModelConfigError, ModelError, build_model
from docab.models.limits import ConcurrencyLimits
from docab.models.preflight import check_endpoints
from docab.usage import Usage
from tests.harness.model_fakes import FakeClock, png
from tests.support.gemini_stub import GeminiStub, gemini_error, gemini_reply, proto_json
from tests.support.http_server import Request

GREP = ToolSpec(
    "grep",
    "Search the document.",
    {"type": "object", "properties": {"pattern": {"type": "string"}}, "additionalProperties": False},
)
READ = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
SIGNATURE = base64.b64encode(b"opaque-signature").decode("ascii")


def make_model(stub: GeminiStub, **options: Any):  # type: ignore[no-untyped-def]
    config = {"name": "google/gemini-stub", "base_url": stub.base, "max_retries": 0, **options}
    return build_model(config, env={}, limits=ConcurrencyLimits(), clock=FakeClock())


@pytest.fixture
def stub():  # type: ignore[no-untyped-def]
    with GeminiStub() as server:
        yield server


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_tool_call_round_trip_on_the_wire(stub: GeminiStub) -> None:
    stub.push(
        gemini_reply(
            "Let me look.",
            function_calls=[("grep", {"pattern": "revenue"}), ("read", {"path": "p3"})],
            thought_signature=SIGNATURE,
        ),
        gemini_reply("Revenue was 42."),
    )
    model = make_model(stub, temperature=0.0)
    page = png(5, 7, name="pages/page-0003.png")

    async def loop():  # type: ignore[no-untyped-def]
        async with model:
            history = [Message.user("What was the revenue?")]
            first = await model.generate("Be brief.", history, [GREP, READ], max_output_tokens=300)
            history.append(first.message())
            for call, result in zip(
                first.tool_calls,
                (ToolResult(blocks=(Text("line 3: revenue 42"),)), ToolResult(blocks=(Text("page 3"), page))),
                strict=True,
            ):
                history.append(Message.tool(call.id, result))
            second = await model.generate("Be brief.", history, [GREP, READ], max_output_tokens=300)
            return first, second

    first, second = run(loop())
    assert first.text == "Let me look." and first.stop_reason == "STOP"
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("grep", {"pattern": "revenue"}),
        ("read", {"path": "p3"}),
    ]
    assert len({c.id for c in first.tool_calls}) == 2
    assert second.text == "Revenue was 42."

    requests = stub.generate_requests()
    assert requests[0].path == "/v1beta/models/gemini-stub:generateContent"
    body = stub.bodies()[0]
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert body["generationConfig"]["maxOutputTokens"] == 300
    assert body["generationConfig"]["temperature"] == 0.0
    declarations = body["tools"][0]["functionDeclarations"]
    # The schema inside is sent untouched, property names included.
    assert declarations[0] == {
        "name": "grep",
        "description": GREP.description,
        "parametersJsonSchema": GREP.input_schema,
    }
    assert body["contents"] == [{"role": "user", "parts": [{"text": "What was the revenue?"}]}]

    contents = stub.bodies()[1]["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    model_parts = contents[1]["parts"]
    assert model_parts[0] == {"text": "Let me look."}
    # The signature goes back on the part that carried it, and no invented id is sent.
    assert model_parts[1] == {
        "functionCall": {"name": "grep", "args": {"pattern": "revenue"}},
        "thoughtSignature": SIGNATURE,
    }
    assert model_parts[2] == {"functionCall": {"name": "read", "args": {"path": "p3"}}}
    results = contents[2]["parts"]
    assert results[0] == {"functionResponse": {"name": "grep", "response": {"output": "line 3: revenue 42"}}}
    assert results[1] == {"functionResponse": {"name": "read", "response": {"output": "page 3"}}}
    assert "1 from read" in results[2]["text"]
    assert results[3]["inlineData"] == {
        "mimeType": "image/png",
        "data": base64.b64encode(page.data).decode("ascii"),
    }
    assert requests[0].headers["x-goog-api-key"] == "not-needed"


def test_call_ids_from_the_server_go_back_and_errors_are_error_responses(stub: GeminiStub) -> None:
    stub.push(gemini_reply(None, function_calls=[("grep", {"pattern": "x"})], call_ids=["fc-7"]))
    model = make_model(stub)

    async def loop():  # type: ignore[no-untyped-def]
        async with model:
            history = [Message.user("q")]
            first = await model.generate("", history, [GREP], max_output_tokens=50)
            history += [first.message(), Message.tool("fc-7", ToolResult.error("no such pattern"))]
            await model.generate("", history, [GREP], max_output_tokens=50)
            return first

    first = run(loop())
    assert first.tool_calls[0].id == "fc-7" and first.text == ""
    body = stub.bodies()[1]
    assert "systemInstruction" not in body
    assert body["contents"][1]["parts"] == [
        {"functionCall": {"id": "fc-7", "name": "grep", "args": {"pattern": "x"}}}
    ]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"id": "fc-7", "name": "grep", "response": {"error": "no such pattern"}}}
    ]


def test_user_images_are_inline_data(stub: GeminiStub) -> None:
    model = make_model(stub)
    image = png(4, 4)
    message = Message(role="user", blocks=(Text("What is shown?"), image))

    async def once():  # type: ignore[no-untyped-def]
        async with model:
            return await model.generate("", [message], [], max_output_tokens=20)

    run(once())
    body = stub.bodies()[0]
    assert "tools" not in body
    assert body["contents"][0]["parts"] == [
        {"text": "What is shown?"},
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(image.data).decode("ascii")}},
    ]


def test_usage_counts_cached_thinking_and_tool_prompt_tokens_once(stub: GeminiStub) -> None:
    stub.push(
        gemini_reply(
            "ok",
            prompt_tokens=1000,
            cached_tokens=600,
            candidates_tokens=40,
            thoughts_tokens=200,
            tool_use_prompt_tokens=50,
            thought="I should answer ok.",
        )
    )
    model = make_model(stub)

    async def once():  # type: ignore[no-untyped-def]
        async with model:
            return await model.generate("", [Message.user("q")], [], max_output_tokens=300)

    turn = run(once())
    usage = turn.usage
    assert (usage.input_uncached, usage.cache_read, usage.cache_write) == (450, 600, 0)
    assert (usage.output, usage.reasoning) == (240, 200)
    assert usage.input_total == 1050 and usage.model == "google/gemini-stub"
    assert turn.text == "ok"  # the thought summary is reasoning, not the answer
    assert [r.text for r in turn.reasoning] == ["I should answer ok."]
    assert turn.raw["usageMetadata"]["thoughtsTokenCount"] == 200


def test_from_gemini_reads_both_spellings_and_clamps() -> None:
    snake = Usage.from_gemini(
        {"prompt_token_count": 10, "cached_content_token_count": 99, "candidates_token_count": 3}
    )
    assert (snake.input_uncached, snake.cache_read, snake.output) == (0, 10, 3)
    assert Usage.from_gemini(None) == Usage()


def test_thinking_budget_is_sent_and_adds_to_the_output_room(stub: GeminiStub) -> None:
    model = make_model(stub, thinking_budget=1024)

    async def once():  # type: ignore[no-untyped-def]
        async with model:
            return await model.generate("", [Message.user("q")], [], max_output_tokens=300)

    run(once())
    config = stub.bodies()[0]["generationConfig"]
    assert config["thinkingConfig"] == {"thinkingBudget": 1024}
    assert config["maxOutputTokens"] == 1324


def test_a_500_and_a_429_are_retried_with_retry_after(stub: GeminiStub) -> None:
    stub.push(
        gemini_error(500, "backend hiccup"), gemini_error(429, "slow down", retry_after=2), gemini_reply("ok")
    )
    clock = FakeClock()
    model = build_model(
        {"name": "google/gemini-stub", "base_url": stub.base, "max_retries": 3},
        env={},
        limits=ConcurrencyLimits(),
        clock=clock,
    )

    async def once():  # type: ignore[no-untyped-def]
        async with model:
            return await model.generate("", [Message.user("q")], [], max_output_tokens=20)

    turn = run(once())
    assert turn.text == "ok" and turn.retries == 2
    assert 2.0 in clock.sleeps


def test_a_refused_key_is_final_and_says_what_to_check(stub: GeminiStub) -> None:
    stub.push(gemini_error(403, "API key not valid. Please pass a valid API key."))
    model = build_model(
        {
            "name": "google/gemini-stub",
            "base_url": stub.base,
            "api_key_env": "MY_GEMINI_KEY",
            "max_retries": 3,
        },
        env={"MY_GEMINI_KEY": "wrong"},
        limits=ConcurrencyLimits(),
        clock=FakeClock(),
    )

    async def once():  # type: ignore[no-untyped-def]
        async with model:
            return await model.generate("", [Message.user("q")], [], max_output_tokens=20)

    with pytest.raises(ModelError) as caught:
        run(once())
    error = caught.value
    assert error.kind == "auth" and error.status == 403 and error.retries == 0
    assert "API key not valid" in str(error) and "MY_GEMINI_KEY" in str(error)
    assert stub.generate_requests()[0].headers["x-goog-api-key"] == "wrong"


def test_a_bad_request_is_final_with_the_api_message(stub: GeminiStub) -> None:
    stub.push(gemini_error(400, "Invalid JSON payload received."))
    model = make_model(stub, max_retries=3)

    async def once():  # type: ignore[no-untyped-def]
        async with model:
            return await model.generate("", [Message.user("q")], [], max_output_tokens=20)

    with pytest.raises(ModelError) as caught:
        run(once())
    assert caught.value.kind == "api" and "HTTP 400: Invalid JSON payload received." in str(caught.value)
    assert len(stub.generate_requests()) == 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connection_names_the_cause_after_retries() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    model = build_model(
        {"name": "google/gemini-stub", "base_url": url, "max_retries": 1},
        env={},
        limits=ConcurrencyLimits(),
        clock=FakeClock(),
    )

    async def once():  # type: ignore[no-untyped-def]
        async with model:
            return await model.generate("", [Message.user("q")], [], max_output_tokens=20)

    with pytest.raises(ModelError) as caught:
        run(once())
    error = caught.value
    assert error.kind == "connection" and error.retries == 1
    assert (
        "connection refused" in str(error)
        and url in str(error)
        and "agent model google/gemini-stub" in str(error)
    )


def test_a_reply_without_candidates_is_malformed_and_retried(stub: GeminiStub) -> None:
    from tests.support.http_server import Reply

    stub.push(Reply.json({"usageMetadata": {"promptTokenCount": 3}}), gemini_reply("ok"))
    model = make_model(stub, max_retries=1)

    async def once():  # type: ignore[no-untyped-def]
        async with model:
            return await model.generate("", [Message.user("q")], [], max_output_tokens=20)

    turn = run(once())
    assert turn.text == "ok" and turn.retries == 1
    assert turn.usage.input_uncached == 13  # the unusable reply's tokens are counted too


def test_preflight_lists_the_models_and_notes_a_missing_one(stub: GeminiStub) -> None:
    good = make_model(stub)
    other = build_model(
        {"name": "google/gemini-unknown", "base_url": stub.base}, env={}, limits=ConcurrencyLimits()
    )

    async def check():  # type: ignore[no-untyped-def]
        return await check_endpoints([good, other])

    notes = run(check())
    assert len(notes) == 1 and "gemini-unknown" in notes[0] and "gemini-stub" in notes[0]
    assert [r.path for r in stub.requests] == ["/v1beta/models"]


def test_preflight_stops_at_an_unreachable_endpoint() -> None:
    model = build_model(
        {"name": "google/gemini-stub", "base_url": f"http://127.0.0.1:{free_port()}"},
        env={},
        limits=ConcurrencyLimits(),
    )
    with pytest.raises(ModelError, match="connection refused"):
        run(check_endpoints([model]))


def test_config_needs_a_key_without_base_url_and_names_the_variable() -> None:
    with pytest.raises(ModelConfigError, match="GEMINI_API_KEY"):
        build_model("google/gemini-2.5-flash", env={})
    model = build_model("google/gemini-2.5-flash", env={"GEMINI_API_KEY": "k"})
    assert model.url == "https://generativelanguage.googleapis.com"
    with pytest.raises(ModelConfigError, match="reasoning_effort applies to openai/"):
        build_model(
            {"name": "google/gemini-2.5-flash", "reasoning_effort": "low"}, env={"GEMINI_API_KEY": "k"}
        )


# -- one run of the harness through the route ------------------------------------------------------

ANSWERS = {"founded": "1980", "employees": "100", "flagship": "Model-0", "chief executive": None}


def gemini_script(request: Request):  # type: ignore[no-untyped-def]
    contents = proto_json(request.json())["contents"]
    question = contents[0]["parts"][0]["text"]
    answered = [p for c in contents for p in c["parts"] if "functionResponse" in p]
    if not answered:
        return gemini_reply(
            None,
            function_calls=[("read_file", {"path": "document/pages/page-0001.png"})],
            thought_signature=SIGNATURE,
            prompt_tokens=900,
            cached_tokens=600,
            thoughts_tokens=30,
        )
    answer = next(value for key, value in ANSWERS.items() if key in question)
    args = (
        {"status": "not_answerable", "answer": ""}
        if answer is None
        else {"status": "answered", "answer": answer}
    )
    return gemini_reply(
        None, function_calls=[("submit_answer", args)], prompt_tokens=2000, cached_tokens=1500
    )


def test_a_run_through_the_gemini_route(tmp_path: Path) -> None:
    from docab.config import parse_config
    from docab.runner.launch import RunRequest, launch
    from docab.runner.progress import SilentProgress
    from tests.harness.corpus import exact_scorer, make_dataset

    with GeminiStub(gemini_script) as server:
        model = {"name": "google/gemini-stub", "base_url": server.base, "retry_base_delay": 0.01}
        config = parse_config({"name": "g", "model": model, "arms": [{"name": "fs"}, {"name": "fs2"}]})
        dataset = make_dataset(tmp_path / "corpus", documents=1)
        outcome = launch(
            RunRequest(config, results_dir=tmp_path / "results", concurrency=2, limit=2),
            dataset=dataset,
            scorer=exact_scorer,
            progress=SilentProgress(),
            say=lambda s: None,
        )
        bodies = server.bodies()
    records = outcome.records
    assert len(records) == 4 and {r.arm for r in records} == {"fs", "fs2"}
    assert all(r.status == "ok" and r.score == 1.0 for r in records), [r.errors for r in records]
    usage = [u for r in records for u in r.usage]
    assert {(u.input_uncached, u.cache_read, u.reasoning) for u in usage} == {(300, 600, 30), (500, 1500, 0)}
    assert all(u.model == "google/gemini-stub" for u in usage)
    assert all(r.pages_read == (1,) for r in records)
    second = next(
        b for b in bodies if any("functionResponse" in p for c in b["contents"] for p in c["parts"])
    )
    last = second["contents"][-1]["parts"]
    assert "functionResponse" in last[0] and any("inlineData" in p for p in last)
    assert second["contents"][-2]["parts"][0]["thoughtSignature"] == SIGNATURE


def suite_script(request: Request):  # type: ignore[no-untyped-def]
    """Lists the document folder, then submits an answer: the same in both arms of the demo."""
    contents = proto_json(request.json())["contents"]
    answered = [p for c in contents for p in c["parts"] if "functionResponse" in p]
    if not answered:
        return gemini_reply(
            "Looking.",
            function_calls=[("list_files", {"path": "document"})],
            thought_signature=SIGNATURE,
            prompt_tokens=1200,
            cached_tokens=800,
            thoughts_tokens=20,
        )
    assert answered[0]["functionResponse"]["name"] == "list_files"
    assert "document.md" in answered[0]["functionResponse"]["response"]["output"]
    return gemini_reply(
        None,
        function_calls=[("submit_answer", {"status": "answered", "answer": "42"})],
        prompt_tokens=1500,
    )


def test_docab_run_of_the_built_in_suite_through_the_gemini_route(tmp_path: Path) -> None:
    """``docab run demo`` (the built-in suite, both arms, md-vision over stdio) on two questions,
    in its own process, with the model swapped for ``google/...`` at the loopback Gemini API."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    from docab.log.store import read_records
    from tests.conftest import REPO_ROOT

    if shutil.which("md-vision") is None:
        pytest.skip("the md-vision server (tools/md_vision) is not installed in this checkout")
    # The suite is built in DOCAB_CACHE, not in ~/.cache.
    env = {**os.environ, "DOCAB_CACHE": str(tmp_path / "cache"), "GEMINI_API_KEY": "stub-key"}
    results = tmp_path / "results"
    with GeminiStub(suite_script) as server:
        flags = ["--model", "google/gemini-stub", "--base-url", server.base, "--set", "name=gemini-demo"]
        command = [sys.executable, "-m", "docab.cli.main", "run", "demo", "--results", str(results)]
        done = subprocess.run(
            [*command, "--first", "2", "--quiet", *flags],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        keys = {r.headers.get("x-goog-api-key") for r in server.generate_requests()}
    assert done.returncode == 0, done.stderr
    folder = results / "gemini-demo"
    records = list(read_records(folder / "records.jsonl"))
    assert len(records) == 4 and {r.arm for r in records} == {"fs", "fs+md-vision"}
    assert all(r.status == "ok" and r.model == "google/gemini-stub" for r in records), [
        r.errors for r in records
    ]
    assert all([c.name for c in r.tool_calls] == ["list_files", "submit_answer"] for r in records)
    assert all(r.raw_answer == "42" for r in records)
    usage = [u for r in records for u in r.usage]
    assert {(u.input_uncached, u.cache_read, u.output, u.reasoning) for u in usage} == {
        (400, 800, 25, 20),
        (1500, 0, 5, 0),
    }
    assert keys == {"stub-key"}
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["models"]["agent"] == "google/gemini-stub"
    assert manifest["packages"]["google-genai"]
    assert (folder / "report.md").is_file()


def test_a_reply_slower_than_the_timeout_is_a_timeout(stub: GeminiStub) -> None:
    stub.push(gemini_reply("late", delay=3.0))
    model = make_model(stub, timeout=0.5)

    async def once():  # type: ignore[no-untyped-def]
        async with model:
            return await model.generate("", [Message.user("q")], [], max_output_tokens=20)

    with pytest.raises(ModelError) as caught:
        run(once())
    assert caught.value.kind == "timeout" and "no answer within 0.5 s" in str(caught.value)


def test_calls_without_ids_get_ids_unique_across_replies() -> None:
    from docab.models.gemini import parse_gemini_reply

    def reply(response_id: str) -> dict[str, object]:
        part = {"functionCall": {"name": "grep", "args": {"pattern": "x"}}}
        return {"candidates": [{"content": {"role": "model", "parts": [part]}}], "responseId": response_id}

    first, second = parse_gemini_reply(reply("r1")), parse_gemini_reply(reply("r2"))
    assert first.tool_calls[0].id != second.tool_calls[0].id
    assert first.tool_calls[0].id.startswith("gemini_call_")


def test_a_request_is_plain_json_so_the_response_cache_can_key_it(stub: GeminiStub) -> None:
    import json

    model = make_model(stub)
    history = [Message(role="user", blocks=(Text("see"), png(2, 2)))]
    request = model.build_request("sys", history, [GREP], 100)
    assert json.loads(json.dumps(request)) == request
