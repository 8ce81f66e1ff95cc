"""The heading index: typed rows and the exact text format of index_md (pure)."""

from __future__ import annotations

from md_vision import index_markdown_file, index_markdown_folder, index_markdown_text
from md_vision.index import FileIndex, FileProblem, IndexRow, format_file_index, format_index
from tests.md_vision.conftest import SAMPLES


def test_rows_count_subsections_images_and_characters() -> None:
    # The blank line ends the HTML block: without it "## Other" would be HTML, not a heading.
    text = "# Guide\nIntro.\n## Setup\n![d](./setup.png)\n### Deep\n<img src='x.png'>\n\n## Other\n"
    index = index_markdown_text(text, "g.md")
    assert index.rows == (
        IndexRow("# Guide", 1, 2, len(text)),
        IndexRow("## Setup", 3, 2, len("## Setup\n![d](./setup.png)\n### Deep\n<img src='x.png'>\n\n")),
        IndexRow("### Deep", 5, 1, len("### Deep\n<img src='x.png'>\n\n")),
        IndexRow("## Other", 8, 0, len("## Other\n")),
    )
    assert (index.line_count, index.char_count, index.frontmatter, index.path) == (8, len(text), None, "g.md")


def test_format_is_exact() -> None:
    index = index_markdown_text("---\ntitle: T\n---\n# A\n\n## B (x)\n## B (x)\n", "/d/a.md")
    assert format_file_index(index) == (
        '<file path="/d/a.md" lines=7 chars=40>\n'
        "---\ntitle: T\n---\n"
        "```tsv\n"
        "heading\tline_start\tn_images\tchar_count\n"
        "# A\t4\t0\t23\n"
        "## B (x)\t6\t0\t9\n"
        "## B (x) (2)\t7\t0\t9\n"
        "```\n"
        "</file>"
    )


def test_format_escapes_paths_tabs_and_backtick_fences() -> None:
    index = index_markdown_text("# a\tb ```x```\n", 'we"ird.md')
    text = format_file_index(index)
    assert text.startswith('<file path="we&quot;ird.md" lines=1 chars=14>\n````tsv\n')
    assert "# a b ```x```\t1\t0\t14\n````\n</file>" in text


def test_a_file_name_cannot_add_rows_or_tags_to_the_index() -> None:
    text = format_file_index(
        index_markdown_text("# Real\n", 'x.md">\n# Fake\t9\t0\t9\r\n</file><file path="y.md')
    )
    assert text.splitlines()[0] == (
        '<file path="x.md&quot;&gt;&#10;# Fake\t9\t0\t9&#13;&#10;&lt;/file&gt;&lt;file path=&quot;y.md"'
        " lines=1 chars=7>"
    )
    assert text.count("<file ") == 1 and text.count("</file>") == 1 and "# Fake" not in text.splitlines()[2:]


def test_files_are_joined_by_a_blank_line_and_problems_say_why() -> None:
    entries = [FileIndex("a.md", None, 0, 0, ()), FileProblem("b.md", "permission denied")]
    assert format_index(entries) == (
        '<file path="a.md" lines=0 chars=0>\n```tsv\nheading\tline_start\tn_images\tchar_count\n```\n</file>\n\n'
        '<file path="b.md" error="permission denied"></file>'
    )


def test_library_indexes_a_file_and_a_folder(tmp_path) -> None:
    guide = index_markdown_file(SAMPLES / "guide.md")
    assert guide.frontmatter == "title: Widget guide\ntags: [sample, md-vision]\n"
    assert [row.heading for row in guide.rows][:3] == ["# Widget Guide", "## Install", "## Usage"]
    assert guide.rows[0].image_count == 4  # svg + reference-style + html img + nested list image
    files = index_markdown_folder(SAMPLES)
    assert [entry.path.rsplit("/", 1)[-1] for entry in files] == ["README.md", "guide.md", "API.MARKDOWN"]
    bad = tmp_path / "bin.md"
    bad.write_bytes(b"\x00\x01\x02")
    try:
        index_markdown_file(bad)
    except ValueError as exc:
        assert "binary" in str(exc)
    else:
        raise AssertionError("a binary file must not index")
