"""One writer per run folder: ``run.lock``, held for the whole run.

The lock is an ``flock`` on ``<run folder>/run.lock``; the file holds a record of its holder (pid,
host, since when, the command, the temporary folders it made). The kernel drops the ``flock`` when
its holder exits, however it exits, so a record whose lock is free was left by a process that
stopped: by a finished run (the record says ``released_at``) or by a killed one (it does not; the
next start takes the folder over and removes the temporary workspaces the record lists).

A record from another host needs care: on a shared filesystem that does not pass locks between
hosts, the lock looks free while that host's run is alive. The holder refreshes the file's
modification time every ``HEARTBEAT_S`` seconds; a record from another host counts as stale only
after ``STALE_AFTER_S`` seconds without one (hosts' clocks are assumed to agree within minutes).

:func:`decide` is the whole decision, pure (a :class:`LockState` in, a :class:`Verdict` out);
:class:`RunLock` reads the state and acts on the verdict. The file is never deleted or replaced (a
new inode would let two holders lock two files), only rewritten in place.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import shutil
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from docab.errors import RunError

LOCK_FILE = "run.lock"
HEARTBEAT_S = 30.0  # how often a holder refreshes the lock file's modification time
STALE_AFTER_S = 300.0  # a record from another host without a heartbeat for this long is stale
SCRATCH_PREFIX = "docab-"  # the temporary folders a record may list (only such are removed)
PEEK_RETRIES = 20  # a failed LOCK_EX may be another start peeking (LOCK_SH for microseconds)


class RunBusy(RunError):
    """The run folder is being written by another process; the message names it."""


class LockRecord(BaseModel):
    """Who holds (or last held) a run folder's lock."""

    model_config = ConfigDict(extra="allow", frozen=True)

    pid: int
    host: str
    since: str  # ISO 8601 UTC
    command: tuple[str, ...] = ()
    scratch: tuple[str, ...] = ()  # temporary folders the holder made (its workspaces)
    released_at: str | None = None  # set by a holder that finished; None: still running, or killed

    def describe(self) -> str:
        """``pid 123 on host h since 2026-01-01T00:00:00+00:00``"""
        return f"pid {self.pid} on host {self.host or '?'} since {self.since or '?'}"


@dataclass(frozen=True)
class LockState:
    """What a starting process sees: is the ``flock`` free, the record, and the seconds since the
    holder's last heartbeat (the file's modification time)."""

    free: bool
    record: LockRecord | None
    age_s: float | None = None


Action = Literal["take", "take_over", "busy"]


@dataclass(frozen=True)
class Verdict:
    action: Action
    holder: LockRecord | None = None  # the live holder (busy) or the stopped one (take_over)
    why: str = ""  # for busy and take_over: the clause a message builds on


def decide(state: LockState, *, host: str, stale_after_s: float = STALE_AFTER_S) -> Verdict:
    """Take the lock, take it over from a stopped holder, or leave it to a live one (pure)."""
    record = state.record
    if not state.free:
        return Verdict("busy", record)
    if record is None or record.released_at is not None:
        return Verdict("take", record)
    if record.host == host:  # the kernel dropped the flock: the holder on this host has stopped
        return Verdict("take_over", record, "it stopped without releasing the folder (killed?)")
    age = state.age_s
    if age is not None and age > stale_after_s:
        return Verdict(
            "take_over",
            record,
            f"no heartbeat from host {record.host} for {age:.0f} s (more than {stale_after_s:.0f} s)",
        )
    seen = f"{age:.0f} s ago" if age is not None else "at an unknown time"
    return Verdict(
        "busy",
        record,
        f"this host cannot check a process on host {record.host}, last seen {seen}; it counts as "
        f"stopped after {stale_after_s:.0f} s without a heartbeat",
    )


def busy_message(folder: Path, verdict: Verdict, *, waiting: bool = False) -> str:
    """One sentence naming the holder and what to do (or that this process waits for it)."""
    holder = verdict.holder
    who = "another docab process"
    if holder is not None:
        command = f", {' '.join(holder.command)}" if holder.command else ""
        who += f" ({holder.describe()}{command})"
    why = f"; {verdict.why}" if verdict.why else ""
    then = (
        "waiting for it to finish (--wait)"
        if waiting
        else "wait for it to finish, or add --wait to start when it does"
    )
    return f"{folder} is being written by {who}{why}: {then}"


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _parse(data: bytes) -> LockRecord | None:
    try:
        return LockRecord.model_validate(json.loads(data.decode("utf-8")))
    except (ValueError, ValidationError):
        return None  # empty (being written) or not a record


class RunLock:
    """The lock of one run folder: :meth:`peek` (reads only), :meth:`acquire`, :meth:`release`."""

    def __init__(
        self,
        folder: Path,
        *,
        host: str | None = None,
        pid: int | None = None,
        command: Sequence[str] | None = None,
        clock: Callable[[], float] = time.time,
        heartbeat_s: float = HEARTBEAT_S,
        stale_after_s: float = STALE_AFTER_S,
        poll_s: float = 0.5,
    ) -> None:
        self.folder = folder
        self.path = folder / LOCK_FILE
        self.host = platform.node() if host is None else host
        self.pid = os.getpid() if pid is None else pid
        self.command = tuple(sys.argv if command is None else command)
        self.clock = clock
        self.heartbeat_s = heartbeat_s
        self.stale_after_s = stale_after_s
        self.poll_s = poll_s
        self._fd: int | None = None
        self._record: LockRecord | None = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    # -- reading ----------------------------------------------------------------------------
    def _read(self, fd: int) -> tuple[LockRecord | None, float | None]:
        data = os.pread(fd, 1 << 16, 0)
        age = max(0.0, self.clock() - os.fstat(fd).st_mtime)
        return _parse(data), age

    def _decide(self, state: LockState) -> Verdict:
        return decide(state, host=self.host, stale_after_s=self.stale_after_s)

    def peek(self) -> Verdict:
        """The verdict a start would get now, creating nothing (no folder, no lock file)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:  # no lock file (or no folder): nobody holds it; acquire() reports the rest
            return Verdict("take")
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                free = True
                fcntl.flock(fd, fcntl.LOCK_UN)
            except BlockingIOError:
                free = False
            record, age = self._read(fd)
        finally:
            os.close(fd)
        return self._decide(LockState(free, record, age))

    def wait_while_busy(self, *, wait: bool, say: Callable[[str], None]) -> Verdict:
        """:meth:`peek` until the folder is not busy (``wait``), or raise :class:`RunBusy` naming
        the holder."""
        verdict = self.peek()
        if verdict.action == "busy" and not wait:
            raise RunBusy(busy_message(self.folder, verdict))
        if verdict.action == "busy":
            say(busy_message(self.folder, verdict, waiting=True))
        while verdict.action == "busy":
            time.sleep(self.poll_s)
            verdict = self.peek()
        return verdict

    # -- holding ----------------------------------------------------------------------------
    def acquire(self, *, wait: bool = False, say: Callable[[str], None] = print) -> Verdict:
        """Hold the lock (creating the folder and the lock file), waiting for a live holder with
        ``wait``, else raising :class:`RunBusy`. Returns ``take`` or ``take_over`` (with the stopped
        holder's record: :func:`remove_scratch` cleans up after it)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        said = False
        try:
            while True:
                verdict = self._try(fd)
                if verdict.action != "busy":
                    break
                if not wait:
                    raise RunBusy(busy_message(self.folder, verdict))
                if not said:
                    say(busy_message(self.folder, verdict, waiting=True))
                    said = True
                time.sleep(self.poll_s)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._record = LockRecord(pid=self.pid, host=self.host, since=_utc_now(), command=self.command)
        self._write()
        self._stop.clear()
        self._beat = threading.Thread(target=self._heartbeat, name="docab-lock", daemon=True)
        self._beat.start()
        return verdict

    def _try(self, fd: int) -> Verdict:
        for attempt in range(PEEK_RETRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if attempt + 1 < PEEK_RETRIES:
                    time.sleep(0.05)
                continue
            record, age = self._read(fd)
            verdict = self._decide(LockState(True, record, age))
            if verdict.action == "busy":  # a record from another host that may be alive
                fcntl.flock(fd, fcntl.LOCK_UN)
            return verdict
        record, age = self._read(fd)
        return self._decide(LockState(False, record, age))

    def _write(self) -> None:
        assert self._fd is not None and self._record is not None
        data = json.dumps(self._record.model_dump(mode="json"), indent=2).encode() + b"\n"
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            fd = self._fd
            if fd is None:
                return
            with contextlib.suppress(OSError):  # a heartbeat missed; the next one may pass
                os.utime(fd)

    def add_scratch(self, path: Path) -> None:
        """Record a temporary folder this run made, so that a start after a kill removes it."""
        if self._record is None:
            return
        self._record = self._record.model_copy(update={"scratch": (*self._record.scratch, str(path))})
        self._write()

    def release(self) -> None:
        """Mark the record released and drop the lock (the file stays)."""
        fd, self._fd = self._fd, None
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
            self._beat = None
        if fd is None:
            return
        try:
            if self._record is not None:
                self._fd = fd
                self._record = self._record.model_copy(update={"released_at": _utc_now(), "scratch": ()})
                self._write()
        except OSError:
            pass  # the flock is dropped below anyway; the record then reads as a killed run's
        finally:
            self._fd = None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None


def remove_scratch(record: LockRecord, *, host: str) -> list[str]:
    """Remove the temporary folders a stopped holder on this host listed; returns those removed.

    Only absolute folders named ``docab-...`` are touched, never through a symlink; folders of a
    holder on another host are on that host's disk and are left alone."""
    removed: list[str] = []
    if record.host != host:
        return removed
    for text in record.scratch:
        path = Path(text)
        if not path.is_absolute() or not path.name.startswith(SCRATCH_PREFIX):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(text)
    return removed
