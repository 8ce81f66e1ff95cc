"""Model clients from a config's ``[model]`` table.

``baseline/keyword`` is built here; ``openai/<model>`` and ``anthropic/<model>`` come from the model
clients in ``harness.models`` (their own module documents the options).
"""

from __future__ import annotations

from harness.config import ModelConfig
from harness.errors import CommandError
from harness.models.base import Model


def build_model(config: ModelConfig) -> Model:
    provider = config.name.partition("/")[0]
    if provider == "baseline":
        from harness.models.baseline import KeywordBaseline

        return KeywordBaseline(config.name)
    try:
        from harness.models.factory import build_model as build_client  # type: ignore[import-not-found]
    except ImportError:
        raise CommandError(
            f"the {provider} model client is not available in this checkout (harness.models.factory is missing)"
        ) from None
    return build_client(config)


def build_completion_model(model: Model):  # type: ignore[no-untyped-def]
    """A harness model behind the ``complete(messages, *, max_tokens, temperature)`` interface that
    the benchmark's answer extraction calls."""
    try:
        from harness.models.completion_adapter import CompletionAdapter  # type: ignore[import-not-found]
    except ImportError:
        raise CommandError(
            "the extraction protocol needs harness.models.completion_adapter, which this checkout lacks"
        ) from None
    return CompletionAdapter(model)
