"""md-vision and the MCP conventions (issue 17), through the SDK's client over stdio: titles and
output schemas, structured content beside the text, the client's roots as the allowed folders,
progress and log notifications, resources, prompts, argument errors, and the settings shared
with the other servers (issue 15: --allow-host / MD_VISION_ALLOW_HOSTS, --allow-path /
MD_VISION_ALLOW_PATHS, refusals naming the setting)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.types import ListRootsResult, LoggingMessageNotificationParams, Root

from md_vision.__main__ import parse_settings
from tests.md_vision.conftest import png_bytes
from tests.md_vision.test_mcp import _command
from tests.support.http_server import LocalServer, Reply

# Logging and roots are deprecated in protocol 2026-07-28; "legacy" clients speak 2025-11-25.
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
T = TypeVar("T")


def _params(*args: str, **env: str) -> StdioServerParameters:
    command = _command()
    base = {key: value for key, value in os.environ.items() if not key.startswith("MD_VISION_")}
    return StdioServerParameters(
        command=command[0], args=[*command[1:], "--workers", "1", *args], env={**base, **env}
    )


def _session(
    params: StdioServerParameters,
    scenario: Callable[[Client], Awaitable[T]],
    *,
    roots: list[Path] | None = None,
    mode: str = "legacy",
    on_log: Callable[[LoggingMessageNotificationParams], Awaitable[None]] | None = None,
) -> T:
    async def list_roots(_context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=path.as_uri()) for path in roots or []])

    async def go() -> T:
        async with Client(
            params,
            mode=mode,
            list_roots_callback=list_roots if roots is not None else None,
            logging_callback=on_log,
        ) as client:
            return await scenario(client)

    return asyncio.run(go())


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    inside, other, outside = tmp_path / "inside", tmp_path / "other", tmp_path / "outside"
    for folder, title in ((inside, "Inside"), (other, "Other"), (outside, "Outside")):
        folder.mkdir()
        (folder / "doc.md").write_text(f"# {title}\n\n![pic](pic.png)\n\n## Part\n\ntext\n")
        (folder / "pic.png").write_bytes(png_bytes())
    return inside.resolve(), other.resolve(), outside.resolve()


# -- tools/list, server info, structured content -------------------------------------------------


def test_tools_list_shows_titles_output_schemas_and_true_annotations(tmp_path: Path) -> None:
    async def scenario(client: Client) -> Any:
        return client.server_info, (await client.list_tools()).tools

    info, tools = _session(_params("--allow-path", str(tmp_path), "--allow-host", "none"), scenario)
    assert info.title == "md-vision: markdown with its images"
    assert info.website_url == "https://github.com/docab/docab/tree/main/tools/md_vision"
    assert base64.b64decode(info.icons[0].src.split(",", 1)[1]).startswith(b"<svg")
    titles = {tool.name: tool.title for tool in tools}
    assert titles == {
        "read_md_with_images": "Read markdown with its images",
        "index_md": "Index markdown headings",
    }
    for tool in tools:
        assert tool.output_schema["type"] == "object" and "title" not in str(tool.output_schema)
        assert not tool.annotations.open_world_hint  # --allow-host none: no URL is fetched
        assert tool.annotations.read_only_hint and not tool.annotations.destructive_hint
    opened = _session(
        _params("--allow-path", str(tmp_path), "--allow-host", "all"),
        lambda client: client.list_tools(),
    )
    assert all(tool.annotations.open_world_hint for tool in opened.tools)


def test_structured_content_beside_the_text(folders: tuple[Path, Path, Path]) -> None:
    inside = folders[0]

    async def scenario(client: Client) -> Any:
        return (
            await client.call_tool("index_md", {"uri": "doc.md"}),
            await client.call_tool("read_md_with_images", {"uri": "doc.md", "section": "## Part"}),
            await client.call_tool("index_md", {"uri": "nowhere.md"}),
        )

    index, read, failed = _session(_params("--allow-path", str(inside), "--allow-host", "none"), scenario)
    size = len((inside / "doc.md").read_text())
    assert index.content[0].text.startswith(f'<file path="{inside / "doc.md"}"')
    assert index.structured_content == {
        "files": [
            {
                "path": str(inside / "doc.md"),
                "lines": 7,
                "chars": size,
                "headings": {
                    "heading": ["# Inside", "## Part"],
                    "line": [1, 5],
                    "images": [1, 0],
                    "chars": [size, 14],
                },
                "error": "",
                "indexed_lines": 0,
            }
        ],
        "next_cursor": "",
    }
    assert read.content[0].text == "## Part\n\ntext\n"
    assert read.structured_content == {
        "source": str(inside / "doc.md"),
        "first_line": 5,
        "last_line": 7,
        "heading": "## Part",
        "images_inlined": 0,
        "images_skipped": 0,
        "images_failed": 0,
        "next_line_range": [],
    }
    assert failed.is_error and failed.structured_content is None


def test_structured_output_can_be_turned_off_by_flag_or_variable(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text("# Title\n")

    async def scenario(client: Client) -> Any:
        return (await client.list_tools()).tools, await client.call_tool("index_md", {"uri": "doc.md"})

    tools, index = _session(
        _params("--allow-path", str(tmp_path), "--allow-host", "none", "--no-structured-output"), scenario
    )
    assert all(tool.output_schema is None for tool in tools)
    assert index.structured_content is None and index.content[0].text.startswith("<file ")
    flags = ["--allow-path", str(tmp_path), "--allow-host", "none"]
    assert not parse_settings(flags, env={"MD_VISION_STRUCTURED_OUTPUT": "0"}).structured_output
    assert parse_settings(
        [*flags, "--structured-output"], env={"MD_VISION_STRUCTURED_OUTPUT": "0"}
    ).structured_output


# -- roots -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode", ["legacy", "auto"]
)  # 2025-11-25 (roots/list) and 2026-07-28 (input_required)
def test_a_client_with_roots_reads_inside_them_and_nothing_outside(
    folders: tuple[Path, Path, Path], mode: str
) -> None:
    inside, _other, outside = folders

    async def scenario(client: Client) -> Any:
        return (
            await client.call_tool("read_md_with_images", {"uri": str(inside / "doc.md")}),
            await client.call_tool("read_md_with_images", {"uri": "doc.md"}),  # relative: the first root
            await client.call_tool("index_md", {"uri": str(inside)}),
            await client.call_tool("read_md_with_images", {"uri": str(outside / "doc.md")}),
            await client.call_tool("index_md", {"uri": str(outside)}),
        )

    read, relative, index, refused_read, refused_index = _session(
        _params("--allow-host", "none"), scenario, roots=[inside], mode=mode
    )
    assert not read.is_error and read.content[0].text.startswith("# Inside")
    assert [block.type for block in read.content].count("image") == 1
    assert not relative.is_error and relative.content[0].text.startswith("# Inside")
    assert not index.is_error and "# Inside" in index.content[0].text
    for refused in (refused_read, refused_index):
        text = refused.content[0].text
        assert refused.is_error and "outside the allowed paths" in text and "Outside" not in text
        assert "MCP client's roots" in text and "--allow-path DIR (or MD_VISION_ALLOW_PATHS)" in text


def test_the_server_follows_roots_list_changed(folders: tuple[Path, Path, Path]) -> None:
    inside, other, _outside = folders
    current = [inside]
    changes: list[str] = []

    async def list_roots(_context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=path.as_uri()) for path in current])

    async def on_message(message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method:
            changes.append(method)

    async def go() -> Any:
        async with Client(
            _params("--allow-host", "none"),
            mode="legacy",
            list_roots_callback=list_roots,
            message_handler=on_message,
        ) as client:
            before = await client.call_tool("read_md_with_images", {"uri": str(other / "doc.md")})
            listed_before = await client.list_resources()
            current[:] = [other]
            await client.send_roots_list_changed()
            await asyncio.sleep(0.3)  # a notification has no answer to wait for
            after = await client.call_tool("read_md_with_images", {"uri": str(other / "doc.md")})
            gone = await client.call_tool("read_md_with_images", {"uri": str(inside / "doc.md")})
            listed_after = await client.list_resources()
            return before, after, gone, listed_before, listed_after

    before, after, gone, listed_before, listed_after = asyncio.run(go())
    assert before.is_error and "outside the allowed paths" in before.content[0].text
    assert not after.is_error and after.content[0].text.startswith("# Other")
    assert gone.is_error and "outside the allowed paths" in gone.content[0].text
    assert [r.uri for r in listed_before.resources] == [(inside / "doc.md").as_uri()]
    assert [r.uri for r in listed_after.resources] == [(other / "doc.md").as_uri()]
    assert "notifications/resources/list_changed" in changes


def test_a_client_without_roots_and_no_allow_path_reads_no_local_file(
    folders: tuple[Path, Path, Path],
) -> None:
    inside = folders[0]

    async def scenario(client: Client) -> Any:
        return await client.call_tool("read_md_with_images", {"uri": str(inside / "doc.md")})

    refused = _session(_params("--allow-host", "none"), scenario)
    text = refused.content[0].text
    assert (
        refused.is_error
        and "no folder is allowed" in text
        and "--allow-path DIR (or MD_VISION_ALLOW_PATHS)" in text
        and text.count("no folder is allowed") == 1  # issue 27: said once
    )


def test_allow_path_wins_over_the_clients_roots(folders: tuple[Path, Path, Path]) -> None:
    inside, other, _outside = folders

    async def scenario(client: Client) -> Any:
        return (
            await client.call_tool("read_md_with_images", {"uri": str(inside / "doc.md")}),
            await client.call_tool("read_md_with_images", {"uri": str(other / "doc.md")}),
        )

    allowed, refused = _session(
        _params("--allow-path", str(inside), "--allow-host", "none"), scenario, roots=[other]
    )
    assert not allowed.is_error and refused.is_error
    assert "start md-vision with --allow-path DIR (or MD_VISION_ALLOW_PATHS)" in refused.content[0].text


# -- progress and logging ------------------------------------------------------------------------------


def test_folder_indexing_reports_progress_and_logs_through_mcp(tmp_path: Path) -> None:
    for number in range(150):
        (tmp_path / f"doc{number:03}.md").write_text(f"# Doc {number}\n\n## Part\n\n" + "text\n" * 200)
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[LoggingMessageNotificationParams] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def scenario(client: Client) -> Any:
        await client.set_logging_level("debug")
        indexed = await client.call_tool(
            "index_md", {"uri": ".", "max_tokens": 1_000_000}, progress_callback=on_progress
        )
        quiet = await client.call_tool("index_md", {"uri": "doc000.md"})  # no token: no progress
        return indexed, quiet

    indexed, quiet = _session(
        _params("--allow-path", str(tmp_path), "--allow-host", "none"), scenario, on_log=on_log
    )
    assert not indexed.is_error and len(indexed.structured_content["files"]) == 150
    assert progress[0] == (0, None, "looking for markdown files under .")
    assert progress[-1] == (150, 150, "indexed 150 of 150 markdown files")  # completion is always sent
    assert all(later[0] >= earlier[0] for earlier, later in itertools.pairwise(progress))
    assert not quiet.is_error
    messages = [entry.data for entry in logs if entry.logger == "md_vision"]
    assert "indexed .: 150 file(s) on this page" in messages


def test_logs_go_to_the_client_not_to_stderr(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text("# T\n")
    logs: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    params = _params("--allow-path", str(tmp_path), "--allow-host", "none")
    errlog = tmp_path / "stderr.txt"

    async def go() -> None:
        from mcp.client.stdio import stdio_client

        with errlog.open("w") as sink:
            async with Client(
                stdio_client(params, errlog=sink), mode="legacy", logging_callback=on_log
            ) as client:
                await client.set_logging_level("debug")
                await client.call_tool("read_md_with_images", {"uri": "doc.md"})

    asyncio.run(go())
    assert any(entry.data.startswith("read ") for entry in logs)
    assert errlog.read_text() == ""


# -- resources and prompts -------------------------------------------------------------------------------


def test_markdown_files_are_resources_listed_in_pages(tmp_path: Path) -> None:
    for number in range(130):
        folder = tmp_path / f"part{number // 50}"
        folder.mkdir(exist_ok=True)
        (folder / f"doc{number:03}.md").write_text(f"# {number}\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "skip.md").write_text("# skipped\n")
    (tmp_path / ".hidden.md").write_text("# hidden\n")
    (tmp_path / "notes.txt").write_text("not markdown\n")

    async def scenario(client: Client) -> Any:
        pages, cursor = [], None
        while True:
            page = await client.list_resources(cursor=cursor)
            pages.append(page)
            cursor = page.next_cursor
            if not cursor:
                break
        first = pages[0].resources[0]
        read = await client.read_resource(first.uri)
        failures = []
        for uri in ((tmp_path / "notes.txt").as_uri(), "file:///etc/hostname.md", "https://example.com/x.md"):
            try:
                await client.read_resource(uri)
            except MCPError as exc:
                failures.append(exc.error.message)
        try:
            await client.list_resources(cursor="not-a-cursor")
        except MCPError as exc:
            failures.append(exc.error.message)
        return pages, first, read, failures

    pages, first, read, failures = _session(
        _params("--allow-path", str(tmp_path), "--allow-host", "none"), scenario
    )
    assert [len(page.resources) for page in pages] == [100, 30]
    uris = [resource.uri for page in pages for resource in page.resources]
    root = tmp_path.resolve()
    expected = [(root / f"part{number // 50}" / f"doc{number:03}.md").as_uri() for number in range(130)]
    assert uris == expected
    assert first.name == "part0/doc000.md" and first.mime_type == "text/markdown" and first.size == 4
    assert read.contents[0].text == "# 0\n" and read.contents[0].mime_type == "text/markdown"
    assert "not a markdown file" in failures[0]
    assert "outside the allowed paths" in failures[1] and "MD_VISION_ALLOW_PATHS" in failures[1]
    assert "not a file:// URI" in failures[2]
    assert "list again without a cursor" in failures[3]


def test_prompts_outline_and_read_section(folders: tuple[Path, Path, Path]) -> None:
    inside = folders[0]

    async def scenario(client: Client) -> Any:
        listed = (await client.list_prompts()).prompts
        outline = await client.get_prompt("outline", {"uri": "doc.md"})
        section = await client.get_prompt("read_section", {"uri": "doc.md"})
        failures = []
        for name, arguments in (("outline", {}), ("read_section", {"uri": "missing.md"})):
            try:
                await client.get_prompt(name, arguments)
            except MCPError as exc:
                failures.append(exc.error.message)
        return listed, outline, section, failures

    listed, outline, section, failures = _session(
        _params("--allow-path", str(inside), "--allow-host", "none"), scenario
    )
    assert {prompt.name: [a.name for a in prompt.arguments] for prompt in listed} == {
        "outline": ["uri"],
        "read_section": ["uri", "section"],
    }
    assert (
        outline.description == "Outline of doc.md"
        and "# Inside\t1\t1\t41" in outline.messages[0].content.text
    )
    kinds = [message.content.type for message in section.messages]
    assert kinds == ["text", "text", "image", "text"] and section.messages[0].content.text.startswith(
        "# Inside"
    )
    assert failures[0] == "the outline prompt needs the argument uri (missing)"
    assert "does not exist" in failures[1]


# -- argument errors and settings --------------------------------------------------------------------------


def test_argument_errors_are_one_sentence_for_every_tool(tmp_path: Path) -> None:
    calls = [
        ("read_md_with_images", {"uri": "doc.md", "max_images": "ten"}),
        ("read_md_with_images", {"uri": "doc.md", "max_images": 51}),
        ("read_md_with_images", {"section": "## A"}),
        ("read_md_with_images", {"uri": "doc.md", "path": "x"}),
        ("index_md", {"uri": 7}),
        ("index_md", {"uri": "doc.md", "max_tokens": -1}),
        ("index_md", {}),
        ("index_md", {"uri": "doc.md", "recursive": True}),
    ]

    async def scenario(client: Client) -> Any:
        return [await client.call_tool(name, arguments) for name, arguments in calls]

    results = _session(_params("--allow-path", str(tmp_path), "--allow-host", "none"), scenario)
    texts = [result.content[0].text for result in results]
    assert all(result.is_error for result in results)
    assert texts == [
        'read_md_with_images: max_images must be an integer from 0 to 50; got "ten".',
        "read_md_with_images: max_images must be an integer from 0 to 50; got 51.",
        "read_md_with_images: uri is required (a string); the call did not give it.",
        "read_md_with_images has no argument 'path' (given \"x\"); its arguments are uri, section, "
        "line_range, max_images and max_tokens.",
        "index_md: uri must be a string; got 7.",
        "index_md: max_tokens must be an integer of at least 0; got -1.",
        "index_md: uri is required (a string); the call did not give it.",
        "index_md has no argument 'recursive' (given true); its arguments are uri, cursor and max_tokens.",
    ]
    assert not any("pydantic" in text for text in texts)


def test_hosts_and_paths_from_the_environment_with_the_same_words(folders: tuple[Path, Path, Path]) -> None:
    inside = folders[0]
    with LocalServer({"/r.md": Reply(body="# Remote\n", content_type="text/markdown")}) as server:

        async def scenario(client: Client) -> Any:
            return (
                await client.call_tool("read_md_with_images", {"uri": "doc.md"}),
                await client.call_tool("read_md_with_images", {"uri": server.url("/r.md")}),
                await client.call_tool(
                    "read_md_with_images", {"uri": f"http://localhost:{server.port}/r.md"}
                ),
            )

        local, remote, refused = _session(
            _params(MD_VISION_ALLOW_PATHS=str(inside), MD_VISION_ALLOW_HOSTS="127.0.0.1"), scenario
        )
    assert not local.is_error and local.content[0].text.startswith("# Inside")
    assert not remote.is_error and remote.content[0].text == "# Remote\n"
    assert refused.is_error
    assert "run with --allow-host localhost (or MD_VISION_ALLOW_HOSTS)" in refused.content[0].text


def test_url_refusal_under_none_names_the_setting(tmp_path: Path) -> None:
    async def scenario(client: Client) -> Any:
        return await client.call_tool("index_md", {"uri": "https://example.com/readme.md"})

    refused = _session(_params("--allow-path", str(tmp_path), "--allow-domain", "none"), scenario)
    assert refused.is_error
    assert "start md-vision with --allow-host HOST (or MD_VISION_ALLOW_HOSTS)" in refused.content[0].text
