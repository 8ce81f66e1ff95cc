"""Every model role follows the run's endpoint, and every model error says who failed, where and why.

Issue 15: a config that sets only ``[model] base_url`` sends the agent *and* the answer extractor
there; an endpoint that cannot be reached stops ``docab run`` before the first sample with a
message naming the URL and the cause (refused, DNS, TLS, timeout, HTTP status with the provider's
own message), found by one cheap request per distinct endpoint.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import socket
import ssl
from pathlib import Path
from typing import Any

import pytest

from docab.cli.main import main
from docab.config import parse_config
from docab.errors import RunError
from docab.messages import Message
from docab.models import ModelError, build_model
from docab.models.causes import provider_message, transport_cause
from docab.models.limits import ConcurrencyLimits
from docab.models.preflight import check_endpoints, describe
from docab.runner.launch import RunRequest, launch
from docab.runner.progress import SilentProgress
from tests.harness.corpus import exact_scorer, make_dataset, write_benchmark_folder
from tests.harness.model_fakes import FakeClock
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, error_reply, openai_reply

# -- the cause, from the exception chain ----------------------------------------------------------------


def chained(*exceptions: BaseException) -> BaseException:
    """``exceptions[0]`` raised from ``exceptions[1]``, raised from ``exceptions[2]``..."""
    for outer, inner in itertools.pairwise(exceptions):
        outer.__cause__ = inner
    return exceptions[0]


class ConnectTimeout(Exception):  # named like httpx's: a timeout by name only
    pass


@pytest.mark.parametrize(
    ("exc", "kind", "words"),
    [
        # aiohttp's transport reports a refused connection as a ConnectTimeout: the OS error wins
        (chained(ConnectTimeout("timed out"), ConnectionRefusedError(111, "refused")), "refused", "refused"),
        (
            chained(
                OSError("All connection attempts failed"), socket.gaierror(-2, "Name or service not known")
            ),
            "dns",
            "Name or service not known",
        ),
        (
            chained(RuntimeError("x"), ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")),
            "tls",
            "plain http, not https",
        ),
        (chained(RuntimeError("x"), TimeoutError()), "timeout", "no answer within 7 s"),
        (chained(RuntimeError("x"), ConnectionResetError(104, "reset")), "reset", "closed the connection"),
    ],
)
def test_the_transport_cause_is_found_down_the_chain(exc: BaseException, kind: str, words: str) -> None:
    cause = transport_cause(exc, timeout_s=7)
    assert cause is not None and cause.kind == kind and words in cause.text


def test_an_exception_without_a_known_cause_has_none() -> None:
    assert transport_cause(RuntimeError("boom")) is None
    loop = RuntimeError("a")
    loop.__context__ = loop  # a cycle ends the walk
    assert transport_cause(loop) is None


class StatusError(Exception):
    def __init__(self, body: object) -> None:
        super().__init__("Error code: 400 - {...}")
        self.body = body


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"message": "context too long", "type": "invalid_request_error"}, "context too long"),  # OpenAI's
        (
            {"type": "error", "error": {"type": "api_error", "message": "overloaded"}},
            "overloaded",
        ),  # Anthropic's
        ({"error": "model not loaded"}, "model not loaded"),  # vLLM and others
        ({"detail": "Not Found"}, "Not Found"),  # FastAPI servers
        ("upstream timed out " * 40, "upstream timed out"),  # a text body, shortened
    ],
)
def test_the_providers_message_is_read_from_its_error_body(body: object, expected: str) -> None:
    message = provider_message(StatusError(body))
    assert expected in message and len(message) <= 300


# -- through the real SDKs, against real sockets ------------------------------------------------------


def ask(config: dict[str, Any], role: str = "agent") -> ModelError:
    model = build_model(config, env={}, limits=ConcurrencyLimits(), clock=FakeClock(), role=role)

    async def once() -> None:
        async with model:
            await model.generate("", [Message.user("q")], [], max_output_tokens=8)

    with pytest.raises(ModelError) as caught:
        asyncio.run(once())
    return caught.value


@pytest.mark.parametrize("backend", ["aiohttp", "httpx"])
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_refused_connection_says_refused_with_the_role_and_url(protocol: str, backend: str) -> None:
    stub = LLMStub().start()
    base = stub.openai_base_url if protocol == "openai" else stub.anthropic_base_url
    stub.stop()  # nothing listens there any more
    error = ask(
        {"name": f"{protocol}/m", "base_url": base, "max_retries": 0, "http_backend": backend},
        role="extractor",
    )
    assert error.kind == "connection"
    assert str(error).startswith(f"extractor model {protocol}/m at {base}: connection refused")
    assert "timed out" not in str(error)


@pytest.mark.parametrize("backend", ["aiohttp", "httpx"])
def test_tls_to_a_plain_http_server_says_tls(llm_stub: LLMStub, backend: str) -> None:
    base = llm_stub.openai_base_url.replace("http://", "https://")
    error = ask({"name": "openai/m", "base_url": base, "max_retries": 0, "http_backend": backend})
    assert error.kind == "connection" and f"at {base}: TLS handshake failed" in str(error)


def test_a_server_that_does_not_answer_in_time_says_timeout() -> None:
    with LLMStub() as stub:
        stub.push("openai", openai_reply(delay=1.0))
        error = ask({"name": "openai/m", "base_url": stub.openai_base_url, "max_retries": 0, "timeout": 0.2})
    assert error.kind == "timeout" and "no answer within 0.2 s" in str(error)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_an_http_error_gives_the_status_and_the_providers_message(llm_stub: LLMStub, protocol: str) -> None:
    llm_stub.push(protocol, error_reply(protocol, 404, "The model `m` does not exist"))
    base = llm_stub.openai_base_url if protocol == "openai" else llm_stub.anthropic_base_url
    error = ask({"name": f"{protocol}/m", "base_url": base, "max_retries": 0})
    assert error.status == 404
    assert str(error) == (
        f"agent model {protocol}/m at {base}: HTTP 404: The model `m` does not exist "
        "(check the model name and base_url)"
    )


def test_a_missing_key_names_the_role() -> None:
    from docab.models import ModelConfigError

    with pytest.raises(ModelConfigError, match=r"^the extractor model openai/gpt-4o needs an API key"):
        build_model("openai/gpt-4o", env={}, limits=ConcurrencyLimits(), role="extractor")


# -- the extractor follows [model] ----------------------------------------------------------------------


def extraction_config(model: Any, extractor: Any) -> Any:
    return parse_config(
        {
            "name": "x",
            "model": model,
            "answer": {"protocol": "extraction", "extractor": extractor},
            "arms": [{"name": "fs"}],
        }
    )


def test_an_extractor_without_an_endpoint_follows_the_run_models() -> None:
    local = {"name": "openai/qwen", "base_url": "http://127.0.0.1:8000/v1", "api_key_env": "LOCAL_KEY"}
    follows = extraction_config(local, {"name": "openai/gpt-4o", "temperature": 0.0}).extractor_model
    assert (follows.name, follows.base_url, follows.api_key_env) == (
        "openai/gpt-4o",
        "http://127.0.0.1:8000/v1",
        "LOCAL_KEY",
    )
    assert follows.temperature == 0.0  # its own options stay
    own = extraction_config(local, {"name": "openai/gpt-4o", "base_url": "https://api.openai.com/v1"})
    assert own.extractor_model.base_url == "https://api.openai.com/v1"  # configured otherwise: kept
    other = extraction_config(local, "anthropic/claude-sonnet-4-5").extractor_model
    assert other.base_url is None  # another provider cannot share an OpenAI-compatible endpoint
    assert extraction_config(local, None).extractor_model.base_url == "http://127.0.0.1:8000/v1"


# -- preflight: one cheap request per distinct endpoint -----------------------------------------------


def models_for(*configs: dict[str, Any]) -> list[Any]:
    limits = ConcurrencyLimits()
    env = {"K": "key", "OPENAI_API_KEY": "key"}
    return [
        build_model(c, env=env, limits=limits, role=r)
        for c, r in zip(configs, ("agent", "extractor"), strict=False)
    ]


def probe(models: list[Any]) -> list[str]:
    async def once() -> list[str]:
        try:
            return await check_endpoints(models)
        finally:
            for model in models:
                await model.aclose()

    return asyncio.run(once())


def test_one_probe_per_endpoint_and_a_model_the_server_does_not_list_is_noted() -> None:
    with LLMStub(models=["gpt-4o"]) as stub:
        base = stub.openai_base_url
        notes = probe(
            models_for({"name": "openai/qwen", "base_url": base}, {"name": "openai/gpt-4o", "base_url": base})
        )
        assert len(stub.model_list_requests()) == 1  # agent and extractor share the endpoint
        assert notes == [
            f"{base} does not list the agent model 'qwen' (it lists: gpt-4o); its calls may fail with "
            "HTTP 404: check the model name"
        ]
        with LLMStub() as other:  # an extractor of its own elsewhere: a second probe
            probe(
                models_for(
                    {"name": "openai/stub-model", "base_url": base},
                    {"name": "openai/stub-model", "base_url": other.openai_base_url},
                )
            )
            assert len(other.model_list_requests()) == 1
        assert len(stub.model_list_requests()) == 2


def test_a_server_without_a_model_list_is_up_and_anthropic_is_asked_in_its_format() -> None:
    with LLMStub() as stub:
        stub.models_reply = Reply(status=404, body=b"not found")
        notes = probe(models_for({"name": "openai/m", "base_url": stub.openai_base_url}))
        assert notes and "HTTP 404" in notes[0]
        stub.models_reply = None
        assert probe(models_for({"name": "anthropic/stub-model", "base_url": stub.anthropic_base_url})) == []
        assert "anthropic-version" in stub.model_list_requests()[-1].headers


@pytest.mark.parametrize(
    ("reply", "kind", "words"),
    [
        (error_reply("openai", 401, "Incorrect API key provided"), "auth", "Incorrect API key provided"),
        (error_reply("openai", 503, "no healthy upstream"), "server", "HTTP 503: no healthy upstream"),
    ],
)
def test_a_refused_key_or_a_failing_server_fails_the_probe(reply: Reply, kind: str, words: str) -> None:
    with LLMStub() as stub:
        stub.models_reply = reply
        with pytest.raises(ModelError) as caught:
            probe(models_for({"name": "openai/m", "base_url": stub.openai_base_url, "api_key_env": "K"}))
    assert caught.value.kind == kind and words in str(caught.value)
    assert str(caught.value).startswith(f"agent model openai/m at {stub.openai_base_url}:")


def test_describe_names_role_model_url_and_key_variable() -> None:
    (model,) = models_for({"name": "openai/m", "base_url": "http://h:1/v1", "api_key_env": "K"})
    assert describe(model) == "agent openai/m at http://h:1/v1 (key: $K)"
    (public,) = models_for({"name": "openai/m"})
    assert describe(public) == "agent openai/m at https://api.openai.com/v1 (key: $OPENAI_API_KEY)"


# -- end to end: only [model] base_url set --------------------------------------------------------------


def local_server_script(protocol: str, request: Request) -> Reply:
    """A local OpenAI-compatible server: the agent reads page 1 and answers in prose; the extractor
    (no tools, the benchmark's prompt) reduces that to the answer."""
    body = request.json()
    if not body.get("tools"):
        assert "Extracted answer" in json.dumps(body["messages"])
        return openai_reply("Extracted answer: 1980\nAnswer format: Integer", model=body["model"])
    if not any(m["role"] == "tool" for m in body["messages"]):
        args = json.dumps({"path": "document/document.md"})
        return openai_reply(None, tool_calls=[("c1", "read_file", args)])
    return openai_reply("It was founded in 1980, as page 1 says.")


CONFIG = """\
name = "local"
[dataset]
source = "mmlongbench"
path = "bench/data"
corpus = "bench/corpus"
[model]
name = "openai/stub-model"
base_url = "{base_url}"
[answer]
protocol = "extraction"
extractor = {{ name = "openai/gpt-4o", temperature = 0.0 }}
[[arms]]
name = "fs"
"""


def local_config(folder: Path, base_url: str) -> Path:
    write_benchmark_folder(folder / "bench", documents=2)
    path = folder / "local.toml"
    path.write_text(CONFIG.format(base_url=base_url))
    return path


def test_a_config_with_only_model_base_url_sends_agent_and_extractor_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server needs no key
    monkeypatch.chdir(tmp_path)  # relative paths are the config's: run from elsewhere
    with LLMStub(local_server_script, models=["stub-model", "gpt-4o"]) as stub:
        config = local_config(tmp_path / "configs", stub.openai_base_url)
        code = main(["run", str(config), "--results", str(tmp_path / "results"), "--limit", "2", "--quiet"])
        requests = stub.requests_for("openai")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    records = [
        json.loads(line)
        for line in (tmp_path / "results" / "local" / "records.jsonl").read_text().splitlines()
    ]
    assert len(records) == 2 and {r["status"] for r in records} == {"ok"}
    assert {u["role"] for r in records for u in r["usage"]} == {"agent", "extractor"}
    models = [r.json()["model"] for r in requests]
    assert "gpt-4o" in models and "stub-model" in models  # the extractor came here too
    assert len(stub.model_list_requests()) == 1  # one preflight for the one endpoint
    assert f"extractor openai/gpt-4o at {stub.openai_base_url}" in captured.out
    manifest = json.loads((tmp_path / "results" / "local" / "manifest.json").read_text())
    assert manifest["models"]["extractor_config"]["base_url"] == stub.openai_base_url


def test_with_the_server_stopped_docab_run_stops_before_the_first_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = LLMStub().start()
    base = stub.openai_base_url
    stub.stop()
    config = local_config(tmp_path, base)
    code = main(["run", str(config), "--results", str(tmp_path / "results"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"agent model openai/stub-model at {base}: connection refused" in err
    assert "no sample was run" in err
    assert not (tmp_path / "results" / "local" / "records.jsonl").exists()


def test_the_offline_baseline_needs_no_preflight(tmp_path: Path) -> None:
    config = parse_config({"name": "b", "model": "baseline/keyword", "arms": [{"name": "fs"}]})
    said: list[str] = []
    outcome = launch(
        RunRequest(config, results_dir=tmp_path, first=1),
        dataset=make_dataset(tmp_path / "corpus", documents=1),
        scorer=exact_scorer,
        progress=SilentProgress(),
        say=said.append,
    )
    assert outcome.ran == 1 and not any(line.startswith("models:") for line in said)


def test_the_library_raises_a_run_error_naming_the_endpoint(tmp_path: Path) -> None:
    stub = LLMStub().start()
    base = stub.anthropic_base_url
    stub.stop()
    config = parse_config(
        {"name": "a", "model": {"name": "anthropic/m", "base_url": base}, "arms": [{"name": "fs"}]}
    )
    with pytest.raises(RunError, match=re.escape(f"agent model anthropic/m at {base}: connection refused")):
        launch(
            RunRequest(config, results_dir=tmp_path),
            dataset=make_dataset(tmp_path / "corpus", documents=1),
            scorer=exact_scorer,
            progress=SilentProgress(),
            say=lambda s: None,
        )


def anthropic_server_script(protocol: str, request: Request) -> Reply:
    """The same local server in Anthropic's wire format (a proxy such as LiteLLM speaks it)."""
    from tests.support.llm_stub import anthropic_reply

    body = request.json()
    if not body.get("tools"):
        return anthropic_reply("Extracted answer: 1980\nAnswer format: Integer", model=body["model"])
    if len(body["messages"]) == 1:
        return anthropic_reply(None, tool_uses=[("t1", "read_file", {"path": "document/document.md"})])
    return anthropic_reply("It was founded in 1980, as page 1 says.")


def test_an_anthropic_endpoint_serves_agent_and_extractor_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with LLMStub(anthropic_server_script, models=["claude-local", "claude-extractor"]) as stub:
        config = local_config(tmp_path, stub.anthropic_base_url)
        text = config.read_text().replace("openai/stub-model", "anthropic/claude-local")
        config.write_text(text.replace('"openai/gpt-4o", temperature = 0.0', '"anthropic/claude-extractor"'))
        code = main(["run", str(config), "--results", str(tmp_path / "results"), "--first", "2", "--quiet"])
        models = [r.json()["model"] for r in stub.requests_for("anthropic")]
        probes = stub.model_list_requests()
    assert code == 0, capsys.readouterr().err
    assert {"claude-local", "claude-extractor"} <= set(models)
    assert len(probes) == 1 and "anthropic-version" in probes[0].headers
