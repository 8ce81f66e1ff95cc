"""The model configuration: one schema for every provider, read from a run config's TOML table.

    [model]
    name = "openai/gpt-4o"          # provider/model: openai/..., anthropic/..., google/..., baseline/keyword
    temperature = 0
    max_output_tokens = 1024
    # base_url = "http://localhost:8000/v1"   # any OpenAI-compatible server: vLLM, Ollama, llama.cpp
    # api_key_env = "OPENROUTER_API_KEY"      # the environment variable holding the key
    # api = "responses"                       # openai/: the Responses API instead of Chat Completions
    # headers = { "X-Gateway-Key" = "${GATEWAY_KEY}" }  # sent with every request; ${VAR} from the env
    # text_only = true                        # strip images, say where they were
    # concurrency = 16                        # requests in flight at this endpoint, all models together
    # rpm = 500                               # requests per minute at this endpoint (docab.models.pacing)
    # tpm = 200000                            # tokens per minute at this endpoint, estimated then corrected
    # price = { input = 2.5, cached_input = 1.25, output = 10 }  # USD per million tokens (docab.pricing)
    # cache = true                            # serve replies from docab's response cache (docab.models.cache)

A name may carry a platform between provider and model, as Inspect AI names them:
``openai/azure/<deployment>`` (Azure OpenAI: ``api_version``, endpoint in ``base_url`` or
``$AZURE_OPENAI_ENDPOINT``), ``anthropic/bedrock/<model id>`` (Amazon Bedrock: ``region``) and
``anthropic/vertex/<model>`` (Google Vertex AI: ``region``, ``project``). So a model id of an
OpenAI-compatible server cannot start with ``azure/`` (nor an Anthropic one with ``bedrock/`` or
``vertex/``).

Keys are never part of a config (configs are hashed into the run manifest and shared); a config
names the environment variable that holds the key, and a header carrying a secret names its
variable as ``${VAR}`` (only the template reaches the manifest).

:class:`ModelConfig` is a pydantic model, so a run config (:class:`docab.config.RunConfig`) holds it
typed and validates it once, with the rest of the file; its messages name the option. Outside a run
config, build one with :meth:`ModelConfig.from_mapping` (or :meth:`replace` a copy), which raise
:class:`ModelConfigError` with the same messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic_core import ErrorDetails

from docab.errors import ConfigError
from docab.models.headers import check_headers
from docab.pricing import Price

PROVIDERS = ("openai", "anthropic", "google", "baseline")
# The platforms a provider's models can also be reached on, named as the name's second segment.
PLATFORMS: dict[str, tuple[str, ...]] = {"openai": ("azure",), "anthropic": ("bedrock", "vertex")}
# The variable holding the credential of each route when the config names none ("" for none).
DEFAULT_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GEMINI_API_KEY",
    "openai/azure": "AZURE_OPENAI_API_KEY",
    "anthropic/bedrock": "AWS_BEARER_TOKEN_BEDROCK",  # a Bedrock API key; else AWS credentials (SigV4)
    "anthropic/vertex": "",  # else Google Application Default Credentials
}
# The offline policies of ``docab.models.baseline`` (which checks its own list again when it builds
# one); named here so a config is checked without importing the policy and the agent code it uses.
BASELINE_POLICIES = ("keyword",)

OpenAIApi = Literal["chat", "responses"]
ReasoningEcho = Literal["tool_turns", "all", "none"]
MaxTokensParam = Literal["auto", "max_tokens", "max_completion_tokens"]
HttpBackend = Literal["auto", "aiohttp", "httpx"]

_CHOICES: dict[str, tuple[str, ...]] = {
    "api": get_args(OpenAIApi),
    "reasoning_echo": get_args(ReasoningEcho),
    "http_backend": get_args(HttpBackend),
    "max_tokens_param": get_args(MaxTokensParam),
}
# Options added after runs were first recorded: written out (manifest, config hash) only when set,
# so a config that does not use them hashes as it did before they existed and its runs resume.
LATER_OPTIONS: dict[str, object] = {
    "api": "chat",
    "api_version": None,
    "region": None,
    "project": None,
    "headers": {},
    "price": None,
    "cache": False,
    "rpm": None,
    "tpm": None,
}
# Where the endpoint lives, how it authenticates and how calls reach it: none of these changes what
# a record means, so the run's identity (``docab.log.identity.identity_of``) leaves them at their
# defaults; a run resumed at another URL, with another key variable or another retry policy is the
# same run (each session records its endpoints).
TRANSPORT_OPTIONS = (
    "base_url",
    "api_key_env",
    "headers",
    "region",
    "project",
    "concurrency",
    "rpm",
    "tpm",
    "http_backend",
    "timeout",
    "max_retries",
    "retry_base_delay",
    "retry_max_delay",
    "retry_after_cap",
)
_NUMBERS = (
    "temperature",
    "max_output_tokens",
    "concurrency",
    "rpm",
    "tpm",
    "thinking_budget",
    "timeout",
    "max_retries",
    "retry_base_delay",
    "retry_max_delay",
    "retry_after_cap",
)


class ModelConfigError(ConfigError, ValueError):
    """A model configuration that cannot work; the message says which key and what to do."""


class ModelConfig(BaseModel):
    """Every option of a model, with its default; frozen (change a copy with :meth:`replace`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    base_url: str | None = None
    api_key_env: str | None = None  # default: OPENAI_API_KEY / ANTHROPIC_API_KEY
    # None: the provider's default (reasoning models and Anthropic accept no other)
    temperature: float | None = None
    max_output_tokens: int | None = None  # caps what the agent loop asks for per call
    text_only: bool = False
    concurrency: int | None = None  # None: the endpoint's existing limit, or 16
    # Requests and tokens per minute at this endpoint, all models together (docab.models.pacing);
    # None: no limit of docab's own (the provider's 429s and rate-limit headers still pace the run).
    rpm: float | None = None
    tpm: float | None = None
    timeout: float = 120.0  # seconds per attempt
    max_retries: int = 4
    retry_base_delay: float = 1.0
    retry_max_delay: float = 30.0
    retry_after_cap: float = 60.0
    # The SDKs' HTTP transport. "auto": aiohttp when installed (docab depends on it), else
    # the SDK's default httpx2 pool, whose request assignment scans every connection and costs
    # about 1 ms of CPU per request at 64 in flight.
    http_backend: HttpBackend = "auto"
    # OpenAI: which API ("chat": Chat Completions, any compatible server; "responses": the Responses API)
    api: OpenAIApi = "chat"
    # Platforms: Azure OpenAI's API version (else $OPENAI_API_VERSION); the Bedrock or Vertex region
    # (else $AWS_REGION / $AWS_DEFAULT_REGION, $CLOUD_ML_REGION); the Vertex project (else
    # $ANTHROPIC_VERTEX_PROJECT_ID).
    api_version: str | None = None
    region: str | None = None
    project: str | None = None
    # Sent with every request (gateways, organisation ids); a value's ${VAR} is read from the
    # environment when the model is built, so secrets stay out of the config and the manifest.
    headers: dict[str, str] = Field(default_factory=dict)
    # OpenAI Chat Completions (and compatible servers)
    reasoning_effort: str | None = None
    reasoning_echo: ReasoningEcho = "tool_turns"
    max_tokens_param: MaxTokensParam = "auto"
    image_detail: str | None = None  # "low" | "high" | "auto"; None sends none
    # Anthropic Messages
    prompt_cache: bool = False
    thinking_budget: int | None = None
    # Passed through as the request body's extra fields (vendor options such as vLLM's).
    extra_body: dict[str, Any] = Field(default_factory=dict)
    # USD per million tokens, for a model the price table lacks or prices otherwise (a gateway, a
    # contract); ``price = 0``: free. Not part of the config hash: correcting a price resumes the run.
    price: Price | None = None
    # Serve replies from docab's response cache (docab.models.cache; `docab run --cache`). Not part
    # of the config hash: turning it on resumes the run.
    cache: bool = False

    @property
    def provider(self) -> str:
        return self.name.partition("/")[0]

    @property
    def platform(self) -> str | None:
        """``azure``, ``bedrock`` or ``vertex`` when the name says so (``openai/azure/...``), else None."""
        provider, _, rest = self.name.partition("/")
        head, slash, tail = rest.partition("/")
        return head if slash and tail and head in PLATFORMS.get(provider, ()) else None

    @property
    def route(self) -> str:
        """Provider and platform: ``openai``, ``openai/azure``, ``anthropic/bedrock``..."""
        return f"{self.provider}/{self.platform}" if self.platform else self.provider

    @property
    def model_id(self) -> str:
        """What the provider calls the model: the part after the route (an Azure deployment name,
        a Bedrock model id or inference profile, a Vertex model name)."""
        return self.name.removeprefix(self.route + "/")

    @property
    def key_variable(self) -> str:
        """The variable holding the credential: ``api_key_env``, else the route's usual one ("" for none)."""
        return self.api_key_env or DEFAULT_KEY_ENV.get(self.route, "")

    @property
    def endpoint(self) -> str:
        """Which concurrency pool this model draws from: its route and base URL (or region)."""
        return f"{self.route} {self.base_url or self.region or 'default'}"

    def following(self, run_model: ModelConfig) -> ModelConfig:
        """This model (an answer extractor, say) sent where ``run_model`` goes: a model of the same
        route (provider and platform) without an endpoint of its own takes the run model's
        ``base_url``, key variable, API version, region, project and headers, so pointing
        ``[model]`` at a local server or a cloud account sends every call there. A model of another
        route, or with a ``base_url`` of its own, is configured otherwise and stays as it is."""
        if self.route != run_model.route or self.base_url is not None:
            return self
        return self.replace(
            cache=self.cache or run_model.cache,
            base_url=run_model.base_url,
            api_key_env=self.api_key_env or run_model.api_key_env,
            api_version=self.api_version or run_model.api_version,
            region=self.region or run_model.region,
            project=self.project or run_model.project,
            headers=self.headers or run_model.headers,
        )

    @model_validator(mode="before")
    @classmethod
    def _as_table(cls, data: object) -> object:
        """A bare ``provider/model`` name is a table with only ``name``; ``model`` is an alias of
        ``name``; options pydantic would accept loosely (``true`` for a number, any string for a
        choice) are refused here with the option's own wording."""
        if isinstance(data, ModelConfig):
            return data
        if isinstance(data, str):
            return {"name": data}
        if not isinstance(data, Mapping):
            raise ValueError(f"a model config must be a table or a name, got {type(data).__name__}")
        values = dict(data)
        if "model" in values and "name" not in values:
            values["name"] = values.pop("model")
        if "api_key" in values:
            raise ValueError(
                "api_key does not belong in a config (configs are copied into the run manifest); "
                "put the key in an environment variable and name it with api_key_env"
            )
        known = set(cls.model_fields)
        unknown = sorted(str(key) for key in set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown model option(s) {', '.join(unknown)}; known options: {', '.join(sorted(known))}"
            )
        if "name" not in values:
            raise ValueError('a model config needs a name, e.g. name = "openai/gpt-4o"')
        for key in _NUMBERS:
            if isinstance(values.get(key), bool):
                raise ValueError(f"{key} must be a positive number, got {values[key]!r}")
        for key, choices in _CHOICES.items():
            if key in values and values[key] not in choices:
                raise ValueError(f"{key} must be one of {', '.join(choices)}")
        price = values.get("price")
        if isinstance(price, int | float) and not isinstance(price, bool):
            if price != 0:
                raise ValueError(
                    "price must be a table, e.g. price = { input = 2.5, output = 10 } (USD per million "
                    "tokens), or 0 for a free model"
                )
            values["price"] = {"input": 0.0, "output": 0.0}
        return values

    @model_validator(mode="after")
    def _coherent(self) -> ModelConfig:
        provider, slash, model_id = self.name.partition("/")
        if not slash or not model_id.strip():
            raise ValueError(
                f"model name {self.name!r} must look like provider/model, e.g. openai/gpt-4o, "
                "anthropic/claude-sonnet-4-5 or baseline/keyword"
            )
        if provider not in PROVIDERS:
            raise ValueError(
                f"unknown model provider {provider!r} in {self.name!r}; known: {', '.join(PROVIDERS)}"
                " (use openai/<model> with base_url for any OpenAI-compatible server)"
            )
        platform = self.platform
        if provider in PLATFORMS and model_id.partition("/")[0] in PLATFORMS[provider] and platform is None:
            raise ValueError(
                f"model name {self.name!r} names the platform {model_id.rstrip('/')!r} but no model: "
                f"write {provider}/{model_id.partition('/')[0]}/<model>"
            )
        if provider == "baseline" and model_id not in BASELINE_POLICIES:
            raise ValueError(
                f"unknown baseline policy {model_id!r}; offline policies: {', '.join(BASELINE_POLICIES)}"
            )
        _check_range("temperature", self.temperature, 0.0, 2.0)
        _check_positive("max_output_tokens", self.max_output_tokens)
        _check_positive("concurrency", self.concurrency)
        _check_positive("rpm", self.rpm)
        _check_positive("tpm", self.tpm)
        _check_positive("thinking_budget", self.thinking_budget)
        if self.timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {self.timeout}")
        _check_range("max_retries", self.max_retries, 0, 20)
        for key, delay in (
            ("retry_base_delay", self.retry_base_delay),
            ("retry_max_delay", self.retry_max_delay),
            ("retry_after_cap", self.retry_after_cap),
        ):
            if delay < 0:
                raise ValueError(f"{key} must not be negative")
        if provider != "anthropic" and self.prompt_cache:
            raise ValueError(
                "prompt_cache applies to anthropic/ models; OpenAI caches long prompts automatically"
            )
        if provider not in ("anthropic", "google") and self.thinking_budget is not None:
            raise ValueError(
                "thinking_budget applies to anthropic/ and google/ models; for OpenAI-compatible "
                "reasoning models use reasoning_effort"
            )
        self._check_platform_options(provider, platform)
        if provider in ("anthropic", "google") and self.reasoning_effort is not None:
            raise ValueError("reasoning_effort applies to openai/ models; use thinking_budget")
        if provider == "anthropic" and self.temperature is not None:
            # API version 2026-10-21 (the anthropic SDK 2.x default) answers 400 to any sampling
            # parameter, even temperature = 1; the SDK no longer has the argument.
            raise ValueError(
                "temperature cannot be set for anthropic/ models: the current Messages API rejects "
                "sampling parameters; leave it out"
            )
        return self

    def _check_platform_options(self, provider: str, platform: str | None) -> None:
        if self.api != "chat" and provider != "openai":
            raise ValueError(f'api = "{self.api}" applies to openai/ models (the OpenAI Responses API)')
        if self.api == "responses" and self.max_tokens_param != "auto":
            raise ValueError(
                "max_tokens_param applies to Chat Completions; the Responses API has max_output_tokens"
            )
        if self.api_version is not None and platform != "azure":
            raise ValueError("api_version applies to openai/azure/<deployment> models (Azure OpenAI)")
        if self.region is not None and platform not in ("bedrock", "vertex"):
            raise ValueError("region applies to anthropic/bedrock/ and anthropic/vertex/ models")
        if self.project is not None and platform != "vertex":
            raise ValueError("project applies to anthropic/vertex/ models (the Google Cloud project)")
        for key, value in (
            ("api_version", self.api_version),
            ("region", self.region),
            ("project", self.project),
        ):
            if value is not None and not value.strip():
                raise ValueError(f"{key} must not be empty; leave it out to read it from the environment")
        check_headers(self.headers)

    @model_serializer(mode="wrap")
    def _without_unused_later_options(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key, default in LATER_OPTIONS.items():
            if key in data and data[key] == default:
                del data[key]
        return data

    @classmethod
    def from_mapping(cls, data: object) -> ModelConfig:
        """Build from a TOML table (or a bare ``provider/model`` string); unknown keys are errors.

        Raises :class:`ModelConfigError` naming the option."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ModelConfigError(_explain(exc)) from None

    def replace(self, **changes: Any) -> ModelConfig:
        """A copy with ``changes``, validated again; raises :class:`ModelConfigError`."""
        return self.from_mapping({**self.model_dump(), **changes})

    def to_dict(self) -> dict[str, Any]:
        """For the run manifest: every option, no secret (keys live only in the environment)."""
        return self.model_dump(mode="json")


def _explain(exc: ValidationError) -> str:
    """The first problem, worded as the validators word it (they name the option themselves)."""
    error: ErrorDetails = exc.errors()[0]
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "value_error":
        return message
    where = ".".join(str(part) for part in error["loc"])
    return f"invalid model config: {where}: {message}" if where else f"invalid model config: {message}"


def _check_positive(key: str, value: float | None) -> None:
    if value is not None and value <= 0:
        raise ValueError(f"{key} must be a positive number, got {value!r}")


def _check_range(key: str, value: float | None, low: float, high: float) -> None:
    if value is not None and not low <= value <= high:
        raise ValueError(f"{key} must be between {low:g} and {high:g}, got {value!r}")
