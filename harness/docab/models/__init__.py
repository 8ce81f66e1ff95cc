"""Model clients behind one protocol: ``openai/<model>``, ``anthropic/<model>``, ``baseline/keyword``.

Build one with ``build_model(spec)`` (see ``docab.models.registry``); the agent loop sees only
the ``Model`` protocol. The names below load on first use, so reading a config (which needs only
``docab.models.config``) imports no client code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from docab.messages import Turn
    from docab.models.base import Model, ModelError
    from docab.models.config import ModelConfig, ModelConfigError
    from docab.models.registry import build_model

__all__ = ["Model", "ModelConfig", "ModelConfigError", "ModelError", "Turn", "build_model"]

_HOMES = {
    "Model": "docab.models.base",
    "ModelError": "docab.models.base",
    "Turn": "docab.messages",
    "ModelConfig": "docab.models.config",
    "ModelConfigError": "docab.models.config",
    "build_model": "docab.models.registry",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'docab.models' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
