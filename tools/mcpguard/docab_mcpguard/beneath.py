"""Open files and folders beneath the allowed roots, with no window between check and use.

Checking a path by name (``realpath``, then ``stat``, then ``open``) leaves a window: between the
check and the open, a folder on the way can be swapped for a symlink to anywhere. Here nothing
is ever opened by a path of more than one component. :func:`open_beneath` opens the root
folder, then each component *relative to the folder opened before it* (``openat``: ``dir_fd``),
with ``O_NOFOLLOW``, so the kernel never follows a link on its own:

- a component that is a symlink fails to open; its target is read through the same folder
  descriptor (``readlinkat``) and walked in its place, relative to that folder, or from the
  root it names when absolute (a target under no root is refused);
- ``..`` is never passed to the kernel: the walk goes back to the folder it came from, and
  refuses to climb above the root.

Every folder on the way is therefore one the walk itself opened beneath a root, whatever is
swapped meanwhile: the worst a race can do is make the open fail or land on another path inside
the roots. What is opened is then stat'ed, read, listed and written through its descriptor
(:class:`Opened`), never again by name. :func:`write_file_in` creates a file the same way: a
temporary file in the held folder, renamed within it.

Trust: the roots themselves (real paths the operator configured) are opened by path.
Platforms without ``dir_fd`` support (Windows) fall back to checking real paths and opening by
name, which is not race-free.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

from docab_mcpguard.errors import PathDenied

MAX_LINKS = 40  # symlinks followed in one walk, as the kernel's own limit

RACE_FREE = (
    os.open in os.supports_dir_fd and os.readlink in os.supports_dir_fd and os.scandir in os.supports_fd
)
"""True where the walk uses ``dir_fd`` (Linux, macOS, the BSDs)."""

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer (the caller then sees it is not a file).
_LEAF_FLAGS = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
# What open(O_NOFOLLOW) says about a symlink: ELOOP (Linux, macOS), EMLINK (FreeBSD); with
# O_DIRECTORY some systems say ENOTDIR first.
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})


class Opened:
    """A file or folder beneath an allowed root, held open by its descriptor.

    ``path`` is its real path (the walk resolved every link), ``info`` its ``fstat``. Use it as a
    context manager, or call :meth:`close`.
    """

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = Path(path)
        self.info = os.fstat(fd)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.info.st_mode)

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.info.st_mode)

    def read(self, limit: int) -> bytes:
        """At most ``limit`` bytes from the start (ask one byte more than allowed to see excess)."""
        chunks: list[bytes] = []
        left = limit
        offset = 0
        while left > 0:
            chunk = os.pread(self.fd, min(left, 1 << 20), offset) if _HAS_PREAD else os.read(self.fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
            offset += len(chunk)
        return b"".join(chunks)

    def entries(self) -> list[os.DirEntry[str]]:
        """The folder's entries (names only; ``is_dir(follow_symlinks=False)`` works on them)."""
        if RACE_FREE:
            with os.scandir(self.fd) as found:
                return list(found)
        with os.scandir(self.path) as found:  # pragma: no cover - Windows
            return list(found)

    def child(self, name: str, *, directory: bool) -> Opened | None:
        """Open entry ``name`` of this folder without following a link; None for a symlink.

        ``directory``: only a folder will do (a file there gives None too). Raises OSError
        when the entry is gone or cannot be opened.
        """
        if not name or name in (".", "..") or "/" in name or os.sep in name:
            raise PathDenied(f"{name!r} is not a single name")
        flags = _DIRECTORY_FLAGS if directory else _LEAF_FLAGS
        if not RACE_FREE:  # pragma: no cover - Windows
            path = os.path.join(self.path, name)
            if os.path.islink(path) or (directory and not os.path.isdir(path)):
                return None
            if directory:
                return _OpenedFolderByName(path)
            return Opened(os.open(path, flags & ~_NOFOLLOW), path)
        try:
            fd = os.open(name, flags, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno in _LINK_ERRNOS:
                return None
            raise
        return Opened(fd, os.path.join(self.path, name))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


class _OpenedFolderByName(Opened):  # pragma: no cover - Windows, where folders cannot be os.open'ed
    def __init__(self, path: str) -> None:
        self.fd = -1
        self.path = Path(path)
        self.info = os.stat(path)


_HAS_PREAD = hasattr(os, "pread")


def _mode_at(folder_fd: int, name: str) -> int:
    """The type of entry ``name`` now (0 when it is gone)."""
    try:
        return os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return 0


def _components(path: str) -> list[str]:
    return [part for part in path.replace(os.sep, "/").split("/") if part]


def split_under(roots: Sequence[tuple[str, str]], path: str) -> tuple[str, list[str]] | None:
    """The root an absolute ``path`` starts with, and the components after it.

    ``roots``: (spelling, real root) pairs; the outermost match wins, so ``..`` inside the path
    may climb as far as any root allows. Compared component by component, never as strings
    (``/docs`` does not contain ``/docs2``).
    """
    parts = _components(path)
    best: tuple[str, list[str]] | None = None
    best_depth = -1
    for spelling, real in roots:
        prefix = _components(spelling)
        if parts[: len(prefix)] == prefix and (best is None or len(prefix) < best_depth):
            best, best_depth = (real, parts[len(prefix) :]), len(prefix)
    return best


def open_beneath(
    roots: Sequence[tuple[str, str]],
    root: str,
    parts: Sequence[str],
    *,
    shown: str,
    refusal: Callable[[str], PathDenied],
) -> Opened:
    """Walk ``parts`` from the real root ``root``; see the module's description.

    Raises :class:`PathDenied` when the walk would leave the roots (``refusal(shown)``, which
    words the message), OSError (ENOENT, EACCES, ENOTDIR, ELOOP for too many links, ...) when a
    component cannot be opened.
    """
    if not RACE_FREE:  # pragma: no cover - Windows
        return _open_by_real_path(roots, os.path.join(root, *parts), shown=shown, refusal=refusal)

    def outside() -> PathDenied:
        return refusal(shown)

    held: list[int] = []  # folder descriptors from the root down to the current folder
    names: list[str] = []  # components below the root of the current folder
    todo: deque[str] = deque(parts)
    links = 0
    current_root = root
    try:
        held.append(os.open(current_root, _DIRECTORY_FLAGS & ~_NOFOLLOW))
        while todo:
            name = todo.popleft()
            if name in ("", "."):
                continue
            if name == "..":
                if not names:
                    raise outside()
                os.close(held.pop())
                names.pop()
                continue
            last = not any(part not in ("", ".") for part in todo)
            try:
                fd = os.open(name, _LEAF_FLAGS if last else _DIRECTORY_FLAGS, dir_fd=held[-1])
            except OSError as exc:
                if exc.errno not in _LINK_ERRNOS:
                    raise
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, "too many levels of symbolic links") from None
                try:
                    target = os.readlink(name, dir_fd=held[-1])
                except OSError as not_link:
                    if not_link.errno != errno.EINVAL:
                        raise
                    if stat.S_ISLNK(exc_mode := _mode_at(held[-1], name)) or (
                        not last and stat.S_ISDIR(exc_mode)
                    ):
                        todo.appendleft(name)  # it changed under us: look again
                        continue
                    raise exc from None  # not a link: a file where a folder was needed
                if os.path.isabs(target):
                    found = split_under(roots, target)
                    if found is None:
                        raise outside() from None
                    current_root, rest = found
                    for fd_ in reversed(held):
                        os.close(fd_)
                    held.clear()
                    names.clear()
                    held.append(os.open(current_root, _DIRECTORY_FLAGS & ~_NOFOLLOW))
                    todo.extendleft(reversed(rest))
                else:
                    todo.extendleft(reversed(_components(target)))
                continue
            held.append(fd)
            names.append(name)
        # The last descriptor is what was asked for (the root itself when nothing was left).
        fd = held.pop()
        return Opened(fd, os.path.join(current_root, *names))
    finally:
        for fd_ in held:
            os.close(fd_)


def _open_by_real_path(  # pragma: no cover - Windows
    roots: Sequence[tuple[str, str]], path: str, *, shown: str, refusal: Callable[[str], PathDenied]
) -> Opened:
    real = os.path.realpath(path)
    if split_under([(r, r) for _s, r in roots], real) is None:
        raise refusal(shown)
    if os.path.isdir(real):
        return _OpenedFolderByName(real)
    return Opened(os.open(real, _LEAF_FLAGS & ~_NOFOLLOW), real)


# The temporary file of a write: ".{name, first 100 characters}.{8 hex digits}.part".
_PART = re.compile(r"\.(?s:.{1,100})\.[0-9a-f]{8}\.part")
STALE_PART_S = 600.0  # a temporary file untouched this long is a leftover (a write takes seconds)
MAX_PART_SCAN = 100_000  # folder entries looked at for leftovers per write


def _part_name(name: str) -> str:
    return f".{name[:100]}.{secrets.token_hex(4)}.part"


def remove_stale_parts(
    folder_fd: int, *, stale_after_s: float = STALE_PART_S, now: float | None = None
) -> int:
    """Remove the temporary files that earlier writes (:func:`write_file_in`) left in the held
    folder when they were killed mid-write; return how many.

    Only entries named exactly as those files are (:data:`_PART`), that are regular files (not
    links, not folders) owned by this process's user, with the owner-only mode they have while
    partial, and not modified for ``stale_after_s`` seconds (a write in progress keeps its file
    fresh) are removed, by name inside the held folder. Anything else is left alone; a failure
    is ignored (the write that called it goes on)."""
    if os.scandir not in os.supports_fd:
        return 0
    now = time.time() if now is None else now
    removed = 0
    uid = os.getuid() if hasattr(os, "getuid") else None
    with contextlib.suppress(OSError), os.scandir(folder_fd) as entries:
        for seen, entry in enumerate(entries):
            if seen >= MAX_PART_SCAN:
                break
            if not _PART.fullmatch(entry.name):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
                if (
                    not stat.S_ISREG(info.st_mode)
                    or stat.S_IMODE(info.st_mode) != 0o600
                    or (uid is not None and info.st_uid != uid)
                    or now - info.st_mtime < stale_after_s
                ):
                    continue
                os.unlink(entry.name, dir_fd=folder_fd)
                removed += 1
            except OSError:
                continue
    return removed


def write_file_in(folder_fd: int, name: str, data: bytes, *, replace: bool) -> int:
    """Create ``name`` in the folder held by ``folder_fd``; return the bytes written.

    The data goes to a new temporary file in that folder (created exclusively, owner-only: 0600,
    while partial; then given the mode any new file gets under the process's umask, as ``open``
    would give it), which is then renamed to ``name`` within the same folder, so a reader never sees half a
    file and nothing is written anywhere else. Without ``replace`` an existing ``name`` (file,
    folder or link) is left alone and FileExistsError raised: the rename is a hard link, which
    fails rather than replaces (where the file system has no hard links, an existence check
    inside the held folder stands in). With ``replace`` a file or link at ``name`` is replaced
    (a link is replaced itself, not followed). Raises OSError on any failure, leaving no
    temporary file behind. A process killed mid-write cannot clean up: the temporary files such
    writes left in this folder are removed first, once stale (:func:`remove_stale_parts`).
    """
    if not name or name in (".", "..") or "/" in name or os.sep in name:
        raise OSError(errno.EINVAL, "not a single file name")
    remove_stale_parts(folder_fd)
    temporary = _part_name(name)
    fd = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=folder_fd
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), 0o666 & ~_umask())
        if replace:
            os.replace(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        else:
            _rename_no_replace(folder_fd, temporary, name)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=folder_fd)
    return len(data)


def _umask() -> int:
    """The process's umask, read without changing it (``os.umask`` sets it, racing other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _rename_no_replace(folder_fd: int, temporary: str, name: str) -> None:
    try:
        os.link(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        # No hard links here (FAT, some network shares): check, then rename, inside the held folder.
        try:
            os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            return
        raise FileExistsError(errno.EEXIST, "the file exists", name) from None
