"""Building models from config: names, options, keys, the baseline slot, and clear refusals."""

from __future__ import annotations

import sys
import types

import pytest

from docab.models import ModelConfig, ModelConfigError, build_model
from docab.models.anthropic_messages import AnthropicMessagesModel
from docab.models.base import Model
from docab.models.limits import ConcurrencyLimits
from docab.models.openai_chat import OpenAIChatModel
from docab.models.registry import LOCAL_SERVER_KEY, resolve_api_key


def test_openai_and_anthropic_names_build_their_clients() -> None:
    limits = ConcurrencyLimits()
    openai_model = build_model("openai/gpt-4o", env={"OPENAI_API_KEY": "sk-x"}, limits=limits)
    claude = build_model(
        {"name": "anthropic/claude-sonnet-4-5"}, env={"ANTHROPIC_API_KEY": "a"}, limits=limits
    )
    assert isinstance(openai_model, OpenAIChatModel) and isinstance(claude, AnthropicMessagesModel)
    assert isinstance(openai_model, Model) and isinstance(claude, Model)
    assert (openai_model.name, openai_model.is_baseline, openai_model.supports_images) == (
        "openai/gpt-4o",
        False,
        True,
    )
    assert openai_model.config.model_id == "gpt-4o"
    assert limits.size("openai default") == 16


def test_model_key_is_accepted_as_an_alias_for_name() -> None:
    assert ModelConfig.from_mapping({"model": "openai/m", "text_only": True}).text_only is True


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("gpt-4o", "provider/model"),
        ("openai/", "provider/model"),
        ("cohere/command-r", "unknown model provider 'cohere'"),
        ({"name": "openai/m", "temprature": 0}, "unknown model option(s) temprature"),
        ({"name": "openai/m", "api_key": "sk-secret"}, "environment variable"),
        ({"temperature": 0}, "needs a name"),
        ({"name": "openai/m", "temperature": 3}, "temperature must be between 0 and 2"),
        ({"name": "openai/m", "timeout": 0}, "timeout must be a positive"),
        ({"name": "openai/m", "concurrency": 0}, "concurrency must be a positive"),
        ({"name": "openai/m", "max_output_tokens": True}, "max_output_tokens must be a positive"),
        ({"name": "openai/m", "prompt_cache": True}, "prompt_cache applies to anthropic/"),
        ({"name": "openai/m", "thinking_budget": 2000}, "thinking_budget applies to anthropic/"),
        ({"name": "anthropic/m", "reasoning_effort": "low"}, "reasoning_effort applies to openai/"),
        ({"name": "openai/m", "reasoning_echo": "always"}, "reasoning_echo must be one of"),
        ({"name": "openai/m", "http_backend": "curl"}, "http_backend must be one of"),
        ({"name": "openai/m", "temperature": "hot"}, "invalid model config"),
        (42, "must be a table or a name"),
    ],
)
def test_bad_configs_are_refused_with_a_reason(spec: object, needle: str) -> None:
    with pytest.raises(ModelConfigError) as caught:
        ModelConfig.from_mapping(spec)  # type: ignore[arg-type]
    assert needle in str(caught.value)


def test_a_missing_key_names_the_variable_to_set() -> None:
    with pytest.raises(ModelConfigError, match=r"OPENAI_API_KEY is not set.*api_key_env"):
        build_model("openai/gpt-4o", env={})
    with pytest.raises(ModelConfigError, match="MY_KEY is not set"):
        build_model({"name": "anthropic/m", "api_key_env": "MY_KEY"}, env={"ANTHROPIC_API_KEY": "a"})


def test_local_servers_get_a_placeholder_key_unless_a_variable_is_named() -> None:
    local = ModelConfig(name="openai/qwen", base_url="http://localhost:11434/v1")
    assert resolve_api_key(local, {}) == LOCAL_SERVER_KEY
    assert resolve_api_key(local, {"OPENAI_API_KEY": "sk"}) == "sk"
    named = local.replace(api_key_env="OPENROUTER_API_KEY")
    assert resolve_api_key(named, {"OPENROUTER_API_KEY": "or"}) == "or"
    with pytest.raises(ModelConfigError, match="OPENROUTER_API_KEY"):
        resolve_api_key(named, {})


def test_manifest_form_holds_every_option_and_no_key() -> None:
    config = ModelConfig.from_mapping({"name": "openai/m", "extra_body": {"top_k": 5}})
    data = config.to_dict()
    assert data["name"] == "openai/m" and data["extra_body"] == {"top_k": 5}
    assert not any("key" in k and k != "api_key_env" for k in data)
    assert ModelConfig.from_mapping(data) == config


def test_with_options_keeps_the_endpoint_and_refuses_to_change_it() -> None:
    model = build_model(
        {"name": "openai/m", "temperature": 0.7}, env={"OPENAI_API_KEY": "k"}, limits=ConcurrencyLimits()
    )
    cold = model.with_options(temperature=0.0, max_retries=1)
    assert cold.config.temperature == 0.0 and model.config.temperature == 0.7
    assert cold._policy.max_retries == 1 and cold._client is model._client
    with pytest.raises(ValueError, match="base_url"):
        model.with_options(base_url="http://elsewhere/v1")


def test_baseline_is_reserved_and_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "docab.models.baseline", None)  # as if the module were absent
    with pytest.raises(
        ModelConfigError, match=r"offline baseline policy provided by docab\.models\.baseline"
    ):
        build_model("baseline/keyword", env={})


def test_baseline_is_built_by_its_module(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[ModelConfig] = []
    fake = types.ModuleType("docab.models.baseline")

    def build(config: ModelConfig) -> str:
        built.append(config)
        return "policy"

    fake.build = build  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "docab.models.baseline", fake)
    assert build_model("baseline/keyword", env={}) == "policy"
    assert built[0].model_id == "keyword"


def test_baseline_module_without_build_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "docab.models.baseline", types.ModuleType("docab.models.baseline"))
    with pytest.raises(ModelConfigError, match=r"does not provide build\(config\)"):
        build_model("baseline/keyword", env={})


@pytest.mark.parametrize("name", ["openai/gpt-4o", "anthropic/claude-sonnet-4-5"])
def test_http_backend_picks_the_sdks_transport(name: str) -> None:
    """aiohttp (the SDKs' recommended transport under concurrency) by default; httpx2 on request."""
    import httpx2

    env = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    auto = build_model({"name": name}, env=env, limits=ConcurrencyLimits())
    plain = build_model({"name": name, "http_backend": "httpx"}, env=env, limits=ConcurrencyLimits())
    auto_transport = type(auto._client._client._transport).__name__  # type: ignore[attr-defined]
    plain_transport = type(plain._client._client._transport).__name__  # type: ignore[attr-defined]
    assert "Aiohttp" in auto_transport
    assert plain_transport == httpx2.AsyncHTTPTransport.__name__
