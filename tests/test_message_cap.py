"""A JSON-RPC message larger than the stdio cap is refused, and the server goes on (issue 26 item 7).

Each server runs as its console script over real pipes; the test writes the JSON-RPC lines
itself, so that it can send one the SDK's client would never build: an oversized ``tools/list``
(its padding streamed in chunks), then an ordinary one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest

from docab_mcpguard.access import SettingError, message_cap, server_settings
from docab_mcpguard.messages import LineSplitter, Oversized
from tests.support.stdio_process import INITIALIZE, INITIALIZED

BIN = Path(sys.executable).parent
CAP_MB = 1  # the cap the servers are started with
SENT_MB = 24  # the oversized message


def _servers(scratch: Path) -> dict[str, tuple[list[str], dict[str, str], str]]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(scratch)}
    return {
        "md-vision": (
            [str(BIN / "md-vision"), "--allow-path", str(scratch), "--allow-domain", "none"],
            {**env, "MD_VISION_MAX_MESSAGE_MB": str(CAP_MB)},
            "--max-message-mb",
        ),
        "markfetch": ([str(BIN / "markfetch"), "--max-message-mb", str(CAP_MB)], env, "--max-message-mb"),
        "vision-bridge": (
            [str(BIN / "vision-bridge")],
            {
                **env,
                "VISION_API_BASE_URL": "http://127.0.0.1:9/v1",
                "VISION_API_KEY": "k",
                "VISION_MODEL": "m",
                "VISION_ALLOWED_PATHS": str(scratch),
                "VISION_LOG_LEVEL": "WARNING",
                "VISION_MAX_MESSAGE_MB": str(CAP_MB),
            },
            "--max-message-mb",
        ),
    }


def _send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message).encode() + b"\n")
    stdin.flush()


def _answer(stdout: IO[bytes], request_id: int) -> dict[str, Any]:
    while True:
        line = stdout.readline()
        assert line, "the server closed its output"
        message = json.loads(line)
        if message.get("id") == request_id:
            return message  # type: ignore[no-any-return]


@pytest.mark.parametrize("server", ["md-vision", "markfetch", "vision-bridge"])
def test_an_oversized_message_is_answered_with_an_error_and_the_server_goes_on(
    server: str, tmp_path: Path
) -> None:
    command, env, flag = _servers(tmp_path)[server]
    process = subprocess.Popen(
        command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    errors: list[bytes] = []
    drain = threading.Thread(target=lambda: errors.append(process.stderr.read()), daemon=True)  # type: ignore[union-attr]
    drain.start()
    try:
        _send(
            process.stdin,
            INITIALIZE,
        )
        assert "result" in _answer(process.stdout, 1)
        _send(process.stdin, INITIALIZED)
        # id first, the padding streamed: the server never sees the line whole.
        process.stdin.write(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"pad": "')
        chunk = b"x" * 1_000_000
        for _ in range(SENT_MB):
            process.stdin.write(chunk)
        process.stdin.write(b'"}}\n')
        process.stdin.flush()
        refused = _answer(process.stdout, 2)
        assert refused["error"]["code"] == -32600
        message = refused["error"]["message"]
        assert "larger than this server accepts (1,000,000 bytes)" in message and flag in message
        # id last (as the TypeScript SDK writes it)
        process.stdin.write(
            b'{"method": "tools/list", "params": {"pad": "'
            + b"y" * 2_000_000
            + b'"}, "jsonrpc": "2.0", "id": 3}\n'
        )
        process.stdin.flush()
        assert _answer(process.stdout, 3)["error"]["code"] == -32600
        _send(process.stdin, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
        assert _answer(process.stdout, 4)["result"]["tools"]
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    drain.join(timeout=10)
    assert f"{server}: message of 24,".encode() in b"".join(errors)


def test_lines_are_split_and_an_oversized_one_is_dropped_as_it_streams() -> None:
    splitter = LineSplitter(10)
    assert splitter.feed(b"short\n0123456789\n012") == [b"short", b"0123456789"]
    assert splitter.feed(b"3456789abc") == []
    assert splitter._line == bytearray()  # the oversized line is not kept
    assert splitter.feed(b"def\nnext") == [Oversized(16, None)]
    assert splitter.finish() == [b"next"]
    ids = LineSplitter(5)
    assert ids.feed(b'{"jsonrpc": "2.0", "id": "a\\"b", "x": 1}\n') == [Oversized(40, 'a"b')]
    assert ids.feed(b'{"params": {"id": 3}, "id": 9}\n') == [Oversized(30, 9)]
    assert ids.feed(b'{"params": {"id": 3}}\n') == [Oversized(21, None)]  # a nested id is not the id


def test_the_cap_comes_from_the_flag_then_the_variable() -> None:
    setting = server_settings("x", "X").max_message
    assert message_cap(setting, None, {}) == 16_000_000
    assert message_cap(setting, None, {"X_MAX_MESSAGE_MB": "2.5"}) == 2_500_000
    assert message_cap(setting, 1.0, {"X_MAX_MESSAGE_MB": "2.5"}) == 1_000_000
    with pytest.raises(SettingError, match="X_MAX_MESSAGE_MB"):
        message_cap(setting, None, {"X_MAX_MESSAGE_MB": "lots"})
    with pytest.raises(SettingError, match="--max-message-mb"):
        message_cap(setting, 0.0, {})
