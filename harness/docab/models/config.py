"""The model configuration: one schema for every provider, read from a run config's TOML table.

    [model]
    name = "openai/gpt-4o"          # provider/model: openai/..., anthropic/..., baseline/keyword
    temperature = 0
    max_output_tokens = 1024
    # base_url = "http://localhost:8000/v1"   # any OpenAI-compatible server: vLLM, Ollama, llama.cpp
    # api_key_env = "OPENROUTER_API_KEY"      # the environment variable holding the key
    # text_only = true                        # strip images, say where they were
    # concurrency = 16                        # requests in flight at this endpoint, all models together

Keys are never part of a config (configs are hashed into the run manifest and shared); a config
names the environment variable that holds the key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

PROVIDERS = ("openai", "anthropic", "baseline")
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}

ReasoningEcho = Literal["tool_turns", "all", "none"]
MaxTokensParam = Literal["auto", "max_tokens", "max_completion_tokens"]
HttpBackend = Literal["auto", "aiohttp", "httpx"]


class ModelConfigError(ValueError):
    """A model configuration that cannot work; the message says which key and what to do."""


@dataclass(frozen=True)
class ModelConfig:
    name: str
    base_url: str | None = None
    api_key_env: str | None = None  # default: OPENAI_API_KEY / ANTHROPIC_API_KEY
    temperature: float | None = (
        None  # None: the provider's default (reasoning models and Anthropic accept no other)
    )
    max_output_tokens: int | None = None  # caps what the agent loop asks for per call
    text_only: bool = False
    concurrency: int | None = None  # None: the endpoint's existing limit, or 16
    timeout: float = 120.0  # seconds per attempt
    max_retries: int = 4
    retry_base_delay: float = 1.0
    retry_max_delay: float = 30.0
    retry_after_cap: float = 60.0
    # The SDKs' HTTP transport. "auto": aiohttp when installed (docab depends on it), else
    # the SDK's default httpx2 pool, whose request assignment scans every connection and costs
    # about 1 ms of CPU per request at 64 in flight.
    http_backend: HttpBackend = "auto"
    # OpenAI Chat Completions (and compatible servers)
    reasoning_effort: str | None = None
    reasoning_echo: ReasoningEcho = "tool_turns"
    max_tokens_param: MaxTokensParam = "auto"
    image_detail: str | None = None  # "low" | "high" | "auto"; None sends none
    # Anthropic Messages
    prompt_cache: bool = False
    thinking_budget: int | None = None
    # Passed through as the request body's extra fields (vendor options such as vLLM's).
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    @property
    def provider(self) -> str:
        return self.name.partition("/")[0]

    @property
    def model_id(self) -> str:
        return self.name.partition("/")[2]

    @property
    def endpoint(self) -> str:
        """Which concurrency pool this model draws from: its provider and base URL."""
        return f"{self.provider} {self.base_url or 'default'}"

    def __post_init__(self) -> None:
        provider, slash, model_id = self.name.partition("/")
        if not slash or not model_id.strip():
            raise ModelConfigError(
                f"model name {self.name!r} must look like provider/model, e.g. openai/gpt-4o, "
                "anthropic/claude-sonnet-4-5 or baseline/keyword"
            )
        if provider not in PROVIDERS:
            raise ModelConfigError(
                f"unknown model provider {provider!r} in {self.name!r}; known: {', '.join(PROVIDERS)}"
                " (use openai/<model> with base_url for any OpenAI-compatible server)"
            )
        _check_range("temperature", self.temperature, 0.0, 2.0)
        _check_positive("max_output_tokens", self.max_output_tokens)
        _check_positive("concurrency", self.concurrency)
        _check_positive("thinking_budget", self.thinking_budget)
        if self.timeout <= 0:
            raise ModelConfigError(f"timeout must be a positive number of seconds, got {self.timeout}")
        _check_range("max_retries", self.max_retries, 0, 20)
        for key in ("retry_base_delay", "retry_max_delay", "retry_after_cap"):
            if getattr(self, key) < 0:
                raise ModelConfigError(f"{key} must not be negative")
        if self.reasoning_echo not in ("tool_turns", "all", "none"):
            raise ModelConfigError("reasoning_echo must be one of tool_turns, all, none")
        if self.http_backend not in ("auto", "aiohttp", "httpx"):
            raise ModelConfigError("http_backend must be one of auto, aiohttp, httpx")
        if self.max_tokens_param not in ("auto", "max_tokens", "max_completion_tokens"):
            raise ModelConfigError("max_tokens_param must be one of auto, max_tokens, max_completion_tokens")
        if self.provider != "anthropic":
            if self.prompt_cache:
                raise ModelConfigError(
                    "prompt_cache applies to anthropic/ models; OpenAI caches long prompts automatically"
                )
            if self.thinking_budget is not None:
                raise ModelConfigError(
                    "thinking_budget applies to anthropic/ models; for OpenAI-compatible reasoning "
                    "models use reasoning_effort"
                )
        if self.provider == "anthropic" and self.reasoning_effort is not None:
            raise ModelConfigError("reasoning_effort applies to openai/ models; use thinking_budget")
        if self.provider == "anthropic" and self.temperature is not None:
            # API version 2026-10-21 (the anthropic SDK 2.x default) answers 400 to any sampling
            # parameter, even temperature = 1; the SDK no longer has the argument.
            raise ModelConfigError(
                "temperature cannot be set for anthropic/ models: the current Messages API rejects "
                "sampling parameters; leave it out"
            )
        if not isinstance(self.extra_body, Mapping):
            raise ModelConfigError("extra_body must be a table of extra request fields")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | str) -> ModelConfig:
        """Build from a TOML table (or a bare ``provider/model`` string); unknown keys are errors."""
        if isinstance(data, str):
            return cls(name=data)
        if not isinstance(data, Mapping):
            raise ModelConfigError(f"a model config must be a table or a name, got {type(data).__name__}")
        values = dict(data)
        if "model" in values and "name" not in values:
            values["name"] = values.pop("model")
        if "api_key" in values:
            raise ModelConfigError(
                "api_key does not belong in a config (configs are copied into the run manifest); "
                "put the key in an environment variable and name it with api_key_env"
            )
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ModelConfigError(
                f"unknown model option(s) {', '.join(unknown)}; known options: {', '.join(sorted(known))}"
            )
        if "name" not in values:
            raise ModelConfigError('a model config needs a name, e.g. name = "openai/gpt-4o"')
        try:
            return cls(**values)
        except TypeError as exc:  # a wrong type that comparisons tripped over
            raise ModelConfigError(f"invalid model config: {exc}") from None

    def replace(self, **changes: Any) -> ModelConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """For the run manifest: every option, no secret (keys live only in the environment)."""
        data = dataclasses.asdict(self)
        data["extra_body"] = dict(self.extra_body)
        return data


def _check_positive(key: str, value: float | None) -> None:
    if value is not None and (isinstance(value, bool) or value <= 0):
        raise ModelConfigError(f"{key} must be a positive number, got {value!r}")


def _check_range(key: str, value: float | None, low: float, high: float) -> None:
    if value is not None and (isinstance(value, bool) or not low <= value <= high):
        raise ModelConfigError(f"{key} must be between {low:g} and {high:g}, got {value!r}")
