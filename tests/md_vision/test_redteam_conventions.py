"""md-vision's roots, resources and prompts under attack, through the SDK's client over stdio:
folder and file names holding percent escapes, forged cursors, relative file URIs, and uris of a
megabyte that must not come back whole; paths shown relative to a first root that changes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.types import ListRootsResult, Root

from md_vision.resources import ResourceFailure, encode_cursor, list_page, read_resource
from tests.md_vision.conftest import settings_for
from tests.md_vision.test_conventions import _params, _session

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
HUGE = 1_000_000


async def _error(request: Any) -> tuple[str, Any]:
    with pytest.raises(MCPError) as caught:
        await request
    return caught.value.error.message, caught.value.error.data


def test_escapes_in_names_are_decoded_once_in_roots_and_resources(tmp_path: Path) -> None:
    project = (tmp_path / "project").resolve()
    root = project / "%2E%2E"  # a folder named so: as a root, not the project folder
    root.mkdir(parents=True)
    (root / "a%41.md").write_text("# escaped name\n")
    (root / "aA.md").write_text("# plain name\n")
    (project / "secret.md").write_text("# secret\n")

    async def scenario(client: Client) -> Any:
        outside = await client.call_tool("read_md_with_images", {"uri": str(project / "secret.md")})
        listed = (await client.list_resources()).resources
        texts = {item.name: (await client.read_resource(item.uri)).contents[0].text for item in listed}
        return outside, texts

    outside, texts = _session(_params("--allow-host", "none"), scenario, roots=[root])
    assert outside.is_error and "outside the allowed paths" in outside.content[0].text
    assert texts == {"a%41.md": "# escaped name\n", "aA.md": "# plain name\n"}


def test_resource_requests_with_hostile_uris_and_cursors_get_short_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text("# Doc\n")
    long_md = tmp_path.as_uri() + "/" + "x" * HUGE + ".md"
    long_txt = tmp_path.as_uri() + "/" + "x" * HUGE + ".txt"

    async def scenario(client: Client) -> Any:
        return [
            await _error(client.read_resource("file:doc.md")),
            await _error(client.read_resource(long_md)),
            await _error(client.read_resource(long_txt)),
        ]

    relative, *longs = _session(_params("--allow-path", str(tmp_path), "--allow-host", "none"), scenario)
    assert relative == (
        "'file:doc.md' is not an absolute file:// URI (file:///folder/file.md)",
        {"uri": "file:doc.md"},
    )
    for message, data in longs:
        assert len(message) < 500 and "x" * 100 in message and "…" in message
        assert len(data["uri"]) == 300 and data["uri"].endswith("…")


@pytest.mark.parametrize("root", [-5, -1, 1, True])
def test_a_forged_cursor_naming_no_allowed_folder_is_refused(tmp_path: Path, root: int) -> None:
    (tmp_path / "doc.md").write_text("# Doc\n")
    settings = settings_for(tmp_path)
    with pytest.raises(ResourceFailure, match="this cursor is not one resources/list gave"):
        list_page(settings, encode_cursor(settings.paths, root, ""), 10)
    # A forged position inside the folder is only compared with names: it never leads outside.
    assert [
        item.name for item in list_page(settings, encode_cursor(settings.paths, 0, "../.."), 10).resources
    ] == ["doc.md"]
    with pytest.raises(ResourceFailure, match="not a markdown file"):
        read_resource(settings, (tmp_path / "doc.md").as_uri()[:-3] + ".txt")


def test_a_uri_of_a_megabyte_is_refused_without_repeating_it(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text("# Doc\n")
    huge = "u" * HUGE

    async def scenario(client: Client) -> Any:
        return (
            await client.call_tool("index_md", {"uri": huge}),
            await client.call_tool("read_md_with_images", {"uri": huge}),
            await _error(client.get_prompt("outline", {"uri": huge})),
        )

    index, read, (prompt, _data) = _session(
        _params("--allow-path", str(tmp_path), "--allow-host", "none"), scenario
    )
    expected = (
        "uri is 1,000,000 characters long, more than any path or URL this server reads (8,192): pass a "
        "markdown file path, a folder, or an http(s) URL"
    )
    assert index.is_error and read.is_error
    assert index.content[0].text == read.content[0].text == prompt == expected


def test_relative_paths_follow_the_first_root_after_the_roots_change(tmp_path: Path) -> None:
    workspace = (tmp_path / "workspace-run-42").resolve()
    (workspace / "sub").mkdir(parents=True)
    (workspace / "sub" / "f.md").write_text("# F\n")
    other = (tmp_path / "other").resolve()
    other.mkdir()
    current = [other, workspace]

    async def list_roots(_context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=path.as_uri()) for path in current])

    async def go() -> list[str]:
        shown = []
        async with Client(
            _params("--allow-host", "none", "--relative-paths"), mode="legacy", list_roots_callback=list_roots
        ) as client:
            for roots, uri in (
                ([other, workspace], str(workspace / "sub" / "f.md")),  # not in the first root: in full
                ([workspace], "sub/f.md"),
                ([workspace / "sub"], "f.md"),
            ):
                current[:] = roots
                await client.send_roots_list_changed()
                await asyncio.sleep(0.3)  # a notification has no answer to wait for
                result = await client.call_tool("index_md", {"uri": uri})
                shown.append(result.structured_content["files"][0]["path"])
                assert result.content[0].text.startswith(f'<file path="{shown[-1]}"')
        return shown

    assert asyncio.run(go()) == [str(workspace / "sub" / "f.md"), "sub/f.md", "f.md"]


def test_an_overview_pages_structured_content_holds_the_headings_its_text_shows(tmp_path: Path) -> None:
    for number in range(40):
        sections = "".join(f"## Part {part}\n\ntext\n\n" for part in range(30))
        (tmp_path / f"doc{number:02}.md").write_text(f"# Doc {number}\n\n{sections}")

    async def scenario(client: Client) -> Any:
        return await client.call_tool("index_md", {"uri": ".", "max_tokens": 1_000})

    overview = _session(_params("--allow-path", str(tmp_path), "--allow-host", "none"), scenario)
    text = overview.content[0].text
    assert "<overview " in text and "# Doc 0; ## Part 0; " in text and "; … (+23)" in text
    files = overview.structured_content["files"]
    assert files and len(text) < 6_000
    for file in files:
        # The text lists 8 top-level headings and counts the rest: the structure, no more (it
        # was every top-level heading, ten times the page's budget).
        headings = file["headings"]["heading"]
        number = int(Path(file["path"]).stem[3:])
        assert headings == [f"# Doc {number}", *(f"## Part {part}" for part in range(7))]


def test_on_2026_07_28_a_resource_read_asks_for_the_roots_of_now(tmp_path: Path) -> None:
    first, second = (tmp_path / "first").resolve(), (tmp_path / "second").resolve()
    for folder in (first, second):
        folder.mkdir()
        (folder / "doc.md").write_text(f"# {folder.name}\n")
    current = [first]

    async def list_roots(_context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=path.as_uri()) for path in current])

    async def go() -> Any:
        async with Client(
            _params("--allow-host", "none"), mode="auto", list_roots_callback=list_roots
        ) as client:
            called = await client.call_tool("index_md", {"uri": str(first / "doc.md")})
            current[:] = [second]  # this protocol has no roots/list_changed: the next request asks
            withdrawn = await _error(client.read_resource((first / "doc.md").as_uri()))
            granted = await client.read_resource((second / "doc.md").as_uri())
            return called, withdrawn, granted

    called, (withdrawn, _data), granted = asyncio.run(go())
    assert not called.is_error
    assert "is outside the allowed paths" in withdrawn and str(second) in withdrawn
    assert granted.contents[0].text == "# second\n"
