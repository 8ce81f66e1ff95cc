"""Image inputs: classification, data URLs, local files inside the allowed paths, limits at their edge."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path

import pytest

from tests.vision_bridge.conftest import PUBLIC_ADDRESS, NameTable, png_bytes
from vision_bridge.errors import ErrorCause, VisionError
from vision_bridge.inputs import (
    MAX_IMAGE_BYTES,
    ImageBytes,
    ImageLoader,
    ImageUrl,
    InputKind,
    classify,
    decode_data_url,
    sniff_mime,
)


def load(loader: ImageLoader, raw: str):
    return asyncio.run(loader.load(raw))


def refused(loader: ImageLoader, raw: str) -> str:
    with pytest.raises(VisionError) as info:
        load(loader, raw)
    assert info.value.cause is ErrorCause.INPUT
    return info.value.message


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("clipboard", InputKind.CLIPBOARD),
        (" Clip ", InputKind.CLIPBOARD),
        ("PASTEBOARD", InputKind.CLIPBOARD),
        ("data:image/png;base64,AAAA", InputKind.DATA_URL),
        ("https://example.com/a.png", InputKind.URL),
        ("HTTP://example.com/a.png", InputKind.URL),
        ("shots/a.png", InputKind.PATH),
        ("clipboard.png", InputKind.PATH),
    ],
)
def test_classify(raw: str, kind: InputKind) -> None:
    assert classify(raw) is kind


def test_sniff_mime_knows_the_five_formats() -> None:
    assert sniff_mime(png_bytes()) == "image/png"
    assert sniff_mime(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert sniff_mime(b"GIF89a...") == "image/gif"
    assert sniff_mime(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert sniff_mime(b"BM\x00\x00") == "image/bmp"
    assert sniff_mime(b"%PDF-1.7") is None


def test_data_url_round_trip_and_identity_is_the_content_hash() -> None:
    data = png_bytes()
    image = decode_data_url("data:image/png;base64," + base64.b64encode(data).decode())
    assert image.data == data
    assert image.declared_mime == "image/png"
    # The same bytes from anywhere have the same identity: the cache keys on content.
    assert image.identity == ImageBytes(data, "elsewhere.png").identity


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("data:text/plain;base64,aGk=", "not an image"),
        ("data:image/png,rawbytes", "only base64"),
        ("data:image/png;base64", "no ','"),
        ("data:image/png;base64,@@@@", "not valid base64"),
        ("data:image/png;base64,", "empty"),
    ],
)
def test_bad_data_urls(raw: str, fragment: str) -> None:
    with pytest.raises(VisionError, match=fragment):
        decode_data_url(raw)


def test_data_url_size_limit_at_its_edge() -> None:
    at_limit = base64.b64encode(b"x" * 300).decode()
    over = base64.b64encode(b"x" * 301).decode()
    assert len(decode_data_url(f"data:image/png;base64,{at_limit}", max_bytes=300).data) == 300
    with pytest.raises(VisionError, match="limit of 300"):
        decode_data_url(f"data:image/png;base64,{over}", max_bytes=300)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "a.png").write_bytes(png_bytes())
    return allowed


@pytest.fixture
def loader(root: Path) -> ImageLoader:
    resolver = NameTable({"example.com": [PUBLIC_ADDRESS]})
    return ImageLoader(allowed_paths=(os.path.realpath(root),), resolver=resolver)


def test_local_file_inside_the_allowed_path(loader: ImageLoader, root: Path) -> None:
    image = load(loader, str(root / "a.png"))
    assert isinstance(image, ImageBytes)
    assert image.origin == "a.png"
    assert image.declared_mime == "image/png"
    # Relative paths resolve against the first allowed path, not the server's working directory.
    assert load(loader, "a.png").data == image.data


def test_paths_outside_the_allowed_folders_are_refused_with_the_fix(
    loader: ImageLoader, tmp_path: Path
) -> None:
    (tmp_path / "secret.png").write_bytes(png_bytes())
    message = refused(loader, str(tmp_path / "secret.png"))
    assert "outside the allowed paths" in message
    assert "VISION_ALLOWED_PATHS" in message
    assert "outside the allowed paths" in refused(loader, "../secret.png")


def test_symlink_inside_the_root_cannot_lead_outside(loader: ImageLoader, root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_bytes(png_bytes())
    (root / "link.png").symlink_to(tmp_path / "secret.png")
    assert "outside the allowed paths" in refused(loader, str(root / "link.png"))


def test_only_image_extensions_are_read(loader: ImageLoader, root: Path) -> None:
    (root / "notes.txt").write_text("not an image")
    (root / ".env").write_text("KEY=1")
    assert "accepted extensions: png, jpg, jpeg, gif, webp, bmp" in refused(loader, str(root / "notes.txt"))
    assert "not an image file" in refused(loader, str(root / ".env"))


def test_missing_empty_and_special_files(loader: ImageLoader, root: Path) -> None:
    assert "does not exist" in refused(loader, str(root / "nope.png"))
    (root / "empty.png").write_bytes(b"")
    assert "is empty" in refused(loader, str(root / "empty.png"))
    (root / "folder.png").mkdir()
    assert "not a regular file" in refused(loader, str(root / "folder.png"))
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "pipe.png")  # reading a FIFO would block forever
        assert "not a regular file" in refused(loader, str(root / "pipe.png"))
    assert "is empty" in refused(loader, "  ")


def test_file_size_limit_at_its_edge(root: Path) -> None:
    loader = ImageLoader(allowed_paths=(os.path.realpath(root),), max_bytes=1000)
    (root / "edge.png").write_bytes(b"\x89PNG" + b"\0" * 996)
    (root / "over.png").write_bytes(b"\x89PNG" + b"\0" * 997)
    assert len(load(loader, str(root / "edge.png")).data) == 1000
    assert "1,001 bytes, over the limit of 1,000" in refused(loader, str(root / "over.png"))


def test_the_default_image_limit_is_20_mib(root: Path) -> None:
    assert MAX_IMAGE_BYTES == 20 * 1024 * 1024
    loader = ImageLoader(allowed_paths=(os.path.realpath(root),))
    with open(root / "big.png", "wb") as handle:  # sparse: cheap to make
        handle.truncate(MAX_IMAGE_BYTES + 1)
    assert "over the limit of 20,971,520" in refused(loader, str(root / "big.png"))


def test_urls_stay_urls_and_are_checked(loader: ImageLoader) -> None:
    image = load(loader, "https://example.com/cat.png?x=1")
    assert isinstance(image, ImageUrl)
    assert image.identity == "url:https://example.com/cat.png?x=1"
    assert "embedded credentials" in refused(loader, "https://user:pw@example.com/a.png")
