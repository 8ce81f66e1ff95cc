"""Find the markdown files of a folder and index many of them fast.

The walk skips hidden files and folders, ``node_modules`` and whatever the folder's
``.gitignore`` files exclude (nested ones apply to their subtree, later rules win, ``!`` negates),
matches ``.md``/``.markdown`` case-insensitively, does not follow folder symlinks (no loops) and
checks each file's real path against the allowed roots. Files come back in sorted order, each with
the size and modification time the walk saw (one ``stat`` per file, the cache key).

A large folder is parsed by worker processes. Half of each file's parse is Python (reading the
C parser's output), so threads share one core: on 1,000 files (20 MB) two threads took about as
long as one (1.9-2.0 s), two processes 1.3 s plus their start. The workers come from a forkserver
(a clean, single-threaded process that has imported the parser), never forked from this threaded
server, where a lock held by another thread at fork time could hang the child; the server starts
them in the background at start-up (:func:`warm_up`), so the first index does not wait for them.
Where forkserver does not exist (Windows), threads do the work.
(``tests/perf/md_vision_bench.py --only parallel`` compares serial, threads and processes.)
"""

from __future__ import annotations

import multiprocessing
import os
import stat
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from md_vision.index import FileIndex, FileProblem, index_text
from md_vision.sources import MARKDOWN_SUFFIXES, SourceError, read_local_markdown

SKIPPED_DIRS = frozenset({"node_modules"})
MAX_WALK_ENTRIES = 500_000  # a walk over a whole disk stops here instead of running for minutes
POOL_THRESHOLD = 16  # below this many files to parse, one thread does it
CHUNK = 8  # files per task sent to a worker


@dataclass(frozen=True, slots=True)
class FoundFile:
    path: Path  # real path
    size: int = -1
    mtime_ns: int = -1
    problem: str | None = None  # why it cannot be indexed (then size and mtime_ns are -1)

    @property
    def key(self) -> tuple[str, str, int, int]:
        """What a cached index of this file is stored under: it changes when the file does."""
        return ("file", str(self.path), self.size, self.mtime_ns)


@dataclass
class FolderScan:
    files: list[FoundFile] = field(default_factory=list)  # sorted, at most the cap
    found: int = 0  # markdown files found before the cap applied
    outside: int = 0  # files whose real path leaves the allowed roots (symlinks), skipped
    walk_truncated: bool = False


def _load_gitignore(directory: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec if len(spec) else None


def _ignored(specs: list[tuple[str, pathspec.GitIgnoreSpec]], path: str, is_dir: bool) -> bool:
    """Deepest .gitignore with an opinion wins (git's precedence)."""
    for base, spec in reversed(specs):
        relative = os.path.relpath(path, base).replace(os.sep, "/")
        if is_dir:
            relative += "/"
        decision = spec.check_file(relative).include
        if decision is not None:
            return decision
    return False


def scan_folder(root: Path, contains: Callable[[str], bool], max_files: int) -> FolderScan:
    """Walk ``root`` (a real path); ``contains(real_path)`` says whether a path is allowed."""
    scan = FolderScan()
    found: list[tuple[str, FoundFile]] = []
    stack: list[tuple[str, list[tuple[str, pathspec.GitIgnoreSpec]]]] = [(str(root), [])]
    prefix = len(os.path.join(str(root), ""))  # entry paths start with the root and a separator
    visited = 0
    while stack:
        directory, inherited = stack.pop()
        specs = inherited
        own = _load_gitignore(directory)
        if own is not None:
            specs = [*inherited, (directory, own)]
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            visited += 1
            if visited > MAX_WALK_ENTRIES:
                scan.walk_truncated = True
                stack.clear()
                break
            name = entry.name
            if name.startswith("."):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if name in SKIPPED_DIRS or (specs and _ignored(specs, entry.path, True)):
                    continue
                stack.append((entry.path, specs))
                continue
            if not name.lower().endswith(MARKDOWN_SUFFIXES):
                continue
            if specs and _ignored(specs, entry.path, False):
                continue
            # The walk starts at a real path and never enters a linked folder, so only a linked
            # file can have a real path other than its own.
            linked = entry.is_symlink()
            real = os.path.realpath(entry.path) if linked else entry.path
            if linked and not contains(real):
                scan.outside += 1
                continue
            try:
                info = os.stat(real) if linked else entry.stat()
            except OSError:
                file = FoundFile(Path(real), problem="the file cannot be read")
            else:
                if stat.S_ISREG(info.st_mode):
                    file = FoundFile(Path(real), info.st_size, info.st_mtime_ns)
                else:
                    file = FoundFile(Path(real), problem="not a regular file")
            relative = entry.path[prefix:]
            found.append((relative.replace(os.sep, "/") if os.sep != "/" else relative, file))
    found.sort(key=lambda item: item[0])
    scan.found = len(found)
    scan.files = [file for _relative, file in found[:max_files]]
    return scan


def index_one(path: str, max_bytes: int) -> FileIndex | FileProblem:
    """Read and index one file (plain arguments, plain result: safe in any worker)."""
    location = Path(path)
    try:
        info = location.stat()
        text = read_local_markdown(location, info, max_bytes, path)
    except SourceError as exc:
        return FileProblem(path, str(exc))
    except OSError:
        return FileProblem(path, "the file cannot be read")
    return index_text(text, path)


def _index_chunk(paths: list[str], max_bytes: int) -> list[FileIndex | FileProblem]:
    return [index_one(path, max_bytes) for path in paths]


def index_many(
    paths: Iterable[Path],
    max_bytes: int,
    pool: Executor | None,
    *,
    on_broken: Callable[[], None] | None = None,
) -> list[FileIndex | FileProblem]:
    """Index files in order; with a pool, in chunks across its workers.

    A worker process that dies (killed, out of memory) breaks the pool; the files are then indexed
    here instead, so the caller still gets every file, and ``on_broken`` is called so that the
    owner of the pool can replace it (a broken pool stays broken).
    """
    names = [str(path) for path in paths]
    if pool is None or len(names) < POOL_THRESHOLD:
        return [index_one(name, max_bytes) for name in names]
    chunks = [names[start : start + CHUNK] for start in range(0, len(names), CHUNK)]
    results: list[FileIndex | FileProblem] = []
    try:
        for batch in pool.map(_index_chunk, chunks, [max_bytes] * len(chunks)):
            results.extend(batch)
    except BrokenProcessPool:
        if on_broken is not None:
            on_broken()
        return [index_one(name, max_bytes) for name in names]
    return results


def parser_pool(workers: int) -> Executor:
    """Worker processes started by a forkserver that has imported the parser; threads without one."""
    try:
        context = multiprocessing.get_context("forkserver")
    except ValueError:  # no forkserver on this platform
        return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="md-vision-parse")
    context.set_forkserver_preload(["md_vision.folder"])
    return ProcessPoolExecutor(max_workers=workers, mp_context=context)


def _ready() -> bool:
    return True


def warm_up(pool: Executor) -> None:
    """Have the pool start its workers now, without waiting for them to be ready (starting the
    forkserver itself takes a moment: callers run this off the start-up path)."""
    pool.submit(_ready)
