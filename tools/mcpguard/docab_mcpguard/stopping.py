"""How a stdio server stops: end of input, Ctrl-C and SIGTERM all end it quietly, and promptly.

An MCP host stops a server by closing its stdin, or with SIGTERM; a person at a terminal with
Ctrl-C. End of input ends the server's run loop on its own. A signal cannot: the MCP SDK reads
stdin on a worker thread that no cancellation reaches, so a graceful shutdown would wait for
input that never comes (a server given Ctrl-C or SIGTERM used to hang), and Python's defaults
either die on the spot, skipping all clean-up (SIGTERM), or print a traceback (Ctrl-C).

:func:`run_until_stopped` handles both signals itself: it runs the server's ``on_stop`` clean-up
(stop worker processes, say) and leaves at once with the conventional status, printing nothing.
In-flight calls are abandoned: whoever sent the signal is not waiting for their answers.

A client that disappears (its end of stdout closed while a call runs) makes the next answer meet
a broken pipe, which the SDK's stdio transport raises out of ``run``: that is the client's way of
leaving too, so ``run_until_stopped`` returns 0 with nothing printed (stdout is pointed at the
null device first, so that the interpreter's final flush cannot complain either).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
from collections.abc import Callable

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM


def run_until_stopped(run: Callable[[], object], *, on_stop: Callable[[], None] | None = None) -> int:
    """Call ``run`` (a server's blocking ``run()``) until it returns or a signal stops it.

    Returns 0 when ``run`` returns (the client closed stdin) or fails only because the client is
    gone (a broken pipe on stdout, see :func:`client_gone`). On Ctrl-C (SIGINT) or SIGTERM,
    ``on_stop`` runs and the process exits with 130 or 143 without returning here. A second
    signal during ``on_stop`` exits at once.
    """
    stopping = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        code = EXIT_TERMINATED if signum == getattr(signal, "SIGTERM", None) else EXIT_INTERRUPTED
        if not stopping and on_stop is not None:
            stopping = True
            with contextlib.suppress(Exception):
                on_stop()
        os._exit(code)

    signal.signal(signal.SIGINT, on_signal)
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, on_signal)
    try:
        run()
    except KeyboardInterrupt:  # pragma: no cover - the handler above exits first
        return EXIT_INTERRUPTED
    except BaseException as exc:
        if not client_gone(exc):
            raise
        _silence_stdout()
        if on_stop is not None:
            with contextlib.suppress(Exception):
                on_stop()
    return 0


def client_gone(exc: BaseException) -> bool:
    """Is ``exc`` (or every exception of a group, at any depth) a sign that the client closed its
    end of the pipes: a broken pipe or a reset connection?"""
    if isinstance(exc, BaseExceptionGroup):
        return all(client_gone(inner) for inner in exc.exceptions)
    if isinstance(exc, BrokenPipeError | ConnectionResetError):
        return True
    return isinstance(exc, OSError) and exc.errno in (errno.EPIPE, errno.ECONNRESET)


def _silence_stdout() -> None:
    """Point stdout at the null device: what is still buffered for the client goes nowhere, quietly."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
