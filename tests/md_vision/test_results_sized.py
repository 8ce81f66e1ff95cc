"""Results sized for a model (issue 18): index_md and read_md_with_images keep their text within a
token budget and say how to get the rest; embedded data URIs are placeholders in the text."""

from __future__ import annotations

import base64
import io
import os
import random
import re
from pathlib import Path

import pytest
from PIL import Image

from md_vision.index import format_index
from md_vision.server import META_KEY, read_result_to_mcp
from md_vision.service import ImageBlock, MdVision, TextBlock, ToolFailure
from tests.md_vision.conftest import png_bytes, read, run, settings_for

CURSOR = re.compile(r'cursor="([A-Za-z0-9_-]+)"')


def make_folder(root: Path, files: int, headings: int = 4) -> list[Path]:
    paths = []
    for number in range(files):
        folder = root / f"part{number // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        sections = "".join(f"## Section {s} of {number}\n\nText {s}.\n\n" for s in range(headings))
        path = folder / f"doc{number:04d}.md"
        path.write_text(f"# Document {number}\n\nIntro.\n\n{sections}", encoding="utf-8")
        paths.append(path)
    return paths


def index_pages(settings, uri: str, **kwargs) -> list:
    """Every page of one index, following the cursors in one session."""

    async def go():
        async with MdVision(settings) as vision:
            pages = [await vision.index(uri, **kwargs)]
            while pages[-1].next_cursor is not None:
                assert len(pages) < 200, "the cursors do not end"
                pages.append(await vision.index(uri, cursor=pages[-1].next_cursor, **kwargs))
            return pages

    return run(go())


# -- index -------------------------------------------------------------------------------------


def test_a_small_folder_and_a_file_look_exactly_as_before(tmp_path: Path) -> None:
    paths = make_folder(tmp_path, 12)
    settings = settings_for(tmp_path)
    (whole,) = index_pages(settings, str(tmp_path))
    assert whole.next_cursor is None and whole.notes == ()
    assert whole.text == format_index(whole.entries) and len(whole.entries) == 12
    (single,) = index_pages(settings, str(paths[0]))
    assert single.text.startswith(f'<file path="{paths[0]}" lines=') and "Note" not in single.text


def test_a_1000_file_folder_first_result_is_model_sized_and_says_how_to_go_on(tmp_path: Path) -> None:
    make_folder(tmp_path, 1000)
    pages = index_pages(settings_for(tmp_path, index_workers=1), str(tmp_path))
    first = pages[0]
    assert len(first.text) <= 100_000
    assert first.text.startswith("Note: ") and "holds 1,000 markdown files" in first.text
    assert CURSOR.search(first.text).group(1) == first.next_cursor  # the text names the next call
    assert "<folders " in first.text and "part00/\t100" in first.text
    assert "part00/doc0000.md\t" in first.text and "# Document 0; ## Section 0 of 0" in first.text
    # Every page within the budget; the overview lists each file once, then the full index does.
    assert all(len(page.text) <= 100_000 for page in pages)
    overview = [line for page in pages for line in page.text.splitlines() if line.startswith("part")]
    assert len(overview) == 1000 + 10 and len({line.split("\t")[0] for line in overview}) == 1000 + 10
    detail = [line for page in pages for line in page.text.splitlines() if line.startswith("<file ")]
    assert len(detail) == len(set(detail)) == 1000
    assert pages[-1].text.count("This is the last page.") == 1 and pages[-1].next_cursor is None


def test_max_tokens_per_call_and_the_server_flag_set_the_page_size(tmp_path: Path) -> None:
    make_folder(tmp_path, 60)
    small = index_pages(settings_for(tmp_path, index_workers=1), str(tmp_path), max_tokens=2_000)
    assert len(small) > 3 and all(len(page.text) <= 8_000 for page in small)
    flagged = index_pages(settings_for(tmp_path, index_workers=1, max_result_tokens=2_000), str(tmp_path))
    assert [page.text for page in flagged] == [page.text for page in small]
    with pytest.raises(ToolFailure, match="at least 500"):
        index_pages(settings_for(tmp_path), str(tmp_path), max_tokens=499)
    assert index_pages(settings_for(tmp_path), str(tmp_path), max_tokens=500)[0].text


def test_a_file_with_more_headings_than_a_page_is_split_by_rows(tmp_path: Path) -> None:
    body = "".join(f"## Heading number {n}\n\ntext\n\n" for n in range(4000))
    (tmp_path / "big.md").write_text("---\ntitle: Big\n---\n# Big\n\n" + body)
    pages = index_pages(settings_for(tmp_path), str(tmp_path / "big.md"))
    assert len(pages) > 1 and all(len(page.text) <= 100_000 for page in pages)
    assert "rows=1-" in pages[0].text and "title: Big" in pages[0].text
    assert "title: Big" not in pages[1].text  # the frontmatter comes with the first rows only
    rows = [line for page in pages for line in page.text.splitlines() if line.startswith("#")]
    assert rows == ["# Big\t4\t0\t" + rows[0].split("\t")[-1]] + [
        line for line in rows[1:] if line.startswith("## Heading number")
    ]
    assert len(rows) == 4001


def test_a_stale_or_foreign_cursor_is_refused_with_a_way_out(tmp_path: Path) -> None:
    make_folder(tmp_path / "a", 30)
    make_folder(tmp_path / "b", 30)
    settings = settings_for(tmp_path, index_workers=1, max_result_tokens=1_000)

    async def go():
        async with MdVision(settings) as vision:
            first = await vision.index(str(tmp_path / "a"))
            assert first.next_cursor is not None
            errors = []
            for uri, cursor in ((str(tmp_path / "b"), first.next_cursor), (str(tmp_path / "a"), "garbage")):
                try:
                    await vision.index(uri, cursor=cursor)
                except ToolFailure as exc:
                    errors.append(str(exc))
            (tmp_path / "a" / "new.md").write_text("# New\n")
            try:
                await vision.index(str(tmp_path / "a"), cursor=first.next_cursor)
            except ToolFailure as exc:
                errors.append(str(exc))
            return errors

    foreign, garbage, stale = run(go())
    assert "another index_md call" in foreign and "without a cursor" in garbage
    assert "added to or removed" in stale and "without a cursor" in stale


# -- read --------------------------------------------------------------------------------------


def test_a_long_section_comes_in_pages_that_join_to_the_source(tmp_path: Path) -> None:
    lines = [f"Line {n}: " + "lorem ipsum dolor sit amet " * 4 + "\n" for n in range(2000)]
    text = "# Long\n\n## Body\n\n" + "".join(lines) + "## After\n\nend\n"
    (tmp_path / "long.md").write_text(text)
    settings = settings_for(tmp_path)
    first = read(settings, "long.md", section="## Body")
    assert first.next_line_range is not None and first.next_line_range[1] == 2004
    shown = sum(len(block.text) for block in first.blocks if isinstance(block, TextBlock))
    assert shown <= 100_000
    assert f"line_range=[{first.next_line_range[0]}, 2004]" in first.blocks[0].text
    pieces, page = [first.source_text], first
    while page.next_line_range is not None:
        page = read(settings, "long.md", line_range=list(page.next_line_range))
        pieces.append(page.source_text)
    section = "".join(text.splitlines(keepends=True)[2:2004])
    assert "".join(pieces) == section
    small = read(settings, "long.md", section="## Body", max_tokens=1_000)
    assert sum(len(b.text) for b in small.blocks if isinstance(b, TextBlock)) <= 4_000
    meta = read_result_to_mcp(first).meta[META_KEY]
    assert meta["next_line_range"] == list(first.next_line_range)


def _noise_png(width: int, height: int) -> bytes:
    rng = random.Random(5)
    image = Image.frombytes(
        "RGB", (width, height), bytes(rng.getrandbits(8) for _ in range(width * height * 3))
    )
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def test_a_100kb_data_uri_image_is_a_short_placeholder_naming_its_image_block(tmp_path: Path) -> None:
    data = base64.b64encode(_noise_png(190, 140)).decode()
    assert len(data) > 100_000
    uri = f"data:image/png;base64,{data}"
    source = f"# Guide\n\n## Screenshot\n\nThe panel:\n\n![panel]({uri})\n\nAfter it.\n\n## Next\n\nx\n"
    (tmp_path / "shot.md").write_text(source)
    result = read(settings_for(tmp_path), "shot.md", section="## Screenshot")
    text = "".join(block.text for block in result.blocks if isinstance(block, TextBlock))
    assert len(text) < 2_000
    roles = [block.role if isinstance(block, TextBlock) else "image" for block in result.blocks]
    assert roles == ["source", "data-uri", "source", "image", "source"]
    assert (
        result.blocks[1].text == f"data:image/png;base64,… [{len(uri):,} characters: image 1 of this result]"
    )
    assert isinstance(result.blocks[3], ImageBlock)
    section = source.split("## Next")[0].split("# Guide\n\n")[1]
    assert result.source_text == section  # the source blocks with the elided URI in place
    meta = read_result_to_mcp(result).meta[META_KEY]
    assert meta["roles"] == roles and meta["elided"] == [{"block": 1, "text": uri}]
    rebuilt = "".join(
        meta["elided"][0]["text"] if role == "data-uri" else block.text
        for block, role in zip(result.blocks, roles, strict=True)
        if role in ("source", "data-uri")
    )
    assert rebuilt == section

    raw = read(
        settings_for(tmp_path), "shot.md", section="## Screenshot", raw_data_uris=True, max_tokens=60_000
    )
    assert uri in raw.blocks[0].text and "data-uri" not in [getattr(b, "role", "") for b in raw.blocks]


def test_data_uris_not_shown_as_images_say_why_and_short_ones_stay(tmp_path: Path) -> None:
    big = "data:image/png;base64," + base64.b64encode(png_bytes((60, 60)) + b"\0" * 600).decode()
    tiny = "data:image/gif;base64,R0lGODlhAQABAAAAACw="
    broken = "data:image/png;base64," + "A" * 400
    (tmp_path / "d.md").write_text(
        f"# D\n\n![a]({big})\n\n![b]({broken})\n\n![c]({big})\n\n![t]({tiny})\n\n[link]({broken}x)\n"
    )
    result = read(settings_for(tmp_path), "d.md", max_images=2)
    placeholders = [b.text for b in result.blocks if isinstance(b, TextBlock) and b.role == "data-uri"]
    assert placeholders[0].endswith(": image 1 of this result]")
    assert "could not be shown" in placeholders[1]
    assert "beyond max_images" in placeholders[2]
    assert "not an image shown here" in placeholders[3]
    assert tiny in result.source_text and len(placeholders) == 4
    assert result.source_text == (tmp_path / "d.md").read_text()


def test_limits_at_their_edges(tmp_path: Path) -> None:
    from md_vision.datauri import MIN_ELIDED_CHARS, data_uri_spans
    from md_vision.indexing import OVERVIEW_PAGE_FILES

    prefix = "data:image/png;base64,"
    at_edge = prefix + "A" * (MIN_ELIDED_CHARS - len(prefix))
    assert [len(span) for span in data_uri_spans(f"![x]({at_edge})")] == [MIN_ELIDED_CHARS]
    assert data_uri_spans(f"![x]({at_edge[:-1]})") == []

    # Files whose full index is large but whose overview line is short (one title, subsections
    # below the level the overview shows): the overview page stops at OVERVIEW_PAGE_FILES files.
    for number in range(OVERVIEW_PAGE_FILES + 1):
        rows = "".join(f"### Detail {n} of file {number}\n\ntext\n\n" for n in range(30))
        (tmp_path / f"f{number:04d}.md").write_text(f"# File {number}\n\n{rows}")
    first, second = index_pages(settings_for(tmp_path, index_workers=1), str(tmp_path))[:2]
    assert len(first.text) < 80_000  # room to spare (100,000), yet the page ends at the cap
    assert f"shown=1-{OVERVIEW_PAGE_FILES}>" in first.text
    assert f"shown={OVERVIEW_PAGE_FILES + 1}-{OVERVIEW_PAGE_FILES + 1}>" in second.text


def test_max_tokens_cannot_exceed_the_response_limit(tmp_path: Path) -> None:
    lines = "".join(f"line {n} " + "x" * 70 + "\n" for n in range(3000))  # ~240,000 characters
    (tmp_path / "doc.md").write_text(lines)
    result = read(settings_for(tmp_path, max_response_bytes=100_000), "doc.md", max_tokens=1_000_000)
    assert result.next_line_range is not None  # 1,000,000 tokens asked, 25,000 (100,000 bytes / 4) given
    assert sum(len(b.text) for b in result.blocks if isinstance(b, TextBlock)) <= 100_000


def test_the_raw_data_uris_flag_keeps_them_in_the_text(tmp_path: Path) -> None:
    from md_vision.__main__ import parse_settings

    uri = "data:image/png;base64," + base64.b64encode(png_bytes((60, 60)) + b"\0" * 600).decode()
    (tmp_path / "d.md").write_text(f"![a]({uri})\n")
    flagged = parse_settings(["--allow-path", str(tmp_path), "--allow-domain", "none", "--raw-data-uris"])
    plain = parse_settings(["--allow-path", str(tmp_path), "--allow-domain", "none"])
    assert flagged.raw_data_uris and not plain.raw_data_uris
    kept = read(flagged, "d.md")
    assert kept.blocks[0].text == f"![a]({uri})\n" and isinstance(kept.blocks[-1], ImageBlock)
    assert uri not in read(plain, "d.md").blocks[0].text


def test_a_file_that_cannot_be_read_is_listed_on_the_smallest_pages(tmp_path: Path) -> None:
    deep = tmp_path / ("a" * 200) / ("b" * 200) / ("c" * 200)  # its entries are longer than a page
    deep.mkdir(parents=True)
    for number in range(30):
        (deep / f"doc{number:02d}.md").write_text(f"# Doc {number}\n\n## Part\n")
    os.mkfifo(deep / "pipe.md")  # listed with its reason, never opened
    pages = index_pages(settings_for(tmp_path, index_workers=1), str(tmp_path), max_tokens=500)
    shown = "".join(page.text for page in pages)
    assert 'pipe.md" error="not a regular file"' in shown
    assert all(f'doc{number:02d}.md" lines=' in shown for number in range(30))
