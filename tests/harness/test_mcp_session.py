"""MCP servers as real stdio subprocesses: start, health check, results, crashes and restarts."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from docab.agent.toolbox.mcp_session import (
    MCPServerSpec,
    MCPSession,
    MCPStartError,
    convert_result,
    start_sessions,
)
from docab.usage import Usage

SERVER = Path(__file__).parent / "fixtures" / "mcp_test_server.py"


def server_spec(**overrides: object) -> MCPServerSpec:
    values: dict[str, object] = {
        "name": "test",
        "command": "{python}",
        "args": (str(SERVER),),
        "env": {"TEST_WORKSPACE": "{workspace}"},
        "startup_timeout_s": 60.0,
    }
    values.update(overrides)
    return MCPServerSpec(**values)  # type: ignore[arg-type]


def test_placeholders_are_filled() -> None:
    spec = MCPServerSpec(
        name="md",
        command="{python}",
        args=("--allow-path", "{workspace}", "--key={env:DOCAB_TEST_KEY}"),
        env={"K": "{env:DOCAB_TEST_KEY}"},
    )
    command, args, env = spec.render("/tmp/ws", {"DOCAB_TEST_KEY": "s3cret"})
    assert command == sys.executable
    assert args == ["--allow-path", "/tmp/ws", "--key=s3cret"]
    assert env == {"K": "s3cret"}
    with pytest.raises(MCPStartError, match="DOCAB_TEST_KEY"):
        spec.render("/tmp/ws", {})


def server_pids(workspace: Path) -> list[int]:
    return [int(p.read_text()) for p in workspace.glob("server-*.pid")]


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_session_lists_tools_and_converts_results(tmp_path: Path) -> None:
    (tmp_path / "note.txt").write_text("hello from the workspace")
    allowed = ("echo", "cat", "metered", "fail")  # in the order the server lists them

    async def scenario() -> None:
        async with MCPSession(server_spec(tools=allowed), tmp_path) as session:
            assert [t.spec.name for t in session.tools] == list(allowed)  # the allow-list hides the rest
            echo = session.tools[0]
            assert echo.spec.input_schema["properties"]["text"]["type"] == "string"
            assert (await echo.call({"text": "hi"})).text == "hi"
            assert (await session.call("cat", {"path": "note.txt"})).text == "hello from the workspace"
            failed = await session.call("fail", {})
            assert failed.is_error and "on purpose" in failed.text
            bad_args = await session.call("echo", {})
            assert bad_args.is_error
            metered = await session.call("metered", {"text": "a chart"})
            usage = Usage.from_tool_meta(metered.meta)
            assert usage is not None and usage.role == "tool-side"
            assert (usage.input_total, usage.cache_read, usage.output) == (120, 20, 7)
            assert usage.model == "openai/gpt-test"
            assert session.events == []
        (pid,) = server_pids(tmp_path)
        assert not is_alive(pid)  # closing the session stops the process

    asyncio.run(scenario())


def test_crash_and_hang_mid_call_restart_and_are_recorded(tmp_path: Path) -> None:
    errlog = tmp_path / "stderr.log"

    async def scenario() -> None:
        with errlog.open("w") as log:
            spec = server_spec(call_timeout_s=2.0)
            async with MCPSession(spec, tmp_path, errlog=log) as session:
                result = await session.call("crash", {})
                assert result.is_error and "crashed" in result.text and "restarted" in result.text
                assert session.restarts == 1 and session.running
                assert (await session.call("echo", {"text": "back"})).text == "back"
                hung = await session.call("hang", {})
                assert hung.is_error and "did not answer within 2 s" in hung.text
                assert (await session.call("echo", {"text": "alive"})).text == "alive"
                assert session.restarts == 2
                assert "crashed during crash" in session.events[0]
                assert "hang did not answer" in session.events[1]
                session.begin_sample()
                assert session.events == [] and session.restarts == 0

    asyncio.run(scenario())
    assert "crashing on purpose" in errlog.read_text()
    assert sum(is_alive(pid) for pid in server_pids(tmp_path)) == 0  # the hung server was killed too


def test_restarts_are_capped(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with MCPSession(server_spec(max_restarts=0), tmp_path) as session:
            first = await session.call("crash", {})
            assert first.is_error and "no longer available" in first.text
            again = await session.call("echo", {"text": "x"})
            assert again.is_error and "unavailable" in again.text
            assert any("not restarted" in e for e in session.events)

    asyncio.run(scenario())


def test_start_failures_are_clear(tmp_path: Path) -> None:
    async def scenario() -> None:
        with pytest.raises(MCPStartError, match="was not found"):
            await MCPSession(server_spec(command="docab-no-such-server"), tmp_path).start()
        with pytest.raises(MCPStartError, match="failed to start"):
            await MCPSession(server_spec(args=("-c", "import sys; sys.exit(1)")), tmp_path).start()
        with pytest.raises(MCPStartError, match="did not answer within"):
            spec = server_spec(args=("-c", "import time; time.sleep(30)"), startup_timeout_s=1.0)
            await MCPSession(spec, tmp_path).start()

    asyncio.run(scenario())


def test_a_missing_tool_in_the_allow_list_fails_the_start_and_stops_the_server(tmp_path: Path) -> None:
    async def scenario() -> None:
        with pytest.raises(MCPStartError, match="does not offer the tool"):
            await start_sessions([server_spec(), server_spec(name="picky", tools=("nope",))], tmp_path)

    asyncio.run(scenario())
    pids = server_pids(tmp_path)
    assert len(pids) == 2 and not any(is_alive(pid) for pid in pids)


def test_convert_result_handles_every_content_kind() -> None:
    import base64

    from mcp.types import (
        CallToolResult,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    from tests.harness.corpus import png_bytes

    data = png_bytes()
    result = CallToolResult(
        content=[
            TextContent(type="text", text="a"),
            ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type="image/png"),
            ImageContent(type="image", data="%%%not base64", mime_type="image/png"),
            EmbeddedResource(
                type="resource", resource=TextResourceContents(uri="file:///x", text="embedded")
            ),
            ResourceLink(type="resource_link", uri="file:///y", name="y"),
        ],
        is_error=False,
    )
    converted = convert_result(result)
    assert converted.blocks[0].text == "a"
    assert converted.images[0].data == data
    assert "could not be decoded" in converted.blocks[2].text
    assert converted.blocks[3].text == "embedded"
    assert "resource link" in converted.blocks[4].text


def test_console_scripts_are_found_beside_this_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """``.venv/bin/docab`` run without the venv on PATH still finds ``md-vision`` next to it."""
    monkeypatch.setenv("PATH", "/nonexistent")
    command, _, _ = MCPServerSpec(name="md", command="md-vision").render("/tmp/ws", {})
    assert command == str(Path(sys.executable).parent / "md-vision")
    assert (
        MCPServerSpec(name="x", command="docab-no-such-server").render("/tmp/ws", {})[0]
        == "docab-no-such-server"
    )
