"""Optional dependencies of some routes, checked when a model is built.

Signing Amazon Bedrock requests with AWS credentials needs ``boto3`` and ``botocore``; finding
Google Application Default Credentials for Vertex AI needs ``google-auth``. ``docab`` does not
install them (extras ``docab[bedrock]``, ``docab[vertex]``, the same as the anthropic SDK's own
``anthropic[bedrock]`` / ``anthropic[vertex]``), and the routes that need none of them (a Bedrock API
key, a Vertex access token) work without. A missing one is a one-line ModelConfigError naming what
to install, before any request, rather than the SDK's error in the middle of a run.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from docab.models.config import ModelConfigError

Finder = Callable[[str], Any]  # importlib.util.find_spec: None when a module is not installed


@dataclass(frozen=True)
class Extra:
    modules: tuple[str, ...]
    install: str  # the pip requirement that brings them
    purpose: str  # what they are needed for, after "to"


BEDROCK_SIGNING = Extra(
    ("boto3", "botocore"), "docab[bedrock]", "sign Amazon Bedrock requests with AWS credentials (SigV4)"
)
VERTEX_CREDENTIALS = Extra(
    ("google.auth",), "docab[vertex]", "find Google Application Default Credentials for Vertex AI"
)


def missing_modules(modules: Sequence[str], find: Finder = importlib.util.find_spec) -> list[str]:
    """The modules of ``modules`` that cannot be imported (found without importing them)."""
    missing = []
    for module in modules:
        try:
            found = find(module)
        except (ImportError, ValueError):  # a dotted name whose parent package is absent
            found = None
        if found is None:
            missing.append(module)
    return missing


def require(extra: Extra, *, who: str, otherwise: str, find: Finder = importlib.util.find_spec) -> None:
    """Raise ModelConfigError when a module of ``extra`` is missing: ``who`` needs it, the command
    that installs it, and ``otherwise`` (the route that needs none)."""
    missing = missing_modules(extra.modules, find)
    if missing:
        names = " and ".join(name.replace("google.auth", "google-auth") for name in missing)
        raise ModelConfigError(
            f"{who} needs {names} to {extra.purpose}: pip install '{extra.install}' "
            f"(in a checkout: uv sync --extra {extra.install.partition('[')[2].rstrip(']')}), or {otherwise}"
        )
