"""Pages read: mapped from what each tool showed, after the output budget."""

from __future__ import annotations

import asyncio
from pathlib import Path

from docab.agent.budget import OutputBudget
from docab.agent.evidence import PageMap, ReadTracker
from docab.agent.messages import Image, Text, ToolCall, ToolResult
from docab.agent.toolbox.filesystem import filesystem_tools
from tests.harness.corpus import png_bytes, write_document


def tracker_for(root: Path) -> ReadTracker:
    text = (root / "document" / "document.md").read_text()
    return ReadTracker(PageMap.from_markdown(text), workspace_root=str(root))


def test_page_map_from_page_headings(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    page_map = PageMap.from_markdown((tmp_path / "document" / "document.md").read_text())
    assert page_map.pages == (1, 2, 3)
    assert page_map.page_of_line(1) is None  # the title comes before page 1
    assert page_map.page_of_line(page_map.starts[1]) == 2
    assert page_map.page_of_line(page_map.line_count) == 3


def test_fs_read_maps_shown_line_numbers_to_pages(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    read = next(t for t in filesystem_tools(tmp_path) if t.spec.name == "read_file")
    page_map = tracker.page_map
    args = {"path": "document/document.md", "offset": page_map.starts[1], "limit": 3}
    tracker.observe(ToolCall("1", "read_file", args), asyncio.run(read.call(args)))
    assert tracker.pages_read == (2,)
    assert tracker.sections == [f"document/document.md:{page_map.starts[1]}-{page_map.starts[1] + 2}"]


def test_only_what_survives_the_budget_counts(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    read = next(t for t in filesystem_tools(tmp_path) if t.spec.name == "read_file")
    args = {"path": "document/document.md"}
    full = asyncio.run(read.call(args))
    cut = OutputBudget(limit=len(full.text) // 3).apply(full)
    tracker.observe(ToolCall("1", "read_file", args), cut)
    assert tracker.pages_read == (1,)


def test_page_image_read_counts_its_page(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    result = ToolResult(blocks=(Text("document/pages/page-0003.png"), Image(png_bytes(), "image/png")))
    tracker.observe(ToolCall("1", "read_file", {"path": f"{tmp_path}/document/pages/page-0003.png"}), result)
    assert tracker.pages_read == (3,)


def test_mcp_section_read_is_located_in_the_document(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    # A read of a sub-section returns source lines without the page heading.
    shown = "### Products\nThe flagship robot is called Hermes.\nHermes carries up to 300 kg."
    tracker.observe(
        ToolCall("1", "read_md_with_images", {"uri": "document/document.md", "section": "### Products"}),
        ToolResult(blocks=(Text(shown),)),
    )
    assert tracker.pages_read == (3,)
    assert tracker.sections == ["### Products"]


def test_mcp_page_headings_and_inlined_page_images_count(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    blocks = (
        Text("## Page 1\n"),
        Text(f"{tmp_path}/document/pages/page-0002.png"),
        Image(png_bytes(), "image/png"),
    )
    tracker.observe(ToolCall("1", "read_md_with_images", {"uri": "document/document.md"}), ToolResult(blocks))
    assert tracker.pages_read == (1, 2)


def test_search_hits_indexes_and_errors_are_not_reads(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    line = "document/document.md:12:Revenue in 2022: 48.5 million euros"
    tracker.observe(ToolCall("1", "grep", {"pattern": "Revenue"}), ToolResult(blocks=(Text(line),)))
    tracker.observe(
        ToolCall("2", "index_md", {"uri": "document"}),
        ToolResult(blocks=(Text("## Page 2\t9\t1\t80"),)),
    )
    tracker.observe(
        ToolCall("3", "read_md_with_images", {"uri": "x"}),
        ToolResult(blocks=(Text("## Page 1"),), is_error=True),
    )
    assert tracker.pages_read == ()


def test_repeated_lines_do_not_locate_a_read() -> None:
    text = (
        "# T\n## Page 1\nConfidential draft\nalpha line one\n## Page 2\nConfidential draft\nbeta line two\n"
    )
    tracker = ReadTracker(PageMap.from_markdown(text))
    tracker.observe(
        ToolCall("1", "read_md_with_images", {}), ToolResult(blocks=(Text("Confidential draft"),))
    )
    assert tracker.pages_read == ()
    tracker.observe(ToolCall("2", "read_md_with_images", {}), ToolResult(blocks=(Text("beta line two"),)))
    assert tracker.pages_read == (2,)


def md_vision_result(tmp_path: Path, first: int, source_text: str, *, extra: tuple = ()) -> ToolResult:
    meta = {
        "io.github.docab/md-vision": {
            "source": f"{tmp_path}/document/document.md",
            "first_line": first,
            "last_line": first + source_text.count("\n"),
            "roles": ["source", *(r for r, _ in extra)],
        }
    }
    return ToolResult(blocks=(Text(source_text), *(b for _, b in extra)), meta=meta)


def test_md_vision_meta_gives_the_lines_read(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    start = tracker.page_map.starts[1]
    lines = (tmp_path / "document/document.md").read_text().splitlines()
    # Two lines before page 2's heading and three after: pages 1 and 2, not located by content.
    shown = "\n".join(lines[start - 3 : start + 2]) + "\n"
    tracker.observe(
        ToolCall("1", "read_md_with_images", {"uri": "document/document.md"}),
        md_vision_result(tmp_path, start - 2, shown),
    )
    assert tracker.pages_read == (1, 2)


def test_md_vision_meta_counts_only_what_the_budget_kept(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    whole = (tmp_path / "document/document.md").read_text()
    result = md_vision_result(tmp_path, 1, whole)
    cut = OutputBudget(limit=len(whole.splitlines()[0]) + 20).apply(result)
    tracker.observe(ToolCall("1", "read_md_with_images", {"uri": "document/document.md"}), cut)
    assert tracker.pages_read in ((), (1,))  # the title and at most page 1's heading survived
    assert 3 not in tracker.pages_read


def test_md_vision_labels_name_page_images(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    label = Text(f"Image: {tmp_path}/document/pages/page-0003.png (image/png)")
    result = md_vision_result(
        tmp_path,
        1,
        "# Acme annual report\n",
        extra=(("label", label), ("image", Image(png_bytes(), "image/png"))),
    )
    tracker.observe(ToolCall("1", "read_md_with_images", {"uri": "document/document.md"}), result)
    assert tracker.pages_read == (3,)


def test_page_spans_come_from_the_corpus_meta(tmp_path: Path) -> None:
    from docab.agent.evidence import page_spans

    write_document(tmp_path / "document")
    spans = page_spans(tmp_path / "document" / "meta.json")
    text = (tmp_path / "document" / "document.md").read_text()
    assert spans is not None and [p for p, _ in spans] == [1, 2, 3]
    assert PageMap.from_markdown(text, spans=spans).starts == PageMap.from_markdown(text).starts
    assert page_spans(tmp_path / "missing.json") is None
    (tmp_path / "bad.json").write_text('{"pages": [{"page": 1}]}')
    assert page_spans(tmp_path / "bad.json") is None
