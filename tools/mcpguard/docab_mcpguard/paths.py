"""Confine local paths to allowed roots, judged on real paths."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from docab_mcpguard.errors import PathDenied


def _norm(path: str) -> str:
    # normcase lower-cases on Windows, where containment must be case-insensitive.
    return os.path.normcase(path)


def _is_within(child: str, root: str) -> bool:
    child, root = _norm(child), _norm(root)
    if child == root:
        return True
    return child.startswith(root.rstrip(os.sep) + os.sep)


@dataclass(frozen=True)
class PathPolicy:
    """Allowed roots (absolute real paths). Relative inputs resolve against the first root."""

    roots: tuple[str, ...]

    @classmethod
    def from_dirs(cls, dirs: Iterable[str | os.PathLike[str]], *, what: str = "allowed path") -> PathPolicy:
        """Validate directories given on a command line or in an environment variable.

        Raises ``ValueError`` with a message fit for a start-up error when a directory is
        missing, not a directory, or when none is given.
        """
        roots: list[str] = []
        for raw in dirs:
            text = os.fspath(raw)
            if not text.strip():
                raise ValueError(f"an empty {what} was given")
            expanded = os.path.expanduser(text)
            if not os.path.isabs(expanded):
                expanded = os.path.abspath(expanded)
            real = os.path.realpath(expanded)
            if not os.path.exists(real):
                raise ValueError(f"{what} {text!r} does not exist")
            if not os.path.isdir(real):
                raise ValueError(f"{what} {text!r} is not a directory")
            if real not in roots:
                roots.append(real)
        if not roots:
            raise ValueError(f"at least one {what} is required")
        return cls(tuple(roots))

    def describe(self) -> str:
        return ", ".join(self.roots)

    def contains(self, real_path: str | os.PathLike[str]) -> bool:
        """Is an already-resolved real path inside one of the roots?"""
        path = os.fspath(real_path)
        return any(_is_within(path, root) for root in self.roots)

    def resolve(self, raw: str | os.PathLike[str]) -> Path:
        """Return the real path of ``raw`` if it lies inside an allowed root, else raise PathDenied.

        Symlinks anywhere in the path (including ``link/..``) are resolved before the test, so a
        link planted inside a root cannot lead outside it. The path need not exist.
        """
        text = os.fspath(raw)
        if "\x00" in text:
            raise PathDenied("the path contains a NUL character")
        if text.startswith("file:"):
            raise PathDenied(f"file: URIs are not accepted; pass a plain path instead of {text!r}")
        expanded = os.path.expanduser(text)
        if not os.path.isabs(expanded):
            expanded = os.path.join(self.roots[0], expanded)
        real = os.path.realpath(expanded)
        if not self.contains(real):
            raise PathDenied(f"{text!r} is outside the allowed paths ({self.describe()})")
        return Path(real)
