"""A file name that is not UTF-8 in an allowed folder, through the SDK's client over stdio.

Python reads ``b"bad\\xff.md"`` as ``"bad\\udcff.md"``, a string JSON cannot carry: the SDK's
writer raised on the first message naming it, and the server died (the call timed out, every
later one failed with "Connection closed"). Now the name is written ``bad\\xff.md``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import LoggingMessageNotificationParams

from tests.md_vision.test_conventions import _params, _session

pytestmark = [
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
    pytest.mark.skipif(
        sys.platform in ("darwin", "win32"), reason="these file systems refuse names that are not UTF-8"
    ),
]


def test_a_name_that_is_not_utf8_is_listed_escaped_and_the_server_lives_on(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("# OK\n")
    with open(os.fsencode(tmp_path) + b"/bad\xff.md", "wb") as file:
        file.write(b"# Bad name\n")
    errlog = tmp_path.parent / f"{tmp_path.name}-stderr.txt"
    logs: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def scenario(client: Client) -> tuple[str, list[str], str, str]:
        await client.set_logging_level("debug")  # log lines that name the file go out too
        # A dead server never answers: fail in seconds, not at the suite's timeout.
        index = await client.call_tool("index_md", {"uri": "."}, read_timeout_seconds=20)
        resources = await client.list_resources()
        outline = await client.get_prompt("outline", {"uri": "."})
        after = await client.call_tool("index_md", {"uri": "ok.md"})
        assert not index.is_error and not after.is_error
        return (
            index.content[0].text,  # type: ignore[union-attr]
            [resource.name for resource in resources.resources],
            outline.messages[0].content.text,  # type: ignore[union-attr]
            after.content[0].text,  # type: ignore[union-attr]
        )

    from mcp.client.stdio import stdio_client

    params = _params("--allow-path", str(tmp_path), "--allow-host", "none")
    with errlog.open("w") as sink:
        index, names, outline, after = _session(stdio_client(params, errlog=sink), scenario, on_log=on_log)  # type: ignore[arg-type]
    assert "bad\\xff.md" in index and "Bad name" in index
    assert sorted(names) == ["bad\\xff.md", "ok.md"]
    assert "Bad name" in outline and "bad\\xff.md" in outline
    assert "OK" in after
    assert errlog.read_text() == ""
