"""Preparing images for a provider: pass-through when it fits, convert or downscale when it does not."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from PIL import Image

from tests.vision_bridge.conftest import image_bytes, noise_png, png_bytes
from vision_bridge.backends.anthropic_messages import ANTHROPIC_IMAGE_LIMITS
from vision_bridge.backends.openai_chat import OPENAI_IMAGE_LIMITS
from vision_bridge.errors import VisionError
from vision_bridge.inputs import ImageBytes
from vision_bridge.prepare import ImageLimits, prepare_image


def decoded(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data))


def test_an_image_that_fits_is_sent_byte_for_byte() -> None:
    data = png_bytes((300, 200))
    prepared = prepare_image(ImageBytes(data, "a.png"), OPENAI_IMAGE_LIMITS)
    assert prepared.data == data
    assert (prepared.mime, prepared.width, prepared.height, prepared.note) == ("image/png", 300, 200, "")
    assert prepared.data_url().startswith("data:image/png;base64,iVBOR")


def test_bmp_becomes_png_for_the_providers() -> None:
    prepared = prepare_image(ImageBytes(image_bytes("BMP"), "a.bmp"), OPENAI_IMAGE_LIMITS)
    assert prepared.mime == "image/png"
    assert decoded(prepared.data).format == "PNG"
    assert "converted from BMP to PNG" in prepared.note


def test_animated_gif_sends_its_first_frame() -> None:
    frames = [Image.new("RGB", (20, 20), c) for c in ("red", "green", "blue")]
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:], duration=50, loop=0)
    prepared = prepare_image(ImageBytes(buffer.getvalue(), "anim.gif"), OPENAI_IMAGE_LIMITS)
    assert prepared.mime == "image/png"
    assert "animated, first frame" in prepared.note
    first = decoded(prepared.data).convert("RGB").getpixel((5, 5))
    assert first[0] > 200 and first[1] < 50  # red


def test_a_side_over_the_provider_limit_is_downscaled_not_refused() -> None:
    data = png_bytes((9000, 60), "white")
    prepared = prepare_image(ImageBytes(data, "wide.png"), ANTHROPIC_IMAGE_LIMITS)
    assert (prepared.width, prepared.height) == (8000, 53)
    assert decoded(prepared.data).size == (8000, 53)
    assert prepared.note == "downscaled from 9000x60 to 8000x53"


def test_side_limit_at_its_edge() -> None:
    limits = ImageLimits(accepted_mimes=None, max_side=100)
    at_edge = png_bytes((100, 40))
    assert prepare_image(ImageBytes(at_edge, "a.png"), limits).data == at_edge
    assert prepare_image(ImageBytes(png_bytes((101, 40)), "b.png"), limits).width == 100


def test_bytes_over_the_limit_are_reencoded_and_shrunk_until_they_fit() -> None:
    data = noise_png((200, 200))  # ~120 kB of noise
    limits = ImageLimits(accepted_mimes=frozenset({"image/png", "image/jpeg"}), max_bytes=20_000)
    prepared = prepare_image(ImageBytes(data, "noise.png"), limits)
    assert len(prepared.data) <= 20_000
    assert prepared.mime == "image/jpeg"
    assert decoded(prepared.data).format == "JPEG"
    assert prepared.width < 200  # JPEG alone was not enough for noise


def test_anthropic_byte_limit_is_five_mb_of_base64() -> None:
    assert ANTHROPIC_IMAGE_LIMITS.max_bytes == 3_932_160
    data = noise_png((1300, 1100))  # > 4 MB
    assert len(data) > ANTHROPIC_IMAGE_LIMITS.max_bytes
    prepared = prepare_image(ImageBytes(data, "photo.png"), ANTHROPIC_IMAGE_LIMITS)
    assert len(prepared.base64()) <= 5 * 1024 * 1024


def test_exif_rotation_is_applied_when_reencoding() -> None:
    picture = Image.new("RGB", (400, 100), "white")
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90: the upright picture is 100 x 400
    buffer = io.BytesIO()
    picture.save(buffer, "JPEG", exif=exif)
    prepared = prepare_image(ImageBytes(buffer.getvalue(), "phone.jpg"), ImageLimits(None, max_side=200))
    assert (prepared.width, prepared.height) == (50, 200)
    assert prepared.mime == "image/jpeg"


def test_pixel_cap_refuses_decompression_bombs_before_decoding() -> None:
    data = png_bytes((1000, 1000), "white")
    with pytest.raises(VisionError, match="over the limit of 999,999"):
        prepare_image(ImageBytes(data, "bomb.png"), OPENAI_IMAGE_LIMITS, max_pixels=999_999)
    assert prepare_image(ImageBytes(data, "ok.png"), OPENAI_IMAGE_LIMITS, max_pixels=1_000_000).width == 1000


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"%PDF-1.7 not an image", "not a readable image"),
        (png_bytes((50, 50))[:60], "corrupt or truncated"),
    ],
)
def test_unreadable_images_are_input_errors(data: bytes, fragment: str) -> None:
    with pytest.raises(VisionError, match=fragment) as info:
        prepare_image(ImageBytes(data, "x.png"), OPENAI_IMAGE_LIMITS)
    assert info.value.cause.value == "input"


def test_side_cap_from_settings_tightens_the_provider_limit() -> None:
    assert ANTHROPIC_IMAGE_LIMITS.with_side_cap(2048).max_side == 2048
    assert ANTHROPIC_IMAGE_LIMITS.with_side_cap(9999).max_side == 8000
    assert OPENAI_IMAGE_LIMITS.with_side_cap(None).max_side is None
    assert OPENAI_IMAGE_LIMITS.with_side_cap(1024).max_side == 1024


EPS = (
    b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 100 100\n%%EndComments\n"
    b"(attacker-controlled PostScript) print\nshowpage\n%%EOF\n"
)


def test_an_eps_named_png_never_runs_ghostscript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pillow opened any format it knows by the bytes: an EPS (named .png, or in a data:image/png
    # URL) ran Ghostscript on its PostScript, where Ghostscript is installed. A stand-in `gs` on
    # PATH notes any run.
    from PIL import EpsImagePlugin

    ran = tmp_path / "gs-ran"
    fake = tmp_path / "bin" / "gs"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$@" >> {ran}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ.get('PATH', '')}")
    monkeypatch.setattr(EpsImagePlugin, "gs_binary", None)  # found afresh, on this PATH
    with pytest.raises(VisionError, match="not a readable image") as info:
        prepare_image(ImageBytes(EPS, "innocent.png"), OPENAI_IMAGE_LIMITS)
    assert info.value.cause.value == "input"
    assert not ran.exists()


def test_a_jpeg_of_too_many_scans_is_refused_before_decoding() -> None:
    # One scan repeated 5,000 times in a 250 KB JPEG cost 56 s of CPU on a thread no timeout stops.
    from docab_mcpguard.jpeg import MAX_SCANS
    from tests.md_vision.test_jpeg_scans import progressive, with_repeated_last_scan

    bomb = with_repeated_last_scan(progressive((64, 64)), MAX_SCANS)
    with pytest.raises(VisionError, match=f"more than {MAX_SCANS} scans") as info:
        prepare_image(ImageBytes(bomb, "photo.jpg"), OPENAI_IMAGE_LIMITS)
    assert info.value.cause.value == "input"
    assert prepare_image(ImageBytes(progressive((64, 64)), "photo.jpg"), OPENAI_IMAGE_LIMITS).width == 64


def test_an_image_too_big_for_memory_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # A 100,000,000 x 1 strip is within the pixel cap; its decode raised MemoryError, which came
    # back as "unexpected internal failure", blamed on the provider.
    from PIL import ImageFile

    def no_memory(self: ImageFile.ImageFile) -> None:
        raise MemoryError

    monkeypatch.setattr(ImageFile.ImageFile, "load", no_memory)
    from vision_bridge.prepare import load_pixels

    with pytest.raises(VisionError, match="needs more memory to decode") as info:
        load_pixels(ImageBytes(png_bytes((50, 50)), "strip.png"))
    assert info.value.cause.value == "input"


def test_an_opaque_png_over_its_byte_cap_is_scaled_down_and_stays_lossless() -> None:
    # Tesseract's images are capped at 64 MB of PNG (a 722 KB palette PNG had become 248 MB);
    # past the cap they shrink as PNG, never turning into JPEG. The edge: exactly at the cap fits.
    from vision_bridge.prepare import reencode

    image = ImageBytes(noise_png((300, 200)), "noise.png")
    whole = reencode(image, ImageLimits(None, opaque_png=True))
    at_cap = reencode(image, ImageLimits(None, opaque_png=True, max_bytes=len(whole.data)))
    assert (at_cap.mime, at_cap.width, len(at_cap.data)) == ("image/png", 300, len(whole.data))
    over = reencode(image, ImageLimits(None, opaque_png=True, max_bytes=len(whole.data) - 1))
    assert over.mime == "image/png" and decoded(over.data).format == "PNG"
    assert (over.width, over.height) == (225, 150)
    assert len(over.data) < len(whole.data)
    assert over.note == "downscaled from 300x200 to 225x150"
