"""Render an SVG in a child process that cannot take the server down, and helpers that die with
their parent.

resvg runs native code while holding the GIL: a deep tree overflows its stack (SIGSEGV), and a
costly filter or a huge drawing keeps it busy for minutes with memory to match. So each render
runs in a process of its own, forked by the forkserver the folder parsers use (it has imported
resvg already, so a render starts in milliseconds), under limits set in the child before it
renders: CPU time (``RLIMIT_CPU``), address space (``RLIMIT_AS``) and a wall deadline, at which the
server kills it. A child that crashes, runs out of time or memory costs one image: the caller gets
:class:`~md_vision.errors.ImageRejected` with a one-line reason, and the server carries on.

Every helper process dies with its parent (:func:`die_with_parent`): on Linux the kernel sends it
SIGKILL when its parent exits (``PR_SET_PDEATHSIG``), elsewhere a thread watches the parent's id.
The forkserver itself exits when the server's end of its "alive" pipe closes, which the kernel
does however the server ends (SIGKILL included); its children then follow.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from docab_mcpguard import children
from md_vision.errors import ImageRejected

# What the forkserver imports once, so that each folder worker and each render starts ready (a
# render whose child imports Pillow and resvg itself takes 0.3 s instead of 15 ms).
PRELOAD = ["md_vision.folder", "md_vision.sandbox", "resvg_py"]
_OK, _FAILED = b"\x00", b"\x01"  # first byte of the child's answer
_EXIT_CODE_LIMIT = 3  # the child's own exit when it cannot set its limits


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """What one SVG render may cost: wall and CPU seconds, and memory beyond what the child
    already maps when it starts (its address space, ``RLIMIT_AS``)."""

    seconds: float = 10.0
    memory_bytes: int = 1 << 30


def die_with_parent() -> None:
    """Make this process end when its parent does (call first thing in a helper process): see
    :func:`docab_mcpguard.children.die_with_parent`."""
    children.die_with_parent(watcher="md-vision-parent-watch")


def _limit_self(limits: RenderLimits) -> None:
    import resource

    cpu = max(1, math.ceil(limits.seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU, then SIGKILL a second later
    mapped = children.address_space_now()
    if mapped:  # where the size is unknown (not Linux), the wall deadline still applies
        cap = mapped + limits.memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _render_child(conn: Connection, svg: str, width: int, height: int, limits: RenderLimits) -> None:
    """The child: die with the forkserver, silence stderr (a failed allocation in native code
    prints a line before it aborts), set its limits, render, send the PNG back. Ctrl-C is the
    server's to handle (a forkserver started on the first render, from a worker thread, could
    not be made deaf to it as the server's start makes it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
    try:
        _limit_self(limits)
    except (OSError, ValueError):
        os._exit(_EXIT_CODE_LIMIT)
    import resvg_py

    try:
        png = bytes(resvg_py.svg_to_bytes(svg_string=svg, width=width, height=height))
    except MemoryError:
        conn.send_bytes(_FAILED + b"memory")
        return
    except Exception:
        conn.send_bytes(_FAILED + b"render")
        return
    conn.send_bytes(_OK + png)


def _context() -> Any:
    try:
        context = multiprocessing.get_context("forkserver")
    except ValueError:  # no forkserver (Windows): a fresh interpreter per render
        return multiprocessing.get_context("spawn")
    context.set_forkserver_preload(PRELOAD)  # in effect if the forkserver is not running yet
    return context


_CANCEL_POLL_S = 0.05


def render_isolated(
    svg: str,
    width: int,
    height: int,
    limits: RenderLimits | None = None,
    *,
    cancelled: threading.Event | None = None,
) -> bytes:
    """PNG bytes of ``svg`` rendered at ``width`` x ``height`` by resvg in a child process under
    ``limits``; raises :class:`ImageRejected` (one line) when it fails, crashes or overruns. Once
    ``cancelled`` is set (the call was cancelled), the child is killed within 50 ms."""
    limits = limits or RenderLimits()
    context = _context()
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(
        target=_render_child, args=(sending, svg, width, height, limits), name="md-vision-svg", daemon=True
    )
    try:
        child.start()
    except Exception as exc:
        receiving.close()
        sending.close()
        raise ImageRejected("the SVG renderer could not be started") from exc
    sending.close()  # the child holds the only writer now: its death reads as end of file
    started = time.monotonic()
    try:
        answer: bytes | None = None
        ready = False
        while not ready:
            left = limits.seconds - (time.monotonic() - started)
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
    if answer is None and cancelled is not None and cancelled.is_set():
        raise ImageRejected("the call was cancelled while the SVG was rendered")
    if answer is not None:
        if answer[:1] == _OK:
            return answer[1:]
        if answer[1:] == b"memory":
            raise ImageRejected(_over_memory(limits))
        raise ImageRejected("the SVG could not be rendered")
    if code is None or elapsed >= limits.seconds or code in (-signal.SIGXCPU, -signal.SIGKILL):
        raise ImageRejected(f"rendering the SVG took longer than the {limits.seconds:g} s limit")
    if code in (-signal.SIGABRT, -signal.SIGSEGV) or code == _EXIT_CODE_LIMIT:
        # SIGABRT: native code could not allocate under the memory limit (or gave up otherwise).
        reason = "it ran out of memory or crashed" if code == -signal.SIGABRT else "it crashed"
        raise ImageRejected(f"the SVG renderer stopped ({reason}); the image is skipped")
    raise ImageRejected("the SVG renderer stopped unexpectedly; the image is skipped")


def _over_memory(limits: RenderLimits) -> str:
    return f"rendering the SVG needed more than the {limits.memory_bytes // 1_000_000:,} MB memory limit"
