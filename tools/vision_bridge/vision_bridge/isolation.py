"""Decode images in child processes that the server can kill, under a memory cap and a deadline.

Within the pixel cap, an image can still take gigabytes and minutes to decode: a 10,000 x 10,000
16-bit TIFF, a CMYK JPEG converted to RGB, a LANCZOS resize of either (a red-team measured 1.2 to
2.7 GB per image), in native code that holds the GIL, on a thread ``VISION_TIMEOUT`` cannot stop,
and compare_images decoded its four images at once. So every image that must be decoded
(:func:`vision_bridge.prepare.reencode`), and every file over 256 KB even to be checked, is
handled in a process of its own, forked by a
forkserver that has imported Pillow (a child starts in milliseconds), under limits it sets on
itself before it reads a byte: an address-space cap (``VISION_DECODE_MEMORY_MB`` beyond what it
maps at start, ``RLIMIT_AS``) and a CPU-time cap, with the call's remaining time as a wall
deadline at which the server kills it; a cancelled call kills it within 50 ms. At most
:attr:`DecodeLimits.workers` children run at once, so the server's memory is bounded by
``workers`` x the cap, whatever the calls in flight. A child that fails costs its image only: the
call gets a one-line error, the server carries on.

A small file (:data:`IN_SERVER_CHECK_BYTES`) that is sent as it came
(:func:`vision_bridge.prepare.sent_as_is`: headers and checksums, no pixels) is checked here, in
the server, without a child.

The child's answer is a small header and the encoded bytes, never a pickle: a decoder subverted
by a hostile file could otherwise hand the server code to run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from docab_mcpguard import children
from vision_bridge.config import DEFAULT_DECODE_MEMORY_MB
from vision_bridge.errors import DecodeMemoryError, ErrorCause, VisionError, input_error
from vision_bridge.inputs import ImageBytes
from vision_bridge.prepare import ImageLimits, PreparedImage, failure_under_cap, prepare_image, sent_as_is

IN_SERVER_CHECK_BYTES = 256 * 1024
"""Files up to this size are checked in the server (headers, checksums) and, when they fit, sent
without a child. Checking costs time and memory with the file's bytes, not its pixels (a 20 MB
JPEG of empty markers: 9 s of CPU and 729 MB in Pillow's parser), so a larger file is checked and
prepared in a child, under the same caps and deadline as a decode."""

DEFAULT_DECODE_WORKERS = 2
"""Decodes at once, over every call (a machine's memory must hold this many times the cap)."""

# What the forkserver imports once: this module (hence prepare and Pillow's core) and the plugins
# of the formats the bridge opens, so that Image.open never has to import the rest.
PRELOAD = [
    "vision_bridge.isolation",
    "PIL.ImageOps",
    "PIL.PngImagePlugin",
    "PIL.JpegImagePlugin",
    "PIL.GifImagePlugin",
    "PIL.WebPImagePlugin",
    "PIL.BmpImagePlugin",
    "PIL.TiffImagePlugin",
]
log = logging.getLogger("vision_bridge")
_OK, _INPUT, _MEMORY, _FAILED = b"\x00", b"\x01", b"\x02", b"\x03"  # first byte of the answer
_EXIT_CODE_LIMIT = 3  # the child's own exit when it cannot set its limits
# A child ended by its CPU limit or killed here (SIGXCPU does not exist on Windows).
_KILLED = -getattr(signal, "SIGKILL", 9)
_OUT_OF_TIME_EXITS = frozenset(
    -getattr(signal, name) for name in ("SIGXCPU", "SIGKILL") if hasattr(signal, name)
)


@dataclass(frozen=True, slots=True)
class DecodeLimits:
    """What decoding may cost: ``memory_bytes`` per child beyond its start, ``workers`` children
    at once. The time is the call's: what is left of ``VISION_TIMEOUT``."""

    memory_bytes: int = DEFAULT_DECODE_MEMORY_MB << 20
    workers: int = DEFAULT_DECODE_WORKERS


class LoopSemaphore:
    """At most ``workers`` at once within the running event loop (a server has one; a library
    user who starts several loops gets a bound per loop)."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def here(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore, self._loop = asyncio.Semaphore(self.workers), loop
        return self._semaphore


class IsolatedDecoder:
    """Prepares images for a backend: as they came when they fit, else re-encoded in a child."""

    def __init__(self, limits: DecodeLimits | None = None) -> None:
        self.limits = limits or DecodeLimits()
        self._slots = LoopSemaphore(self.limits.workers)

    async def prepare(self, image: ImageBytes, accepted: ImageLimits, *, timeout_s: float) -> PreparedImage:
        """``image`` in a form ``accepted`` takes; a :class:`VisionError` (input, or timeout when
        ``timeout_s`` ran out while it was checked or decoded) otherwise."""
        if len(image.data) <= IN_SERVER_CHECK_BYTES:
            as_is = await asyncio.to_thread(sent_as_is, image, accepted)
            if as_is is not None:
                return as_is
        started = time.monotonic()
        async with self._slots.here():
            left = timeout_s - (time.monotonic() - started)
            cancelled = threading.Event()
            try:
                return await asyncio.to_thread(
                    prepare_isolated, image, accepted, self.limits, left, cancelled
                )
            finally:
                cancelled.set()  # the call was cancelled (or is done): kill the child if it runs

    def warm_up(self) -> None:
        """Start the forkserver (and import Pillow in it) before the first image needs it."""
        context = _context()
        if context.get_start_method() == "forkserver":
            from multiprocessing import forkserver

            forkserver.ensure_running()


def prepare_isolated(
    image: ImageBytes,
    accepted: ImageLimits,
    limits: DecodeLimits,
    timeout_s: float,
    cancelled: threading.Event | None = None,
) -> PreparedImage:
    """:func:`~vision_bridge.prepare.prepare_image` in a child process under ``limits``, killed after
    ``timeout_s`` or within 50 ms of ``cancelled`` being set; blocks (run it on a thread)."""
    if timeout_s <= 0:
        raise _out_of_time(image, timeout_s)
    try:
        outcome = children.run_child(
            _context(),
            _decode_child,
            (image, accepted, limits.memory_bytes, timeout_s),
            name="vision-bridge-decode",
            seconds=timeout_s,
            cancelled=cancelled,
        )
    except children.ChildNotStarted as exc:
        log.warning("the image decoder could not be started", exc_info=True)
        raise VisionError(
            ErrorCause.API,
            "the image decoder could not be started (a script that uses vision-bridge as a library "
            "needs the `if __name__ == '__main__':` guard); see the server log",
        ) from exc
    answer, code, elapsed = outcome.answer, outcome.exit_code, outcome.elapsed
    if answer is not None:
        return _read_answer(answer, image, limits)
    if outcome.cancelled:
        raise VisionError(ErrorCause.TIMEOUT, f"the call ended while {image.origin} was decoded")
    if code is None or elapsed >= timeout_s or (code in _OUT_OF_TIME_EXITS and code != _KILLED):
        raise _out_of_time(image, timeout_s)
    if code == _KILLED:  # with time left: not by this server, most likely the system's OOM killer
        raise input_error(
            f"{image.origin} could not be decoded: the decoder was killed, most likely for want of "
            "memory on this machine; send it smaller"
        )
    if code == -signal.SIGABRT or code == _EXIT_CODE_LIMIT:
        # SIGABRT: native code could not allocate under the memory cap.
        raise input_error(_over_memory(image, limits))
    raise input_error(f"{image.origin} could not be decoded: the decoder stopped (exit {code})")


def _out_of_time(image: ImageBytes, timeout_s: float) -> VisionError:
    return VisionError(
        ErrorCause.TIMEOUT,
        f"decoding {image.origin} took longer than the {max(timeout_s, 0):.3g} s left of VISION_TIMEOUT",
    )


def _over_memory(image: ImageBytes, limits: DecodeLimits) -> str:
    return (
        f"{image.origin} needs more than the {limits.memory_bytes >> 20:,} MB this server lets one image "
        "take to decode (VISION_DECODE_MEMORY_MB); send it smaller"
    )


def _read_answer(answer: bytes, image: ImageBytes, limits: DecodeLimits) -> PreparedImage:
    kind, body = answer[:1], memoryview(answer)[1:]  # a view: the image's bytes are copied once
    if kind == _INPUT:
        raise input_error(bytes(body).decode("utf-8", "replace"))
    if kind == _MEMORY:
        raise input_error(_over_memory(image, limits))
    if kind != _OK or len(body) < 4:
        raise input_error(f"{image.origin} could not be decoded")
    size = int.from_bytes(body[:4], "big")
    try:
        mime, width, height, note, as_is = json.loads(bytes(body[4 : 4 + size]))
    except (ValueError, TypeError):
        raise input_error(f"{image.origin} could not be decoded") from None
    if not (
        isinstance(mime, str)
        and isinstance(width, int)
        and isinstance(height, int)
        and isinstance(note, str)
        and isinstance(as_is, bool)
    ):
        raise input_error(f"{image.origin} could not be decoded")
    return PreparedImage(image.data if as_is else bytes(body[4 + size :]), mime, width, height, note)


def _decode_child(
    conn: Connection, image: ImageBytes, accepted: ImageLimits, memory_bytes: int, timeout_s: float
) -> None:
    """The child: die with the forkserver, silence stderr (native code prints before it aborts),
    set its limits, decode, send the answer. Ctrl-C is the server's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    children.die_with_parent(b"vision-decode", watcher="vision-bridge-parent-watch")
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
    try:
        import resource

        cpu = max(1, math.ceil(timeout_s))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU, then SIGKILL
    except ImportError:  # not POSIX: the wall deadline still applies
        pass
    except (OSError, ValueError):
        os._exit(_EXIT_CODE_LIMIT)
    children.cap_address_space(memory_bytes)
    try:
        prepared = prepare_image(image, accepted)
    except VisionError as error:
        # A decoder that ran out of memory may say the data is bad: the header's size decides.
        told = failure_under_cap(image, error, memory_bytes)
        if isinstance(told, DecodeMemoryError):
            conn.send_bytes(_MEMORY)
        else:
            conn.send_bytes(_INPUT + told.message.encode("utf-8", "replace"))
        return
    except MemoryError:
        conn.send_bytes(_MEMORY)
        return
    except Exception:
        conn.send_bytes(_FAILED)
        return
    as_is = prepared.data is image.data  # the server has these bytes: say so, do not send them back
    header = json.dumps([prepared.mime, prepared.width, prepared.height, prepared.note, as_is]).encode()
    try:
        conn.send_bytes(_OK + len(header).to_bytes(4, "big") + header + (b"" if as_is else prepared.data))
    except MemoryError:
        conn.send_bytes(_MEMORY)


def _context() -> Any:
    return children.forkserver_context(PRELOAD)
