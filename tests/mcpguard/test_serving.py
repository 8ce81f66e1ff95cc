"""The shared MCP conventions (docab_mcpguard.serving) on a small server, through the SDK's client
in-process: server identity, argument errors, progress and logs from the loop and from worker
threads, prompts, roots."""

from __future__ import annotations

import asyncio
import base64
import itertools
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import pytest
from mcp import Client, MCPError
from mcp.server.mcpserver import Context
from mcp.types import (
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    LoggingMessageNotificationParams,
    PromptMessage,
    Root,
    TextContent,
)
from pydantic import Field

from docab_mcpguard.serving import (
    ConventionalServer,
    PromptSpec,
    ServerContext,
    StructuredOutput,
    folders_of,
    svg_icon,
    tool_annotations,
)

# Logging is deprecated in protocol 2026-07-28; these clients speak 2025-11-25, where it is current.
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 8 8"><rect width="8" height="8"/></svg>'
log = logging.getLogger("docab_test_server")


class Counted(StructuredOutput):
    """Described in code, not in the schema."""

    counted: int
    label: str = ""


def _server() -> ConventionalServer:
    app = ConventionalServer(
        "demo",
        title="Demo server",
        version="1.2.3",
        instructions="A test server.",
        website_url="https://example.org/demo",
        icon=svg_icon(SVG),
        loggers=("docab_test_server",),
    )

    async def count(
        ctx: Context,
        upto: Annotated[int, Field(ge=1, le=100, description="How far")],
        label: Annotated[str, Field(description="A label")] = "",
    ) -> Annotated[CallToolResult, Counted]:
        async with app.reporting(ctx) as notes:
            log.debug("counting to %d", upto)

            def work() -> None:  # a worker thread reports and logs too
                for number in range(1, upto + 1):
                    notes.progress(number, upto, f"at {number}")
                log.warning("counted in a thread")

            await asyncio.to_thread(work)
            notes.progress(upto, upto, "done", always=True)
            log.info("done counting")
        return CallToolResult(
            content=[TextContent(type="text", text=str(upto))],
            structured_content=Counted(counted=upto, label=label).model_dump(mode="json"),
        )

    app.add_tool(
        count,
        name="count",
        title="Count",
        description="Count up.",
        annotations=tool_annotations(
            "Count", read_only=True, destructive=False, idempotent=True, open_world=False
        ),
    )

    async def greet(
        arguments: Mapping[str, str], ctx: ServerContext
    ) -> GetPromptResult | InputRequiredResult:
        return GetPromptResult(
            description=f"Greeting for {arguments['name']}",
            messages=[
                PromptMessage(role="user", content=TextContent(type="text", text=f"Hi {arguments['name']}"))
            ],
        )

    app.add_prompt_renderer(PromptSpec("greet", "Greet", "Say hello.", (("name", "Who", True),)), greet)
    return app


def test_server_identity_titles_and_a_compact_output_schema() -> None:
    async def go():
        async with Client(_server(), mode="legacy") as client:
            return client.server_info, (await client.list_tools()).tools

    info, tools = asyncio.run(go())
    assert (info.name, info.title, info.version, info.website_url) == (
        "demo",
        "Demo server",
        "1.2.3",
        "https://example.org/demo",
    )
    (icon,) = info.icons
    assert icon.mime_type == "image/svg+xml" and icon.src.startswith("data:image/svg+xml;base64,")
    assert base64.b64decode(icon.src.split(",", 1)[1]).decode() == SVG
    (tool,) = tools
    assert tool.title == "Count" and tool.annotations.title == "Count"
    schema = tool.output_schema
    assert schema["required"] == ["counted"] and set(schema["properties"]) == {"counted", "label"}
    assert "title" not in str(schema) and "description" not in str(schema)


def test_argument_errors_are_one_sentence_for_each_kind() -> None:
    async def go():
        async with Client(_server(), mode="legacy") as client:
            return [
                await client.call_tool("count", arguments)
                for arguments in ({"upto": "x"}, {"upto": 101}, {}, {"upto": 3, "step": 1})
            ]

    wrong_type, out_of_range, missing, unknown = asyncio.run(go())
    assert [result.is_error for result in (wrong_type, out_of_range, missing, unknown)] == [True] * 4
    assert wrong_type.content[0].text == 'count: upto must be an integer from 1 to 100; got "x".'
    assert out_of_range.content[0].text == "count: upto must be an integer from 1 to 100; got 101."
    assert (
        missing.content[0].text
        == "count: upto is required (an integer from 1 to 100); the call did not give it."
    )
    assert (
        unknown.content[0].text == "count has no argument 'step' (given 1); its arguments are upto and label."
    )


def test_progress_and_logs_reach_the_client_in_order_from_threads_too() -> None:
    logs: list[LoggingMessageNotificationParams] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def go():
        async with Client(_server(), mode="legacy", logging_callback=on_log) as client:
            default = await client.call_tool("count", {"upto": 50}, progress_callback=on_progress)
            before = len(logs)
            await client.set_logging_level("debug")
            verbose = await client.call_tool("count", {"upto": 2})
            await client.set_logging_level("error")
            quiet = await client.call_tool("count", {"upto": 2})
            return default, before, verbose, quiet

    default, before, verbose, quiet = asyncio.run(go())
    assert default.structured_content == {"counted": 50, "label": ""} and default.content[0].text == "50"
    # Throttled to ten a second, the first one and the completion always sent, values only going up
    # (the tool's own (50, 50, "done") repeats the completion, so it is not sent again).
    assert progress[0] == (1, 50, "at 1") and progress[-1] == (50, 50, "at 50")
    assert len(progress) < 50 and all(a[0] < b[0] for a, b in itertools.pairwise(progress))
    # Until the client sets a level: info and above, from the loop and from the worker thread.
    assert [(entry.level, entry.data) for entry in logs[:before]] == [
        ("warning", "counted in a thread"),
        ("info", "done counting"),
    ]
    assert logs[before].data == "counting to 2" and logs[before].level == "debug"
    assert all(entry.logger == "docab_test_server" for entry in logs)
    assert len(logs) == before + 3  # nothing at "error"
    assert not verbose.is_error and not quiet.is_error


def test_the_process_own_handlers_get_records_at_the_root_level_only() -> None:
    """The client asks for debug and gets it; a handler on the root with no level of its own (as the
    SDK installs for a server built in-process) gets only what the root's level lets through."""
    seen: list[logging.LogRecord] = []
    sink = logging.Handler()
    sink.emit = seen.append  # type: ignore[method-assign]
    root = logging.getLogger()
    previous = root.level
    root.addHandler(sink)
    root.setLevel(logging.WARNING)
    logs: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def go():
        async with Client(_server(), mode="legacy", logging_callback=on_log) as client:
            await client.set_logging_level("debug")
            await client.call_tool("count", {"upto": 2})
            root.setLevel(logging.DEBUG)
            await client.call_tool("count", {"upto": 2})

    try:
        asyncio.run(go())
    finally:
        root.removeHandler(sink)
        root.setLevel(previous)
    mine = [record for record in seen if record.name == "docab_test_server"]
    levels = [record.levelname for record in mine]
    # At WARNING: the thread's warning only; at DEBUG: all three of the second call.
    assert levels == ["WARNING", "DEBUG", "WARNING", "INFO"], levels
    assert [entry.level for entry in logs if entry.logger == "docab_test_server"] == [
        "debug",
        "warning",
        "info",
    ] * 2


def test_progress_goes_only_to_a_client_that_asked() -> None:
    async def go():
        async with Client(_server(), mode="legacy") as client:
            return await client.call_tool("count", {"upto": 5})

    assert asyncio.run(go()).content[0].text == "5"


def test_prompts_render_and_refuse_missing_or_unknown_arguments() -> None:
    async def go():
        async with Client(_server(), mode="legacy") as client:
            listed = (await client.list_prompts()).prompts
            rendered = await client.get_prompt("greet", {"name": "Ada"})
            failures = []
            for arguments in ({}, {"name": "Ada", "mood": "sunny"}):
                try:
                    await client.get_prompt("greet", arguments)
                except MCPError as exc:
                    failures.append(exc.error.message)
            return listed, rendered, failures

    listed, rendered, failures = asyncio.run(go())
    assert [(p.name, p.title, [a.name for a in p.arguments]) for p in listed] == [
        ("greet", "Greet", ["name"])
    ]
    assert rendered.description == "Greeting for Ada" and rendered.messages[0].content.text == "Hi Ada"
    assert failures == [
        "the greet prompt needs the argument name (missing)",
        "the greet prompt has no argument 'mood'; its arguments are name",
    ]


def test_folders_of_roots_keeps_existing_local_folders_only(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "file.md").write_text("x")
    roots = [
        Root(uri=(tmp_path / "docs").as_uri()),
        Root(uri=(tmp_path / "file.md").as_uri()),
        Root(uri=(tmp_path / "gone").as_uri()),
        Root(uri="file://fileserver/share/repo"),  # another machine's folder
    ]
    folders, skipped = folders_of(roots)
    assert folders == [str(tmp_path / "docs")]
    assert [line.split(": ", 1)[1] for line in skipped] == [
        "not an existing folder",
        "not an existing folder",
        "not a file:// URI of this machine",
    ]


@pytest.mark.parametrize("name", ["with space", "ünïcode"])
def test_folders_of_roots_decodes_percent_encoded_paths(tmp_path: Path, name: str) -> None:
    (tmp_path / name).mkdir()
    folders, skipped = folders_of([Root(uri=(tmp_path / name).as_uri())])
    assert folders == [str(tmp_path / name)] and skipped == []


def test_the_servers_output_schemas_stay_compact() -> None:
    """Every schema character is carried by clients that keep the tool list (some show it to the
    model): the four output schemas stay small, with no titles or descriptions."""
    import json

    from markfetch.server import FetchOutput
    from md_vision.server import IndexOutput, ReadOutput
    from vision_bridge.server import VisionOutput

    # IndexOutput: 700 until md-vision's files gained `indexed_lines` (an index cut short, 736).
    for model, bound in ((IndexOutput, 750), (ReadOutput, 450), (FetchOutput, 250), (VisionOutput, 700)):
        schema = json.dumps(model.model_json_schema(), separators=(",", ":"))
        assert len(schema) <= bound, (model.__name__, len(schema))
        assert '"title":"' not in schema and '"description":' not in schema, (
            model.__name__
        )  # a field may be named title
