"""Model clients behind one protocol: ``openai/<model>``, ``anthropic/<model>``, ``baseline/keyword``."""

from harness.models.base import Model, ModelError, Turn

__all__ = ["Model", "ModelError", "Turn"]
