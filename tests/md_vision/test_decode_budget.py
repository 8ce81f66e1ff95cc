"""Large raster images are decoded in a child process under a memory cap, and one read decodes
at most --max-read-pixels pixels.

Before: a section of fifty 2 KB WebPs (7071 x 7071 RGBA, one colour, within the 50 MP cap) took the
server from 78 MB to 1.8-2.1 GB resident and held the image lane for 32-53 s, so that another
read's one small image waited as long (``uv run python -m tests.perf.md_vision_decode``).
"""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path

import pytest
from mcp import Client
from PIL import Image

from md_vision.errors import ImageRejected
from md_vision.imaging import IN_PROCESS_PIXELS, prepare_image
from md_vision.reading import OverReadBudget, PixelBudget, decode_in_child
from md_vision.results import ImageBlock, TextBlock
from md_vision.sandbox import RenderLimits
from tests.md_vision.conftest import png_bytes, read, settings_for
from tests.md_vision.test_mcp import _stdio
from tests.support.stdio_process import can_track, peak_rss_mb, pid_of, tracked

SIDE = 7071  # 49,999,041 pixels: under the 50,000,000 pixel cap


def hostile_webp(number: int = 0) -> bytes:
    """2 KB on disk, 200 MB decoded (about 750 MB at its peak in prepare_image)."""
    buffer = io.BytesIO()
    Image.new("RGBA", (SIDE, SIDE), (200, 30, 30, 128)).save(buffer, "WEBP", lossless=True)
    return buffer.getvalue() + b"%04d" % number  # after the RIFF container: ignored, but a new image


def _gallery(folder: Path, count: int) -> Path:
    data = hostile_webp()
    for number in range(count):
        (folder / f"h{number}.webp").write_bytes(data + b"%04d" % number)
    lines = "\n\n".join(f"![h{number}](h{number}.webp)" for number in range(count))
    (folder / "doc.md").write_text(f"# Doc\n\n## Gallery\n\n{lines}\n")
    return folder / "doc.md"


def test_small_images_are_decoded_here_and_large_ones_by_the_decoder() -> None:
    asked: list[tuple[int, int]] = []

    def decoder(data: bytes, max_side: int, max_pixels: int, budget: int | None) -> object:
        asked.append((max_side, max_pixels))
        raise ImageRejected("sent to the child")

    small = prepare_image(png_bytes((2000, 2000)), raster_decoder=decoder)  # type: ignore[arg-type]
    assert small.width == 1568 and asked == []
    photo = io.BytesIO()
    Image.new("RGB", (6400, 6400), (10, 120, 30)).save(photo, "JPEG")  # DCT-scaled to 1600 x 1600
    assert prepare_image(photo.getvalue(), raster_decoder=decoder).source_width == 6400  # type: ignore[arg-type]
    assert asked == []
    with pytest.raises(ImageRejected, match="sent to the child"):
        prepare_image(png_bytes((2100, 2000)), raster_decoder=decoder)  # type: ignore[arg-type]
    assert IN_PROCESS_PIXELS < 2100 * 2000 and asked == [(1568, 50_000_000)]


def test_the_pixel_budget_is_charged_before_decoding() -> None:
    budget = PixelBudget(5_000_000)
    prepare_image(png_bytes((2000, 2000)), decode_budget=budget.charge)
    with pytest.raises(OverReadBudget, match="--max-read-pixels"):
        prepare_image(png_bytes((1100, 1000)), decode_budget=budget.charge)
    prepare_image(png_bytes((1000, 1000)), decode_budget=budget.charge)  # what is left still serves


def test_the_child_gives_the_same_image_and_refuses_past_its_memory_cap() -> None:
    data = png_bytes((2500, 2000), colour=(10, 200, 30))
    here = prepare_image(data, byte_budget=200_000)
    there = decode_in_child(data, 1568, 50_000_000, 200_000, limits=RenderLimits())
    assert there == here
    huge = png_bytes((SIDE, SIDE), colour=(1, 2, 3, 4), mode="RGBA")  # 200 KB, 200 MB decoded
    with pytest.raises(ImageRejected, match="decoding the image needed more than the 64 MB memory limit"):
        decode_in_child(huge, 1568, 50_000_000, 200_000, limits=RenderLimits(memory_bytes=64_000_000))


def test_a_read_past_its_pixel_budget_shows_placeholders_that_are_not_remembered(tmp_path: Path) -> None:
    _gallery(tmp_path, 3)
    settings = settings_for(tmp_path, max_read_pixels=60_000_000, decode_memory_mb=64)

    def outcome(result: object) -> tuple[int, list[str]]:
        blocks = result.blocks  # type: ignore[attr-defined]
        notes = [b.text for b in blocks if isinstance(b, TextBlock) and b.role == "placeholder"]
        return sum(isinstance(b, ImageBlock) for b in blocks), notes

    images, notes = outcome(read(settings, "doc.md", section="Gallery"))
    # One image within the budget, refused under the 64 MB decode cap of its child (libwebp cannot
    # make its decoder: told as the cap, tests/md_vision/test_decode_memory_errors.py); the other
    # two past the budget.
    assert images == 0 and len(notes) == 3
    assert sum("--max-read-pixels" in note for note in notes) == 2, notes
    assert sum("raise --decode-memory-mb" in note for note in notes) == 1, notes


@pytest.mark.skipif(not can_track(), reason="reads the server's peak memory from /proc (Linux)")
def test_a_section_of_small_files_that_decode_huge_leaves_the_server_small(tmp_path: Path) -> None:
    """Over stdio: four 2 KB images of 50 MP, a 100 MP budget. Before: the server peaked over
    1.5 GB resident (two decodes at once on the image lane) and showed all four."""
    _gallery(tmp_path, 4)
    (tmp_path / "ok.png").write_bytes(png_bytes())
    (tmp_path / "other.md").write_text("# Other\n\n![ok](ok.png)\n")
    pidfile = tmp_path / "pid"
    params = tracked(
        _stdio("--allow-path", str(tmp_path), "--allow-domain", "none", "--max-read-pixels", "100000000"),
        pidfile,
    )

    async def go() -> tuple[list[tuple[int, str]], float, float]:
        async with Client(params) as client:
            await client.call_tool("index_md", {"uri": str(tmp_path / "other.md")})
            answers = []
            for _ in range(2):
                result = await client.call_tool(
                    "read_md_with_images", {"uri": str(tmp_path / "doc.md"), "section": "Gallery"}
                )
                text = "\n".join(block.text for block in result.content if block.type == "text")
                answers.append((sum(block.type == "image" for block in result.content), text))
            started = time.monotonic()
            other = await client.call_tool("read_md_with_images", {"uri": str(tmp_path / "other.md")})
            assert sum(block.type == "image" for block in other.content) == 1
            return answers, time.monotonic() - started, peak_rss_mb(pid_of(pidfile))

    answers, other_s, peak_mb = asyncio.run(go())
    (first, first_text), (second, _) = answers
    assert first == 2 and first_text.count("(--max-read-pixels)") == 2, first_text
    assert second == 4  # two from the cache, two decoded on the second read's budget
    assert other_s < 5.0
    assert peak_mb < 300, f"the server peaked at {peak_mb:.0f} MB resident"
