"""An image that runs out of its decode child's memory cap is told so, whatever its decoder raises.

Before: under VISION_DECODE_MEMORY_MB=64, a 6000 x 6000 WebP (lossy or lossless, 1-64 KB) read
"is not a readable image": libwebp cannot create its decoder and Pillow raises OSError, not
MemoryError. PNG, TIFF and BMP of that size already named the cap (Pillow allocates first).
Now the child reads the size the header declares (:mod:`docab_mcpguard.decodecost`) before it calls a failure corrupt.
"""

from __future__ import annotations

import asyncio
import io
import struct
from pathlib import Path

import pytest
from mcp import Client
from PIL import Image

from docab_mcpguard import decodecost
from tests.support.llm_stub import LLMStub
from tests.vision_bridge.conftest import noise_png, settings_for
from vision_bridge.errors import ErrorCause, VisionError
from vision_bridge.inputs import ImageBytes
from vision_bridge.isolation import DecodeLimits, prepare_isolated
from vision_bridge.prepare import ImageLimits
from vision_bridge.server import build_server
from vision_bridge.service import create_service

CAP = DecodeLimits(memory_bytes=64 << 20)
SMALL = ImageLimits(frozenset({"image/png", "image/jpeg"}), max_side=1568)  # every image is decoded
SIDE = 6000


def encoded(fmt: str, size: tuple[int, int] = (SIDE, SIDE), mode: str = "RGB", **options: object) -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size, (200, 30, 30) if mode == "RGB" else (200, 30, 30, 128)).save(buffer, fmt, **options)
    return buffer.getvalue()


def webp_claiming(width: int, height: int) -> bytes:
    """A WebP container whose VP8X header declares ``width`` x ``height`` and whose image is garbage."""
    vp8x = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00"
    vp8x += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    body = b"WEBP" + vp8x + b"VP8 " + struct.pack("<I", 64) + bytes(range(64))
    return b"RIFF" + struct.pack("<I", len(body)) + body


def decode(data: bytes, name: str) -> VisionError:
    with pytest.raises(VisionError) as failure:
        prepare_isolated(ImageBytes(data, name), SMALL, CAP, 60)
    assert failure.value.cause is ErrorCause.INPUT
    return failure.value


def over_cap(name: str) -> str:
    return (
        f"{name} needs more than the 64 MB this server lets one image take to decode "
        "(VISION_DECODE_MEMORY_MB); send it smaller"
    )


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("lossy.webp", encoded("WEBP", quality=80)),
        ("lossless.webp", encoded("WEBP", lossless=True)),
        ("alpha.webp", encoded("WEBP", mode="RGBA", lossless=True)),
        ("a.png", encoded("PNG")),
        ("a.tiff", encoded("TIFF", compression="tiff_adobe_deflate")),
    ],
)
def test_an_image_over_the_cap_names_the_cap_whatever_its_decoder_raises(name: str, data: bytes) -> None:
    assert decode(data, name).message == over_cap(name)


def test_a_corrupt_small_image_is_still_unreadable() -> None:
    assert decode(webp_claiming(100, 100), "small.webp").message == (
        "small.webp is not a readable image (accepted: PNG, JPEG, GIF, WebP, BMP, TIFF)"
    )
    assert decode(b"RIFF\x10\x00\x00\x00WEBPnonsense", "junk.webp").message.endswith(
        "is not a readable image (accepted: PNG, JPEG, GIF, WebP, BMP, TIFF)"
    )


def test_a_corrupt_image_under_the_cap_is_corrupt_not_short_of_memory() -> None:
    data = noise_png((1000, 1000))  # 4 MB as RGBA, a 16th of the cap
    assert not decodecost.short_of_memory(CAP.memory_bytes, 1000, 1000)
    cut = decode(data[: len(data) // 2], "cut.png")
    assert cut.message == "cut.png is corrupt or truncated and cannot be decoded"


def test_a_corrupt_image_that_declares_a_huge_size_is_refused_for_its_pixels() -> None:
    # As today (Pillow's own guard past 179 MP, the bridge's own from 100 MP), not as short of memory.
    assert decode(webp_claiming(16000, 16000), "huge.webp").message == (
        "huge.webp has more than the limit of 100,000,000 pixels"
    )
    assert decode(webp_claiming(12000, 12000), "big.webp").message == (
        "big.webp is 12000x12000 = 144,000,000 pixels, over the limit of 100,000,000"
    )


def test_webp_sizes_are_read_from_each_header_kind() -> None:
    for options in ({"quality": 80}, {"lossless": True}):
        assert decodecost.webp_size(encoded("WEBP", (321, 123), **options)) == (321, 123)
    assert decodecost.webp_size(encoded("WEBP", (321, 123), mode="RGBA", exif=b"Exif\x00\x00")) == (321, 123)
    assert decodecost.webp_size(webp_claiming(7, 9)) == (7, 9)
    assert decodecost.webp_size(encoded("PNG", (3, 3))) is None


def test_over_mcp_a_webp_over_the_cap_names_the_setting(llm_stub: LLMStub, tmp_path: Path) -> None:
    (tmp_path / "big.webp").write_bytes(encoded("WEBP", lossless=True))
    settings = settings_for(llm_stub, tmp_path, VISION_DECODE_MEMORY_MB="64", VISION_MAX_IMAGE_SIDE="1568")

    async def go() -> object:
        async with Client(build_server(create_service(settings))) as client:
            return await client.call_tool("analyze_image", {"image": str(tmp_path / "big.webp")})

    result = asyncio.run(go())
    assert result.is_error  # type: ignore[attr-defined]
    assert result.content[0].text == "[vision_error] input: " + over_cap("big.webp")  # type: ignore[attr-defined]
    assert llm_stub.requests_for("openai") == []
