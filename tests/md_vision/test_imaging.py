"""Image preparation: pass-through, rotation, frames, scaling, caps, budgets, SVG safety."""

from __future__ import annotations

import io
import random

import pytest
from PIL import Image

from md_vision.errors import ImageRejected
from md_vision.imaging import looks_like_svg, prepare_image
from tests.md_vision.conftest import jpeg_bytes, png_bytes


def _open(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data))


@pytest.mark.parametrize("make", [png_bytes, jpeg_bytes])
def test_small_png_and_jpeg_pass_through_byte_for_byte(make) -> None:
    data = make()
    prepared = prepare_image(data)
    assert prepared.passthrough and prepared.data == data
    assert prepared.describe().endswith("sent unchanged")


def test_exif_rotated_jpeg_is_turned_upright() -> None:
    prepared = prepare_image(jpeg_bytes(size=(60, 20), exif_orientation=6))  # rotate 90 degrees
    assert not prepared.passthrough
    assert (prepared.width, prepared.height) == (20, 60)


def test_animated_gif_sends_its_first_frame() -> None:
    frames = [Image.new("RGB", (30, 30), colour) for colour in ((255, 0, 0), (0, 0, 255))]
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    prepared = prepare_image(buffer.getvalue())
    assert prepared.mime_type == "image/png"
    red, _green, blue = _open(prepared.data).convert("RGB").getpixel((15, 15))
    assert red > 200 and blue < 50


def test_large_image_is_scaled_to_fit_1568() -> None:
    prepared = prepare_image(png_bytes(size=(3000, 1000)))
    assert (prepared.width, prepared.height) == (1568, 523)
    assert _open(prepared.data).size == (1568, 523)


def test_large_jpeg_uses_draft_decoding_and_still_fits() -> None:
    prepared = prepare_image(jpeg_bytes(size=(4000, 3000)), max_side=500)
    assert max(prepared.width, prepared.height) == 500
    assert prepared.mime_type == "image/jpeg"


def test_pixel_cap_is_checked_before_decoding() -> None:
    data = png_bytes(size=(2000, 2000), colour=128, mode="L")  # compresses to a few kB: a small bomb
    with pytest.raises(ImageRejected, match="pixel limit"):
        prepare_image(data, max_pixels=3_999_999)
    assert prepare_image(data, max_pixels=4_000_000).width == 1568  # exactly at the cap is fine


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"hello, not an image", "not a recognised image"),
        (png_bytes()[:60], "corrupt or truncated"),
        (b"<svg xmlns='http://www.w3.org/2000/svg'><unclosed></svg>", "not well-formed"),
    ],
)
def test_bad_images_are_rejected_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(ImageRejected, match=reason):
        prepare_image(data)


def _noisy_png(size=(1200, 900)) -> bytes:
    rng = random.Random(5)
    image = Image.frombytes("RGB", size, bytes(rng.getrandbits(8) for _ in range(size[0] * size[1] * 3)))
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=1)
    return buffer.getvalue()


def test_over_budget_image_is_reencoded_and_scaled_until_it_fits() -> None:
    data = _noisy_png()
    prepared = prepare_image(data, byte_budget=60_000)
    assert prepared.reduced and len(prepared.data) <= 60_000
    assert prepared.mime_type == "image/jpeg"
    assert prepared.width < 1200


def test_budget_squeeze_near_half_size_averages_pixel_blocks_and_still_fits() -> None:
    from md_vision.imaging import _resize

    image = Image.new("RGB", (2000, 1500))
    assert _resize(image, (1024, 768), for_budget=True).size == (1000, 750)  # 2x2 blocks
    assert _resize(image, (1300, 975), for_budget=True).size == (1300, 975)  # half is too far off
    assert _resize(image, (1024, 768)).size == (1024, 768)  # fitting max_side stays exact
    data = _noisy_png(size=(1600, 1200))
    prepared = prepare_image(data, byte_budget=700_000)
    assert prepared.reduced and len(prepared.data) <= 700_000 and prepared.width <= 1568


def test_image_that_cannot_fit_even_small_is_rejected() -> None:
    with pytest.raises(ImageRejected, match="response budget"):
        prepare_image(_noisy_png(), byte_budget=500)


def test_a_passthrough_candidate_over_its_share_is_reduced_instead() -> None:
    data = _noisy_png(size=(600, 400))
    prepared = prepare_image(data, byte_budget=len(data) // 4)
    assert not prepared.passthrough and prepared.reduced


SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100"><rect width="200" height="100" fill="#0000ff"/></svg>'


def test_svg_is_rendered_to_png_at_its_size() -> None:
    prepared = prepare_image(SVG, name="d.svg")
    assert prepared.mime_type == "image/png" and (prepared.width, prepared.height) == (200, 100)
    assert prepared.source_format == "SVG"
    assert _open(prepared.data).convert("RGB").getpixel((100, 50)) == (0, 0, 255)


def test_huge_svg_is_rendered_inside_the_size_cap() -> None:
    huge = b'<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="50000"></svg>'
    prepared = prepare_image(huge)
    assert (prepared.width, prepared.height) == (1568, 784)
    assert (prepared.source_width, prepared.source_height) == (100000, 50000)


def test_svg_cannot_pull_in_local_files(tmp_path) -> None:
    secret = tmp_path / "secret.png"
    Image.new("RGB", (50, 50), (255, 0, 0)).save(secret)
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="50" height="50">'
        f'<image href="{secret}" width="50" height="50"/><image xlink:href="file://{secret}" width="50" height="50"/>'
        "</svg>"
    ).encode()
    prepared = prepare_image(svg)
    assert _open(prepared.data).convert("RGBA").getpixel((25, 25))[:3] != (255, 0, 0)


def test_svg_entities_are_refused() -> None:
    svg = b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaa">]><svg xmlns="http://www.w3.org/2000/svg">&a;</svg>'
    with pytest.raises(ImageRejected, match="entities"):
        prepare_image(svg)


def test_svg_sniffing() -> None:
    assert looks_like_svg(b"<?xml version='1.0'?>\n<!-- c -->\n<svg xmlns='x'>")
    assert looks_like_svg(b"anything", "pic.SVG")
    assert not looks_like_svg(png_bytes(), "pic.png")
