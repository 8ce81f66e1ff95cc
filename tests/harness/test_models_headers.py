"""Custom headers (``headers = {...}`` in ``[model]``): sent by every route, secrets read from
``${VAR}`` when the model is built and never written into the config hash or the manifest."""

from __future__ import annotations

import json
from typing import Any

import pytest

from docab.config import parse_config
from docab.messages import Message
from docab.models import ModelConfig, ModelConfigError, build_model
from docab.models.clients import resolve_headers
from docab.models.headers import variables_of
from docab.models.limits import ConcurrencyLimits
from tests.harness.model_fakes import FakeClock, generate_once
from tests.support.llm_stub import LLMStub

HEADERS = {
    "X-Gateway-Token": "Bearer ${GATEWAY_TOKEN}",
    "OpenAI-Organization": "org-docab",
    "X-Price": "$$5 per ${UNIT}",
}
ENV = {"GATEWAY_TOKEN": "gw-secret-123", "UNIT": "call", "OPENAI_API_KEY": "sk", "ANTHROPIC_API_KEY": "a"}


@pytest.mark.parametrize(
    ("spec", "protocol"),
    [
        ({"name": "openai/m"}, "openai"),
        ({"name": "openai/m", "api": "responses"}, "responses"),
        ({"name": "anthropic/m"}, "anthropic"),
        ({"name": "openai/azure/dep", "api_version": "2024-10-21"}, "openai"),
        ({"name": "anthropic/bedrock/m", "region": "us-east-1"}, "anthropic"),
        (
            {"name": "anthropic/vertex/m", "region": "us-east5", "project": "p", "api_key_env": "T"},
            "anthropic",
        ),
    ],
)
def test_every_route_sends_the_headers_with_their_variables_filled_in(
    llm_stub: LLMStub, spec: dict[str, Any], protocol: str
) -> None:
    base = {"openai": llm_stub.openai_base_url, "responses": llm_stub.openai_base_url}.get(
        protocol, llm_stub.base
    )
    if "azure" in spec["name"]:
        base = llm_stub.base
    if "vertex" in spec["name"]:
        base = llm_stub.base + "/v1"
    env = {**ENV, "AZURE_OPENAI_API_KEY": "az", "AWS_BEARER_TOKEN_BEDROCK": "b", "T": "t"}
    model = build_model(
        {**spec, "base_url": base, "headers": HEADERS, "max_retries": 0},
        env=env,
        limits=ConcurrencyLimits(),
        clock=FakeClock(),
    )
    generate_once(model, "", [Message.user("q")])
    headers = llm_stub.requests_for(protocol)[-1].headers  # type: ignore[arg-type]
    assert headers["x-gateway-token"] == "Bearer gw-secret-123"
    assert headers["openai-organization"] == "org-docab" and headers["x-price"] == "$5 per call"


def test_the_manifest_and_the_config_hash_keep_the_template_not_the_secret() -> None:
    config = ModelConfig.from_mapping({"name": "openai/m", "headers": HEADERS})
    dumped = json.dumps(config.to_dict())
    assert "${GATEWAY_TOKEN}" in dumped and "gw-secret-123" not in dumped
    run = parse_config(
        {"name": "x", "model": {"name": "openai/m", "headers": HEADERS}, "arms": [{"name": "a"}]}
    )
    same = parse_config(
        {"name": "x", "model": {"name": "openai/m", "headers": HEADERS}, "arms": [{"name": "a"}]}
    )
    assert run.config_hash() == same.config_hash()  # whatever the variables hold
    plain = parse_config({"name": "x", "model": "openai/m", "arms": [{"name": "a"}]})
    assert "headers" not in plain.identity()["model"]  # options not used stay out of the hash
    # Headers are transport (issue 23): the manifest keeps them, the run's identity does not.
    assert "headers" not in run.identity()["model"] and run.config_hash() == plain.config_hash()
    assert run.model_dump(mode="json")["model"]["headers"] == HEADERS


def test_a_missing_variable_names_the_model_the_header_and_the_variable() -> None:
    with pytest.raises(ModelConfigError) as caught:
        build_model({"name": "openai/m", "headers": HEADERS}, env={"OPENAI_API_KEY": "sk"}, role="extractor")
    assert str(caught.value) == (
        "the extractor model openai/m sends the header X-Gateway-Token from ${GATEWAY_TOKEN}, and "
        "GATEWAY_TOKEN is not set: export GATEWAY_TOKEN=... or change headers in the model config"
    )
    with pytest.raises(ModelConfigError, match="holds a line break"):
        resolve_headers({"X-A": "${A}"}, {"A": "one\r\nX-Injected: two"}, who="m")


@pytest.mark.parametrize(
    ("headers", "words"),
    [
        ({"Authorization": "Bearer sk-live-123"}, "Authorization looks like it carries a secret"),
        ({"X-Api-Key": "abc"}, 'write X-Api-Key = "${VARIABLE}"'),
        ({"Bad Header": "x"}, "'Bad Header' is not a valid HTTP header name"),
        ({"X-A": "line\nbreak"}, "must be one line"),
        ({"X-A": "cost $5"}, "write a variable as ${NAME} and a literal $ as $$"),
        ({"X-A": "${1BAD}"}, "write a variable as ${NAME}"),
        ({f"X-{n}": "v" for n in range(33)}, "at most 32"),
    ],
)
def test_headers_that_cannot_be_sent_or_keep_a_secret_are_refused(
    headers: dict[str, str], words: str
) -> None:
    with pytest.raises(ModelConfigError) as caught:
        ModelConfig.from_mapping({"name": "openai/m", "headers": headers})
    assert words in str(caught.value)


def test_variables_of_a_value() -> None:
    assert variables_of("Bearer ${A} and ${B_2} and $$") == ["A", "B_2"]
    assert variables_of("plain") == []


def test_an_extractor_of_the_same_route_follows_the_run_models_platform_settings() -> None:
    def extractor_of(model: Any, extractor: Any) -> ModelConfig:
        config = parse_config(
            {
                "name": "x",
                "model": model,
                "answer": {"protocol": "extraction", "extractor": extractor},
                "arms": [{"name": "fs"}],
            }
        )
        return config.extractor_model

    bedrock = {"name": "anthropic/bedrock/agent-model", "region": "eu-west-3", "headers": {"X-Team": "docab"}}
    follows = extractor_of(bedrock, "anthropic/bedrock/extractor-model")
    assert (follows.region, follows.headers, follows.model_id) == (
        "eu-west-3",
        {"X-Team": "docab"},
        "extractor-model",
    )
    vertex = {"name": "anthropic/vertex/a", "region": "us-east5", "project": "p", "api_key_env": "T"}
    assert extractor_of(vertex, "anthropic/vertex/b").project == "p"
    azure = {
        "name": "openai/azure/agent",
        "base_url": "https://r.openai.azure.com",
        "api_version": "2024-10-21",
    }
    on_azure = extractor_of(azure, "openai/azure/extractor")
    assert (on_azure.base_url, on_azure.api_version) == ("https://r.openai.azure.com", "2024-10-21")
    public = extractor_of(azure, "openai/gpt-4o")  # another route: configured otherwise, kept
    assert (public.base_url, public.api_version) == (None, None)
    assert extractor_of(bedrock, "anthropic/claude-x").region is None
