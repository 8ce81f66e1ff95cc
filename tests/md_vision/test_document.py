"""The pure markdown model: lines, frontmatter, headings, images, and the dispatching parser."""

from __future__ import annotations

import random
import subprocess

import pytest
from md_vision.document import line_starts_of, parse_document
from md_vision.parser import reference_parser, structure_parser

from tests.md_vision.conftest import SAMPLES


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", 0),
        ("a", 1),
        ("a\n", 1),
        ("a\nb", 2),
        ("a\nb\n", 2),
        ("\n\n", 2),
        ("a\r\nb\r\n", 2),
        ("a\rb\r", 2),
    ],
)
def test_line_count(text: str, lines: int) -> None:
    assert parse_document(text).line_count == lines


def test_line_count_agrees_with_wc_for_files_ending_in_newline(tmp_path) -> None:
    path = tmp_path / "x.md"
    path.write_text("# A\n\ntext\n\n## B\nmore\n", encoding="utf-8")
    wc = int(
        subprocess.run(["wc", "-l", str(path)], capture_output=True, text=True, check=True).stdout.split()[0]
    )
    assert parse_document(path.read_text()).line_count == wc == 6


def test_lines_slices_source_exactly_including_crlf() -> None:
    text = "# T\r\n\r\n- a\r\n- b\r\nlast"
    document = parse_document(text)
    assert document.lines(1, 5) == text
    assert document.lines(3, 4) == "- a\r\n- b\r\n"
    assert document.lines(5, 5) == "last"
    assert line_starts_of(text)[-1] == len(text)


def test_frontmatter_is_found_and_hidden_from_the_parser() -> None:
    text = "---\ntitle: x\nlist: [a]\n---\nBody\n===\n"
    document = parse_document(text)
    assert document.frontmatter is not None
    assert document.frontmatter.text == "title: x\nlist: [a]\n"
    assert [h.label for h in document.headings] == ["# Body"]
    assert document.headings[0].line == 5


def test_unclosed_frontmatter_is_not_frontmatter() -> None:
    document = parse_document("---\ntitle: x\n\n# Title\n")
    assert document.frontmatter is None
    assert [h.label for h in document.headings] == ["# Title"]


def test_headings_setext_atx_nested_and_not_in_code() -> None:
    text = (
        "Title\n=====\n\n"
        "Sub *emph*\n---\n\n"
        "```\n# not a heading\n```\n\n"
        "    # indented code, not a heading\n\n"
        "- item\n  ## In a list\n\n"
        "> ### In a quote\n\n"
        "<div>\n# html block, not a heading\n</div>\n\n"
        "#no-space is not a heading\n\n"
        "## Closed ##\n"
    )
    headings = parse_document(text).headings
    assert [(h.label, h.line, h.nested) for h in headings] == [
        ("# Title", 1, False),
        ("## Sub *emph*", 4, False),
        ("## In a list", 14, True),
        ("### In a quote", 16, True),
        ("## Closed", 24, False),
    ]


def test_duplicate_headings_are_numbered_per_level_and_text() -> None:
    headings = parse_document("## Notes\n## Notes\n### Notes\n## Notes\n").headings
    assert [h.label for h in headings] == ["## Notes", "## Notes (2)", "### Notes", "## Notes (3)"]


def test_sections_run_to_next_heading_of_same_or_higher_level() -> None:
    document = parse_document("# A\n## B\ntext\n### C\n## D\n# E\nend\n")
    ends = [document.section_end(i) for i in range(len(document.headings))]
    assert ends == [5, 4, 4, 5, 7]


def test_images_of_every_kind_with_lines() -> None:
    text = (
        "Intro ![inline](a.png) and ![ref][r] and ![shortcut]\n"
        "<img src='html.png' alt='h'>\n\n"
        '<div>\n  <img src="block.png">\n  <!-- <img src="commented.png"> -->\n</div>\n\n'
        "`![code](not.png)` \\![escaped](not.png)\n\n"
        "```\n![fenced](not.png)\n```\n\n"
        "| a |\n|---|\n| ![cell](cell.png) |\n\n"
        "[![linked](linked.png)](https://example.com)\n"
        "![multi\nline alt](multi.png)\n\n"
        "[r]: ref.png\n[shortcut]: short%20cut.png\n"
    )
    images = parse_document(text).images
    assert [(i.target, i.line, i.syntax) for i in images] == [
        ("a.png", 1, "inline"),
        ("ref.png", 1, "reference"),
        ("short%20cut.png", 1, "reference"),
        ("html.png", 2, "html"),
        ("block.png", 5, "html"),
        ("cell.png", 17, "inline"),
        ("linked.png", 19, "inline"),
        ("multi.png", 21, "inline"),
    ]
    assert images[1].markup == "![ref][r]"


def test_file_and_javascript_image_targets_are_kept_to_be_refused_later() -> None:
    images = parse_document("![a](file:///etc/passwd) ![b](javascript:alert(1))\n").images
    assert [i.target for i in images] == ["file:///etc/passwd", "javascript:alert(1)"]


def _signature(tokens):
    return [(t.type, t.map, t.markup, t.content, t.level, t.info, t.hidden) for t in tokens]


TRICKY = [
    "para\n# heading interrupts\n",
    "para\n    not code\n",
    "a | b\n--|--\n1 | 2\n---\n",
    "| a |\n|---|\n| 1 |\n# h\n",
    "text\n- list interrupts\n",
    "text\n1. ordered\n2) other\n",
    "text\n2. cannot interrupt\n",
    "> quote\nlazy\n---\n",
    "- a\n\n  b\n\n    c\n- d\n",
    "<div>\nx\n\n# after html\n",
    "<!-- c -->\n# h\n",
    "***\n___\n- - -\n",
    "[ref]: /url\n  'title'\n# h\n",
    "```\nunclosed fence\n# h\n",
    "~~~ info\n~~~\n",
    "\t# tab\n  \t- x\n",
    "Setext\n  ===\n\nSetext2\n---\n",
    "* a\n* b\n\n  * c\n",
    "1. a\n\n   > b\n   # c\n",
    "",
    "\n\n\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_dispatching_parser_matches_stock_markdown_it(text: str) -> None:
    assert _signature(structure_parser().parse(text, {})) == _signature(reference_parser().parse(text, {}))


def test_dispatching_parser_matches_stock_on_samples_and_random_documents() -> None:
    pieces = [
        "# H\n",
        "para line\n",
        "\n",
        "- item\n",
        "  - nested\n",
        "> quote\n",
        "```\n",
        "~~~\n",
        "    code\n",
        "| a | b |\n",
        "|---|---|\n",
        "---\n",
        "===\n",
        "<div>\n",
        "</div>\n",
        "1. one\n",
        "[x]: /y\n",
        "***\n",
        "\t- tab item\n",
        "Setext\n",
        "<!--\n",
        "-->\n",
        "#\n",
        "+ plus\n",
    ]
    rng = random.Random(1234)
    texts = [
        path.read_text(encoding="utf-8")
        for path in SAMPLES.rglob("*")
        if path.suffix.lower() in (".md", ".markdown")
    ]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(5, 60))) for _ in range(300)]
    for text in texts:
        assert _signature(structure_parser().parse(text, {})) == _signature(
            reference_parser().parse(text, {})
        ), text
