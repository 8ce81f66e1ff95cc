"""Model clients behind one protocol: ``openai/<model>``, ``anthropic/<model>``, ``baseline/keyword``.

Build one with ``build_model(spec)`` (see ``harness.models.registry``); the agent loop sees only
the ``Model`` protocol.
"""

from harness.models.base import Model, ModelError, Turn
from harness.models.config import ModelConfig, ModelConfigError
from harness.models.registry import build_model

__all__ = ["Model", "ModelConfig", "ModelConfigError", "ModelError", "Turn", "build_model"]
