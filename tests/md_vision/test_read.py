"""Reads through the service the server calls: exact text, images in place, failures contained."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from md_vision.service import ImageBlock, TextBlock, ToolFailure
from tests.md_vision.conftest import png_bytes, read, settings_for


def _kinds(result) -> list[str]:
    return [block.role if isinstance(block, TextBlock) else "image" for block in result.blocks]


def test_full_read_returns_the_file_byte_for_byte_with_images_after_their_lines(docs: Path) -> None:
    result = read(settings_for(docs), str(docs / "guide.md"))
    source = (docs / "guide.md").read_text(encoding="utf-8")
    assert result.source_text == source  # frontmatter included, nothing rewritten
    assert result.images_inlined == 4 and result.images_failed == 0
    images = [block for block in result.blocks if isinstance(block, ImageBlock)]
    assert [Path(image.source).name for image in images] == [
        "wiring.svg",
        "panel.png",
        "panel.png",
        "panel.png",
    ]
    # The first image follows the line that references it, after its label.
    position = _kinds(result).index("image")
    before = "".join(
        b.text for b in result.blocks[:position] if isinstance(b, TextBlock) and b.role == "source"
    )
    assert before.endswith("   ![Wiring diagram](images/wiring.svg)\n")
    label = result.blocks[position - 1]
    assert label.role == "label" and label.text.startswith(f"Image: {docs / 'images' / 'wiring.svg'} (")


def test_section_read_drops_frontmatter_and_follows_tolerant_matching(docs: Path) -> None:
    result = read(settings_for(docs), "guide.md", section="usage")
    assert result.source_text.startswith("## Usage\n\n| Step |")
    assert "title: Widget guide" not in result.source_text
    assert result.heading == "## Usage"
    assert result.blocks[0].role == "note" and "matched heading '## Usage'" in result.blocks[0].text


def test_duplicate_and_nested_headings_are_readable(docs: Path) -> None:
    second = read(settings_for(docs), "guide.md", section="### Notes (2)")
    assert second.source_text.startswith('### Notes\n\nA second "Notes" section')
    quoted = read(settings_for(docs), "guide.md", section="## Quoted heading")
    assert quoted.source_text == "> ## Quoted heading\n> Headings inside block quotes are indexed too.\n\n"


def test_images_beyond_max_images_stay_as_markdown_with_their_line_breaks(docs: Path) -> None:
    result = read(settings_for(docs), "guide.md", max_images=1)
    assert result.source_text == (docs / "guide.md").read_text(encoding="utf-8")
    assert result.images_inlined == 1 and result.images_skipped == 3
    assert "3 more image(s)" in result.blocks[0].text
    none = read(settings_for(docs), "guide.md", max_images=0)
    assert not any(isinstance(block, ImageBlock) for block in none.blocks)


def test_line_range_through_a_fence_is_exact_and_has_no_heading(docs: Path) -> None:
    result = read(settings_for(docs), "guide.md", line_range=[30, 31])
    assert (
        result.source_text
        == "## Not a heading: this is inside a fence\n![not an image](images/missing.png)\n"
    )
    assert result.images_inlined == 0 and result.heading is None


def test_section_not_found_falls_back_to_line_range_and_says_so(docs: Path) -> None:
    result = read(settings_for(docs), "guide.md", section="## Nope", line_range=[1, 4])
    assert result.source_text.startswith("---\ntitle")
    assert "not found" in result.notes[0]


def test_section_not_found_error_names_closest_and_index_md(docs: Path) -> None:
    with pytest.raises(ToolFailure) as info:
        read(settings_for(docs), "guide.md", section="## Instal")
    assert "'## Install'" in str(info.value) and "index_md" in str(info.value)


def test_crlf_file_is_returned_with_its_crlf(tmp_path: Path) -> None:
    (tmp_path / "win.md").write_bytes(b"# Title\r\n\r\nText\r\n## Next\r\nMore\r\n")
    result = read(settings_for(tmp_path), "win.md", section="# Title")
    assert result.source_text == "# Title\r\n\r\nText\r\n## Next\r\nMore\r\n"


def _doc_with_images(root: Path, references: list[str]) -> str:
    lines = ["# Images\n"] + [f"\n![img {n}]({ref})\nafter {n}\n" for n, ref in enumerate(references)]
    (root / "doc.md").write_text("".join(lines), encoding="utf-8")
    return "doc.md"


def test_each_bad_image_becomes_a_one_line_placeholder_and_the_rest_succeeds(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "img").mkdir(parents=True)
    (root / "img" / "ok.png").write_bytes(png_bytes())
    (root / "img" / "text.png").write_text("not an image")
    (root / "img" / "huge.png").write_bytes(png_bytes(size=(3000, 3000), colour=0, mode="L"))
    (root / "img" / "big.png").write_bytes(png_bytes() + b"\0" * 12_000)
    outside = tmp_path / "outside.png"
    outside.write_bytes(png_bytes())
    os.symlink(outside, root / "img" / "link.png")
    references = [
        "img/ok.png",
        "img/missing.png",
        "img/text.png",
        "img/huge.png",
        "img/big.png",
        "img/link.png",
        "../outside.png",
        "file:///etc/hosts",
        "https://example.com/x.png",
        "img",
    ]
    name = _doc_with_images(root, references)
    result = read(settings_for(root, max_image_pixels=4_000_000, max_image_bytes=10_000), name)
    placeholders = [
        block.text for block in result.blocks if isinstance(block, TextBlock) and block.role == "placeholder"
    ]
    assert result.images_inlined == 1 and result.images_failed == 9
    reasons = [
        "file not found",
        "not a recognised image",
        "pixel limit",
        "byte image limit",
        "outside the allowed paths",
        "outside the allowed paths",
        "file: URLs are not allowed",
        "remote images are disabled",
        "not a regular file",
    ]
    for placeholder, reason in zip(placeholders, reasons, strict=True):
        assert (
            placeholder.startswith("[image not shown: ") and reason in placeholder and "\n" not in placeholder
        )
    assert result.source_text == (root / "doc.md").read_text()


def test_paths_outside_the_sandbox_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.md").write_text("# secret\n")
    os.symlink(tmp_path / "secret.md", root / "link.md")
    for uri in ["../secret.md", str(tmp_path / "secret.md"), "link.md", f"{root}/../secret.md"]:
        with pytest.raises(ToolFailure, match="outside the allowed paths"):
            read(settings_for(root), uri)
    with pytest.raises(ToolFailure, match="file:// URIs are not accepted"):
        read(settings_for(root), f"file://{root}/x.md")


def test_relative_paths_resolve_against_the_first_allowed_path(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    (first / "x.md").write_text("# in a\n")
    (second / "x.md").write_text("# in b\n")
    assert read(settings_for(first, second), "x.md").source_text == "# in a\n"
    assert read(settings_for(first, second), str(second / "x.md")).source_text == "# in b\n"


@pytest.mark.parametrize(
    ("uri", "fragment"),
    [
        ("missing.md", "does not exist"),
        (".", "is a folder"),
        ("", "uri is empty"),
        ("ftp://x/y.md", "not supported"),
    ],
)
def test_read_errors_are_actionable(tmp_path: Path, uri: str, fragment: str) -> None:
    with pytest.raises(ToolFailure, match=fragment):
        read(settings_for(tmp_path), uri)


def test_binary_and_oversized_markdown_are_refused(tmp_path: Path) -> None:
    (tmp_path / "bin.md").write_bytes(b"# x\n\0\0\0")
    (tmp_path / "big.md").write_text("# x\n" + "a" * 2000)
    with pytest.raises(ToolFailure, match="binary"):
        read(settings_for(tmp_path), "bin.md")
    with pytest.raises(ToolFailure, match="over the markdown size limit of 1,000"):
        read(settings_for(tmp_path, max_markdown_bytes=1000), "big.md")


def test_latin1_file_is_decoded(tmp_path: Path) -> None:
    (tmp_path / "l1.md").write_bytes(
        "# Café déjà vu\n\nÉté à la plage, où il faisait très chaud.\n".encode("latin-1")
    )
    assert read(settings_for(tmp_path), "l1.md").source_text.startswith("# Café déjà vu")


def test_response_budget_scales_images_and_says_so(tmp_path: Path) -> None:
    import io
    import random

    from PIL import Image

    rng = random.Random(3)
    (tmp_path / "img").mkdir()
    references = []
    for number in range(3):
        image = Image.frombytes("RGB", (500, 400), bytes(rng.getrandbits(8) for _ in range(500 * 400 * 3)))
        buffer = io.BytesIO()
        image.save(buffer, "PNG", compress_level=1)
        (tmp_path / "img" / f"n{number}.png").write_bytes(buffer.getvalue())
        references.append(f"img/n{number}.png")
    name = _doc_with_images(tmp_path, references)
    result = read(settings_for(tmp_path, max_response_bytes=300_000), name)
    images = [block for block in result.blocks if isinstance(block, ImageBlock)]
    assert len(images) == 3
    total = sum(4 * ((len(image.data) + 2) // 3) for image in images) + sum(
        len(block.text) for block in result.blocks if isinstance(block, TextBlock)
    )
    assert total <= 300_000
    labels = [block.text for block in result.blocks if isinstance(block, TextBlock) and block.role == "label"]
    assert all("to fit the 0.3 MB response budget" in label for label in labels)


def test_text_over_the_response_budget_comes_in_pages_and_an_overlong_line_is_cut(tmp_path: Path) -> None:
    # Before results were paged (issue 18) such a read was refused; now the first page is what fits
    # and names the rest, and a single line over the limit is cut with advice.
    (tmp_path / "long.md").write_text("# Long\n" + "word " * 5000)
    settings = settings_for(tmp_path, max_response_bytes=10_000)
    first = read(settings, "long.md")
    assert first.source_text == "# Long\n" and first.next_line_range == (2, 2)
    assert "line_range=[2, 2]" in first.notes[-1]
    cut = read(settings, "long.md", line_range=[2, 2])
    assert cut.next_line_range is None and "max_tokens" in cut.notes[-1]
    assert cut.source_text == ("word " * 5000)[: len(cut.source_text)]
    assert sum(len(b.text) for b in cut.blocks if isinstance(b, TextBlock)) <= 10_000


def test_an_index_made_before_the_folders_changed_is_not_cached_after(tmp_path: Path) -> None:
    """The race of an index in flight on a worker thread while the client's roots change: its
    entries, shown relative to the old first folder, must not refill the cache the change cleared."""
    import dataclasses

    from docab_mcpguard import PathPolicy
    from md_vision.service import MdVision

    outer = tmp_path.resolve()
    (outer / "sub").mkdir()
    (outer / "sub" / "f.md").write_text("# F\n")
    settings = dataclasses.replace(settings_for(outer), relative_paths=True)

    async def go() -> str:
        async with MdVision(settings) as vision:
            before, generation = vision._loader.paths_snapshot()
            stale = await vision.index("sub/f.md")  # shown relative to the old first folder
            key = next(iter(vision._indexer._indexes._items))  # the file's cache key
            vision.use_paths(PathPolicy.from_dirs([outer / "sub"]))  # clears the cache
            vision._indexer.cache_index(
                key, (stale.entries[0], ""), generation
            )  # the in-flight index finishing late
            assert vision._indexer._indexes.get(key) is None
            assert before.show(outer / "sub" / "f.md") == "sub/f.md"
            fresh = await vision.index("f.md")
            return fresh.entries[0].path

    assert asyncio.run(go()) == "f.md"
