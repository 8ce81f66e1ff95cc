"""A long document parsed a piece at a time reads exactly as one parse of it (md_vision.pieces),
and the structure cap stops a parse with the lines it covers said (issue 26, item 2)."""

from __future__ import annotations

import random

import pytest

from md_vision.document import Document, StructureEnd, parse_document

# Blocks that end, continue or swallow one another: containers, fences, HTML blocks, setext
# underlines, lazy lines, definitions and references in both directions.
SNIPPETS = [
    "# Title\n",
    "## Sub *em*\n",
    "Para text\n",
    "Setext\n===\n",
    "Another\n---\n",
    "\n",
    "\n",
    "\n",
    "- item\n",
    "- # list heading\n",
    "  continued\n",
    "1. one\n",
    "2. two ![i](a.png)\n",
    "   - nested\n",
    "> quote\n",
    "> # qh\n",
    ">\n",
    "> > deep\n",
    "> Setext in quote\n> ---\n",
    "```\n",
    "~~~\n",
    "# in fence?\n",
    "    indented code\n",
    "<div>\n",
    '<img src="h.png">\n',
    "</div>\n",
    "<!--\n",
    "-->\n",
    "![alt](x.png)\n",
    "![r1]\n",
    "![a][r2]\n",
    "[r1]: r1.png\n",
    '[R2]: r2.png "t"\n',
    "lazy line\n",
    "***\n",
    "text ![x](y.png) more\n",
    "<script>\n",
    "</script>\n",
    "* star item\n",
    "+ plus\n",
    "10) paren\n",
    "  # indented heading\n",
]


def _shape(document: Document) -> tuple[object, ...]:
    ends = tuple(document.section_end(number) for number in range(len(document.headings)))
    return document.headings, document.images, ends, document.structure_end


def _documents(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    documents = []
    for _ in range(count):
        parts = rng.choices(SNIPPETS, k=rng.randint(5, 120))
        if rng.random() < 0.2:
            parts.insert(0, "---\ntitle: x\n---\n")
        documents.append("".join(parts))
    return documents


@pytest.mark.parametrize("seed", [11, 12])
def test_pieces_read_as_one_parse(seed: int) -> None:
    for text in _documents(seed, 150):
        whole = _shape(parse_document(text))
        for piece_chars in (1, 7, 40, 150):
            assert _shape(parse_document(text, piece_chars=piece_chars)) == whole, (piece_chars, text)


def test_a_definition_in_a_later_piece_resolves_and_the_first_of_a_label_wins() -> None:
    text = (
        "# Start\n\n![a][later]\n\n![b][twice]\n\n"
        + "".join(f"## Filler {number}\n\ntext\n\n" for number in range(200))
        + "[twice]: first.png\n\n"
        + "".join(f"## More {number}\n\ntext\n\n" for number in range(200))
        + '[later]: <later one.png> "A \\"title\\""\n[twice]: second.png\n\n![c][twice]\n'
    )
    whole = parse_document(text)
    assert [image.target for image in whole.images] == ["later one.png", "first.png", "first.png"]
    assert _shape(parse_document(text, piece_chars=200)) == _shape(whole)


def test_a_definition_shown_in_a_code_block_of_another_piece_is_not_one() -> None:
    text = (
        "![a][shown]\n\n"
        + "".join(f"## Filler {number}\n\ntext\n\n" for number in range(100))
        + "```\n\n[shown]: shown.png\n```\n"
    )
    assert parse_document(text).images == ()
    assert parse_document(text, piece_chars=100).images == ()


def test_one_block_longer_than_a_piece_is_parsed_whole() -> None:
    fence = "```\n" + "# not a heading\n\n" * 500 + "```\n"
    text = "# Before\n\n" + fence + "# After\n\n![x](x.png)\n"
    document = parse_document(text, piece_chars=64)
    assert [heading.text for heading in document.headings] == ["Before", "After"]
    assert _shape(document) == _shape(parse_document(text))


def test_line_ends_of_every_kind_survive_the_cuts() -> None:
    text = "".join(f"# H{number}\r\n\r\ntext ![i](i{number}.png)\r" for number in range(300))
    assert _shape(parse_document(text, piece_chars=50)) == _shape(parse_document(text))


def test_the_structure_cap_stops_the_parse_and_says_where() -> None:
    text = "".join(f"## H{number}\n![i](i{number}.png)\n" for number in range(100))
    document = parse_document(text, max_structure=11, piece_chars=64)
    # Eleven headings and images: H0..H4 with their images, then H5 (line 11); the twelfth item,
    # H5's image on line 12, is past the cap, so the structure is known through line 11.
    assert document.structure_end == StructureEnd(11, "cap")
    assert [heading.text for heading in document.headings] == [f"H{n}" for n in range(6)]
    assert len(document.images) == 5
    assert document.section_end(5) == 11  # the last section ends where the structure does
    assert document.line_count == 200  # the text is all there, for line ranges
    assert parse_document(text).structure_end is None


def test_the_cap_counts_the_first_items_in_line_order() -> None:
    text = "![a](a.png)\n# Title\n" + "![b](b.png)\n" * 50
    document = parse_document(text, max_structure=3)
    assert document.structure_end == StructureEnd(3, "cap")
    assert [image.target for image in document.images] == ["a.png", "b.png"]


def test_an_index_cut_short_says_so_in_its_tag_note_and_structure() -> None:
    from md_vision.document import MAX_STRUCTURE
    from md_vision.index import format_file_index, index_document, structure_note
    from md_vision.results import IndexResult
    from md_vision.server import index_output

    text = "".join(f"## H{number}\n" for number in range(30))
    index = index_document(parse_document(text, max_structure=10), "big.md")
    assert index.structure_end == StructureEnd(10, "cap") and len(index.rows) == 10
    assert format_file_index(index).startswith('<file path="big.md" lines=30 chars=200 indexed_lines=1-10>\n')
    note = structure_note(index)
    assert note is not None and f"more than {MAX_STRUCTURE:,} headings and images" in note
    assert "lines 1-10 are indexed (of 30)" in note and "line_range" in note
    assert index_output(IndexResult((index,))).files[0].indexed_lines == 10
    assert structure_note(index_document(parse_document(text))) is None


def test_one_block_too_dense_for_a_piece_stops_the_parse_where_it_is() -> None:
    from md_vision.index import index_document, structure_note

    # One list item holding all the headings: no cut at the top level or in the list.
    item = "- first\n" + "".join(f"  # H{number}\n" for number in range(30_000))
    text = "# Before\n\n" + item + "\n# After\n"
    whole = parse_document(text)
    assert whole.structure_end is None and len(whole.headings) == 30_002
    document = parse_document(text, piece_chars=2_000)
    assert document.structure_end is not None and document.structure_end.reason == "dense block"
    end = document.structure_end.line
    assert 3 < end < whole.line_count - 1
    assert document.headings == tuple(h for h in whole.headings if h.line <= end)
    assert document.headings[-1].nested and document.section_end(len(document.headings) - 1) == end
    note = structure_note(index_document(document, "dense.md"))
    assert note is not None and f"a block too dense to parse in pieces from line {end + 1:,}" in note


def test_a_dense_paragraph_at_the_start_of_a_piece_keeps_nothing_of_it() -> None:
    text = "# Before\n\n" + "![](x.png)\n" * 30_000 + "\n# After\n"
    document = parse_document(text, piece_chars=2_000)
    assert document.structure_end == StructureEnd(2, "dense block")
    assert [heading.text for heading in document.headings] == ["Before"] and document.images == ()


# Found by a red-team pass: definitions cmark takes that a first, narrower search for them missed.
@pytest.mark.parametrize(
    "text",
    [
        "[foo]: /u.png\r\n\r\n# x\r\n\r\n![x][foo]\r\n",  # CRLF
        "[foo]: /u.png\r\r# x\r\r![x][foo]\r",  # lone CR
        "\ufeff[foo]: /u.png\n\n# x\n\n![x][foo]\n",  # a byte-order mark
        "- [foo]: /u.png\n\n# x\n\n![x][foo]\n",  # in a list item
        "- a\n    > [foo]: /u.png\n\n# x\n\n![x][foo]\n",  # in a quote in a list item
        "[bar]: /b\n    [foo]: /u.png\n\n# x\n\n![x][foo]\n",  # indented, continuing definitions
        ">\t[foo]: /u.png\n\n# x\n\n![x][foo]\n",  # a tab after the quote marker
        "[foo]: /u((1)).png\n\n# x\n\n![x][foo]\n\nmore\n\nmore\n",  # nested parentheses
        "[a`b]: /u.png\n\n# x\n\n![x][a`b]\n",  # a backtick in the label
        "[foo bar]: /u.png\n\n# x\n\n![x][foo\nbar]\n",  # a use whose label breaks a line
    ],
)
def test_definitions_of_every_shape_resolve_across_pieces(text: str) -> None:
    whole = parse_document(text)
    assert [image.target for image in whole.images] == [whole.images[0].target] and whole.images
    for piece_chars in (1, 5, 30):
        assert _shape(parse_document(text, piece_chars=piece_chars)) == _shape(whole), piece_chars


def test_a_run_of_tables_is_cut_between_tables() -> None:
    table = "| id | name |\n|----|------|\n" + "| 1 | foo ![i](i.png) |\n" * 100 + "\n"
    text = "# Data\n\n" + table * 40 + "# After\n"
    whole = parse_document(text)
    document = parse_document(text, piece_chars=2_000)
    assert document.structure_end is None and _shape(document) == _shape(whole)
    assert [heading.text for heading in document.headings] == ["Data", "After"]


def test_images_in_the_cells_of_one_long_row_with_non_ascii_text() -> None:
    cells = 3_000
    text = "|a" * cells + "\n" + "|-" * cells + "\n" + "|![é](é.png)" * cells + "\n"
    document = parse_document(text)
    assert len(document.images) == cells and {image.line for image in document.images} == {3}
    assert all(image.markup == "![é](é.png)" for image in document.images)


def test_the_structure_cap_at_its_edge() -> None:
    text = "".join(f"## H{number}\n" for number in range(12))
    assert parse_document(text, max_structure=12).structure_end is None  # exactly the cap: all read
    assert parse_document(text, max_structure=11).structure_end == StructureEnd(11, "cap")


def test_a_text_of_exactly_one_piece_is_parsed_once_and_one_more_character_in_pieces() -> None:
    from md_vision import pieces

    text = "# A\n\ntext\n\n# B\n\nmore\n"
    assert len(list(pieces.parse_pieces(text, _starts(text), 0, len(text), lambda: None))) == 1
    several = list(pieces.parse_pieces(text, _starts(text), 0, len(text) - 1, lambda: None))
    assert len(several) > 1 and several[-1].last == text.count("\n")
    assert _shape(parse_document(text, piece_chars=len(text) - 1)) == _shape(parse_document(text))


def _starts(text: str) -> list[int]:
    from md_vision.document import line_starts_of

    return list(line_starts_of(text))
