"""Fixtures for md-vision: a docs folder with real structure and real images, and helpers."""

from __future__ import annotations

import asyncio
import io
import shutil
from pathlib import Path

import pytest
from PIL import Image

from md_vision.service import MdVision
from md_vision.settings import Limits, Settings

SAMPLES = Path(__file__).resolve().parents[2] / "tools" / "md_vision" / "md_vision" / "samples"


def png_bytes(size=(40, 30), colour=(200, 30, 30), mode="RGB") -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size, colour).save(buffer, "PNG")
    return buffer.getvalue()


def jpeg_bytes(size=(40, 30), colour=(30, 30, 200), exif_orientation: int | None = None) -> bytes:
    image = Image.new("RGB", size, colour)
    buffer = io.BytesIO()
    if exif_orientation is not None:
        exif = Image.Exif()
        exif[0x0112] = exif_orientation
        image.save(buffer, "JPEG", exif=exif.tobytes())
    else:
        image.save(buffer, "JPEG")
    return buffer.getvalue()


def settings_for(*paths: Path, domains=("none",), **limits) -> Settings:
    return Settings.build(allow_paths=list(paths), allow_domains=list(domains), limits=Limits(**limits))


def run(coroutine):
    return asyncio.run(coroutine)


async def _call(settings: Settings, method: str, *args, **kwargs):
    async with MdVision(settings) as vision:
        return await getattr(vision, method)(*args, **kwargs)


def read(settings: Settings, uri: str, **kwargs):
    return run(_call(settings, "read", uri, **kwargs))


def index(settings: Settings, uri: str):
    return run(_call(settings, "index", uri))


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A copy of the bundled samples plus a few more images, under tmp_path/docs."""
    root = tmp_path / "docs"
    shutil.copytree(SAMPLES, root)
    (root / "images" / "red.png").write_bytes(png_bytes())
    (root / "images" / "blue.jpg").write_bytes(jpeg_bytes())
    return root.resolve()
