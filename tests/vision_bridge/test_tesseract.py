"""The offline backend on images rendered here with known text (Pillow's bundled font)."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont, features

from tests.support.http_server import LocalServer, Reply
from tests.vision_bridge.conftest import settings_for, with_service
from vision_bridge.backends.base import ImagePart, VisionRequest
from vision_bridge.backends.tesseract import (
    TesseractBackend,
    paragraphs_from_data,
    render_ocr,
    tesseract_languages,
)
from vision_bridge.errors import ConfigError, VisionError
from vision_bridge.prepare import PreparedImage
from vision_bridge.prompts import NO_TEXT
from vision_bridge.usage import USAGE_META_KEY

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="Tesseract is not installed (Debian: apt-get install tesseract-ocr; .ci/run installs it)",
)
needs_freetype = pytest.mark.skipif(
    not features.check("freetype2"), reason="Pillow was built without FreeType"
)

LINES = ("Quarterly revenue 2024", "Vision bridge reads 42 lines")


def render(lines=LINES, *, transparent: bool = False, gap: int = 90) -> bytes:
    """Black text, 36 px, each line ``gap`` px below the last; PNG bytes."""
    font = ImageFont.load_default(size=36)
    mode, background = ("RGBA", (0, 0, 0, 0)) if transparent else ("RGB", "white")
    picture = Image.new(mode, (900, 40 + gap * len(lines)), background)
    draw = ImageDraw.Draw(picture)
    for i, line in enumerate(lines):
        draw.text((20, 20 + gap * i), line, font=font, fill=(0, 0, 0, 255) if transparent else "black")
    buffer = io.BytesIO()
    picture.save(buffer, "PNG")
    return buffer.getvalue()


def offline(tmp_path: Path, **env: str):
    return settings_for(None, tmp_path, VISION_BACKEND="tesseract", **env)


def words(text: str) -> str:
    return " ".join(text.split())


# -- pure parts (no Tesseract needed) -------------------------------------------------------------


def test_language_mapping_and_missing_language_data() -> None:
    installed = frozenset({"eng", "osd", "chi_sim"})
    assert tesseract_languages((), installed) == "eng"
    assert tesseract_languages(("zh", "en"), installed) == "chi_sim+eng"
    assert tesseract_languages(("eng", "en"), installed) == "eng"
    with pytest.raises(VisionError, match=r"no data for deu \(installed: chi_sim, eng\).*tesseract-ocr-deu"):
        tesseract_languages(("de",), installed)


def test_paragraphs_and_rendering_from_tesseract_rows() -> None:
    rows = {
        "level": [3, 5, 5, 5, 3, 5],
        "block_num": [1, 1, 1, 1, 2, 2],
        "par_num": [1, 1, 1, 1, 1, 1],
        "line_num": [0, 1, 1, 2, 0, 1],
        "left": [10, 10, 60, 10, 10, 10],
        "top": [5, 5, 5, 40, 100, 100],
        "width": [200, 40, 40, 40, 80, 80],
        "height": [60, 20, 20, 20, 20, 20],
        "conf": [-1, 90, 80, 70, -1, 95],
        "text": ["", "Hello", "world", "again", "", "Bye"],
    }
    paragraphs = paragraphs_from_data(rows)
    assert paragraphs == [
        {"type": "paragraph", "text": "Hello world\nagain", "bbox": [10, 5, 200, 60], "confidence": 80.0},
        {"type": "paragraph", "text": "Bye", "bbox": [10, 100, 80, 20], "confidence": 95.0},
    ]
    assert render_ocr("markdown", plain_text="", paragraphs=paragraphs) == "Hello world\nagain\n\nBye"
    assert json.loads(render_ocr("json", plain_text="", paragraphs=[])) == {"blocks": []}
    assert render_ocr("plain", plain_text="  \n\n", paragraphs=[]) == NO_TEXT


def test_missing_program_fails_at_start(tmp_path: Path) -> None:
    from vision_bridge.service import create_service

    with pytest.raises(ConfigError, match="was not found: install it"):
        create_service(offline(tmp_path, VISION_TESSERACT_CMD="/nonexistent/tesseract"))


# -- the real engine --------------------------------------------------------------------------------


@needs_tesseract
@needs_freetype
@pytest.mark.parametrize("fmt", ["plain", "markdown", "json"])
def test_ocr_reads_rendered_text_in_each_format(tmp_path: Path, fmt: str) -> None:
    (tmp_path / "scan.png").write_bytes(render())
    outcome = with_service(offline(tmp_path), lambda s: s.ocr(str(tmp_path / "scan.png"), "en", fmt))
    assert not outcome.is_error, outcome.text
    if fmt == "json":
        blocks = json.loads(outcome.text)["blocks"]
        assert [words(b["text"]) for b in blocks] == list(LINES)
        assert all(b["type"] == "paragraph" and b["confidence"] > 50 for b in blocks)
    elif fmt == "markdown":
        assert outcome.text.split("\n\n") == list(LINES)
    else:
        assert [words(line) for line in outcome.text.splitlines() if line.strip()] == list(LINES)
    report = outcome.meta[USAGE_META_KEY]
    assert report["provider"] == "tesseract" and report["model"].startswith("tesseract ")
    assert (report["input_tokens"], report["output_tokens"], report["calls"]) == (0, 0, 1)
    assert outcome.details["answer_from"] == "ocr"


@needs_tesseract
@needs_freetype
def test_text_on_a_transparent_background_is_read(tmp_path: Path) -> None:
    (tmp_path / "logo.png").write_bytes(render(("Transparent Label",), transparent=True))
    outcome = with_service(offline(tmp_path), lambda s: s.ocr(str(tmp_path / "logo.png")))
    assert words(outcome.text) == "Transparent Label"


@needs_tesseract
def test_blank_image_has_no_text(tmp_path: Path) -> None:
    Image.new("RGB", (300, 100), "white").save(tmp_path / "blank.png")
    outcome = with_service(offline(tmp_path), lambda s: s.ocr(str(tmp_path / "blank.png")))
    assert outcome.text == NO_TEXT


@needs_tesseract
def test_analyze_and_compare_say_they_need_a_model(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(render())

    async def scenario(service):
        return [
            await service.analyze(str(tmp_path / "a.png")),
            await service.compare([str(tmp_path / "a.png"), str(tmp_path / "a.png")]),
        ]

    for outcome in with_service(offline(tmp_path), scenario):
        assert outcome.is_error
        assert outcome.text.startswith("[vision_error] unsupported: ")
        assert "needs a vision model" in outcome.text and "Use ocr_image" in outcome.text
        assert outcome.usage.calls == 0


@needs_tesseract
def test_missing_language_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(render())
    outcome = with_service(offline(tmp_path), lambda s: s.ocr(str(tmp_path / "a.png"), "xx-klingon"))
    assert outcome.is_error and outcome.text.startswith(
        "[vision_error] input: Tesseract has no data for xx-klingon"
    )


@needs_tesseract
@needs_freetype
def test_urls_are_downloaded_first_and_results_cached(tmp_path: Path) -> None:
    with LocalServer({"/scan.png": Reply(body=render(), content_type="image/png")}) as server:
        settings = offline(tmp_path, VISION_ALLOW_HOSTS="127.0.0.1")

        async def scenario(service):
            return [await service.ocr(server.url("/scan.png")), await service.ocr(server.url("/scan.png"))]

        first, second = with_service(settings, scenario)
    assert words(first.text) == words(" ".join(LINES))
    assert second.usage.from_cache and second.text == first.text
    assert len(server.requests) == 2  # downloaded per call (the key is the content), OCR ran once


# A stand-in Tesseract that answers the start-up questions, notes its process id, then hangs: the
# shape of a page of tiny text that once ran for minutes at 1.27 GB, on after its call was
# cancelled and after the server's input closed (pytesseract's own timeout was the only bound).
HANGING_TESSERACT = """#!/bin/sh
case "$1" in
  --version) echo "tesseract 5.3.0"; exit 0;;
  --list-langs) echo 'List of available languages in "/x/" (1):'; echo eng; exit 0;;
esac
echo $$ > "$(dirname "$0")/pid"
exec sleep 120
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _hanging_backend(tmp_path: Path) -> tuple[TesseractBackend, Path]:
    script = tmp_path / "tesseract"
    script.write_text(HANGING_TESSERACT)
    script.chmod(0o755)
    return TesseractBackend(command=str(script)), tmp_path / "pid"


def _request() -> VisionRequest:
    return VisionRequest("ocr", "read", (ImagePart(inline=PreparedImage(render(), "image/png", 900, 220)),))


def _wait(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_tesseract_past_the_calls_time_is_killed(tmp_path: Path) -> None:
    backend, pidfile = _hanging_backend(tmp_path)
    with pytest.raises(VisionError) as failure:
        asyncio.run(backend.answer(_request(), timeout_s=1.0))
    assert failure.value.cause.value == "timeout"
    assert failure.value.message == "Tesseract took longer than 1 s"
    pid = int(pidfile.read_text())
    assert _wait(lambda: not _running(pid), 5.0), "Tesseract outlived its call's time"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_a_cancelled_ocr_call_kills_tesseract(tmp_path: Path) -> None:
    backend, pidfile = _hanging_backend(tmp_path)

    async def go() -> int:
        task = asyncio.create_task(backend.answer(_request(), timeout_s=120))
        assert await asyncio.to_thread(_wait, pidfile.exists, 20.0), "Tesseract never started"
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return int(pidfile.read_text())

    pid = asyncio.run(go())
    assert _wait(lambda: not _running(pid), 5.0), "Tesseract outlived its cancelled call"
