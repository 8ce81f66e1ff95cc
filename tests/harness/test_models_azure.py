"""``openai/azure/<deployment>``: Azure OpenAI through the SDK's ``AsyncAzureOpenAI`` against the
loopback stub: deployment path, API version, ``api-key`` header, body, parsed turn and usage;
endpoint, version and key from the environment; preflight and errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from docab.messages import Message, Text, ToolResult, ToolSpec
from docab.models import ModelConfig, ModelConfigError, ModelError, build_model
from docab.models.limits import ConcurrencyLimits
from docab.models.openai_chat import OpenAIChatModel
from docab.models.preflight import check_endpoints, describe
from tests.harness.model_fakes import FakeClock, generate_once
from tests.support.llm_stub import LLMStub, error_reply, openai_reply

READ = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
KEY = {"AZURE_OPENAI_API_KEY": "azure-key"}


def azure(stub: LLMStub, env: dict[str, str] | None = None, **options: Any) -> Any:
    config = {
        "name": "openai/azure/gpt4o-prod",
        "base_url": stub.base,  # the resource endpoint, https://<resource>.openai.azure.com
        "api_version": "2024-10-21",
        "max_retries": 0,
        **options,
    }
    return build_model(config, env=KEY if env is None else env, limits=ConcurrencyLimits(), clock=FakeClock())


def test_chat_goes_to_the_deployment_with_the_api_version_and_key(llm_stub: LLMStub) -> None:
    llm_stub.push(
        "openai",
        openai_reply(
            None, tool_calls=[("c1", "read", '{"path": "a.md"}')], prompt_tokens=120, cached_tokens=100
        ),
        openai_reply("Done.", completion_tokens=7),
    )
    model = azure(llm_stub, temperature=0)
    assert isinstance(model, OpenAIChatModel) and model.config.model_id == "gpt4o-prod"

    async def loop() -> list[Any]:
        async with model:
            history = [Message.user("Read a.md")]
            first = await model.generate("sys", history, [READ], max_output_tokens=64)
            history += [first.message(), Message.tool("c1", ToolResult(blocks=(Text("contents"),)))]
            return [first, await model.generate("sys", history, [READ], max_output_tokens=64)]

    first, second = asyncio.run(loop())
    request = llm_stub.requests_for("openai")[0]
    assert request.method == "POST" and request.path == "/openai/deployments/gpt4o-prod/chat/completions"
    assert request.query == {"api-version": ["2024-10-21"]}
    assert request.headers["api-key"] == "azure-key" and "authorization" not in request.headers
    body = request.json()
    assert body["model"] == "gpt4o-prod" and body["temperature"] == 0
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body  # Azure takes the new name
    assert [c.name for c in first.tool_calls] == ["read"] and second.text == "Done."
    assert (first.usage.input_uncached, first.usage.cache_read, first.usage.model) == (
        20,
        100,
        "openai/azure/gpt4o-prod",
    )
    assert llm_stub.requests_for("openai")[1].json()["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "contents",
    }
    assert model.url == f"{llm_stub.base}/openai"


def test_endpoint_version_and_key_come_from_the_environment(llm_stub: LLMStub) -> None:
    env = {
        "AZURE_OPENAI_ENDPOINT": llm_stub.base,
        "OPENAI_API_VERSION": "2025-04-01-preview",
        "TEAM_AZURE_KEY": "team-key",
    }
    model = build_model(
        {"name": "openai/azure/dep", "api_key_env": "TEAM_AZURE_KEY", "max_retries": 0},
        env=env,
        limits=ConcurrencyLimits(),
    )
    generate_once(model, "", [Message.user("q")])
    request = llm_stub.requests_for("openai")[-1]
    assert (
        request.query == {"api-version": ["2025-04-01-preview"]} and request.headers["api-key"] == "team-key"
    )
    assert describe(model) == f"agent openai/azure/dep at {llm_stub.base}/openai (key: $TEAM_AZURE_KEY)"


def test_an_entra_id_token_is_sent_as_a_bearer_token(llm_stub: LLMStub) -> None:
    model = azure(llm_stub, env={"AZURE_OPENAI_AD_TOKEN": "eyJ-entra"})
    generate_once(model, "", [Message.user("q")])
    request = llm_stub.requests_for("openai")[-1]
    assert request.headers["authorization"] == "Bearer eyJ-entra" and "api-key" not in request.headers
    assert describe(model).endswith("(Entra ID token: $AZURE_OPENAI_AD_TOKEN)")  # type: ignore[union-attr]


def test_the_responses_api_on_azure(llm_stub: LLMStub) -> None:
    model = azure(llm_stub, api="responses", api_version="2025-03-01-preview")
    turn = generate_once(model, "sys", [Message.user("q")])
    request = llm_stub.requests_for("responses")[-1]
    assert request.path == "/openai/responses" and request.query == {"api-version": ["2025-03-01-preview"]}
    assert request.json()["model"] == "gpt4o-prod" and turn.text == "stub answer"


@pytest.mark.parametrize(
    ("spec", "env", "words"),
    [
        (
            {"name": "openai/azure/dep", "api_version": "2024-10-21"},
            KEY,
            'needs its Azure OpenAI endpoint: set base_url = "https://<resource>.openai.azure.com" in the '
            "model config or export AZURE_OPENAI_ENDPOINT",
        ),
        (
            {"name": "openai/azure/dep", "base_url": "https://r.openai.azure.com"},
            KEY,
            'needs an Azure OpenAI API version: set api_version = "2024-10-21" in the model config or '
            "export OPENAI_API_VERSION",
        ),
        (
            {"name": "openai/azure/dep", "base_url": "https://r.openai.azure.com", "api_version": "v"},
            {},
            "the environment variable AZURE_OPENAI_API_KEY is not set (or AZURE_OPENAI_AD_TOKEN",
        ),
    ],
)
def test_what_azure_needs_is_named_when_missing(
    spec: dict[str, Any], env: dict[str, str], words: str
) -> None:
    with pytest.raises(ModelConfigError) as caught:
        build_model(spec, env=env, limits=ConcurrencyLimits(), role="extractor")
    assert str(caught.value).startswith("the extractor model openai/azure/dep needs")
    assert words in str(caught.value)


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("openai/azure/", "names the platform 'azure' but no model: write openai/azure/<model>"),
        ("openai/azure", "names the platform 'azure' but no model"),
        ({"name": "openai/gpt-4o", "api_version": "2024-10-21"}, "api_version applies to openai/azure/"),
        ({"name": "openai/azure/d", "region": "eastus"}, "region applies to anthropic/bedrock/ and"),
    ],
)
def test_azure_options_are_checked(spec: Any, words: str) -> None:
    with pytest.raises(ModelConfigError) as caught:
        ModelConfig.from_mapping(spec)
    assert words in str(caught.value)


def test_a_vllm_model_whose_id_has_slashes_is_not_a_platform() -> None:
    config = ModelConfig.from_mapping("openai/Qwen/Qwen2.5-VL-7B-Instruct")
    assert (config.route, config.model_id, config.platform) == ("openai", "Qwen/Qwen2.5-VL-7B-Instruct", None)


def test_the_preflight_lists_models_and_does_not_mistake_a_deployment_for_a_model(llm_stub: LLMStub) -> None:
    model = azure(llm_stub)

    async def once() -> list[str]:
        async with model:
            return await check_endpoints([model])

    assert asyncio.run(once()) == []  # "gpt4o-prod" is a deployment: not compared with the model list
    (probe,) = llm_stub.model_list_requests()
    assert probe.path == "/openai/models" and probe.query == {"api-version": ["2024-10-21"]}
    assert probe.headers["api-key"] == "azure-key"


def test_a_refused_key_and_a_stopped_endpoint_name_the_role_url_and_cause() -> None:
    with LLMStub() as stub:
        stub.push("openai", error_reply("openai", 401, "Access denied due to invalid subscription key"))
        with pytest.raises(ModelError) as caught:
            generate_once(azure(stub), "", [Message.user("q")])
        assert str(caught.value) == (
            f"agent model openai/azure/gpt4o-prod at {stub.base}/openai: HTTP 401 (credentials refused): "
            "Access denied due to invalid subscription key; check the key in AZURE_OPENAI_API_KEY (the "
            "variable named by api_key_env in the model config)"
        )
        stopped = azure(stub)
    with pytest.raises(ModelError) as caught:

        async def once() -> None:
            async with stopped:
                await check_endpoints([stopped])

        asyncio.run(once())
    assert str(caught.value).startswith(
        f"agent model openai/azure/gpt4o-prod at {stub.base}/openai: connection refused"
    )
