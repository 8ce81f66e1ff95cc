"""How a stdio server stops: end of input, Ctrl-C and SIGTERM all end it quietly, and promptly.

An MCP host stops a server by closing its stdin, or with SIGTERM; a person at a terminal with
Ctrl-C. End of input ends the server's run loop on its own. A signal cannot: the MCP SDK reads
stdin on a worker thread that no cancellation reaches, so a graceful shutdown would wait for
input that never comes (a server given Ctrl-C or SIGTERM used to hang), and Python's defaults
either die on the spot, skipping all clean-up (SIGTERM), or print a traceback (Ctrl-C).

:func:`run_until_stopped` handles both signals itself: it runs the server's ``on_stop`` clean-up
(stop worker processes, say) and leaves at once with the conventional status, printing nothing.
In-flight calls are abandoned: whoever sent the signal is not waiting for their answers.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM


def run_until_stopped(run: Callable[[], object], *, on_stop: Callable[[], None] | None = None) -> int:
    """Call ``run`` (a server's blocking ``run()``) until it returns or a signal stops it.

    Returns 0 when ``run`` returns (the client closed stdin). On Ctrl-C (SIGINT) or SIGTERM,
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
    return 0
