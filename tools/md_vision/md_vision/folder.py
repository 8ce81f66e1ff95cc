"""Find the markdown files of a folder and index many of them fast.

The walk skips hidden files and folders, ``node_modules`` and whatever the folder's
``.gitignore`` files exclude (nested ones apply to their subtree, later rules win, ``!`` negates),
matches ``.md``/``.markdown`` case-insensitively, and goes by descriptor: each subfolder is
opened relative to its parent without following links (no loops, and a folder swapped for a
link mid-walk is not entered), a linked file is opened beneath the allowed roots, and every file
is read by opening it again beneath the roots (:meth:`docab_mcpguard.PathPolicy.open`). Files come back in sorted order, each with
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

import contextlib
import multiprocessing
import os
import signal
import stat
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from docab_mcpguard import Opened, PathDenied, PathPolicy
from md_vision.index import FileIndex, FileProblem, index_text
from md_vision.sandbox import PRELOAD, die_with_parent
from md_vision.sources import MARKDOWN_SUFFIXES, SourceError, read_local_markdown

SKIPPED_DIRS = frozenset({"node_modules"})
MAX_WALK_ENTRIES = 500_000  # a walk over a whole disk stops here instead of running for minutes
POOL_THRESHOLD = 16  # below this many files to parse, one thread does it
CHUNK = 8  # files per task sent to a worker
IN_FLIGHT = 8  # chunks handed to the pool at once: what is left to finish after a cancel
CANCEL_POLL_S = 0.05  # how often a wait for a worker looks at the cancel flag
MAX_DEPTH = 256  # folder levels walked (each holds a descriptor while its subfolders are visited)
MAX_GITIGNORE_BYTES = 1_000_000


@dataclass(frozen=True, slots=True)
class FoundFile:
    path: Path  # real path when the walk saw it (it is opened again, beneath the roots, to be read)
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


class IndexCancelled(Exception):
    """The caller gave up on this index (its request was cancelled); the work stopped."""


def _check(cancelled: threading.Event | None) -> None:
    if cancelled is not None and cancelled.is_set():
        raise IndexCancelled


def _load_gitignore(folder: Opened) -> pathspec.GitIgnoreSpec | None:
    try:
        opened = folder.child(".gitignore", directory=False)
    except OSError:
        return None
    if opened is None:  # a link: not followed
        return None
    with opened:
        if not opened.is_file:  # a FIFO would block, a folder is nothing to read
            return None
        try:
            data = opened.read(MAX_GITIGNORE_BYTES)
        except OSError:
            return None
    spec = pathspec.GitIgnoreSpec.from_lines(data.decode("utf-8", errors="replace").splitlines())
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


@dataclass
class _Level:
    """A folder the walk holds open, and the subfolders of it still to visit."""

    folder: Opened
    specs: list[tuple[str, pathspec.GitIgnoreSpec]]
    subfolders: list[str]


def scan_folder(
    root: Opened, policy: PathPolicy, max_files: int, *, cancelled: threading.Event | None = None
) -> FolderScan:
    """Walk the opened folder ``root`` by descriptor; files are judged beneath ``policy``'s roots.

    Subfolders are opened relative to the folder holding them, never following a link, so a
    folder swapped for a link during the walk is skipped, not entered. A linked file is opened
    beneath the roots (a link leading outside is counted in ``outside`` and skipped). Raises
    :class:`IndexCancelled` once ``cancelled`` is set.
    """
    scan = FolderScan()
    found: list[tuple[str, FoundFile]] = []
    root_path = str(root.path)
    prefix = len(os.path.join(root_path, ""))  # entry paths start with the root and a separator
    visited = 0
    levels: list[_Level] = []

    def enter(folder: Opened, inherited: list[tuple[str, pathspec.GitIgnoreSpec]]) -> None:
        nonlocal visited
        folder_path = str(folder.path)
        own = _load_gitignore(folder)
        specs = [*inherited, (folder_path, own)] if own is not None else inherited
        subfolders: list[str] = []
        try:
            entries = folder.entries()
        except OSError:
            entries = []
        for entry in entries:
            visited += 1
            if visited % 512 == 0:
                _check(cancelled)
            if visited > MAX_WALK_ENTRIES:
                scan.walk_truncated = True
                break
            name = entry.name
            if name.startswith("."):
                continue
            path = os.path.join(folder_path, name)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if name not in SKIPPED_DIRS and not (specs and _ignored(specs, path, True)):
                    subfolders.append(name)
                continue
            if not name.lower().endswith(MARKDOWN_SUFFIXES) or (specs and _ignored(specs, path, False)):
                continue
            file = _found_file(folder, entry, path, policy)
            if file is None:
                scan.outside += 1
                continue
            relative = path[prefix:]
            found.append((relative.replace(os.sep, "/") if os.sep != "/" else relative, file))
        levels.append(_Level(folder, specs, subfolders))

    try:
        enter(root, [])
        while levels and not scan.walk_truncated:
            level = levels[-1]
            if not level.subfolders or len(levels) > MAX_DEPTH:
                if level.folder is not root:
                    level.folder.close()
                levels.pop()
                continue
            name = level.subfolders.pop()
            try:
                child = level.folder.child(name, directory=True)
            except OSError:
                continue
            if child is not None:  # None: it became a link meanwhile; not followed
                enter(child, level.specs)
    finally:
        for level in levels:
            if level.folder is not root:
                level.folder.close()
    found.sort(key=lambda item: item[0])
    scan.found = len(found)
    scan.files = [file for _relative, file in found[:max_files]]
    return scan


def iter_markdown_files(
    root: Opened, policy: PathPolicy, after: Sequence[str] = ()
) -> Generator[tuple[str, FoundFile], None, None]:
    """The markdown files under the opened folder ``root``, lazily, as (relative path, file): the
    same files :func:`scan_folder` finds (hidden, ``node_modules``, ``.gitignore``d and linked-out
    entries skipped), in depth-first order with each folder's entries sorted by name.

    ``after``: the components of a relative path already given (a page's last file); the walk
    resumes after it, descending only into the folders on its way, so a page costs about its own
    files, not the whole tree. Close the iterator when done with it (it holds folders open).
    """
    visited = 0

    def walk(
        folder: Opened,
        prefix: tuple[str, ...],
        inherited: list[tuple[str, pathspec.GitIgnoreSpec]],
        after: tuple[str, ...],
    ) -> Iterator[tuple[str, FoundFile]]:
        nonlocal visited
        folder_path = str(folder.path)
        own = _load_gitignore(folder)
        specs = [*inherited, (folder_path, own)] if own is not None else inherited
        try:
            entries = sorted(folder.entries(), key=lambda entry: entry.name)
        except OSError:
            return
        for entry in entries:
            visited += 1
            if visited > MAX_WALK_ENTRIES:
                return
            name = entry.name
            rest: tuple[str, ...] = ()
            if after:
                if name < after[0] or (name == after[0] and len(after) == 1):
                    continue
                if name == after[0]:
                    rest = after[1:]
            if name.startswith("."):
                continue
            path = os.path.join(folder_path, name)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if (
                    name in SKIPPED_DIRS
                    or (specs and _ignored(specs, path, True))
                    or len(prefix) >= MAX_DEPTH
                ):
                    continue
                try:
                    child = folder.child(name, directory=True)
                except OSError:
                    continue
                if child is None:  # it became a link meanwhile; not followed
                    continue
                with child:
                    yield from walk(child, (*prefix, name), specs, rest)
                continue
            if (
                rest
                or not name.lower().endswith(MARKDOWN_SUFFIXES)
                or (specs and _ignored(specs, path, False))
            ):
                continue
            file = _found_file(folder, entry, path, policy)
            if file is not None and file.problem is None:
                yield "/".join((*prefix, name)), file

    yield from walk(root, (), [], tuple(after))


def _found_file(folder: Opened, entry: os.DirEntry[str], path: str, policy: PathPolicy) -> FoundFile | None:
    """The file an entry is, with the size and time the walk saw; None for a link leading outside."""
    if entry.is_symlink():
        try:
            with policy.open(path) as opened:  # a link is followed only beneath the roots
                info = opened.info
                real = str(opened.path)
        except PathDenied:
            return None
        except OSError:  # named by where the link points (a name for the message, never opened)
            return FoundFile(Path(os.path.realpath(path)), problem="the file cannot be read")
    else:
        real = path
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            return FoundFile(Path(path), problem="the file cannot be read")
    if not stat.S_ISREG(info.st_mode):
        return FoundFile(Path(real), problem="not a regular file")
    return FoundFile(Path(real), info.st_size, info.st_mtime_ns)


def index_one(path: str, max_bytes: int, policy: PathPolicy) -> FileIndex | FileProblem:
    """Open (beneath ``policy``'s roots), read and index one file; plain arguments and result,
    safe in any worker."""
    try:
        with policy.open(path) as opened:
            text = read_local_markdown(opened, max_bytes, path)
    except PathDenied:
        return FileProblem(path, "the path now leads outside the allowed paths")
    except SourceError as exc:
        return FileProblem(path, str(exc))
    except OSError:
        return FileProblem(path, "the file cannot be read")
    return index_text(text, path)


def _index_chunk(paths: list[str], max_bytes: int, policy: PathPolicy) -> list[FileIndex | FileProblem]:
    return [index_one(path, max_bytes, policy) for path in paths]


def index_many(
    paths: Iterable[Path],
    max_bytes: int,
    pool: Executor | None,
    *,
    policy: PathPolicy,
    on_broken: Callable[[], None] | None = None,
    cancelled: threading.Event | None = None,
) -> list[FileIndex | FileProblem]:
    """Index files in order; with a pool, in chunks across its workers.

    At most :data:`IN_FLIGHT` chunks are handed to the pool at a time, so that when
    ``cancelled`` is set (the request was cancelled) the workers stop after the chunks they
    hold, and :class:`IndexCancelled` is raised.

    A worker process that dies (killed, out of memory) breaks the pool; the files are then indexed
    here instead, so the caller still gets every file, and ``on_broken`` is called so that the
    owner of the pool can replace it (a broken pool stays broken).
    """
    names = [str(path) for path in paths]

    def here() -> list[FileIndex | FileProblem]:
        results = []
        for name in names:
            _check(cancelled)
            results.append(index_one(name, max_bytes, policy))
        return results

    if pool is None or len(names) < POOL_THRESHOLD:
        return here()
    chunks = deque(names[start : start + CHUNK] for start in range(0, len(names), CHUNK))
    pending: deque[Future[list[FileIndex | FileProblem]]] = deque()
    results: list[FileIndex | FileProblem] = []
    try:
        while chunks or pending:
            while chunks and len(pending) < IN_FLIGHT:
                pending.append(pool.submit(_index_chunk, chunks.popleft(), max_bytes, policy))
            head = pending[0]
            while True:
                try:
                    batch = head.result(timeout=CANCEL_POLL_S)
                    break
                except TimeoutError:
                    if cancelled is not None and cancelled.is_set():
                        for future in pending:
                            future.cancel()
                        raise IndexCancelled from None
            pending.popleft()
            results.extend(batch)
            _check(cancelled)
    except BrokenProcessPool:
        if on_broken is not None:
            on_broken()
        return here()
    except IndexCancelled:
        for future in pending:
            future.cancel()
        raise
    return results


def parser_pool(workers: int) -> Executor:
    """Worker processes started by a forkserver that has imported the parser; threads without one.

    Each worker dies with the forkserver (:func:`md_vision.sandbox.die_with_parent`), and the
    forkserver with the server: a server that dies, even by SIGKILL, leaves no worker behind
    (a worker would otherwise wait on its task queue for ever)."""
    try:
        context = multiprocessing.get_context("forkserver")
    except ValueError:  # no forkserver on this platform
        return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="md-vision-parse")
    context.set_forkserver_preload(PRELOAD)
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=die_with_parent)


def start_forkserver_deaf_to_ctrl_c() -> None:
    """Start the forkserver now, from the main thread, with Ctrl-C ignored (call before serving).

    Ctrl-C at a terminal reaches the whole process group. The server handles it and stops its
    workers; the forkserver (still importing the parser, say) and the workers must not also
    raise KeyboardInterrupt and print tracebacks of their own. An ignored signal stays ignored
    across fork and exec, and the forkserver hands its dispositions on to every worker it forks,
    so each of them ignores Ctrl-C from its first instruction. (Only the main thread may change
    a signal's disposition: hence now, before the event loop starts.)
    """
    try:
        multiprocessing.get_context("forkserver").set_forkserver_preload(PRELOAD)
    except ValueError:  # no forkserver on this platform: workers are threads
        return
    from multiprocessing import forkserver

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()  # spawns it (and the resource tracker) and returns
    finally:
        signal.signal(signal.SIGINT, previous)


def _ready() -> bool:
    return True


def warm_up(pool: Executor) -> None:
    """Have the pool start its workers now, without waiting for them to be ready (starting the
    forkserver itself takes a moment: callers run this off the start-up path)."""
    with contextlib.suppress(RuntimeError):  # the server is already shutting the pool down
        pool.submit(_ready)
