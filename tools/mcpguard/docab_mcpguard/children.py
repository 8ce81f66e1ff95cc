"""Helper processes that cannot outlive their server: md-vision's SVG renders, raster decodes and
folder workers, markfetch's extraction workers, vision-bridge's decodes (each forked by a
``forkserver``).

A server killed, or ended by its client, must not leave a render or an extraction running: every
helper calls :func:`die_with_parent` first, and caps its own memory with :func:`cap_address_space`.
A one-shot helper is run by :func:`run_child`: its one answer, or how it ended, within a deadline
and killed on cancellation.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_PR_SET_NAME, _PR_SET_PDEATHSIG = 15, 1
_PARENT_POLL_S = 0.5
_CANCEL_POLL_S = 0.05


def forkserver_context(preload: list[str]) -> Any:
    """The multiprocessing context helpers are forked from: a forkserver that imports ``preload``
    once (in effect if it is not running yet), so that each helper starts ready; where there is
    no forkserver (Windows), spawn: a fresh interpreter per helper."""
    import multiprocessing

    try:
        context = multiprocessing.get_context("forkserver")
    except ValueError:
        return multiprocessing.get_context("spawn")
    context.set_forkserver_preload(preload)
    return context


class ChildNotStarted(Exception):
    """The helper process could not be started (see ``__cause__``)."""


@dataclass(frozen=True, slots=True)
class ChildOutcome:
    """How a one-shot helper ended: its answer (None if it sent none), its exit code (None if it
    could not be reaped), the seconds waited, and whether the caller cancelled it."""

    answer: bytes | None
    exit_code: int | None
    elapsed: float
    cancelled: bool


def run_child(
    context: Any,
    target: Callable[..., None],
    args: tuple[Any, ...],
    *,
    name: str,
    seconds: float,
    cancelled: threading.Event | None = None,
) -> ChildOutcome:
    """Start ``target(sending_end, *args)`` in a process of ``context`` (a multiprocessing
    context) and wait at most ``seconds`` for the one message it sends on that end; the process
    is killed at the deadline, within 50 ms of ``cancelled`` being set, or once it has answered
    and not exited. Blocks (run it on a thread). :class:`ChildNotStarted` if it cannot start."""
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=target, args=(sending, *args), name=name, daemon=True)
    try:
        child.start()
    except Exception as exc:
        receiving.close()
        sending.close()
        raise ChildNotStarted(name) from exc
    sending.close()  # the child holds the only writer now: its death reads as end of file
    started = time.monotonic()
    answer: bytes | None = None
    try:
        ready = False
        while not ready:
            left = seconds - (time.monotonic() - started)
            if left <= 0 or (cancelled is not None and cancelled.is_set()):
                break
            ready = receiving.poll(min(left, _CANCEL_POLL_S) if cancelled is not None else left)
        if ready:
            with contextlib.suppress(EOFError, OSError):
                answer = receiving.recv_bytes()
        elapsed = time.monotonic() - started
    finally:
        receiving.close()
        if child.is_alive():
            child.kill()
        child.join(5)
        code = child.exitcode
        with contextlib.suppress(ValueError):
            child.close()
    return ChildOutcome(answer, code, elapsed, cancelled is not None and cancelled.is_set())


def die_with_parent(process_name: bytes | None = None, watcher: str = "parent-watch") -> None:
    """Make this process end when its parent does (call first thing in a helper process), named
    ``process_name`` where the system allows (Linux: /proc/PID/comm, 15 bytes).

    Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, then a check that the parent did not die before
    it took effect. Elsewhere: a daemon thread (``watcher``) that exits the process once its
    parent id changes (the process was handed to init)."""
    import signal

    _let_the_forkserver_go()
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if process_name is not None:
                libc.prctl(_PR_SET_NAME, process_name, 0, 0, 0)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # the parent died before the request took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while True:
            time.sleep(_PARENT_POLL_S)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name=watcher, daemon=True).start()


def address_space_now() -> int:
    """This process's mapped bytes (Linux: /proc/self/statm); 0 where unknown."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def cap_address_space(extra_bytes: int) -> bool:
    """Cap this process's address space (``RLIMIT_AS``) at what it maps now plus ``extra_bytes``:
    a helper may grow by that much, whatever it had to import first. False where the size or the
    limit is not available (not Linux): the caller's deadline still applies."""
    try:
        import resource
    except ImportError:
        return False
    mapped = address_space_now()
    if not mapped:
        return False
    cap = mapped + extra_bytes
    try:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (OSError, ValueError):
        return False
    return True


def _let_the_forkserver_go() -> None:
    """In a child of the forkserver, close the child's copy of the forkserver's "alive" pipe.

    The forkserver exits when no process holds that pipe's write end any more; it hands a copy to
    every child it forks, so a child waiting for work (a folder or extraction worker) would keep
    it, and itself, alive after the server died. Without the copy, the forkserver exits with the
    server and its children follow it (``PR_SET_PDEATHSIG``). A child that starts no process of
    its own has no use for the pipe."""
    try:
        from multiprocessing import forkserver

        server = forkserver._forkserver
        if server.get_inherited_fds() is None:  # not a child of a forkserver
            return
        alive = getattr(server, "_forkserver_alive_fd", None)
        if isinstance(alive, int):
            server._forkserver_alive_fd = None  # type: ignore[attr-defined]
            os.close(alive)
    except (ImportError, AttributeError, OSError):
        pass
