"""Swap a folder for a symlink to somewhere else and back, every ~0.5 ms, in another process.

The attacker of a check-then-use race: while the code under test opens ``folder/...``, this
process keeps replacing ``folder`` with a link to ``outside`` and putting it back (two atomic
renames each way). A separate process, so the swaps really interleave with the code under test
instead of waiting for the GIL.

    with FolderSwapper(root / "sub", outside) as swapper:
        ...  # call the code under test many times
    assert swapper.swaps > 100

Run as ``python -m tests.support.swapper FOLDER OUTSIDE`` it swaps until SIGTERM, then puts the
real folder back and prints how many swaps it made.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

INTERVAL_S = 0.0005


def swap_until_stopped(folder: str, outside: str) -> int:
    stop = False

    def on_term(_signum: int, _frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    away, staged = folder + ".real", folder + ".link"
    os.symlink(outside, staged)
    print("ready", flush=True)
    swaps = 0
    while not stop:
        os.rename(folder, away)
        os.rename(staged, folder)  # the folder is now a link to outside
        time.sleep(INTERVAL_S)
        os.rename(folder, staged)
        os.rename(away, folder)  # and the real folder again
        swaps += 1
        time.sleep(INTERVAL_S)
    os.unlink(staged)
    return swaps


class FolderSwapper:
    def __init__(self, folder: Path, outside: Path) -> None:
        self.folder, self.outside = folder, outside
        self.swaps = 0
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> FolderSwapper:
        root = Path(__file__).resolve().parents[2]
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.swapper", str(self.folder), str(self.outside)],
            cwd=root,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        assert self._process.stdout.readline().strip() == "ready"
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGTERM)
        out, _ = self._process.communicate(timeout=10)
        self.swaps = int(out.split()[-1])
        assert self.folder.is_dir() and not self.folder.is_symlink()


if __name__ == "__main__":
    print(swap_until_stopped(sys.argv[1], sys.argv[2]), flush=True)
