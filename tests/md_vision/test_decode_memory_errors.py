"""A raster image that runs out of its decode child's cap (--decode-memory-mb) is told so, whatever
its decoder raises.

Before: under a 64 MB cap, a 6000 x 6000 WebP (lossy or lossless) read "the image header could not
be read" (libwebp cannot create its decoder: OSError, not MemoryError); PNG and TIFF of that size
named the limit but not the flag. Now the child reads the size the header declares
(:mod:`docab_mcpguard.decodecost`) before it calls a failure corrupt, and the message names the flag.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from mcp import Client
from PIL import Image

from md_vision.errors import ImageRejected
from md_vision.reading import decode_in_child
from md_vision.sandbox import RenderLimits
from md_vision.server import build_server
from tests.md_vision.conftest import run, settings_for
from tests.vision_bridge.test_decode_memory_errors import encoded, webp_claiming

CAP = RenderLimits(seconds=60, memory_bytes=64_000_000)
OVER_CAP = "decoding the image needed more than the 64 MB memory limit; raise --decode-memory-mb to read it"


def reason(data: bytes, limits: RenderLimits = CAP) -> str:
    with pytest.raises(ImageRejected) as failure:
        decode_in_child(data, 1568, 50_000_000, 200_000, limits=limits)
    return str(failure.value)


@pytest.mark.parametrize(
    "data",
    [
        encoded("WEBP", quality=80),
        encoded("WEBP", lossless=True),
        encoded("WEBP", mode="RGBA", lossless=True),
        encoded("PNG"),
        encoded("TIFF", compression="tiff_adobe_deflate"),
    ],
    ids=["webp-lossy", "webp-lossless", "webp-alpha", "png", "tiff"],
)
def test_an_image_over_the_cap_names_the_flag_whatever_its_decoder_raises(data: bytes) -> None:
    assert reason(data) == OVER_CAP


def test_a_corrupt_small_image_is_still_unreadable() -> None:
    assert reason(webp_claiming(100, 100)) == "the image header could not be read"


def test_a_corrupt_image_under_the_cap_is_corrupt_not_short_of_memory() -> None:
    # Over IN_PROCESS_PIXELS (decoded in a child), 17 MB as RGBA: a quarter of a 256 MB cap. (Under
    # the smallest cap, 64 MB, any failure of a child's decode is put down to memory.)
    buffer = io.BytesIO()
    Image.effect_noise((2100, 2000), 60).save(buffer, "PNG")
    data = buffer.getvalue()
    assert (
        reason(data[: len(data) // 2], RenderLimits(seconds=60, memory_bytes=256_000_000))
        == "the image data is corrupt or truncated and could not be decoded"
    )


def test_a_corrupt_image_that_declares_a_huge_size_is_refused_for_its_pixels() -> None:
    assert reason(webp_claiming(8000, 8000)) == (
        "8000x8000 is 64,000,000 pixels, over the 50,000,000 pixel limit (decompression-bomb guard)"
    )


def test_over_mcp_a_webp_over_the_cap_names_the_flag(tmp_path: Path) -> None:
    (tmp_path / "big.webp").write_bytes(encoded("WEBP", lossless=True))
    (tmp_path / "doc.md").write_text("# Doc\n\n![big](big.webp)\n")
    settings = settings_for(tmp_path, decode_memory_mb=64)

    async def go() -> str:
        async with Client(build_server(settings)) as client:
            result = await client.call_tool("read_md_with_images", {"uri": str(tmp_path / "doc.md")})
            return "\n".join(block.text for block in result.content if block.type == "text")

    text = run(go())
    assert f"[image not shown: big.webp — {OVER_CAP}]" in text, text
