"""The pure markdown model: lines, frontmatter, headings, images and where each image is placed."""

from __future__ import annotations

import subprocess

import pytest

from md_vision.document import line_starts_of, parse_document


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
        ("multi.png", 21, "markdown"),  # markup over two lines: form not isolated, placed at block end
    ]
    assert images[1].markup == "![ref][r]"
    assert images[3].markup == "<img src='html.png' alt='h'>"


def test_file_and_javascript_image_targets_are_kept_to_be_refused_later() -> None:
    images = parse_document("![a](file:///etc/passwd) ![b](javascript:alert(1))\n").images
    assert [i.target for i in images] == ["file:///etc/passwd", "javascript:alert(1)"]


def _placed(text: str) -> list[tuple[str, int]]:
    return [(image.target, image.line) for image in parse_document(text).images]


def test_images_in_a_long_paragraph_follow_the_line_their_markup_ends_on() -> None:
    text = (
        "[r]: ref.png\n"  # cmark-gfm's inline positions are off after definitions; ours are not
        "First line\\\n"  # and after hard breaks
        "second ![a](a.png) and ![b][r]\n"
        "third <img\n"
        'src="tag.png"> tail ![c](c.png)\n'
        "last\n"
    )
    assert _placed(text) == [("a.png", 3), ("ref.png", 3), ("tag.png", 5), ("c.png", 5)]


def test_images_whose_markup_spans_lines_go_after_the_block_and_keep_their_order() -> None:
    text = "para ![a](\n  a.png\n) then ![b](b.png)\nlast line\n\nnext\n"
    assert _placed(text) == [("a.png", 4), ("b.png", 4)]
    images = parse_document(text).images
    assert [image.syntax for image in images] == ["markdown", "inline"]


def test_a_lookalike_that_is_not_an_image_makes_the_block_fall_back() -> None:
    # Three "![" in the source, two images: which one is which cannot be told cheaply.
    text = "one `![x](no.png)` ![a](a.png)\ntwo ![b](b.png)\nthree\n"
    assert _placed(text) == [("a.png", 3), ("b.png", 3)]
    single = "`![x](no.png)` ![a](a.png) ![b](b.png)\n"
    assert _placed(single) == [("a.png", 1), ("b.png", 1)]  # one line: exact anyway


def test_html_block_images_sit_on_their_tag_lines_and_comments_scripts_hold_none() -> None:
    text = (
        "<div>\n"
        '<img src="one.png"\n  alt="two lines">\n'
        '<!-- <img src="comment.png"> -->\n'
        "<script>document.write('<img src=\"script.png\">')</script>\n"
        "<IMG SRC='upper.png'>\n"
        "</div>\n"
    )
    assert _placed(text) == [("one.png", 3), ("upper.png", 6)]


def test_images_in_headings_cells_links_and_alt_text() -> None:
    text = (
        "# Title ![logo](logo.png)\n\n"
        "| a | b |\n|---|---|\n| ![x](x.png) | ![y](y.png) |\n\n"
        "[![linked](linked.png)](https://example.com) ![outer ![inner](inner.png)](outer.png)\n"
    )
    images = parse_document(text).images
    assert [(i.target, i.line) for i in images] == [
        ("logo.png", 1),
        ("x.png", 5),
        ("y.png", 5),
        ("linked.png", 7),
        ("outer.png", 7),
    ]
    assert images[-1].alt == "outer inner"


def test_targets_are_as_written_with_escapes_and_entities_resolved() -> None:
    text = "![a](<my image.png>) ![b](caf\u00e9.png) ![c](x\\(1\\).png) ![d](a&amp;b.png) <img src='q&amp;r.png'>\n"
    assert [i.target for i in parse_document(text).images] == [
        "my image.png",
        "caf\u00e9.png",
        "x(1).png",
        "a&b.png",
        "q&r.png",
    ]


def test_setext_heading_edges() -> None:
    text = (
        "[ref]: x.png\nTitle after a definition\n===\n"  # the definition is not part of the heading
        "Closed by\ntext below\n---\nnext paragraph line\n\n"  # cmark ends it one line late
        "> quoted\nlazy line\n> ===\n"
    )
    headings = parse_document(text).headings
    assert [(h.label, h.line, h.nested) for h in headings] == [
        ("# Title after a definition", 2, False),
        ("## Closed by text below", 4, False),
        ("# quoted lazy line", 9, True),
    ]


def test_atx_closing_sequences_and_escapes() -> None:
    text = "# A #\n## B ##  \n### C#\n#### D \\#\n##### #\n###### E # F\n"
    assert [h.text for h in parse_document(text).headings] == ["A", "B", "C#", "D \\#", "", "E # F"]


def test_raw_html_and_code_cannot_pose_as_structure() -> None:
    text = (
        "<h2>raw html heading</h2>\n\n"
        '<heading sourcepos="1:1-1:5" level="1">\n\n'
        '```xml\n<heading sourcepos="9:1-9:9" level="2">\n```\n\n'
        "Text </li></blockquote> more\n\n"
        "## Real\n"
    )
    document = parse_document(text)
    assert [(h.label, h.line, h.nested) for h in document.headings] == [("## Real", 11, False)]


def test_images_between_matches_placement_for_sections() -> None:
    text = "# A\n![one](1.png)\n## B\nintro ![two](2.png)\nwrapped\n## C\n<img src='3.png'>\n"
    document = parse_document(text)
    sections = [
        [i.target for i in document.images_between(h.line, document.section_end(n))]
        for n, h in enumerate(document.headings)
    ]
    assert sections == [["1.png", "2.png", "3.png"], ["2.png"], ["3.png"]]
