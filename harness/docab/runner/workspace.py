"""The sample's workspace: the converted document at a neutral path, and nothing else.

Each runner worker owns one workspace root (a fresh temporary folder) whose only entry is
``document/``: the sample's converted document. The agent's tools and the MCP servers see only
that root: the document's original file name, the corpus, the questions and the results are all
elsewhere. Files are hard-linked when the corpus is on the same filesystem (every tool is
read-only), else copied; symlinks in the corpus are skipped, never followed, and the converter's
``meta.json`` (harness bookkeeping, which names the source PDF) is left out.

Copies are recycled, because creating and deleting files is slow on some disks and a run places
a document once per question: a :class:`DocumentPool` keeps pristine copies outside every
workspace, and a :class:`WorkspaceSlot` moves one into its root by renaming it (and back out when
the next sample needs another document). A copy is pristine when it is exactly as placed: same
entries, inodes, sizes and modification times. Anything a server or tool left behind or changed,
in the copy or beside it, makes the slot discard that copy and start from a fresh one, so every
sample still starts from the untouched document.

The limit of hard links: a tool that writes *in place* into a linked file changes the corpus file
itself (it is the same inode), and every later copy with it. The harness's tools and the shipped
MCP servers are read-only; give a server that can write a copied corpus (on another filesystem,
where files are copied, not linked).
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

DOCUMENT_DIR = "document"
HIDDEN_FILES = frozenset({"meta.json"})
FREE_COPIES_PER_DOCUMENT = 4

Snapshot = frozenset[tuple[str, bool, int, int, int]]


class WorkspaceError(Exception):
    """The document could not be placed in the workspace; the message says why."""


def copy_document(source: Path, target: Path) -> None:
    """Create ``target`` holding the files of the converted document ``source`` (see the module doc)."""
    if not (source / "document.md").is_file():
        raise WorkspaceError(
            f"the converted document {source.name!r} has no document.md (was its PDF converted? "
            "see the corpus manifest.json for the converter's error)"
        )
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
        shutil.rmtree(target, ignore_errors=True)
        raise WorkspaceError(
            f"could not prepare the workspace for {source.name!r}: {exc.strerror or exc}"
        ) from None


def snapshot(folder: Path) -> Snapshot:
    """Every entry under ``folder`` with its kind, inode, size and mtime (without following links)."""
    entries: list[tuple[str, bool, int, int, int]] = []
    pending = [("", str(folder))]
    while pending:
        prefix, current = pending.pop()
        with os.scandir(current) as listing:
            for entry in listing:
                st = entry.stat(follow_symlinks=False)
                is_dir = entry.is_dir(follow_symlinks=False)
                entries.append((prefix + entry.name, is_dir, st.st_ino, st.st_size, st.st_mtime_ns))
                if is_dir:
                    pending.append((prefix + entry.name + "/", entry.path))
    return frozenset(entries)


class DocumentPool:
    """Pristine copies of converted documents, kept outside every workspace, shared by the workers.

    Thread-safe: slots call it from worker threads.
    """

    def __init__(self, area: Path) -> None:
        self.area = area
        self._free: dict[Path, list[tuple[Path, Snapshot]]] = {}
        self._lock = threading.Lock()
        self._count = 0
        self.copies = 0  # copies made (for tests and benchmarks)

    def take_ready(self, source: Path) -> tuple[Path, Snapshot] | None:
        """A pristine pooled copy of ``source``, or None (cheap: no copy is made)."""
        while True:
            with self._lock:
                free = self._free.get(source)
                candidate = free.pop() if free else None
            if candidate is None:
                return None
            folder, placed = candidate
            if snapshot(folder) == placed:
                return folder, placed
            shutil.rmtree(folder, ignore_errors=True)

    def take(self, source: Path) -> tuple[Path, Snapshot]:
        ready = self.take_ready(source)
        if ready is not None:
            return ready
        with self._lock:
            self._count += 1
            folder = self.area / f"copy-{self._count:06d}"
            self.copies += 1
        copy_document(source, folder)
        return folder, snapshot(folder)

    def give_back(self, source: Path, folder: Path, placed: Snapshot) -> None:
        """Keep ``folder`` for reuse (up to the cap). It is not checked here: :meth:`take_ready`
        checks every copy before handing it out, which is the check that keeps samples apart, and
        walking the copy here as well would double the cost of every document switch."""
        with self._lock:
            free = self._free.setdefault(source, [])
            if len(free) < FREE_COPIES_PER_DOCUMENT:
                free.append((folder, placed))
                return
        shutil.rmtree(folder, ignore_errors=True)


class WorkspaceSlot:
    """One worker's workspace root; :meth:`prepare` places a sample's document in it."""

    def __init__(self, root: Path, pool: DocumentPool) -> None:
        self.root = root
        self.pool = pool
        self._current: tuple[Path, Path, Snapshot] | None = None  # source, pool folder, snapshot

    @property
    def document(self) -> Path:
        return self.root / DOCUMENT_DIR

    def reusable(self, source: Path) -> bool:
        """Is ``source`` already in place, untouched, with nothing beside it? (a few ``lstat`` calls)"""
        current = self._current
        return (
            current is not None
            and current[0] == source
            and os.listdir(self.root) == [DOCUMENT_DIR]
            and snapshot(self.document) == current[2]
        )

    def prepare(self, source: Path, *, copy: bool = True) -> Path | None:
        """Place ``source``; with ``copy=False``, only from a ready pooled copy (None if there is
        none), so a caller on an event loop can do the cheap case inline and the copy in a thread."""
        if self.reusable(source):
            return self.document
        if not copy:
            ready = self.pool.take_ready(source)
            if ready is None:
                return None
            self._return_current()
            clear(self.root)
            return self._place(source, *ready)
        self._return_current()
        clear(self.root)
        return self._place(source, *self.pool.take(source))

    def _place(self, source: Path, folder: Path, placed: Snapshot) -> Path:
        try:
            os.rename(folder, self.document)
        except OSError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise WorkspaceError(
                f"could not place {source.name!r} in the workspace: {exc.strerror or exc}"
            ) from None
        self._current = (source, folder, placed)
        return self.document

    def _return_current(self) -> None:
        current, self._current = self._current, None
        if current is None or not self.document.is_dir():
            return
        source, folder, placed = current
        try:
            os.rename(self.document, folder)
        except OSError:
            return  # clear() removes it
        self.pool.give_back(source, folder, placed)


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
