"""One output budget for every tool: the same content is cut at the same place, whatever its source."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from docab.agent.budget import OutputBudget
from docab.agent.messages import Image, Text, ToolResult
from tests.harness.corpus import png_bytes


def text_result(text: str) -> ToolResult:
    return ToolResult(blocks=(Text(text),))


def test_a_result_that_fits_is_returned_unchanged() -> None:
    result = text_result("x" * 100)
    assert OutputBudget(limit=100).apply(result) is result


def test_one_character_over_is_cut_and_logged() -> None:
    cut = OutputBudget(limit=100).apply(text_result("x" * 101))
    assert cut.truncated
    assert cut.blocks[0] == Text("x" * 100)
    assert "output truncated" in cut.blocks[-1].text and "100 of 101 characters" in cut.blocks[-1].text


def test_cut_prefers_a_line_break() -> None:
    text = "\n".join(f"line {i:03d}" for i in range(100))
    cut = OutputBudget(limit=95).apply(text_result(text))
    assert cut.blocks[0].text.endswith("\n")
    assert all(line.startswith("line ") for line in cut.blocks[0].text.splitlines())


def test_tokens_unit_counts_four_characters_a_token() -> None:
    budget = OutputBudget(limit=25, unit="tokens")
    assert budget.apply(text_result("y" * 100)).truncated is False
    cut = budget.apply(text_result("y" * 101))
    assert cut.truncated and cut.blocks[0].text == "y" * 100


def test_images_cost_the_same_whoever_sends_them() -> None:
    image = Image(png_bytes(), "image/png")
    budget = OutputBudget(limit=1000, image_cost=600)
    one = ToolResult(blocks=(Text("caption"), image))
    assert budget.apply(one) is one
    two = ToolResult(blocks=(image, image))
    cut = budget.apply(two)
    assert cut.truncated and len(cut.images) == 1
    assert "1 image omitted" in cut.blocks[-1].text


def test_blocks_after_the_cut_are_dropped_and_counted() -> None:
    image = Image(png_bytes(), "image/png")
    result = ToolResult(blocks=(Text("a" * 50), Text("b" * 100), image, Text("c" * 10)))
    cut = OutputBudget(limit=80, image_cost=10).apply(result)
    assert [b.text for b in cut.blocks[:-1]] == ["a" * 50, "b" * 30]
    assert "1 image omitted" in cut.blocks[-1].text


def test_error_status_and_meta_survive_a_cut() -> None:
    result = ToolResult(blocks=(Text("e" * 20),), is_error=True, meta={"k": 1})
    cut = OutputBudget(limit=10).apply(result)
    assert cut.is_error and cut.meta == {"k": 1} and cut.truncated


def test_invalid_budgets_are_rejected() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        OutputBudget(limit=0)
    with pytest.raises(ValueError, match="negative"):
        OutputBudget(limit=10, image_cost=-1)


def test_fs_read_and_mcp_read_of_the_same_text_are_cut_identically(tmp_path: Path) -> None:
    """The fairness trap: a filesystem read and an MCP read of the same content meet one budget."""
    from docab.agent.toolbox.filesystem import filesystem_tools
    from docab.agent.toolbox.mcp_session import MCPServerSpec, MCPSession
    from tests.harness.test_mcp_session import server_spec

    big = "\n".join(f"Paragraph {i}: " + "lorem ipsum " * 8 for i in range(400))
    (tmp_path / "big.md").write_text(big)
    (tmp_path / "pic.png").write_bytes(png_bytes(size=(32, 32)))
    read = next(t for t in filesystem_tools(tmp_path) if t.spec.name == "read_file")
    fs_text = asyncio.run(read.call({"path": "big.md"}))
    fs_image = asyncio.run(read.call({"path": "pic.png"}))
    # The MCP server returns exactly what the fs tool returned, as list-of-content output.
    (tmp_path / "as-shown.txt").write_text(fs_text.text)
    spec: MCPServerSpec = server_spec()

    async def through_mcp() -> tuple[ToolResult, ToolResult]:
        async with MCPSession(spec, tmp_path) as session:
            return (
                await session.call("cat", {"path": "as-shown.txt"}),
                await session.call("picture", {"path": "pic.png"}),
            )

    mcp_text, mcp_image = asyncio.run(through_mcp())
    assert mcp_text.blocks == fs_text.blocks
    for budget in (
        OutputBudget(limit=5000, image_cost=100),
        OutputBudget(limit=1250, unit="tokens", image_cost=25),
    ):
        cut_fs, cut_mcp = budget.apply(fs_text), budget.apply(mcp_text)
        assert cut_fs.truncated and cut_mcp.truncated
        assert cut_fs.blocks == cut_mcp.blocks
        assert budget.cost(cut_fs.blocks[:-1]) <= budget.limit
        # An image costs the same from either source: both fit, or both are dropped.
        fs_pic, mcp_pic = ToolResult(blocks=fs_image.images), mcp_image
        assert budget.apply(fs_pic) is fs_pic and budget.apply(mcp_pic) is mcp_pic
        small = OutputBudget(limit=budget.cost_of_image - 1, unit=budget.unit, image_cost=budget.image_cost)
        assert small.apply(fs_pic).blocks == small.apply(mcp_pic).blocks
        assert small.apply(mcp_pic).truncated and not small.apply(mcp_pic).images
