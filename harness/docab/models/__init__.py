"""Model clients behind one protocol: ``openai/<model>``, ``anthropic/<model>``, ``baseline/keyword``.

Build one with ``build_model(spec)`` (see ``docab.models.registry``); the agent loop sees only
the ``Model`` protocol.
"""

from docab.models.base import Model, ModelError, Turn
from docab.models.config import ModelConfig, ModelConfigError
from docab.models.registry import build_model

__all__ = ["Model", "ModelConfig", "ModelConfigError", "ModelError", "Turn", "build_model"]
