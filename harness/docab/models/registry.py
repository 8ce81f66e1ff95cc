"""Build a model from its configuration: the one entry point the runner uses.

    model = build_model("openai/gpt-4o")
    model = build_model({"name": "openai/qwen2.5-vl", "base_url": "http://localhost:8000/v1"})
    model = build_model(ModelConfig(name="anthropic/claude-sonnet-4-5", prompt_cache=True))
    model = build_model("google/gemini-2.5-flash")

Providers are resolved by the prefix of the name. ``baseline/<policy>`` is the offline policy that
lives in ``docab.models.baseline`` (imported only when asked for); that module provides
``build(config: ModelConfig) -> Model``.
"""

from __future__ import annotations

import importlib
import os
import random
from collections.abc import Mapping
from typing import Any

from docab.models.base import Model
from docab.models.clients import LOCAL_SERVER_KEY, resolve_api_key
from docab.models.config import ModelConfig, ModelConfigError
from docab.models.limits import SHARED_LIMITS, ConcurrencyLimits
from docab.models.retry import SYSTEM_CLOCK, Clock

__all__ = ["BASELINE_MODULE", "LOCAL_SERVER_KEY", "build_model", "resolve_api_key"]

BASELINE_MODULE = "docab.models.baseline"


def build_model(
    spec: str | Mapping[str, Any] | ModelConfig,
    *,
    env: Mapping[str, str] | None = None,
    limits: ConcurrencyLimits | None = None,
    clock: Clock | None = None,
    rng: random.Random | None = None,
    role: str = "agent",
) -> Model:
    """A ready model for ``spec``; raises ModelConfigError with an actionable message when it cannot.

    ``env`` (default ``os.environ``) supplies API keys; ``limits`` the shared concurrency pools;
    ``clock`` and ``rng`` the time and jitter of retries (tests inject both). ``role`` (``agent``,
    ``extractor``) names the model in its error messages.
    """
    config = spec if isinstance(spec, ModelConfig) else ModelConfig.from_mapping(spec)
    if config.provider == "baseline":
        return _build_baseline(config)
    runtime: dict[str, Any] = {
        "env": os.environ if env is None else env,
        "limits": limits or SHARED_LIMITS,
        "clock": clock or SYSTEM_CLOCK,
        "rng": rng,
        "role": role,
    }
    try:
        if config.provider == "openai":
            return build_openai_model(config, **runtime)
        if config.provider == "google":
            from docab.models.gemini import build_gemini_model

            return build_gemini_model(config, **runtime)
        from docab.models.anthropic_messages import build_anthropic_model

        return build_anthropic_model(config, **runtime)
    except ModelConfigError:
        raise
    except ValueError as exc:  # e.g. two configs asking for different limits on one endpoint
        raise ModelConfigError(str(exc)) from None


def _build_baseline(config: ModelConfig) -> Model:
    try:
        module = importlib.import_module(BASELINE_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != BASELINE_MODULE:
            raise
        raise ModelConfigError(
            f"{config.name} is an offline baseline policy provided by {BASELINE_MODULE}, "
            "which is not part of this installation"
        ) from None
    build = getattr(module, "build", None)
    if not callable(build):
        raise ModelConfigError(
            f"{BASELINE_MODULE} does not provide build(config) -> Model, so {config.name} cannot be built"
        )
    model: Model = build(config)
    return model


def build_openai_model(
    config: ModelConfig, *, env: Mapping[str, str], role: str = "agent", **runtime: Any
) -> Model:
    """``openai/<model>`` or ``openai/azure/<deployment>``, speaking Chat Completions or, with
    ``api = "responses"``, the Responses API (:mod:`docab.models.openai_responses`)."""
    from docab.models.clients import openai_client
    from docab.models.openai_chat import OpenAIChatModel
    from docab.models.provider import ProviderModel

    setup = openai_client(config, env, role=role)
    model_class: type[ProviderModel] = OpenAIChatModel
    if config.api == "responses":
        from docab.models.openai_responses import OpenAIResponsesModel

        model_class = OpenAIResponsesModel
    return model_class(config, sdk=setup.sdk, client=setup.client, access=setup.access, role=role, **runtime)
