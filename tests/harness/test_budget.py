"""One output budget for every tool: the same content is cut at the same place, whatever its source."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from docab.agent.budget import OutputBudget
from docab.messages import Image, Text, ToolResult
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


def test_an_image_that_does_not_fit_becomes_a_note_and_the_text_after_it_still_counts() -> None:
    """Finding 10 of issue 13: everything after an image that did not fit used to be dropped."""
    big = Image(png_bytes(size=(1000, 1000)), "image/png")  # 1,334 tokens: 5,336 characters
    small = Image(png_bytes(size=(8, 8)), "image/png")  # 1 token: 4 characters
    result = ToolResult(blocks=(Text("a" * 40), big, Text("b" * 30), small, Text("c" * 50)))
    budget = OutputBudget(limit=100)
    assert [budget.cost_of(b) for b in result.blocks] == [40, 5336, 30, 4, 50]
    cut = budget.apply(result)
    texts = [b.text if isinstance(b, Text) else "<image>" for b in cut.blocks]
    # a, b and the small image spend 74; the big image is a note in its place; c gets the 26 left.
    assert texts[:5] == [
        "a" * 40,
        "[image not shown: it costs 5,336 chars and 60 chars of the tool output budget were left]",
        "b" * 30,
        "<image>",
        "c" * 26,
    ]
    assert cut.truncated and "1 image omitted" in texts[-1] and len(cut.blocks) == 6


def test_budget_edges_for_images() -> None:
    image = Image(png_bytes(), "image/png")
    exact = ToolResult(blocks=(Text("x" * 10), image))
    assert OutputBudget(limit=40, image_cost=30).apply(exact) is exact  # exactly at the limit: unchanged
    one_over = OutputBudget(limit=39, image_cost=30).apply(exact)
    assert one_over.truncated and not one_over.images and one_over.blocks[0] == Text("x" * 10)
    free = OutputBudget(limit=1, image_cost=0)
    assert free.apply(ToolResult(blocks=(image, image))).images == (image, image)
    alone = OutputBudget(limit=29, image_cost=30).apply(ToolResult(blocks=(image,)))
    assert alone.truncated and len(alone.blocks) == 2 and "not shown" in alone.blocks[0].text
    # Text right after a dropped image gets everything the image did not use.
    after = OutputBudget(limit=20, image_cost=30).apply(ToolResult(blocks=(image, Text("y" * 20))))
    assert after.blocks[1] == Text("y" * 20) and after.truncated


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
        small = OutputBudget(
            limit=budget.cost_of_image(fs_pic.images[0]) - 1, unit=budget.unit, image_cost=budget.image_cost
        )
        assert small.apply(fs_pic).blocks == small.apply(mcp_pic).blocks
        assert small.apply(mcp_pic).truncated and not small.apply(mcp_pic).images


@pytest.mark.parametrize(
    ("size", "anthropic", "openai"),
    [
        # Anthropic's documented examples (vision guide): 200x200 ~54, 1000x1000 ~1334, 1092x1092 ~1590;
        # OpenAI's (vision guide, high detail): 1024x1024 765, 2048x4096 1105; one 512 tile: 255.
        ((200, 200), 54, 255),
        ((1000, 1000), 1334, 765),
        ((1092, 1092), 1590, 765),
        ((1024, 1024), 1399, 765),
        ((2048, 4096), 1600, 1105),
        ((500, 500), 334, 255),
        ((1568, 784), 1600, 1105),  # a 2:1 page at the long-edge cap: scaled to about 1,600 tokens
        ((1, 1), 1, 255),
    ],
)
def test_image_tokens_follow_each_providers_documented_rule(
    size: tuple[int, int], anthropic: int, openai: int
) -> None:
    from docab.tokens import anthropic_image_tokens, openai_image_tokens

    assert abs(anthropic_image_tokens(*size) - anthropic) <= 1
    assert openai_image_tokens(*size) == openai


def test_an_image_costs_what_its_size_costs_under_the_runs_rule() -> None:
    from docab.tokens import IMAGE_RULE_MAXIMUM, image_rule_for, image_size, image_tokens

    page = Image(png_bytes(size=(1224, 1584)), "image/png")  # a letter page at 144 dpi
    thumb = Image(png_bytes(size=(100, 80)), "image/png")
    assert image_size(page.data) == (1224, 1584)
    assert image_tokens(thumb, "anthropic") == 11 and image_tokens(thumb, "openai") == 255
    assert image_tokens(page, "anthropic") == 1599 and image_tokens(page, "openai") == 765
    chars, tokens = OutputBudget(image_rule="openai"), OutputBudget(unit="tokens", image_rule="openai")
    assert chars.cost_of_image(page) == 4 * tokens.cost_of_image(page) == 4 * 765
    assert OutputBudget(image_cost=7).cost_of_image(page) == 7  # a flat cost in the config wins
    broken = Image(b"not an image at all", "image/png")
    assert image_tokens(broken, "anthropic") == IMAGE_RULE_MAXIMUM["anthropic"] >= 1590
    assert image_tokens(broken, "openai") == IMAGE_RULE_MAXIMUM["openai"] == 85 + 8 * 170
    assert [image_rule_for(p) for p in ("openai", "anthropic", "baseline", "")] == [
        "openai",
        "anthropic",
        "anthropic",
        "anthropic",
    ]
    with pytest.raises(ValueError, match="unknown image rule"):
        OutputBudget(image_rule="gemini")  # type: ignore[arg-type]


def test_the_run_chooses_one_image_rule_from_its_models_provider() -> None:
    from docab.config import BudgetConfig
    from docab.runner.context import output_budget

    assert output_budget(BudgetConfig(), "openai").image_rule == "openai"
    assert output_budget(BudgetConfig(), "anthropic").image_rule == "anthropic"
    assert output_budget(BudgetConfig(), "baseline").image_rule == "anthropic"
    assert output_budget(BudgetConfig(image_cost=5), "openai").image_cost == 5


# -- document lines (issue 24, item 1) ---------------------------------------------------------

from docab.agent.budget import FRAMING_CHARS  # noqa: E402
from docab.agent.document_lines import MD_VISION_META, document_lines  # noqa: E402
from docab.messages import ToolCall  # noqa: E402

DOC_LINES = ["alpha " * 30, "", "beta gamma", "delta " * 100, "epsilon", "zeta " * 10]


def file_read(lines: list[str], first: int = 1, trailer: bool = True) -> tuple[ToolCall, ToolResult]:
    body = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, first))
    if trailer:
        body += f"\n[lines {first}-{first + len(lines) - 1} of 900; read on with offset={first + len(lines)}]"
    call = ToolCall("c1", "read_file", {"path": "document/document.md", "offset": first})
    return call, ToolResult(blocks=(Text(body),))


def md_read(lines: list[str], first: int = 1, note: str | None = None) -> tuple[ToolCall, ToolResult]:
    blocks: list[Text] = [Text(note)] if note else []
    blocks.append(Text("\n".join(lines) + "\n"))
    roles = (["note"] if note else []) + ["source"]
    meta = {MD_VISION_META: {"source": "document/document.md", "first_line": first, "roles": roles}}
    call = ToolCall("c2", "read_md_with_images", {"uri": "document/document.md"})
    return call, ToolResult(blocks=tuple(blocks), meta=meta)


def shown_document_lines(call: ToolCall, result: ToolResult, budget: OutputBudget) -> list[str]:
    cut = budget.apply(result, document_lines(call, result))
    blocks = cut.blocks[:-1] if cut.truncated else cut.blocks
    if call.name == "read_file":
        text = "".join(b.text for b in blocks if isinstance(b, Text))
        return [line.split("\t", 1)[1] for line in text.split("\n") if "\t" in line]
    source = [
        b for b, role in zip(blocks, result.meta[MD_VISION_META]["roles"], strict=False) if role == "source"
    ]
    joined = "".join(b.text for b in source if isinstance(b, Text))
    return joined.removesuffix("\n").split("\n") if joined else []


@pytest.mark.parametrize("limit", [1, 50, 181, 182, 183, 200, 300, 800, 1_000, 5_000])
def test_read_file_and_md_vision_are_cut_at_the_same_document_line(limit: int) -> None:
    budget = OutputBudget(limit=limit)
    fs = shown_document_lines(*file_read(DOC_LINES), budget)
    md = shown_document_lines(*md_read(DOC_LINES, note="Note: 3 more image(s) were not inlined."), budget)
    assert fs == md
    assert fs == DOC_LINES[: len(fs)] or (len(fs) == 1 and DOC_LINES[0].startswith(fs[0]))


def test_the_first_line_is_cut_at_the_same_character_when_nothing_else_fits() -> None:
    budget = OutputBudget(limit=40)
    fs = shown_document_lines(*file_read(DOC_LINES), budget)
    md = shown_document_lines(*md_read(DOC_LINES), budget)
    assert fs == [DOC_LINES[0][:40]]
    assert md == [DOC_LINES[0][:40]]


def test_line_numbers_are_not_charged_and_a_fitting_read_is_unchanged() -> None:
    call, result = file_read(DOC_LINES)
    own = sum(len(line) + 1 for line in DOC_LINES)
    assert len(result.blocks[0].text) > own  # the numbers would have pushed it over
    assert OutputBudget(limit=own).apply(result, document_lines(call, result)) is result
    assert OutputBudget(limit=own - 1).apply(result, document_lines(call, result)).truncated


def test_framing_beyond_its_allowance_is_cut_but_the_lines_stay() -> None:
    call, result = md_read(DOC_LINES, note="N" * (FRAMING_CHARS + 500))
    cut = OutputBudget(limit=10_000).apply(result, document_lines(call, result))
    assert cut.truncated
    assert cut.blocks[0].text == "N" * FRAMING_CHARS  # type: ignore[union-attr]
    assert cut.blocks[1] == result.blocks[1]


def test_a_line_split_across_two_source_blocks_is_charged_once() -> None:
    meta = {MD_VISION_META: {"source": "d.md", "first_line": 5, "roles": ["source", "data-uri", "source"]}}
    result = ToolResult(blocks=(Text("one\ntwo "), Text("[data URI]"), Text("halves\nthree\n")), meta=meta)
    lines = document_lines(ToolCall("c", "read_md_with_images", {}), result)
    assert [(s.number, s.chars) for s in lines[0]] == [(5, 3), (6, 4)]
    assert [(s.number, s.chars) for s in lines[2]] == [(6, 6), (7, 5)]
    own = 4 + 11 + 6  # "one"+1, "two halves"+1, "three"+1
    assert OutputBudget(limit=own).apply(result, lines) is result
