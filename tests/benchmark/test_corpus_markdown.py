"""document.md assembly: page headings own the structure, in-page headings from font sizes, line spans."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from docab_benchmark.mmlongbench.corpus.markdown import assemble_document, escape_line, heading_scale
from docab_benchmark.mmlongbench.corpus.model import Figure, PageContent, TextLine


def headings(markdown: str) -> list[tuple[str, str]]:
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]


def body(text: str, top: float, size: float = 10.0, bold: bool = False) -> TextLine:
    return TextLine(text, size=size, bold=bold, top=top, height=12.0)


HOSTILE = [
    "# Page 99 fake heading",
    "## Page 2",
    "```",
    "<pre>",
    "<!-- open comment",
    "> quoted # not heading",
    "- # list heading",
    "1. # numbered heading",
    "1) also a list",
    "Setext candidate",
    "===",
    "---",
    "~~~",
    "    indented code",
    "\\# already escaped",
    "***",
]


def test_hostile_page_text_cannot_fake_or_swallow_page_headings() -> None:
    lines = tuple(body(text.strip(), 100 + 12 * i) for i, text in enumerate(HOSTILE))
    pages = [
        PageContent(1, lines, "pages/page-0001.png"),
        PageContent(2, (body("plain", 100),), "pages/page-0002.png"),
    ]
    markdown = assemble_document(pages, metadata_title="Report").markdown
    assert headings(markdown) == [("h1", "Report"), ("h2", "Page 1"), ("h2", "Page 2")]
    # every hostile line survives as text
    rendered = MarkdownIt("commonmark").render(markdown)
    assert "Page 99 fake heading" in rendered and "list heading" in rendered


@pytest.mark.parametrize(
    ("line", "escaped"),
    [
        ("# x", "\\# x"),
        ("12. x", "12\\. x"),
        ("3) x", "3\\) x"),
        ("2023 report", "2023 report"),
        ("plain", "plain"),
        ("", ""),
    ],
)
def test_escape_line(line: str, escaped: str) -> None:
    assert escape_line(line) == escaped


def test_headings_from_font_sizes_and_bold_lines() -> None:
    page1 = (
        body("Big Title", 50, size=24),
        body("Section One", 100, size=14),
        *(body(f"body text line {i} with enough words to dominate", 130 + 12 * i) for i in range(10)),
        body("Bold Caption Heading", 300, bold=True),
        body("more body text after the bold heading line", 312),
        body("Inline bold line ends with a period.", 400, bold=True),
    )
    page2 = (body("Section Two", 60, size=14), body("Section Two continued", 74, size=14), body("text", 100))
    pages = [PageContent(1, page1, "pages/page-0001.png"), PageContent(2, page2, None)]
    scale = heading_scale(pages)
    assert scale.body == 10.0 and scale.levels == {24.0: 3, 14.0: 4}
    doc = assemble_document(pages, metadata_title="Microsoft Word - draft.docx", fallback_title="stem")
    assert doc.title == "Big Title"  # junk metadata title replaced by the largest heading of page 1
    assert headings(doc.markdown) == [
        ("h1", "Big Title"),
        ("h2", "Page 1"),
        ("h3", "Big Title"),
        ("h4", "Section One"),
        ("h5", "Bold Caption Heading"),
        ("h2", "Page 2"),
        ("h4", "Section Two Section Two continued"),  # adjacent lines of one heading merge
    ]
    assert doc.headings == 4


def test_converter_given_heading_levels_win() -> None:
    page = PageContent(
        1, (TextLine("Chapter", heading=1), TextLine("Sub", heading=2), TextLine("text")), None
    )
    assert headings(assemble_document([page]).markdown)[2:] == [("h3", "Chapter"), ("h4", "Sub")]


def test_spans_map_lines_back_to_pages_and_images_sit_under_headings() -> None:
    pages = [
        PageContent(
            1,
            (body("alpha", 100),),
            "pages/page-0001.png",
            figures=(Figure("figures/page-0001-01.jpg", 90, 90, "h"),),
        ),
        PageContent(2, (), "pages/page-0002.png"),
        PageContent(3, (body("gamma", 100),), None, error="image: render failed"),
    ]
    doc = assemble_document(pages, fallback_title="report-2023")
    lines = doc.markdown.splitlines()
    assert lines[0] == "# report-2023"
    for span in doc.spans:
        assert lines[span.first_line - 1] == f"## Page {span.page}"
        section = lines[span.first_line - 1 : span.last_line]
        assert section[-1] != ""
        assert not any(line.startswith("## Page") for line in section[1:])
    assert lines[doc.spans[0].first_line + 1] == "![Page 1](pages/page-0001.png)"
    assert "![Figure 1.1](figures/page-0001-01.jpg)" in lines
    assert "_No text layer on this page: see the page image._" in lines
    assert "_Conversion note: image: render failed_" in lines
    assert doc.spans[-1].last_line == len(lines)


@pytest.mark.parametrize(
    "text",
    ["• Bulleted item in a bigger font", "continuation of a sentence", "Grading System ........ 7", "12345"],
)
def test_bullets_lowercase_toc_lines_and_numbers_are_not_headings(text: str) -> None:
    lines = (body("body text " * 8, 100), body(text, 130, size=14, bold=True), body("body text " * 8, 160))
    doc = assemble_document([PageContent(1, lines, None)], metadata_title="Doc")
    assert headings(doc.markdown) == [("h1", "Doc"), ("h2", "Page 1")]
