"""Which lines a read returns: sections (exact, tolerant, duplicates, nested), ranges, errors."""

from __future__ import annotations

import pytest

from md_vision.document import parse_document
from md_vision.selection import SelectionError, select

DOC = parse_document(
    "---\ntitle: x\n---\n"  # 1-3
    "# Guide\n"  # 4
    "Intro\n"  # 5
    "## Notes\n"  # 6
    "first\n"  # 7
    "##  Set   Up  \n"  # 8
    "- item\n"  # 9
    "  ### Nested *Thing*\n"  # 10
    "  text\n"  # 11
    "## Notes\n"  # 12
    "second\n"  # 13
    "```\n"  # 14
    "# fenced\n"  # 15
    "```\n"  # 16
)


def _lines(selection) -> tuple[int, int]:
    return selection.first, selection.last


def test_no_section_and_no_range_reads_everything() -> None:
    assert _lines(select(DOC)) == (1, 16)


@pytest.mark.parametrize(
    ("query", "expected", "exact"),
    [
        ("## Notes", (6, 7), True),
        ("## Notes (2)", (12, 16), True),
        ("notes", (6, 7), False),
        ("  NOTES ", (6, 7), False),
        ("notes (2)", (12, 16), False),
        ("### notes", (6, 7), False),  # wrong level: falls back to the text
        ("set up", (8, 11), False),
        ("## Set Up", (8, 11), True),
        ("nested thing", (10, 11), False),
        ("#guide", (4, 16), False),
    ],
)
def test_section_matching(query: str, expected: tuple[int, int], exact: bool) -> None:
    selection = select(DOC, section=query)
    assert _lines(selection) == expected
    assert bool(selection.notes) is not exact  # a tolerant match says which heading it took


def test_section_not_found_lists_closest_and_names_index_md() -> None:
    with pytest.raises(SelectionError) as info:
        select(DOC, section="## Note", name="doc.md")
    message = str(info.value)
    assert "'## Notes'" in message and "index_md" in message and "doc.md" in message


def test_a_huge_section_argument_is_not_echoed_back_whole() -> None:
    huge = "## " + "x" * 1_000_000
    with pytest.raises(SelectionError) as info:
        select(DOC, section=huge, name="doc.md")
    assert len(str(info.value)) < 2_000 and "xxx…'" in str(info.value)
    note = select(DOC, section=huge, line_range=[14, 16]).notes[0]
    assert len(note) < 1_000 and note.startswith("Section '## xxx")


def test_missing_section_falls_back_to_line_range_and_says_so() -> None:
    selection = select(DOC, section="## Nope", line_range=[14, 16])
    assert _lines(selection) == (14, 16)
    assert "not found" in selection.notes[0] and "[14, 16]" in selection.notes[0]


def test_found_section_wins_over_line_range() -> None:
    assert _lines(select(DOC, section="## Notes", line_range=[1, 2])) == (6, 7)


def test_line_range_through_a_fence_or_frontmatter_is_sliced_not_reparsed() -> None:
    # Lines 15-16 alone would parse as "# fenced" heading + fence; 2-3 as a setext heading.
    assert DOC.lines(*_lines(select(DOC, line_range=[15, 16]))) == "# fenced\n```\n"
    assert DOC.lines(*_lines(select(DOC, line_range=[2, 3]))) == "title: x\n---\n"


@pytest.mark.parametrize(
    ("line_range", "fragment"),
    [([0, 3], "1 <= start <= end"), ([5, 4], "1 <= start <= end"), ([17, 20], "only 16 lines")],
)
def test_bad_line_ranges(line_range, fragment) -> None:
    with pytest.raises(SelectionError, match=fragment):
        select(DOC, line_range=line_range)


def test_line_range_past_the_end_is_clamped_with_a_note() -> None:
    selection = select(DOC, line_range=[15, 99])
    assert _lines(selection) == (15, 16)
    assert "past the end" in selection.notes[0]


def test_document_without_headings() -> None:
    with pytest.raises(SelectionError, match="no headings"):
        select(parse_document("just text\n"), section="x")
