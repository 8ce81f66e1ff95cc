"""docab and other evaluation tools: Inspect AI's eval logs and tasks.

- :mod:`docab.interchange.inspect_log`: a docab run as Inspect eval logs (one per arm), and Inspect
  eval logs (exported by docab or written by the Inspect task) as docab run records.
- :mod:`docab.interchange.inspect_task`: the benchmark as an Inspect task (``inspect eval``).

Both import ``inspect_ai``; nothing else in docab does, so docab works without it. Faces that need
it call :func:`require_inspect_ai` first and show its one-line message.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path

from docab.errors import DocabError

INSPECT_PACKAGE = "inspect-ai"
# Inspect lists a .json file as a log only when its name starts with a timestamp (its own rule).
_INSPECT_JSON_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}.*\.json$")


class InspectUnavailable(DocabError):
    """The ``inspect-ai`` package is not installed; the message names it and how to install it."""


def inspect_ai_importable(name: str = "inspect_ai") -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def require_inspect_ai(what: str, *, importable: Callable[[str], bool] = inspect_ai_importable) -> None:
    """Raise :class:`InspectUnavailable` saying ``what`` needs the package, unless ``inspect_ai`` imports."""
    if not importable("inspect_ai"):
        raise InspectUnavailable(
            f"{what} needs the {INSPECT_PACKAGE} package: pip install {INSPECT_PACKAGE} "
            f"(in a uv project: uv add {INSPECT_PACKAGE})"
        )


def is_log_file(path: Path) -> bool:
    """A file Inspect lists as a log: ``*.eval``, or ``*.json`` named from a timestamp."""
    return path.is_file() and (path.suffix == ".eval" or bool(_INSPECT_JSON_NAME.match(path.name)))


def is_inspect_source(path: Path) -> bool:
    """Inspect logs rather than a docab run folder: a ``.eval`` file, a ``.json`` file other than a run's
    ``manifest.json`` / ``summary.json``, or a folder of logs without ``records.jsonl``."""
    if path.is_file():
        return path.suffix == ".eval" or (
            path.suffix == ".json" and path.name not in ("manifest.json", "summary.json")
        )
    if path.is_dir() and not (path / "records.jsonl").exists():
        return any(is_log_file(p) for p in path.iterdir())
    return False
