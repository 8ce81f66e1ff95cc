"""Confine local paths to allowed roots: open beneath them (race-free), or judge real paths."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from docab_mcpguard.beneath import Opened, open_beneath, split_under
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
    """Allowed roots (absolute real paths). Relative inputs resolve against the first root.

    ``aliases``: other spellings of a root, as (spelling, real root) pairs: a root configured
    as ``/tmp/docs`` where ``/tmp`` is a link still accepts paths written ``/tmp/docs/...``.
    ``remedy``: how another folder is allowed on this server (``"start md-vision with --allow-path
    DIR (or MD_VISION_ALLOW_PATHS)"``); every refusal ends with it. A policy with no roots (a
    server waiting for its client's MCP roots) refuses every path, with the remedy.

    Use :meth:`open` to reach a file or folder: it walks beneath the roots by descriptor, so no
    link swapped in meanwhile can lead outside. :meth:`resolve` and :meth:`contains` judge
    names only, for messages and early checks: never open by the name they return.
    """

    roots: tuple[str, ...]
    aliases: tuple[tuple[str, str], ...] = ()
    remedy: str = ""

    @classmethod
    def from_dirs(
        cls,
        dirs: Iterable[str | os.PathLike[str]],
        *,
        what: str = "allowed path",
        remedy: str = "",
        absolute: bool = False,
    ) -> PathPolicy:
        """Validate directories given on a command line or in an environment variable.

        Raises ``ValueError`` with a message fit for a start-up error when a directory is
        missing, not a directory, or when none is given; with ``absolute``, also when one is
        relative (``~`` is expanded first).
        """
        roots: list[str] = []
        aliases: list[tuple[str, str]] = []
        for raw in dirs:
            text = os.fspath(raw)
            if not text.strip():
                raise ValueError(f"an empty {what} was given")
            expanded = os.path.expanduser(text)
            if not os.path.isabs(expanded):
                if absolute:
                    raise ValueError(f"{what} {text!r} is not an absolute path")
                expanded = os.path.abspath(expanded)
            real = os.path.realpath(expanded)
            if not os.path.exists(real):
                raise ValueError(f"{what} {text!r} does not exist")
            if not os.path.isdir(real):
                raise ValueError(f"{what} {text!r} is not a directory")
            if real not in roots:
                roots.append(real)
            spelled = os.path.normpath(expanded)
            if spelled != real and (spelled, real) not in aliases:
                aliases.append((spelled, real))
        if not roots:
            raise ValueError(f"at least one {what} is required")
        return cls(tuple(roots), tuple(aliases), remedy)

    def describe(self) -> str:
        return ", ".join(self.roots) if self.roots else "none"

    def refusal(self, shown: str) -> PathDenied:
        """The error for a path outside the roots, ending with the remedy."""
        remedy = f"; {self.remedy}" if self.remedy else ""
        if not self.roots:
            return PathDenied(f"{shown!r} cannot be read: no folder is allowed yet{remedy}")
        return PathDenied(f"{shown!r} is outside the allowed paths ({self.describe()}){remedy}")

    def contains(self, real_path: str | os.PathLike[str]) -> bool:
        """Is an already-resolved real path inside one of the roots?"""
        path = os.fspath(real_path)
        return any(_is_within(path, root) for root in self.roots)

    def _checked_text(self, raw: str | os.PathLike[str]) -> str:
        text = os.fspath(raw)
        if "\x00" in text:
            raise PathDenied("the path contains a NUL character")
        if text.startswith("file:"):
            raise PathDenied(f"file: URIs are not accepted; pass a plain path instead of {text!r}")
        return text

    def open(self, raw: str | os.PathLike[str]) -> Opened:
        """Open ``raw`` (a file or a folder) beneath the roots, following links only inside them.

        Absolute paths must lie in a root (written as its real path, as configured, or through
        links outside the roots that lead into it); relative ones start at the first root. Raises :class:`PathDenied` when the path or a link on
        the way leads outside, OSError when it cannot be opened (missing, permission, ...).
        The caller reads, stats and lists through the returned descriptor, and closes it.
        """
        text = self._checked_text(raw)
        expanded = os.path.expanduser(text)
        pairs = [(root, root) for root in self.roots] + list(self.aliases)
        if os.path.isabs(expanded):
            found = split_under(pairs, expanded)
            if found is None:
                # Spelled through a link outside the roots (macOS: /tmp is /private/tmp): the root
                # is found from the real path of the folder. Only the choice of root comes from a
                # name here; the walk that follows still opens every component beneath it.
                folder, name = os.path.split(expanded)
                found = split_under(pairs, os.path.join(os.path.realpath(folder), name))
            if found is None:
                raise self.refusal(text)
            root, parts = found
        elif self.roots:
            root, parts = self.roots[0], expanded.replace(os.sep, "/").split("/")
        else:
            raise self.refusal(text)
        return open_beneath(pairs, root, parts, shown=text, refusal=self.refusal)

    def resolve(self, raw: str | os.PathLike[str]) -> Path:
        """Return the real path of ``raw`` if it lies inside an allowed root, else raise PathDenied.

        Symlinks anywhere in the path (including ``link/..``) are resolved before the test, so a
        link planted inside a root cannot lead outside it. The path need not exist. A name
        judged now may point elsewhere a moment later: to read or write, use :meth:`open`.
        """
        text = self._checked_text(raw)
        expanded = os.path.expanduser(text)
        if not os.path.isabs(expanded):
            if not self.roots:
                raise self.refusal(text)
            expanded = os.path.join(self.roots[0], expanded)
        real = os.path.realpath(expanded)
        if not self.contains(real):
            raise self.refusal(text)
        return Path(real)
