"""Pages read: mapped from what each tool showed, after the output budget."""

from __future__ import annotations

import asyncio
from pathlib import Path

from docab.agent.budget import OutputBudget
from docab.agent.evidence import PageMap, PageShare, ReadTracker
from docab.agent.toolbox.filesystem import filesystem_tools
from docab.messages import Image, Text, ToolCall, ToolResult
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


def read_file(root: Path, **args: object) -> tuple[ToolCall, ToolResult]:
    tool = next(t for t in filesystem_tools(root) if t.spec.name == "read_file")
    arguments = {"path": "document/document.md", **args}
    return ToolCall("1", "read_file", arguments), asyncio.run(tool.call(arguments))


def test_fs_read_maps_shown_line_numbers_to_pages(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    page_map = tracker.page_map
    # Page 2 whole: its heading, its image line and its four lines of text.
    tracker.observe(*read_file(tmp_path, offset=page_map.starts[1], limit=9))
    assert tracker.pages_read == (2,)
    assert tracker.sections == [f"document/document.md:{page_map.starts[1]}-{page_map.starts[1] + 8}"]
    assert [(s.page, s.text_share, s.image) for s in tracker.page_shares] == [(2, 1.0, False)]


def test_a_page_heading_and_its_image_reference_are_not_reading_the_page(tmp_path: Path) -> None:
    """Finding 7 of issue 13: a window that shows a page's ``## Page N`` heading and its image line,
    but none of its text, used to count the page as read."""
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    start = tracker.page_map.starts[1]
    tracker.observe(*read_file(tmp_path, offset=start, limit=3))  # "## Page 2", "", "![Page 2](...)"
    assert tracker.pages_read == () and tracker.page_shares == ()
    # One window across a page boundary credits only the page most of whose text it showed.
    tracker.observe(*read_file(tmp_path, offset=start - 2, limit=10))  # page 1's last line, page 2 whole
    assert tracker.pages_read == (2,)
    shares = {s.page: s.text_share for s in tracker.page_shares}
    assert 0 < shares[1] < 0.5 and shares[2] >= 0.5


def test_half_the_text_of_a_page_is_the_edge() -> None:
    text = (
        "# T\n\n## Page 1\n\n![Page 1](pages/page-0001.png)\nabcdefghij\nklmnopqrst\nuvwxyzabcd\nefghijklmn\n"
    )
    tracker = ReadTracker(PageMap.from_markdown(text))
    assert tracker.page_map.page_text == {1: 40}
    lines = [f"{n:>6}\t{line}" for n, line in enumerate(text.splitlines(), 1)]
    call = ToolCall("1", "read_file", {"path": "document/document.md"})
    # Line 6 whole and line 7 cut one character short (as the budget cuts): 19 of 40 characters.
    tracker.observe(call, ToolResult(blocks=(Text(lines[5] + "\n" + lines[6][:-1]),)))
    assert [s.text_share for s in tracker.page_shares] == [19 / 40] and tracker.pages_read == ()
    tracker.observe(call, ToolResult(blocks=(Text(lines[6]),)))  # line 7 whole: 20 of 40, exactly half
    assert tracker.pages_read == (1,) and tracker.page_shares[0].text_share == 0.5
    tracker.observe(call, ToolResult(blocks=(Text(lines[6]),)))  # shown again: counted once
    assert tracker.page_shares[0].text_share == 0.5


def test_text_chars_leave_out_headings_markers_image_references_and_whitespace() -> None:
    from docab.agent.evidence import text_chars

    assert text_chars("## Page 12") == 0
    assert text_chars("![Page 1](pages/page-0001.png)") == 0
    assert text_chars('<img src="x.png" alt="y">') == 0
    assert text_chars("### Company overview") == len("Companyoverview")
    assert text_chars("Net margin: 12%  ![chart](figures/f.png)") == len("Netmargin:12%")
    assert text_chars("#hashtag is text") == len("#hashtagistext")


def test_a_page_without_text_is_read_only_through_its_image(tmp_path: Path) -> None:
    text = (
        "# T\n\n## Page 1\n\n![Page 1](pages/page-0001.png)\n\n## Page 2\n\n"
        "Some words here, enough of them to make one real line of page text.\n"
    )
    tracker = ReadTracker(PageMap.from_markdown(text), workspace_root=str(tmp_path))
    numbered = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(text.splitlines(), 1))
    tracker.observe(
        ToolCall("1", "read_file", {"path": "document/document.md"}), ToolResult((Text(numbered),))
    )
    assert tracker.pages_read == (2,)
    image = ToolResult(blocks=(Text("document/pages/page-0001.png"), Image(png_bytes(), "image/png")))
    tracker.observe(ToolCall("2", "read_file", {"path": "document/pages/page-0001.png"}), image)
    assert tracker.pages_read == (1, 2)
    assert tracker.page_shares[0] == PageShare(1, 0.0, True, 0, 0.0)


def test_search_results_show_the_lines_they_print_but_never_read_a_page(tmp_path: Path) -> None:
    """Issue 24, item 2: search results count for pages *seen*, never for pages *read* (before,
    a page grep printed most of counted as read)."""
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    grep = next(t for t in filesystem_tools(tmp_path) if t.spec.name == "grep")
    args = {"pattern": "Revenue|Net margin|Employees", "path": "document", "context": 1}
    tracker.observe(ToolCall("1", "grep", args), asyncio.run(grep.call(args)))
    assert tracker.pages_seen == (2,)  # every line of page 2's text was printed
    assert tracker.pages_read == ()  # but no read call opened it
    assert tracker.page_shares[0].text_share == 0.0 and tracker.page_shares[0].seen_share == 1.0
    one_hit = tracker_for(tmp_path)
    args = {"pattern": "Hermes carries", "path": "document"}
    one_hit.observe(ToolCall("1", "grep", args), asyncio.run(grep.call(args)))
    assert one_hit.pages_seen == () and 0 < (one_hit.page_shares[0].seen_share or 0) < 0.5
    read = next(t for t in filesystem_tools(tmp_path) if t.spec.name == "read_file")
    opened = {"path": "document/document.md"}
    tracker.observe(ToolCall("2", "read_file", opened), asyncio.run(read.call(opened)))
    assert 2 in tracker.pages_read and set(tracker.pages_read) <= set(tracker.pages_seen)


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


def test_mcp_page_headings_do_not_count_and_inlined_page_images_do(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    blocks = (
        Text("## Page 1\n"),
        Text(f"{tmp_path}/document/pages/page-0002.png"),
        Image(png_bytes(), "image/png"),
    )
    tracker.observe(ToolCall("1", "read_md_with_images", {"uri": "document/document.md"}), ToolResult(blocks))
    assert tracker.pages_read == (2,)
    # An image the budget replaced by a note, or a text-only model never saw, shows nothing.
    cut = OutputBudget(limit=40, image_cost=1000).apply(ToolResult(blocks))
    later = tracker_for(tmp_path)
    later.observe(ToolCall("2", "read_md_with_images", {"uri": "document/document.md"}), cut)
    assert later.pages_read == ()


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
        "# T\n## Page 1\nConfidential draft\nalpha line one\n## Page 2\nConfidential draft\n"
        "beta line two, which is the longer line of this page\n"
    )
    tracker = ReadTracker(PageMap.from_markdown(text))
    tracker.observe(
        ToolCall("1", "read_md_with_images", {}), ToolResult(blocks=(Text("Confidential draft"),))
    )
    assert tracker.pages_read == ()
    located = Text("beta line two, which is the longer line of this page")
    tracker.observe(ToolCall("2", "read_md_with_images", {}), ToolResult(blocks=(located,)))
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
    # Page 2 from its heading to its last line and page 3's heading: page 2, mapped by line number.
    shown = "\n".join(lines[start - 1 : start + 8]) + "\n"
    tracker.observe(
        ToolCall("1", "read_md_with_images", {"uri": "document/document.md"}),
        md_vision_result(tmp_path, start, shown),
    )
    assert tracker.pages_read == (2,)
    # The same lines placed elsewhere by the meta are counted where the meta says.
    moved = tracker_for(tmp_path)
    moved.observe(
        ToolCall("1", "read_md_with_images", {"uri": "document/document.md"}),
        md_vision_result(tmp_path, 1, shown),
    )
    assert 2 not in moved.pages_read


def test_md_vision_meta_counts_only_what_the_budget_kept(tmp_path: Path) -> None:
    write_document(tmp_path / "document")
    tracker = tracker_for(tmp_path)
    whole = (tmp_path / "document/document.md").read_text()
    result = md_vision_result(tmp_path, 1, whole)
    cut = OutputBudget(limit=len(whole.splitlines()[0]) + 20).apply(result)
    tracker.observe(ToolCall("1", "read_md_with_images", {"uri": "document/document.md"}), cut)
    assert tracker.pages_read == ()  # the title and at most page 1's heading survived
    # The budget's closing notice lines up with no block of the tool's: it is never taken for source.
    lines = whole.splitlines(keepends=True)
    parts = (Text("".join(lines[:6])), Image(png_bytes(), "image/png"), Text("".join(lines[6:])))
    meta = md_vision_result(tmp_path, 1, "").meta
    meta["io.github.docab/md-vision"]["roles"] = ["source", "image", "source"]
    result = ToolResult(blocks=parts, meta=meta)
    small = OutputBudget(limit=len(parts[0].text), image_cost=10_000).apply(result)
    assert small.truncated and len(small.blocks) == 3  # the text, the image's note, the notice
    noticed = tracker_for(tmp_path)
    noticed.observe(ToolCall("1", "read_md_with_images", {"uri": "document/document.md"}), small)
    assert max(noticed.shown) <= 6


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
    spans = page_spans((tmp_path / "document" / "meta.json").read_text())
    text = (tmp_path / "document" / "document.md").read_text()
    assert spans is not None and [p for p, _ in spans] == [1, 2, 3]
    from_meta, from_headings = PageMap.from_markdown(text, spans=spans), PageMap.from_markdown(text)
    assert from_meta.starts == from_headings.starts and from_meta.page_text == from_headings.page_text
    assert page_spans("") is None and page_spans("[1]") is None
    assert page_spans('{"pages": [{"page": 1}]}') is None


PLACEHOLDER_DOC = "\n".join(
    [
        "# Title",
        "",
        "## Page 1",
        "",
        "![Page 1](pages/page-0001.png)",
        "",
        "A real page with a fair amount of text about the survey and its results in 2023.",
        "",
        "## Page 2",
        "",
        "![Page 2](pages/page-0002.png)",
        "",
        "_No text layer on this page: see the page image._",
        "",
        "![Figure 2.1](figures/page-0002-01.jpg)",
        "",
        "## Page 3",
        "",
        "![Page 3](pages/page-0003.png)",
        "",
        "### Data Presentation",
        "",
    ]
)


def _shown_lines(first: int, last: int) -> ToolResult:
    lines = PLACEHOLDER_DOC.splitlines()
    return ToolResult(blocks=(Text("\n".join(f"{n:6d}\t{lines[n - 1]}" for n in range(first, last + 1))),))


def test_the_converters_placeholder_does_not_read_an_image_only_page() -> None:
    """Review finding: the converter's "_No text layer..._" line counted as the page's text, so
    reading or grepping it "read" a page whose image was never shown."""
    tracker = ReadTracker(PageMap.from_markdown(PLACEHOLDER_DOC))
    tracker.observe(
        ToolCall("c1", "read_file", {"path": "document/document.md", "offset": 9}), _shown_lines(9, 16)
    )
    assert 2 not in tracker.pages_read
    grep = ToolResult(
        blocks=(Text("document/document.md:13:_No text layer on this page: see the page image._"),)
    )
    tracker.observe(ToolCall("c2", "grep", {"pattern": "image", "path": "document"}), grep)
    assert 2 not in tracker.pages_read
    assert tracker.page_map.page_text[2] == 0


def test_a_page_with_little_text_is_read_only_through_its_image() -> None:
    """A page holding one short heading (under LITTLE_TEXT_CHARS characters) is not read by
    showing that heading; page 1, with a full line, is read by its text."""
    tracker = ReadTracker(PageMap.from_markdown(PLACEHOLDER_DOC))
    tracker.observe(ToolCall("c1", "read_file", {"path": "document/document.md"}), _shown_lines(1, 21))
    assert tracker.pages_read == (1,)
    shares = {s.page: s for s in tracker.page_shares}
    assert shares[3].text_share == 1.0 and shares[3].text_chars == len("DataPresentation")
    assert not shares[3].read
