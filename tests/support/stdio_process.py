"""Run an MCP stdio server under a real client and still know its process: its PID and peak memory.

The SDK's stdio client starts the server itself and does not say which process it is; a shell
that writes its own PID and then ``exec``s the server (the PID stays the same) tells us.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mcp import StdioServerParameters

# The raw JSON-RPC handshake, for tests that talk to a server's stdin without an MCP client.
INITIALIZE: dict[str, object] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
INITIALIZED: dict[str, object] = {"jsonrpc": "2.0", "method": "notifications/initialized"}
HELLO = json.dumps(INITIALIZE) + "\n"  # the initialize request as one line


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


def stops_quietly(command: list[str], how: str, *, env: dict[str, str] | None = None) -> bool:
    """Start a stdio server and stop it ``how``: "eof soon after start" (stdin closed 0.5 s in),
    "ctrl-c" (SIGINT to its whole process group, after the MCP handshake) or "sigterm". True when
    it exits with 0, 130 or 143 respectively, prints nothing on stderr and leaves no process of
    its group running; otherwise an AssertionError says what happened."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # its own process group, as a terminal would give it
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        if how == "eof soon after start":
            time.sleep(0.5)
            process.stdin.close()
        else:
            process.stdin.write(HELLO.encode())
            process.stdin.flush()
            assert process.stdout.readline().startswith(b'{"jsonrpc":"2.0","id":1,"result"')
            if how == "ctrl-c":
                os.killpg(process.pid, signal.SIGINT)  # the whole group, as a terminal sends it
            else:
                process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=15)
        stderr = process.stderr.read().decode() if process.stderr else ""
        time.sleep(0.3)
        left = subprocess.run(
            ["ps", "-o", "pid=,stat=", "-g", str(process.pid)], capture_output=True, text=True
        )
        alive = [line for line in left.stdout.splitlines() if "Z" not in line.split()[-1]]
    finally:
        if process.poll() is None:
            process.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    expected = {"eof soon after start": 0, "ctrl-c": 130, "sigterm": 143}[how]
    assert (code, stderr, alive) == (expected, "", []), (how, code, stderr, alive)
    return True


def vanishes_quietly(
    command: list[str], call: dict[str, object], how: str, *, env: dict[str, str] | None = None
) -> tuple[int, str, list[str]]:
    """Start a stdio server, shake hands, send the slow ``tools/call`` ``call`` (its params) and
    disappear while it runs, ``how``: "stdin closed" (end of input, the client still reading) or
    "pipes closed" (stdin and stdout both closed: the answer meets a broken pipe). Returns the
    server's exit code, its stderr and the processes of its group still running afterwards."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(HELLO.encode())
        process.stdin.flush()
        assert process.stdout.readline().startswith(b'{"jsonrpc":"2.0","id":1,"result"')
        request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
        initialized = '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        process.stdin.write((initialized + json.dumps(request) + "\n").encode())
        process.stdin.flush()
        time.sleep(0.5)  # the call is under way
        if how == "pipes closed":
            process.stdout.close()
        process.stdin.close()
        code = process.wait(timeout=30)
        stderr = process.stderr.read().decode() if process.stderr else ""
        time.sleep(0.3)
        left = subprocess.run(
            ["ps", "-o", "pid=,stat=,args=", "-g", str(process.pid)], capture_output=True, text=True
        )
        alive = [line for line in left.stdout.splitlines() if "Z" not in line.split()[1]]
    finally:
        if process.poll() is None:
            process.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    return code, stderr, alive
