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
    markdown = assemble_document(pages, metadata_title="Annual Report").markdown
    assert headings(markdown) == [("h1", "Annual Report"), ("h2", "Page 1"), ("h2", "Page 2")]
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
        *(body(f"Body text line {i} with enough words to dominate.", 130 + 12 * i) for i in range(10)),
        body("Bold Caption Heading", 300, bold=True),
        body("More body text after the bold heading line.", 312),
        body("Inline bold line ends with a period.", 400, bold=True),
    )
    page2 = (body("Section Two", 60, size=14), body("Section Two continued", 74, size=14), body("Text.", 100))
    pages = [PageContent(1, page1, "pages/page-0001.png"), PageContent(2, page2, None)]
    scale = heading_scale(pages)
    assert scale.body == 10.0 and scale.levels == {24.0: 3, 14.0: 4}
    doc = assemble_document(pages, metadata_title="Microsoft Word - draft.docx", source_name="stem.pdf")
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
    doc = assemble_document(pages, source_name="report-2023.pdf")
    lines = doc.markdown.splitlines()
    assert lines[0] == "# Document"  # never the file name
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
    doc = assemble_document([PageContent(1, lines, None)], metadata_title="Test Document")
    assert headings(doc.markdown) == [("h1", "Test Document"), ("h2", "Page 1")]


def test_a_larger_word_never_splits_a_list_item_or_a_sentence() -> None:
    """The issue's ``• Computerized\n\n###### Physician Order Entry`` and a sentence whose first line is larger."""
    filler = tuple(
        body(f"Plain body text number {i} that sets the body size.", 400 + 12 * i) for i in range(12)
    )
    lines = (
        body("• Computerized", 100),
        body("Physician Order Entry", 112, size=14),
        body("Gestalt psychology was conceived in the Berlin School,", 160, size=14),
        body("and tries to understand the laws of perception.", 172),
        body("A Real Heading", 220, size=14),
        body("Its paragraph starts with a capital.", 250),
        *filler,
    )
    doc = assemble_document([PageContent(1, lines, None)], metadata_title="Test Document")
    assert headings(doc.markdown) == [("h1", "Test Document"), ("h2", "Page 1"), ("h3", "A Real Heading")]
    text = doc.markdown
    assert "• Computerized\nPhysician Order Entry" in text
    assert "Berlin School,\nand tries" in text


@pytest.mark.parametrize(
    ("previous", "heading", "following", "continues"),
    [
        ("• Computerized", "Physician Order Entry", None, True),
        ("A finished sentence.", "Results", "We found that.", False),
        (None, "Key principle: when the mind perceives a form, the whole has a reality of", "its own.", True),
        (None, "Proximity", "and more", True),
        (None, "Results and", "Discussion", True),
        (None, "Results.", "and then", False),
        (None, "Results", None, False),
        (None, "PhD Thesis Examination", "a) General Guidelines on Format of Thesis", False),
        (None, "Procedures", "(ii) the second step", False),
    ],
)
def test_continues_text(previous: str | None, heading: str, following: str | None, continues: bool) -> None:
    from docab_benchmark.mmlongbench.corpus.markdown import continues_text

    assert continues_text(previous, heading, following) is continues


@pytest.mark.parametrize(
    ("title", "source", "real"),
    [
        ("Fact-Checking Complex Claims with Program-Guided Reasoning", "2023.acl-long.386.pdf", True),
        ("Exhibit 300:  Capital Asset Plan and Business Case Summary", "936c.pdf", True),
        ("PP_2019.01.17_Trump-economy_FINAL2", "PP_2019.01.17_Trump-economy_FINAL2.pdf", False),
        ("Business Management and Entrepreneurship_Cajon_4.30.20", "f8d3.pdf", False),
        ("Independents Report", "Independents-Report.pdf", False),  # the file name, spaced out
        ("Microsoft Word - draft.docx", "x.pdf", False),
        ("annual report.pdf", "x.pdf", False),
        ("0001065280-16-000047", "NETFLIX_2015_10K.pdf", False),
        ("UG", "watch_d.pdf", False),
        ("Presentation1", "x.pdf", False),
        ("Untitled document", "x.pdf", False),
        ("C:/Users/me/report", "x.pdf", False),
        ("Report", "x.pdf", False),  # one word: more often a job name than a title
        ("", "x.pdf", False),
    ],
)
def test_title_rule_rejects_file_names_and_placeholders(title: str, source: str, real: bool) -> None:
    from docab_benchmark.mmlongbench.corpus.markdown import looks_like_title

    assert looks_like_title(title, source) is real


def test_title_falls_back_to_a_content_heading_then_document_never_the_file_name() -> None:
    from docab_benchmark.mmlongbench.corpus.markdown import choose_title

    assert choose_title("PP_2019_FINAL2", [(3, "Americans Split on the Economy")], "PP_2019_FINAL2.pdf") == (
        "Americans Split on the Economy"
    )
    assert choose_title("PP_2019_FINAL2", [], "PP_2019_FINAL2.pdf") == "Document"
    # a first-page heading that is only the file name again is not a title either
    assert choose_title("", [(3, "watch_d")], "watch_d.pdf") == "Document"
    doc = assemble_document([PageContent(1, (), None)], metadata_title="", source_name="PP_2019_FINAL2.pdf")
    assert doc.markdown.startswith("# Document\n") and "PP_2019" not in doc.markdown
