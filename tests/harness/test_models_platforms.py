"""Claude on Amazon Bedrock and Google Vertex AI through the anthropic SDK's own clients
(``AsyncAnthropicBedrock``, ``AsyncAnthropicVertex``) against the loopback stub, with fake
credentials and no network: paths, signatures and tokens, the body, the parsed turn and usage;
the optional dependencies they need; preflight and credential errors."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from docab.messages import Message, Text, ToolResult, ToolSpec
from docab.models import ModelConfig, ModelConfigError, ModelError, build_model
from docab.models.anthropic_messages import AnthropicMessagesModel
from docab.models.extras import BEDROCK_SIGNING, VERTEX_CREDENTIALS, missing_modules, require
from docab.models.limits import ConcurrencyLimits
from docab.models.preflight import check_endpoints, describe
from tests.harness.model_fakes import FakeClock, generate_once
from tests.support.http_server import Request
from tests.support.llm_stub import LLMStub, anthropic_reply, error_reply

REPO = Path(__file__).resolve().parents[2]
READ = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
BEDROCK_ID = "anthropic.claude-sonnet-4-5-20250929-v1:0"
AWS = {
    "AWS_ACCESS_KEY_ID": "AKIAFAKEFAKEFAKE",
    "AWS_SECRET_ACCESS_KEY": "fake/secret",
    "AWS_SESSION_TOKEN": "fake-session",
}


def build(spec: dict[str, Any], env: dict[str, str], role: str = "agent") -> Any:
    return build_model(
        {"max_retries": 0, **spec}, env=env, limits=ConcurrencyLimits(), clock=FakeClock(), role=role
    )


def bedrock(stub: LLMStub, env: dict[str, str] = AWS, **options: Any) -> Any:
    return build(
        {"name": f"anthropic/bedrock/{BEDROCK_ID}", "base_url": stub.base, "region": "eu-west-3", **options},
        env,
    )


def vertex(stub: LLMStub, **options: Any) -> Any:
    spec = {
        "name": "anthropic/vertex/claude-sonnet-4-5@20250929",
        "base_url": stub.base + "/v1",  # the SDK's default has the /v1 too
        "region": "us-east5",
        "project": "docab-test",
        "api_key_env": "VERTEX_TOKEN",
        **options,
    }
    return build(spec, {"VERTEX_TOKEN": "ya29.fake-token"})


def tool_loop(model: Any) -> list[Any]:
    async def loop() -> list[Any]:
        async with model:
            history = [Message.user("Read a.md")]
            first = await model.generate("Be brief.", history, [READ], max_output_tokens=64)
            history += [first.message(), Message.tool("t1", ToolResult(blocks=(Text("contents"),)))]
            return [first, await model.generate("Be brief.", history, [READ], max_output_tokens=64)]

    return asyncio.run(loop())


def sigv4_signature_holds(request: Request, base: str, env: dict[str, str], region: str) -> bool:
    """Recompute the SigV4 signature of the request as received, with the fake secret: the
    signature covers the method, path, signed headers and the exact body bytes."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    authorization = request.headers["authorization"]
    signed = authorization.split("SignedHeaders=", 1)[1].split(",", 1)[0].split(";")
    again = AWSRequest(
        method=request.method,
        url=base + request.path,
        headers={name: request.headers[name] for name in signed},
        data=request.body,
    )
    again.context["timestamp"] = request.headers["x-amz-date"]
    credentials = Credentials(
        env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env.get("AWS_SESSION_TOKEN")
    )
    signer = SigV4Auth(credentials, "bedrock", region)
    signature = signer.signature(signer.string_to_sign(again, signer.canonical_request(again)), again)
    return authorization.endswith(f"Signature={signature}")


# -- Amazon Bedrock ------------------------------------------------------------------------------------


def test_bedrock_signs_with_sigv4_and_sends_the_messages_body(llm_stub: LLMStub) -> None:
    pytest.importorskip("botocore", reason="SigV4 signing needs botocore (docab[bedrock]; a dev dependency)")
    llm_stub.push(
        "anthropic",
        anthropic_reply(
            None, tool_uses=[("t1", "read", {"path": "a.md"})], input_tokens=30, cache_read_input_tokens=500
        ),
        anthropic_reply("Done."),
    )
    model = bedrock(llm_stub, prompt_cache=True)
    assert isinstance(model, AnthropicMessagesModel)
    first, second = tool_loop(model)
    request = llm_stub.requests_for("anthropic")[0]
    assert request.path == f"/model/{BEDROCK_ID}/invoke"  # the model is in the path, not the body
    authorization = request.headers["authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIAFAKEFAKEFAKE/")
    assert "/eu-west-3/bedrock/aws4_request" in authorization
    assert request.headers["x-amz-security-token"] == "fake-session"
    assert sigv4_signature_holds(request, llm_stub.base, AWS, "eu-west-3")
    body = request.json()
    assert "model" not in body and body["anthropic_version"] == "bedrock-2023-05-31"
    assert body["max_tokens"] == 64 and body["system"][0]["text"] == "Be brief."
    assert body["tools"][0]["name"] == "read" and body["tools"][0]["cache_control"] == {"type": "ephemeral"}
    assert [c.name for c in first.tool_calls] == ["read"] and second.text == "Done."
    assert (first.usage.input_uncached, first.usage.cache_read, first.usage.input_total) == (30, 500, 530)
    assert first.usage.model == f"anthropic/bedrock/{BEDROCK_ID}"
    results = llm_stub.requests_for("anthropic")[1].json()["messages"][-1]["content"]
    assert results[0]["type"] == "tool_result" and results[0]["tool_use_id"] == "t1"
    assert (
        describe(model)
        == f"agent anthropic/bedrock/{BEDROCK_ID} at {llm_stub.base} (AWS credentials: $AWS_ACCESS_KEY_ID)"
    )


def test_a_tampered_body_would_not_match_the_signature(llm_stub: LLMStub) -> None:
    pytest.importorskip("botocore", reason="SigV4 signing needs botocore (docab[bedrock]; a dev dependency)")
    generate_once(bedrock(llm_stub), "", [Message.user("q")])
    request = llm_stub.requests_for("anthropic")[-1]
    request.body = request.body.replace(b'"q"', b'"Q"')
    assert not sigv4_signature_holds(request, llm_stub.base, AWS, "eu-west-3")


def test_a_bedrock_api_key_is_a_bearer_token_and_needs_no_signing(llm_stub: LLMStub) -> None:
    model = bedrock(
        llm_stub, env={"AWS_BEARER_TOKEN_BEDROCK": "bedrock-api-key", "AWS_REGION": "us-west-2"}, region=None
    )
    turn = generate_once(model, "", [Message.user("q")])
    request = llm_stub.requests_for("anthropic")[-1]
    assert (
        request.headers["authorization"] == "Bearer bedrock-api-key" and "x-amz-date" not in request.headers
    )
    assert turn.text == "stub answer" and model.config.endpoint == f"anthropic/bedrock {llm_stub.base}"
    assert describe(model).endswith("(Bedrock API key: $AWS_BEARER_TOKEN_BEDROCK)")  # type: ignore[union-attr]


def test_without_a_base_url_bedrock_goes_to_the_regions_runtime_host() -> None:
    model = build(
        {"name": f"anthropic/bedrock/{BEDROCK_ID}"},
        {"AWS_BEARER_TOKEN_BEDROCK": "k", "AWS_DEFAULT_REGION": "ap-south-1"},
    )
    assert model.url == "https://bedrock-runtime.ap-south-1.amazonaws.com"


def test_credentials_that_cannot_be_found_fail_the_preflight_and_the_call(llm_stub: LLMStub) -> None:
    pytest.importorskip("boto3", reason="SigV4 signing needs boto3 (docab[bedrock]; a dev dependency)")
    # A profile that does not exist: boto3 says so while signing, before anything is sent.
    model = bedrock(llm_stub, env={"AWS_PROFILE": "docab-no-such-profile"})
    assert describe(model).endswith("(AWS profile docab-no-such-profile)")  # type: ignore[union-attr]

    async def preflight() -> None:
        async with model:
            await check_endpoints([model])

    with pytest.raises(ModelError) as caught:
        asyncio.run(preflight())
    message = str(caught.value)
    assert caught.value.kind == "auth" and message.startswith(
        f"agent model anthropic/bedrock/{BEDROCK_ID} at {llm_stub.base}: "
    )
    assert (
        "the credentials could not be obtained (The config profile (docab-no-such-profile) could not be found)"
        in message
    )
    assert "check the AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE" in message
    with pytest.raises(ModelError) as caught:
        generate_once(
            bedrock(llm_stub, env={"AWS_PROFILE": "docab-no-such-profile"}), "", [Message.user("q")]
        )
    assert caught.value.kind == "auth" and caught.value.retries == 0 and not llm_stub.requests


def test_the_bedrock_preflight_reaches_the_host_and_says_what_it_cannot_check() -> None:
    with LLMStub() as stub:
        model = bedrock(stub, env={"AWS_BEARER_TOKEN_BEDROCK": "k"})

        async def preflight(model: Any) -> list[str]:
            async with model:
                return await check_endpoints([model])

        (note,) = asyncio.run(preflight(model))
        assert note == (
            f"{stub.base} is reachable and the agent model's credentials were found (Bedrock API key: "
            "$AWS_BEARER_TOKEN_BEDROCK); bedrock has no free request that checks them, so the first call does"
        )
        assert not stub.requests_for("anthropic")  # no tokens spent
        stopped = bedrock(stub, env={"AWS_BEARER_TOKEN_BEDROCK": "k"})
    with pytest.raises(ModelError) as caught:
        asyncio.run(preflight(stopped))
    assert str(caught.value).startswith(
        f"agent model anthropic/bedrock/{BEDROCK_ID} at {stub.base}: connection refused"
    )


def test_a_refused_bedrock_call_says_what_to_check(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "anthropic", error_reply("anthropic", 403, "The security token included in the request is invalid.")
    )
    with pytest.raises(ModelError) as caught:
        generate_once(bedrock(llm_stub, env={"AWS_BEARER_TOKEN_BEDROCK": "k"}), "", [Message.user("q")])
    assert str(caught.value).endswith(
        "HTTP 403 (credentials refused): The security token included in the request is invalid.; check the "
        "Bedrock API key in AWS_BEARER_TOKEN_BEDROCK (the variable named by api_key_env in the model config)"
    )


# -- Google Vertex AI ------------------------------------------------------------------------------------


def test_vertex_sends_the_token_to_the_projects_model_path(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "anthropic",
        anthropic_reply(None, tool_uses=[("t1", "read", {"path": "a.md"})], cache_creation_input_tokens=200),
        anthropic_reply("Done."),
    )
    model = vertex(llm_stub, thinking_budget=1024)
    first, second = tool_loop(model)
    request = llm_stub.requests_for("anthropic")[0]
    assert request.path == (
        "/v1/projects/docab-test/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
    )
    assert request.headers["authorization"] == "Bearer ya29.fake-token"
    body = request.json()
    assert "model" not in body and body["anthropic_version"] == "vertex-2023-10-16"
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024} and body["max_tokens"] == 64 + 1024
    assert [c.name for c in first.tool_calls] == ["read"] and second.text == "Done."
    assert (first.usage.cache_write, first.usage.input_total) == (200, 210)
    assert (
        describe(model)
        == f"agent anthropic/vertex/claude-sonnet-4-5@20250929 at {llm_stub.base}/v1 (token: $VERTEX_TOKEN)"
    )


def test_vertex_region_and_project_come_from_the_environment(llm_stub: LLMStub) -> None:
    env = {"CLOUD_ML_REGION": "europe-west1", "ANTHROPIC_VERTEX_PROJECT_ID": "p-env", "TOKEN": "t"}
    model = build(
        {"name": "anthropic/vertex/claude-x", "base_url": llm_stub.base + "/v1", "api_key_env": "TOKEN"}, env
    )
    generate_once(model, "", [Message.user("q")])
    assert "/projects/p-env/locations/europe-west1/" in llm_stub.requests_for("anthropic")[-1].path


@pytest.mark.parametrize(
    ("spec", "env", "words"),
    [
        (
            {"name": "anthropic/bedrock/m"},
            {"AWS_BEARER_TOKEN_BEDROCK": "k"},
            'needs an AWS region: set region = "us-east-1" in the model config or export AWS_REGION or export AWS_DEFAULT_REGION',
        ),
        (
            {"name": "anthropic/bedrock/m", "region": "us-east-1", "api_key_env": "MY_BEDROCK_KEY"},
            {},
            "needs the Bedrock API key in MY_BEDROCK_KEY, which is not set",
        ),
        (
            {"name": "anthropic/bedrock/m", "region": "us-east-1"},
            {"AWS_ACCESS_KEY_ID": "AKIA"},
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together",
        ),
        ({"name": "anthropic/vertex/m", "project": "p"}, {}, "needs a Vertex AI region"),
        ({"name": "anthropic/vertex/m", "region": "us-east5"}, {}, "needs a Google Cloud project"),
        (
            {"name": "anthropic/vertex/m", "region": "global", "project": "p", "api_key_env": "T"},
            {},
            "needs an access token in T, which is not set",
        ),
    ],
)
def test_what_a_platform_needs_is_named_when_missing(
    spec: dict[str, Any], env: dict[str, str], words: str
) -> None:
    with pytest.raises(ModelConfigError) as caught:
        build(spec, env, role="extractor")
    assert str(caught.value).startswith(f"the extractor model {spec['name']}")
    assert words in str(caught.value)


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("anthropic/bedrock/", "names the platform 'bedrock' but no model"),
        (
            {"name": "anthropic/m", "region": "us-east-1"},
            "region applies to anthropic/bedrock/ and anthropic/vertex/",
        ),
        ({"name": "anthropic/bedrock/m", "project": "p"}, "project applies to anthropic/vertex/"),
        ({"name": "anthropic/vertex/m", "region": " "}, "region must not be empty"),
        (
            {"name": "anthropic/bedrock/m", "temperature": 0},
            "temperature cannot be set for anthropic/ models",
        ),
    ],
)
def test_platform_options_are_checked(spec: Any, words: str) -> None:
    with pytest.raises(ModelConfigError) as caught:
        ModelConfig.from_mapping(spec)
    assert words in str(caught.value)


# -- optional dependencies ----------------------------------------------------------------------------


def test_a_missing_extra_is_one_line_naming_what_to_install() -> None:
    def absent(name: str) -> None:
        return None

    assert missing_modules(("json", "docab_no_such_module", "no_such_package.sub")) == [
        "docab_no_such_module",
        "no_such_package.sub",
    ]
    with pytest.raises(ModelConfigError) as caught:
        require(
            BEDROCK_SIGNING, who="the agent model anthropic/bedrock/m", otherwise="use a key", find=absent
        )
    assert str(caught.value) == (
        "the agent model anthropic/bedrock/m needs boto3 and botocore to sign Amazon Bedrock requests with "
        "AWS credentials (SigV4): pip install 'docab[bedrock]' (in a checkout: uv sync --extra bedrock), or use a key"
    )
    with pytest.raises(
        ModelConfigError, match=r"needs google-auth to find Google Application Default Credentials"
    ):
        require(VERTEX_CREDENTIALS, who="m", otherwise="x", find=absent)


BLOCKED = """
import sys
for name in ("boto3", "botocore", "google.auth", "google"):
    sys.modules[name] = None  # as if docab were installed without its extras
from docab.models import build_model
from docab.models.config import ModelConfigError
for spec, env in [
    ({"name": "anthropic/bedrock/m", "region": "us-east-1"}, {"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}),
    ({"name": "anthropic/bedrock/m", "region": "us-east-1"}, {"AWS_BEARER_TOKEN_BEDROCK": "k"}),
    ({"name": "anthropic/vertex/m", "region": "us-east5", "project": "p"}, {}),
    ({"name": "anthropic/vertex/m", "region": "us-east5", "project": "p", "api_key_env": "T"}, {"T": "t"}),
]:
    try:
        build_model(spec, env=env)
        print("built")
    except ModelConfigError as exc:
        print(exc)
"""


def test_without_the_extras_only_the_routes_that_need_them_are_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED], capture_output=True, text=True, cwd=REPO, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "the agent model anthropic/bedrock/m needs boto3 and botocore to sign Amazon Bedrock requests with AWS "
        "credentials (SigV4): pip install 'docab[bedrock]' (in a checkout: uv sync --extra bedrock), or set "
        "AWS_BEARER_TOKEN_BEDROCK to a Bedrock API key, which needs neither"
    )
    assert lines[1] == "built"  # a Bedrock API key needs no AWS library
    assert lines[2].startswith(
        "the agent model anthropic/vertex/m needs google-auth to find Google Application"
    )
    assert lines[2].endswith(
        "or name a variable holding an access token with api_key_env (gcloud auth print-access-token)"
    )
    assert lines[3] == "built"


def test_the_default_install_requires_neither_extra() -> None:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    required = " ".join(project["dependencies"]).lower()
    assert "boto" not in required and "google-auth" not in required and "bedrock" not in required
    extras = project["optional-dependencies"]
    assert any("anthropic[bedrock]" in r for r in extras["bedrock"])
    assert any("anthropic[vertex]" in r for r in extras["vertex"])


def test_credential_failures_of_each_library_are_recognised_down_the_chain() -> None:
    from docab.models.causes import credential_failure

    def raised(module: str, name: str, text: str, base: type[Exception] = Exception) -> Exception:
        kind = type(name, (base,), {"__module__": module})
        return kind(text)

    google = raised(
        "google.auth.exceptions", "DefaultCredentialsError", "Your default credentials were not found."
    )
    wrapped = RuntimeError("signing failed")
    wrapped.__cause__ = google
    for exc, words in [
        (
            raised("botocore.exceptions", "NoCredentialsError", "Unable to locate credentials"),
            "Unable to locate",
        ),
        (wrapped, "Your default credentials were not found."),
        (RuntimeError("Could not resolve AWS credentials from session"), "Could not resolve AWS credentials"),
        (
            raised(
                "anthropic.lib._extras._common",
                "MissingDependencyError",
                "missing required dependency `google-auth`",
            ),
            "missing required dependency",
        ),
    ]:
        failure = credential_failure(exc, hint="the Google credentials")
        assert (
            failure is not None
            and failure.kind == "auth"
            and not failure.retryable
            and failure.status is None
        )
        assert words in failure.message and failure.message.endswith("; check the Google credentials")
    assert credential_failure(RuntimeError("something else"), hint="x") is None
    assert credential_failure(ConnectionRefusedError(), hint="x") is None
