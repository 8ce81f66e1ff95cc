"""Hostile markdown through a real MCP client over stdio (issue 26 item 3): the answers, a parse
that gives up at its deadline with a sentence, and a trivial read that large parses cannot
starve; the server stays up throughout. Order of completion is asserted, never a time."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from tests.md_vision.test_mcp import _command


def _params(*args: str) -> StdioServerParameters:
    command = _command()
    env = {key: value for key, value in os.environ.items() if not key.startswith("MD_VISION_")}
    return StdioServerParameters(
        command=command[0], args=[*command[1:], "--workers", "1", "--allow-host", "none", *args], env=env
    )


def _run(params: StdioServerParameters, scenario: Any) -> Any:
    async def go() -> Any:
        async with Client(params) as client:
            return await scenario(client)

    return asyncio.run(go())


def test_images_in_one_paragraph_and_many_reference_definitions_are_indexed(tmp_path: Path) -> None:
    images = 80_000  # 880 KB in one paragraph: 144 s before
    (tmp_path / "images.md").write_text("# Images\n\n" + "![](x.png)\n" * images)
    definitions = 40_000  # 60 s before
    (tmp_path / "refs.md").write_text(
        "# Refs\n\n"
        + "".join(f"[r{i}]: x{i}.png\n" for i in range(definitions))
        + "\n"
        + "".join(f"![a][r{i}]\n" for i in range(definitions))
    )

    async def scenario(client: Client) -> Any:
        return (
            await client.call_tool("index_md", {"uri": "images.md"}),
            await client.call_tool("index_md", {"uri": "refs.md"}),
            await client.list_tools(),
        )

    first, second, tools = _run(_params("--allow-path", str(tmp_path)), scenario)
    assert not first.is_error and f"# Images\t1\t{images}\t" in first.content[0].text
    assert not second.is_error and f"# Refs\t1\t{definitions}\t" in second.content[0].text
    assert tools.tools


def test_megabytes_of_headings_are_indexed_up_to_the_structure_cap(tmp_path: Path) -> None:
    from md_vision.document import MAX_STRUCTURE

    lines = 3 * MAX_STRUCTURE  # 2.4 MB of empty ATX headings: three pieces' worth, parsed one at a time
    (tmp_path / "headings.md").write_text("###\n" * lines)

    async def scenario(client: Client) -> Any:
        return (
            await client.call_tool("index_md", {"uri": "headings.md", "max_tokens": 2_000}),
            await client.call_tool(
                "read_md_with_images", {"uri": "headings.md", "line_range": [lines - 1, lines]}
            ),
            await client.list_tools(),
        )

    index, tail, tools = _run(_params("--allow-path", str(tmp_path)), scenario)
    text = index.content[0].text
    assert not index.is_error
    assert f"only those on lines 1-{MAX_STRUCTURE} are indexed (of {lines:,})" in text
    assert f"indexed_lines=1-{MAX_STRUCTURE}" in text and "rows=1-" in text
    assert index.structured_content["files"][0]["indexed_lines"] == MAX_STRUCTURE
    assert not tail.is_error and tail.content[-1].text == "###\n###\n"
    assert f"Images after line {MAX_STRUCTURE} of this document are not inlined" in tail.content[0].text
    assert tools.tools


def test_a_parse_past_its_deadline_is_refused_and_the_server_goes_on(tmp_path: Path) -> None:
    (tmp_path / "headings.md").write_text("#\n" * 1_000_000)
    (tmp_path / "small.md").write_text("# Small\n\ntext\n")

    async def scenario(client: Client) -> Any:
        return (
            await client.call_tool("index_md", {"uri": "headings.md"}),
            await client.call_tool("index_md", {"uri": "small.md"}),
            await client.call_tool("read_md_with_images", {"uri": "headings.md"}),
        )

    refused, small, again = _run(_params("--allow-path", str(tmp_path), "--parse-seconds", "0.1"), scenario)
    assert refused.is_error
    message = refused.content[0].text
    assert "took longer than 0.1 s to parse" in message and "--parse-seconds" in message
    assert not small.is_error and "# Small" in small.content[0].text
    assert again.is_error and again.content[0].text == message  # remembered, not parsed again


def test_large_parses_do_not_hold_up_a_trivial_read(tmp_path: Path) -> None:
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text(f"# {name}\n\n" + "## h\n\ntext ![](x.png) text\n\n" * 60_000)
    (tmp_path / "small.md").write_text("# Small\n\ntext\n")
    finished: list[str] = []

    async def call(client: Client, uri: str) -> None:
        result = await client.call_tool(
            "read_md_with_images", {"uri": uri, "line_range": [1, 3], "max_images": 0}
        )
        assert not result.is_error, result.content[0].text
        finished.append(uri)

    async def scenario(client: Client) -> None:
        big = [asyncio.create_task(call(client, name)) for name in ("a.md", "b.md")]
        await asyncio.sleep(0.3)  # both large parses are under way or queued
        await call(client, "small.md")
        await asyncio.gather(*big)

    _run(_params("--allow-path", str(tmp_path)), scenario)
    # The large documents share one lane, one after the other; the small read passes both (it
    # used to wait for a thread: two large parses held both).
    assert finished[0] == "small.md", finished


def test_a_megabyte_heading_or_frontmatter_cannot_fill_an_index_page_past_max_tokens(tmp_path: Path) -> None:
    # A page always shows at least one heading row: a hostile file's one 2 MB heading was shown
    # whole whatever max_tokens said (9.8 MB at max_tokens=500), and so was a 2 MB frontmatter.
    (tmp_path / "heading.md").write_text("# " + "x" * 2_000_000 + "\n\nbody\n\n## small\n\ntext\n")
    (tmp_path / "front.md").write_text("---\ntitle: " + "y" * 2_000_000 + "\n---\n# T\n\nbody\n")

    async def scenario(client: Client) -> Any:
        return (
            await client.call_tool("index_md", {"uri": "heading.md", "max_tokens": 500}),
            await client.call_tool("index_md", {"uri": "front.md", "max_tokens": 500}),
            await client.call_tool("index_md", {"uri": "."}),
            await client.call_tool("read_md_with_images", {"uri": "heading.md", "line_range": [5, 7]}),
        )

    heading, front, folder, read = _run(_params("--allow-path", str(tmp_path)), scenario)
    for result in (heading, front, folder):
        assert not result.is_error
        shown = sum(len(part.text) for part in result.content if part.type == "text")
        assert shown < 20_000, shown
        assert len(str(result.structured_content)) < 20_000
    assert (
        "… (heading of 2,000,002 characters, cut; read it by line_range)\t1\t0\t" in heading.content[0].text
    )
    assert "\n## small\t5\t0\t" in heading.content[0].text  # the rows after it are all there
    assert "(frontmatter of 2,000,008 characters, cut; read it by line_range)" in front.content[0].text
    assert "\n# T\t4\t0\t" in front.content[0].text
    assert not read.is_error and "## small" in read.content[-1].text
