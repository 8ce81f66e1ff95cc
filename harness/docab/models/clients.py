"""The official SDK client of each route, with its credentials read from the environment.

One function per provider, one branch per platform:

| route | client | credential (first found) | endpoint |
|---|---|---|---|
| ``openai`` | ``AsyncOpenAI`` | ``$OPENAI_API_KEY`` (``api_key_env``) | ``base_url`` or api.openai.com |
| ``openai/azure`` | ``AsyncAzureOpenAI`` | ``$AZURE_OPENAI_API_KEY``, ``$AZURE_OPENAI_AD_TOKEN`` | ``base_url`` or ``$AZURE_OPENAI_ENDPOINT``; ``api_version`` or ``$OPENAI_API_VERSION`` |
| ``anthropic`` | ``AsyncAnthropic`` | ``$ANTHROPIC_API_KEY`` | ``base_url`` or api.anthropic.com |
| ``google`` | ``google.genai.Client`` (``.aio``) | ``$GEMINI_API_KEY`` | ``base_url`` or generativelanguage.googleapis.com |
| ``anthropic/bedrock`` | ``AsyncAnthropicBedrock`` | ``$AWS_BEARER_TOKEN_BEDROCK``, else AWS credentials (SigV4: ``$AWS_ACCESS_KEY_ID``/``$AWS_SECRET_ACCESS_KEY``, ``$AWS_PROFILE``, the machine's role) | ``base_url`` or the region's ``bedrock-runtime`` host; ``region`` or ``$AWS_REGION`` |
| ``anthropic/vertex`` | ``AsyncAnthropicVertex`` | the token in ``api_key_env``, else Application Default Credentials | ``base_url`` or the region's host; ``region`` or ``$CLOUD_ML_REGION``, ``project`` or ``$ANTHROPIC_VERTEX_PROJECT_ID`` |

Everything is read from the ``env`` mapping handed in and passed to the SDK explicitly, so a test's
environment is the one that counts. Every client is built with the SDK's retries off
(``max_retries=0``: docab's retry loop is the only one) and the config's ``headers`` filled in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NoReturn

from docab.models.causes import shorten
from docab.models.config import ModelConfig, ModelConfigError
from docab.models.extras import BEDROCK_SIGNING, VERTEX_CREDENTIALS, require
from docab.models.headers import REFERENCE
from docab.models.redirects import HOOKS as REDIRECT_HOOKS
from docab.models.replies import cap_reply_body

# The SDKs' clients (httpx2; httpx for google-genai): a redirect followed only within the origin, a
# reply read up to a cap.
SDK_HOOKS = {"response": [*REDIRECT_HOOKS["response"], cap_reply_body()]}

LOCAL_SERVER_KEY = "not-needed"  # OpenAI-compatible local servers (Ollama, llama.cpp) want some key
AZURE_ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
AZURE_VERSION_ENV = "OPENAI_API_VERSION"
AZURE_TOKEN_ENV = "AZURE_OPENAI_AD_TOKEN"
AWS_REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")
BEDROCK_URL_ENV = "ANTHROPIC_BEDROCK_BASE_URL"
VERTEX_REGION_ENV = "CLOUD_ML_REGION"
VERTEX_PROJECT_ENV = "ANTHROPIC_VERTEX_PROJECT_ID"
VERTEX_URL_ENV = "ANTHROPIC_VERTEX_BASE_URL"
GEMINI_API_VERSION = "v1beta"
KEY_HINT = "the variable named by api_key_env in the model config"


@dataclass(frozen=True)
class Access:
    """How a model proves who it is: ``label`` for the line printed before a run (``key:
    $OPENAI_API_KEY``, ``AWS credentials``; "" for a placeholder key) and ``hint``, what to check
    when the endpoint refuses it."""

    label: str
    hint: str

    @classmethod
    def key(cls, variable: str, what: str = "key") -> Access:
        return cls(f"{what}: ${variable}", f"the {what} in {variable} ({KEY_HINT})")


@dataclass(frozen=True)
class ClientSetup:
    """An SDK client ready for a model, the SDK module (for its error classes) and its access."""

    client: Any
    sdk: ModuleType
    access: Access


def who(config: ModelConfig, role: str | None) -> str:
    """``the extractor model openai/gpt-4o``: how errors name a model."""
    return f"the {role} model {config.name}" if role else config.name


def resolve_api_key(config: ModelConfig, env: Mapping[str, str], *, role: str | None = None) -> str:
    """The key from the environment variable the config names (or the route's usual one).

    A server at a custom ``base_url`` may need no key (Ollama, llama.cpp, a local vLLM): then, unless
    the config names a variable explicitly, a placeholder is sent. The error names ``role``.
    """
    variable = config.key_variable
    key = env.get(variable, "").strip()
    if key:
        return key
    if config.base_url and not config.api_key_env:
        return LOCAL_SERVER_KEY
    where = f" for {config.base_url}" if config.base_url else ""
    raise ModelConfigError(
        f"{who(config, role)} needs an API key{where}: the environment variable {variable} is not set. "
        f"Export it (export {variable}=...) or name another variable with api_key_env in the model config."
    )


def _key_access(config: ModelConfig, key: str) -> Access:
    if key != LOCAL_SERVER_KEY:
        return Access.key(config.key_variable)
    return Access(
        "",
        f"the API key: {config.key_variable} is not set, so a placeholder was sent; name the variable "
        "holding the server's key with api_key_env in the model config",
    )


def _setting(config_value: str | None, env: Mapping[str, str], variables: tuple[str, ...]) -> str | None:
    if config_value:
        return config_value
    return next((env[v].strip() for v in variables if env.get(v, "").strip()), None)


def _missing(
    config: ModelConfig, role: str | None, what: str, key: str, variables: tuple[str, ...]
) -> NoReturn:
    exports = " or ".join(f"export {v}" for v in variables)
    raise ModelConfigError(f"{who(config, role)} needs {what}: set {key} in the model config or {exports}")


def _common(config: ModelConfig, sdk: ModuleType, env: Mapping[str, str], role: str | None) -> dict[str, Any]:
    headers = resolve_headers(config.headers, env, who=who(config, role))
    return {
        "timeout": config.timeout,
        # Our retry loop (docab.models.retry) is the only one: it counts retries into the record,
        # re-queues for the concurrency slot and caps Retry-After. SDK retries would be invisible
        # and would multiply with ours.
        "max_retries": 0,
        "http_client": sdk_http_client(sdk, config),
        "default_headers": headers or None,
    }


def _construct(config: ModelConfig, role: str | None, factory: Any, **arguments: Any) -> Any:
    """Build an SDK client; its own refusals (a missing region, clashing credentials) in one line."""
    try:
        return factory(**arguments)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise ModelConfigError(f"{who(config, role)}: {shorten(str(exc))}") from None
    except Exception as exc:  # the SDKs' own error classes (OpenAIError, AnthropicError)
        if type(exc).__module__.split(".")[0] in ("openai", "anthropic", "google"):
            raise ModelConfigError(f"{who(config, role)}: {shorten(str(exc))}") from None
        raise


def openai_client(config: ModelConfig, env: Mapping[str, str], *, role: str | None = None) -> ClientSetup:
    """``AsyncOpenAI``, or ``AsyncAzureOpenAI`` for ``openai/azure/<deployment>``."""
    import openai

    common = _common(config, openai, env, role)
    if config.platform != "azure":
        key = resolve_api_key(config, env, role=role)
        access = _key_access(config, key)
        client = _construct(config, role, openai.AsyncOpenAI, api_key=key, base_url=config.base_url, **common)
        return ClientSetup(client, openai, access)
    endpoint = _setting(config.base_url, env, (AZURE_ENDPOINT_ENV,))
    if endpoint is None:
        _missing(
            config,
            role,
            "its Azure OpenAI endpoint",
            'base_url = "https://<resource>.openai.azure.com"',
            (AZURE_ENDPOINT_ENV,),
        )
    version = _setting(config.api_version, env, (AZURE_VERSION_ENV,))
    if version is None:
        _missing(
            config, role, "an Azure OpenAI API version", 'api_version = "2024-10-21"', (AZURE_VERSION_ENV,)
        )
    key = env.get(config.key_variable, "").strip()
    token = env.get(AZURE_TOKEN_ENV, "").strip() if not key and not config.api_key_env else ""
    if not key and not token:
        raise ModelConfigError(
            f"{who(config, role)} needs an API key for {endpoint}: the environment variable "
            f"{config.key_variable} is not set (or {AZURE_TOKEN_ENV} for a Microsoft Entra ID token). "
            f"Export it (export {config.key_variable}=...) or name another variable with api_key_env."
        )
    access = Access.key(config.key_variable) if key else Access.key(AZURE_TOKEN_ENV, "Entra ID token")
    client = _construct(
        config,
        role,
        openai.AsyncAzureOpenAI,
        api_key=key or None,
        azure_ad_token=token or None,
        azure_endpoint=endpoint,
        api_version=version,
        **common,
    )
    return ClientSetup(client, openai, access)


def anthropic_client(config: ModelConfig, env: Mapping[str, str], *, role: str | None = None) -> ClientSetup:
    """``AsyncAnthropic``, ``AsyncAnthropicBedrock`` or ``AsyncAnthropicVertex``."""
    import anthropic

    if config.platform == "bedrock":
        return _bedrock_client(config, env, role, anthropic)
    if config.platform == "vertex":
        return _vertex_client(config, env, role, anthropic)
    common = _common(config, anthropic, env, role)
    key = resolve_api_key(config, env, role=role)
    access = _key_access(config, key)
    client = _construct(
        config, role, anthropic.AsyncAnthropic, api_key=key, base_url=config.base_url, **common
    )
    return ClientSetup(client, anthropic, access)


def _bedrock_client(
    config: ModelConfig, env: Mapping[str, str], role: str | None, anthropic: ModuleType
) -> ClientSetup:
    region = _setting(config.region, env, AWS_REGION_ENVS)
    if region is None:
        _missing(config, role, "an AWS region", 'region = "us-east-1"', AWS_REGION_ENVS)
    base_url = (
        _setting(config.base_url, env, (BEDROCK_URL_ENV,))
        or f"https://bedrock-runtime.{region}.amazonaws.com"
    )
    token = env.get(config.key_variable, "").strip()
    if not token and config.api_key_env:
        raise ModelConfigError(
            f"{who(config, role)} needs the Bedrock API key in {config.api_key_env}, which is not set: "
            f"export it, or leave api_key_env out to sign with AWS credentials"
        )
    credentials: dict[str, Any] = {}
    if token:
        access = Access.key(config.key_variable, "Bedrock API key")
    else:
        require(
            BEDROCK_SIGNING,
            who=who(config, role),
            otherwise=f"set {config.key_variable} to a Bedrock API key, which needs neither",
        )
        key_id, secret = (
            env.get("AWS_ACCESS_KEY_ID", "").strip(),
            env.get("AWS_SECRET_ACCESS_KEY", "").strip(),
        )
        if bool(key_id) != bool(secret):
            raise ModelConfigError(
                f"{who(config, role)}: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together; one of them is not set"
            )
        if key_id:
            credentials = {
                "aws_access_key": key_id,
                "aws_secret_key": secret,
                "aws_session_token": env.get("AWS_SESSION_TOKEN", "").strip() or None,
            }
            label = "AWS credentials: $AWS_ACCESS_KEY_ID"
        elif env.get("AWS_PROFILE", "").strip():
            credentials = {"aws_profile": env["AWS_PROFILE"].strip()}
            label = f"AWS profile {credentials['aws_profile']}"
        else:
            label = "AWS credentials of this machine"  # boto3's chain: config files, SSO, the instance role
        access = Access(
            label,
            "the AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the machine's "
            "role) and the model's access in the Bedrock console for this region",
        )
    client = _construct(
        config,
        role,
        anthropic.AsyncAnthropicBedrock,
        aws_region=region,
        api_key=token or None,
        base_url=base_url,
        **credentials,
        **_common(config, anthropic, env, role),
    )
    return ClientSetup(client, anthropic, access)


def _vertex_client(
    config: ModelConfig, env: Mapping[str, str], role: str | None, anthropic: ModuleType
) -> ClientSetup:
    region = _setting(config.region, env, (VERTEX_REGION_ENV,))
    if region is None:
        _missing(
            config, role, "a Vertex AI region", 'region = "us-east5" (or "global")', (VERTEX_REGION_ENV,)
        )
    project = _setting(config.project, env, (VERTEX_PROJECT_ENV,))
    if project is None:
        _missing(config, role, "a Google Cloud project", 'project = "<project id>"', (VERTEX_PROJECT_ENV,))
    token = None
    if config.api_key_env:
        token = env.get(config.api_key_env, "").strip()
        if not token:
            raise ModelConfigError(
                f"{who(config, role)} needs an access token in {config.api_key_env}, which is not set: "
                f"export {config.api_key_env}=$(gcloud auth print-access-token), or leave api_key_env out "
                "to use Application Default Credentials"
            )
        access = Access(
            f"token: ${config.api_key_env}",
            f"the access token in {config.api_key_env} (tokens expire after an hour: gcloud auth print-access-token)",
        )
    else:
        require(
            VERTEX_CREDENTIALS,
            who=who(config, role),
            otherwise="name a variable holding an access token with api_key_env (gcloud auth print-access-token)",
        )
        access = Access(
            "Google Application Default Credentials",
            "the Google credentials (gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS) "
            "and the project's access to the model",
        )
    client = _construct(
        config,
        role,
        anthropic.AsyncAnthropicVertex,
        region=region,
        project_id=project,
        access_token=token,
        base_url=_setting(config.base_url, env, (VERTEX_URL_ENV,)),
        **_common(config, anthropic, env, role),
    )
    return ClientSetup(client, anthropic, access)


def gemini_client(config: ModelConfig, env: Mapping[str, str], *, role: str | None = None) -> ClientSetup:
    """``google.genai.Client`` for the Gemini API (never Vertex AI, whatever the environment says),
    with the key, ``base_url``, headers and timeout of the config; the SDK's retries stay off (its
    default without ``retry_options``) and its transport is always an httpx client of docab's, which
    follows a redirect only within the endpoint's origin and reads a reply up to
    :data:`docab.models.replies.MAX_REPLY_BYTES`, as the other routes' clients do
    (``http_backend`` does not apply)."""
    from google import genai
    from google.genai import types

    key = resolve_api_key(config, env, role=role)
    headers = resolve_headers(config.headers, env, who=who(config, role))
    # v1beta, pinned (the SDK's default is v1, and $GOOGLE_GENAI_API_VERSION would change it): the
    # version with parametersJsonSchema, thinkingConfig and function-call ids.
    options: dict[str, Any] = {
        "api_version": GEMINI_API_VERSION,
        "timeout": int(config.timeout * 1000),
        "headers": headers or None,
    }
    if config.base_url:
        options["base_url"] = config.base_url
    # Always an httpx client of ours: the SDK's aiohttp session would follow a redirect to any
    # host with the key (models.redirects); this one follows it only within the origin.
    import httpx

    options["httpx_async_client"] = httpx.AsyncClient(
        timeout=config.timeout, follow_redirects=True, event_hooks=SDK_HOOKS
    )
    client = _construct(
        config,
        role,
        genai.Client,
        api_key=key,
        vertexai=False,
        http_options=types.HttpOptions(**options),
    )
    return ClientSetup(client, genai, _key_access(config, key))


def sdk_http_client(sdk: Any, config: Any) -> Any:
    """The HTTP client to hand an official SDK: the SDK's own defaults, with a redirect followed
    only within the endpoint's origin (:mod:`docab.models.redirects`) and a reply read up to
    :data:`docab.models.replies.MAX_REPLY_BYTES`, decoded in bounded steps.

    Both SDKs ship ``DefaultAioHttpClient`` (their extra ``aiohttp``), which they recommend for
    high concurrency; with it installed and ``http_backend`` "auto" or "aiohttp", it is used;
    otherwise their httpx2 client.
    """
    if config.http_backend == "httpx":
        return sdk.DefaultAsyncHttpxClient(event_hooks=SDK_HOOKS)
    try:
        return sdk.DefaultAioHttpClient(event_hooks=SDK_HOOKS)
    except RuntimeError as exc:  # the SDK says: aiohttp extra not installed
        if config.http_backend == "aiohttp":
            raise ModelConfigError(
                f'{config.name}: http_backend = "aiohttp" needs the SDK\'s aiohttp extra '
                f"(pip install '{sdk.__name__}[aiohttp]')"
            ) from exc
        return sdk.DefaultAsyncHttpxClient(event_hooks=SDK_HOOKS)


def resolve_headers(headers: Mapping[str, str], env: Mapping[str, str], *, who: str) -> dict[str, str]:
    """The headers with every ``${VAR}`` replaced by its value in ``env``; raises ModelConfigError
    naming ``who`` (``the agent model openai/gpt-4o``), the header and the variable when one is unset."""
    resolved: dict[str, str] = {}
    for name, template in headers.items():

        def fill(match: re.Match[str], header: str = name) -> str:
            variable = match.group(1)
            if variable is None:  # "$$" (a bare "$" was refused when the config was read)
                return "$"
            value = env.get(variable, "")
            if not value:
                raise ModelConfigError(
                    f"{who} sends the header {header} from ${{{variable}}}, and {variable} is not set: "
                    f"export {variable}=... or change headers in the model config"
                )
            return value

        value = REFERENCE.sub(fill, template)
        if any(c in value for c in "\r\n\0"):
            raise ModelConfigError(
                f"{who}: the value of the header {name} holds a line break; check its variable"
            )
        resolved[name] = value
    return resolved
