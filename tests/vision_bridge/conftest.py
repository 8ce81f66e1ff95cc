"""Shared helpers for vision-bridge tests: images made on the spot, settings aimed at the stub."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from PIL import Image

from tests.support.llm_stub import LLMStub
from vision_bridge.config import Settings, load_settings
from vision_bridge.inputs import ImageLoader
from vision_bridge.service import VisionService, create_service

PUBLIC_ADDRESS = "93.184.216.34"  # a public address: never connected to, only classified


class NameTable:
    """A DNS for tests: names in ``table`` resolve as listed; IP literals are never looked up."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table

    async def resolve(self, host: str, port: int) -> list[str]:
        if host not in self.table:
            raise OSError("no such host")
        return self.table[host]


def loader_for(settings: Settings, **names: list[str]) -> ImageLoader:
    """The loader ``create_service`` would build, with ``example.com`` names resolving publicly
    (no DNS here) plus ``names`` (underscores in keyword names stand for dots)."""
    table = {host: [PUBLIC_ADDRESS] for host in ("example.com", "images.example.com")}
    table.update({name.replace("_", "."): addresses for name, addresses in names.items()})
    return ImageLoader(
        allowed_paths=settings.allowed_paths, allow_hosts=settings.allow_hosts, resolver=NameTable(table)
    )


T = TypeVar("T")


def png_bytes(
    size: tuple[int, int] = (64, 48), color: str | tuple[int, ...] = "red", mode: str = "RGB"
) -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size, color).save(buffer, "PNG")
    return buffer.getvalue()


def image_bytes(fmt: str, size: tuple[int, int] = (64, 48), color: str = "blue", **save: Any) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, fmt, **save)
    return buffer.getvalue()


def noise_png(size: tuple[int, int]) -> bytes:
    """An incompressible PNG: random pixels, about 3 bytes per pixel."""
    import os

    raw = os.urandom(size[0] * size[1] * 3)
    buffer = io.BytesIO()
    Image.frombytes("RGB", size, raw).save(buffer, "PNG", compress_level=1)
    return buffer.getvalue()


def settings_for(stub: LLMStub | None, tmp_path: Path, fmt: str = "openai", **env: str) -> Settings:
    """Settings for a service talking to ``stub`` in ``fmt``, with images allowed under tmp_path."""
    base: dict[str, str] = {
        "VISION_API_FORMAT": fmt,
        "VISION_API_KEY": "test-key",
        "VISION_MODEL": "vision-test",
        "VISION_MAX_RETRIES": "0",
        "VISION_CACHE_DIR": str(tmp_path / "cache"),
        "VISION_ALLOWED_PATHS": str(tmp_path),
    }
    if stub is not None:
        base["VISION_API_BASE_URL"] = stub.openai_base_url if fmt == "openai" else stub.anthropic_base_url
    base.update(env)
    return load_settings(base, cwd=str(tmp_path), tempdir=str(tmp_path), home=tmp_path)


def with_service(settings: Settings, scenario: Callable[[VisionService], Awaitable[T]], **wiring: Any) -> T:
    """Build a service, run ``scenario`` on it in one event loop, close it."""

    async def go() -> T:
        service = create_service(settings, **wiring)
        try:
            return await scenario(service)
        finally:
            await service.aclose()

    return asyncio.run(go())


@pytest.fixture
def picture(tmp_path: Path) -> Path:
    path = tmp_path / "picture.png"
    path.write_bytes(png_bytes())
    return path
