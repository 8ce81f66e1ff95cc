"""Render an SVG in a child process that cannot take the server down, and helpers that die with
their parent.

resvg runs native code while holding the GIL: a deep tree overflows its stack (SIGSEGV), and a
costly filter or a huge drawing keeps it busy for minutes with memory to match. So each render
runs in a process of its own, forked by the forkserver the folder parsers use (it has imported
resvg already, so a render starts in milliseconds), under limits set in the child before it
renders: CPU time (``RLIMIT_CPU``), address space (``RLIMIT_AS``) and a wall deadline, at which the
server kills it. A child that crashes, runs out of time or memory costs one image: the caller gets
:class:`~md_vision.errors.ImageRejected` with a one-line reason, and the server carries on.

Raster images of more than 4 MP are prepared the same way (:func:`decode_isolated`, from
:func:`md_vision.reading.decode_in_child`): a 2 KB WebP within the pixel cap can decode to 750 MB.

Every helper process dies with its parent (:func:`die_with_parent`): on Linux the kernel sends it
SIGKILL when its parent exits (``PR_SET_PDEATHSIG``), elsewhere a thread watches the parent's id.
The forkserver itself exits when the server's end of its "alive" pipe closes, which the kernel
does however the server ends (SIGKILL included); its children then follow.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from docab_mcpguard import children
from md_vision.errors import ImageRejected

# What the forkserver imports once, so that each folder worker, render and decode starts ready
# (a render whose child imports Pillow and resvg itself takes 0.3 s instead of 15 ms).
PRELOAD = ["md_vision.folder", "md_vision.sandbox", "md_vision.reading", "resvg_py"]
_OK, _FAILED = b"\x00", b"\x01"  # first byte of the child's answer
_REASON = b"\x02"  # after _FAILED: the work's own reason follows
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


def _child(conn: Connection, limits: RenderLimits, work: Callable[[], bytes]) -> None:
    """The child: die with the forkserver, silence stderr (a failed allocation in native code
    prints a line before it aborts), set its limits, do ``work``, send its bytes back. Ctrl-C is
    the server's to handle (a forkserver started on the first render, from a worker thread, could
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
    try:
        answer = work()
    except MemoryError:
        conn.send_bytes(_FAILED + b"memory")
        return
    except ImageRejected as exc:  # the work's own one-line reason
        conn.send_bytes(_FAILED + _REASON + str(exc).encode("utf-8", "replace")[:1000])
        return
    except Exception:
        conn.send_bytes(_FAILED + b"failed")
        return
    conn.send_bytes(_OK + answer)


def _render(svg: str, width: int, height: int) -> bytes:
    import resvg_py

    return bytes(resvg_py.svg_to_bytes(svg_string=svg, width=width, height=height))


def _context() -> Any:
    return children.forkserver_context(PRELOAD)


@dataclass(frozen=True, slots=True)
class _Words:
    """How a child's failures are told: ``doing`` (e.g. "rendering the SVG"), ``worker`` (e.g.
    "the SVG renderer"), ``failed`` (its answer when the work raised) and ``cancelled``."""

    doing: str
    worker: str
    failed: str
    cancelled: str
    setting: str  # the flag that raises its memory cap


_SVG = _Words(
    "rendering the SVG",
    "the SVG renderer",
    "the SVG could not be rendered",
    "the call was cancelled while the SVG was rendered",
    "--svg-memory-mb",
)
_DECODE = _Words(
    "decoding the image",
    "the image decoder",
    "the image data is corrupt or truncated and could not be decoded",
    "the call was cancelled while the image was decoded",
    "--decode-memory-mb",
)


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
    work = functools.partial(_render, svg, width, height)
    return run_isolated(work, limits or RenderLimits(), _SVG, cancelled=cancelled, name="md-vision-svg")


def decode_isolated(
    work: Callable[[], bytes], limits: RenderLimits, *, cancelled: threading.Event | None = None
) -> bytes:
    """``work()`` (a picklable call that decodes an image and answers bytes) in a child process
    under ``limits``, as :func:`render_isolated` renders; an :class:`ImageRejected` it raises
    comes back with its own reason."""
    return run_isolated(work, limits, _DECODE, cancelled=cancelled, name="md-vision-decode")


def run_isolated(
    work: Callable[[], bytes],
    limits: RenderLimits,
    words: _Words,
    *,
    cancelled: threading.Event | None = None,
    name: str,
) -> bytes:
    """The bytes ``work()`` answers in a child process forked by the forkserver under ``limits``."""
    try:
        outcome = children.run_child(
            _context(), _child, (limits, work), name=name, seconds=limits.seconds, cancelled=cancelled
        )
    except children.ChildNotStarted as exc:
        raise ImageRejected(f"{words.worker} could not be started") from exc
    answer, code, elapsed = outcome.answer, outcome.exit_code, outcome.elapsed
    if answer is None and outcome.cancelled:
        raise ImageRejected(words.cancelled)
    if answer is not None:
        if answer[:1] == _OK:
            return answer[1:]
        if answer[1:] == b"memory":
            raise ImageRejected(_over_memory(limits, words))
        if answer[1:2] == _REASON:
            raise ImageRejected(answer[2:].decode("utf-8", "replace"))
        raise ImageRejected(words.failed)
    if code is None or elapsed >= limits.seconds or code in (-signal.SIGXCPU, -signal.SIGKILL):
        raise ImageRejected(f"{words.doing} took longer than the {limits.seconds:g} s limit")
    if code in (-signal.SIGABRT, -signal.SIGSEGV) or code == _EXIT_CODE_LIMIT:
        # SIGABRT: native code could not allocate under the memory limit (or gave up otherwise).
        reason = "it ran out of memory or crashed" if code == -signal.SIGABRT else "it crashed"
        raise ImageRejected(f"{words.worker} stopped ({reason}); the image is skipped")
    raise ImageRejected(f"{words.worker} stopped unexpectedly; the image is skipped")


def _over_memory(limits: RenderLimits, words: _Words) -> str:
    return (
        f"{words.doing} needed more than the {limits.memory_bytes // 1_000_000:,} MB memory limit; "
        f"raise {words.setting} to read it"
    )
