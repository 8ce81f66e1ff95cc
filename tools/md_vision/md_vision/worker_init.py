"""Imported by the forkserver that starts the folder-parsing workers, and nowhere else.

Ctrl-C sends SIGINT to the whole process group. The server handles it and shuts its workers
down; a worker must not also raise KeyboardInterrupt and print a traceback of its own (nor
while it is still starting, before any initializer could run). The forkserver hands the signal
dispositions it had after its preload imports to every worker it forks, so ignoring SIGINT
here, in the forkserver only, covers each worker from its first instruction.
"""

from __future__ import annotations

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
