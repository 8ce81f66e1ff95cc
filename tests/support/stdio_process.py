"""Run an MCP stdio server under a real client and still know its process: its PID and peak memory.

The SDK's stdio client starts the server itself and does not say which process it is; a shell
that writes its own PID and then ``exec``s the server (the PID stays the same) tells us.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from mcp import StdioServerParameters


def tracked(params: StdioServerParameters, pidfile: Path) -> StdioServerParameters:
    """The same server, started through a shell that writes its PID to ``pidfile`` first."""
    script = 'echo $$ > "$0"; exec "$@"'
    return StdioServerParameters(
        command="/bin/sh", args=["-c", script, str(pidfile), params.command, *params.args], env=params.env
    )


def pid_of(pidfile: Path, timeout_s: float = 10.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = pidfile.read_text().strip() if pidfile.exists() else ""
        if text:
            return int(text)
        time.sleep(0.01)
    raise AssertionError(f"the server did not write {pidfile}")


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (Linux: VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM line")


def can_track() -> bool:
    return sys.platform.startswith("linux") and Path("/proc/self/status").exists()
