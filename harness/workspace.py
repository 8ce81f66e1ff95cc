"""The sample's workspace: the converted document at a neutral path, and nothing else.

Each runner worker owns one workspace root (a fresh temporary folder) and, before every sample,
replaces its ``document/`` folder with the sample's converted document. The agent's tools and the
MCP servers see only that root: the document's original file name, the corpus, the questions and
the results are all elsewhere. Files are hard-linked when the corpus is on the same filesystem
(every tool is read-only), else copied; symlinks in the corpus are skipped, never followed, and
the converter's ``meta.json`` (harness bookkeeping, which names the source PDF) is left out.

A :class:`WorkspaceSlot` skips the copy when the next sample uses the same document (the arms of
one question always do) and the workspace is exactly as it was placed: same entries, same inodes,
sizes and modification times. Anything a server or tool left behind, or changed, triggers a fresh
copy, so every sample still starts from the pristine document.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

DOCUMENT_DIR = "document"
HIDDEN_FILES = frozenset({"meta.json"})


class WorkspaceError(Exception):
    """The document could not be placed in the workspace; the message says why."""


def populate(root: Path, source: Path) -> Path:
    """Replace ``root/document`` with the files of ``source``; returns ``root/document``."""
    if not (source / "document.md").is_file():
        raise WorkspaceError(
            f"the converted document {source.name!r} has no document.md (was its PDF converted? "
            "see the corpus manifest.json for the converter's error)"
        )
    target = root / DOCUMENT_DIR
    clear(root)
    try:
        target.mkdir(parents=True)
        for dirpath, dirnames, filenames in os.walk(source):
            here = Path(dirpath)
            rel = here.relative_to(source)
            dirnames[:] = sorted(d for d in dirnames if not (here / d).is_symlink())
            for name in dirnames:
                (target / rel / name).mkdir()
            for name in sorted(filenames):
                src = here / name
                if src.is_symlink() or not src.is_file() or (rel == Path(".") and name in HIDDEN_FILES):
                    continue
                _link_or_copy(src, target / rel / name)
    except OSError as exc:
        raise WorkspaceError(
            f"could not prepare the workspace for {source.name!r}: {exc.strerror or exc}"
        ) from None
    return target


Snapshot = frozenset[tuple[str, bool, int, int, int]]


def snapshot(root: Path) -> Snapshot:
    """Every entry under ``root`` with its kind, inode, size and mtime (without following links)."""
    entries: list[tuple[str, bool, int, int, int]] = []
    pending = [("", str(root))]
    while pending:
        prefix, folder = pending.pop()
        with os.scandir(folder) as listing:
            for entry in listing:
                st = entry.stat(follow_symlinks=False)
                is_dir = entry.is_dir(follow_symlinks=False)
                entries.append((prefix + entry.name, is_dir, st.st_ino, st.st_size, st.st_mtime_ns))
                if is_dir:
                    pending.append((prefix + entry.name + "/", entry.path))
    return frozenset(entries)


class WorkspaceSlot:
    """One worker's workspace root, refilled per sample (reused when nothing changed)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._source: Path | None = None
        self._placed: Snapshot | None = None
        self.copies = 0  # how many times a document was placed (for tests and benchmarks)

    def reusable(self, source: Path) -> bool:
        """Is the document already in place, untouched? (a few ``lstat`` calls)"""
        return self._source == source and self._placed is not None and snapshot(self.root) == self._placed

    def prepare(self, source: Path) -> Path:
        if self.reusable(source):
            return self.root / DOCUMENT_DIR
        self._source = self._placed = None
        target = populate(self.root, source)
        self.copies += 1
        self._source, self._placed = source, snapshot(self.root)
        return target


def clear(root: Path) -> None:
    """Remove everything in ``root`` (files a server may have left included), keeping ``root``."""
    for entry in root.iterdir() if root.exists() else ():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
