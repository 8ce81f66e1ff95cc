"""Offline OCR with the system's Tesseract through ``pytesseract``: no API, no network, no model.

Why pytesseract (over tesserocr): it drives the ``tesseract`` program the system's packages
install (Debian's ``tesseract-ocr``, Homebrew's, the Windows installer), so the engine version and
the language packs are the ones the user manages (``apt-get install tesseract-ocr-deu`` adds German
with no Python change). It is pure Python with no compiled parts, so the server's base install
stays light and works on every platform; tesserocr's wheels bundle their own libtesseract instead
of using the system's. The cost, one process per image, is small next to the OCR itself and is
paid once per image thanks to the result cache.

Only ``ocr_image`` is served. ``analyze_image`` and ``compare_images`` need a vision model and
say so. Output formats: ``plain`` (Tesseract's text, layout spaces kept), ``markdown``
(paragraphs separated by blank lines; Tesseract does not know headings or tables) and ``json``
(``{"blocks": [{"type": "paragraph", "text", "bbox": [left, top, width, height], "confidence"}]}``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections import defaultdict
from typing import Any

from vision_bridge.backends.base import ProviderError, Task, VisionAnswer, VisionRequest
from vision_bridge.cache import BackendIdentity
from vision_bridge.errors import ConfigError, ErrorCause, input_error
from vision_bridge.metering import count_request
from vision_bridge.prepare import ImageLimits
from vision_bridge.prompts import NO_TEXT, OcrFormat
from vision_bridge.usage import TokenUsage

# ISO 639-1 (what callers usually pass, as in "zh,en") to Tesseract's traineddata names.
ISO_TO_TESSERACT = {
    "af": "afr", "ar": "ara", "bg": "bul", "bn": "ben", "ca": "cat", "cs": "ces", "da": "dan",
    "de": "deu", "el": "ell", "en": "eng", "es": "spa", "et": "est", "fa": "fas", "fi": "fin",
    "fr": "fra", "he": "heb", "hi": "hin", "hr": "hrv", "hu": "hun", "id": "ind", "it": "ita",
    "ja": "jpn", "ko": "kor", "lt": "lit", "lv": "lav", "nl": "nld", "no": "nor", "pl": "pol",
    "pt": "por", "ro": "ron", "ru": "rus", "sk": "slk", "sl": "slv", "sr": "srp", "sv": "swe",
    "ta": "tam", "th": "tha", "tr": "tur", "uk": "ukr", "vi": "vie",
    "zh": "chi_sim", "zh-cn": "chi_sim", "zh-hans": "chi_sim", "zh-tw": "chi_tra", "zh-hant": "chi_tra",
}  # fmt: skip

INSTALL_HINT = (
    "install it with your system's packages (Debian/Ubuntu: apt-get install tesseract-ocr; "
    "macOS: brew install tesseract; Windows: the UB Mannheim installer) or point VISION_TESSERACT_CMD at it"
)


def tesseract_languages(requested: tuple[str, ...], installed: frozenset[str]) -> str:
    """Map requested languages to Tesseract's ``eng+deu`` form; input error for missing ones."""
    if not requested:
        if "eng" in installed:
            return "eng"
        usable = sorted(installed - {"osd", "equ"})
        if not usable:
            raise ProviderError(ErrorCause.API, "Tesseract has no language data installed")
        return usable[0]
    codes = [ISO_TO_TESSERACT.get(lang, lang) for lang in requested]
    missing = [code for code in codes if code not in installed]
    if missing:
        shown = ", ".join(sorted(installed - {"osd"})) or "none"
        packages = " ".join(f"tesseract-ocr-{code.replace('_', '-')}" for code in missing)
        raise input_error(
            f"Tesseract has no data for {', '.join(missing)} (installed: {shown}); "
            f"on Debian/Ubuntu: apt-get install {packages}"
        )
    return "+".join(dict.fromkeys(codes))


def paragraphs_from_data(data: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Group ``image_to_data`` word rows into paragraphs: text (lines kept), box, mean confidence."""
    lines: dict[tuple[int, int, int], list[str]] = defaultdict(list)
    confidences: dict[tuple[int, int], list[float]] = defaultdict(list)
    boxes: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    for i, level in enumerate(data.get("level", [])):
        key = (int(data["block_num"][i]), int(data["par_num"][i]))
        if int(level) == 3:
            boxes[key] = (
                int(data["left"][i]),
                int(data["top"][i]),
                int(data["width"][i]),
                int(data["height"][i]),
            )
        word = str(data["text"][i] or "").strip()
        if int(level) == 5 and word:
            lines[(*key, int(data["line_num"][i]))].append(word)
            conf = float(data["conf"][i])
            if conf >= 0:
                confidences[key].append(conf)
    grouped: dict[tuple[int, int], list[str]] = defaultdict(list)
    for (block, par, _line), words in sorted(lines.items()):
        grouped[(block, par)].append(" ".join(words))
    result = []
    for key, text_lines in grouped.items():
        confs = confidences.get(key, [])
        result.append(
            {
                "type": "paragraph",
                "text": "\n".join(text_lines),
                "bbox": list(boxes.get(key, (0, 0, 0, 0))),
                "confidence": round(sum(confs) / len(confs), 1) if confs else None,
            }
        )
    return result


def render_ocr(fmt: OcrFormat, *, plain_text: str, paragraphs: list[dict[str, Any]]) -> str:
    if fmt == "json":
        return json.dumps({"blocks": paragraphs}, ensure_ascii=False)
    if fmt == "markdown":
        text = "\n\n".join(p["text"] for p in paragraphs)
    else:
        text = "\n".join(line.rstrip() for line in plain_text.strip("\n").splitlines())
    return text.strip() or NO_TEXT


class TesseractBackend:
    tasks: frozenset[Task] = frozenset({"ocr"})
    # Every image reaches Tesseract decoded (in the service's decoding child), flattened over
    # white and re-encoded as PNG: Tesseract reads that file and never a user's bytes.
    image_limits = ImageLimits(accepted_mimes=None, opaque_png=True)

    def __init__(self, *, command: str = "tesseract") -> None:
        self.command = command
        self.version = ""
        self._installed: frozenset[str] | None = None
        self.identity = BackendIdentity("tesseract", "tesseract")

    def check(self) -> None:
        """Start-up check: the program runs and reports a version; ConfigError otherwise.

        Runs ``tesseract --version`` directly: importing pytesseract here would also import pandas
        when it is installed, seconds of start-up for nothing.
        """
        path = shutil.which(self.command)
        if path is None:
            raise ConfigError(f"  - Tesseract ({self.command!r}) was not found: {INSTALL_HINT}")
        try:
            done = subprocess.run([path, "--version"], capture_output=True, timeout=15, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(f"  - Tesseract ({self.command!r}) could not be run: {INSTALL_HINT}") from exc
        match = re.search(rb"tesseract\s+v?(\d[\w.\-]*)", done.stdout + done.stderr, re.IGNORECASE)
        if done.returncode != 0 or match is None:
            raise ConfigError(f"  - {self.command!r} does not answer like Tesseract: {INSTALL_HINT}")
        self.command = path
        self.version = match.group(1).decode("ascii", "replace")
        self.identity = BackendIdentity("tesseract", f"tesseract {self.version}")

    def warm_up(self) -> None:
        import PIL.Image  # noqa: F401
        import pytesseract  # noqa: F401

    def installed_languages(self) -> frozenset[str]:
        import pytesseract

        if self._installed is None:
            self._installed = frozenset(pytesseract.get_languages(config=""))
        return self._installed

    async def answer(self, request: VisionRequest, *, timeout_s: float) -> VisionAnswer:
        if request.task != "ocr":
            raise ProviderError(ErrorCause.UNSUPPORTED, "the Tesseract backend only reads text")
        texts = []
        for part in request.images:
            if part.inline is None:  # the service downloads URLs first for this backend
                raise input_error("the Tesseract backend needs the image's bytes, not a URL")
            count_request()
            texts.append(await asyncio.to_thread(self._ocr, part.inline.data, request, timeout_s))
        return VisionAnswer("\n\n".join(texts), TokenUsage(), "ocr")

    def _ocr(self, png: bytes, request: VisionRequest, timeout_s: float) -> str:
        lang = tesseract_languages(request.languages, self.installed_languages())
        # Tesseract reads the file itself: handed a Pillow image, pytesseract would decode and
        # encode it again in this process.
        with tempfile.TemporaryDirectory(prefix="vision-bridge-ocr-") as folder:
            path = os.path.join(folder, "image.png")
            with open(path, "wb") as file:
                file.write(png)
            return self._ocr_file(path, request, lang, timeout_s)

    def _ocr_file(self, picture: str, request: VisionRequest, lang: str, timeout_s: float) -> str:
        import pytesseract

        pytesseract.pytesseract.tesseract_cmd = self.command
        try:
            if request.ocr_format == "plain":
                plain = pytesseract.image_to_string(
                    picture, lang=lang, config="-c preserve_interword_spaces=1", timeout=timeout_s
                )
                return render_ocr("plain", plain_text=plain, paragraphs=[])
            data = pytesseract.image_to_data(
                picture, lang=lang, output_type=pytesseract.Output.DICT, timeout=timeout_s
            )
        except pytesseract.TesseractNotFoundError:
            raise ProviderError(ErrorCause.API, f"Tesseract is no longer available: {INSTALL_HINT}") from None
        except pytesseract.TesseractError as exc:
            message = (
                " ".join(str(exc.message).split())[:500] if getattr(exc, "message", None) else "no detail"
            )
            raise ProviderError(ErrorCause.API, f"Tesseract failed: {message}") from None
        except RuntimeError as exc:
            if "timeout" in str(exc).lower():
                raise ProviderError(
                    ErrorCause.TIMEOUT, f"Tesseract took longer than {timeout_s:g} s"
                ) from None
            raise
        return render_ocr(request.ocr_format, plain_text="", paragraphs=paragraphs_from_data(data))

    async def aclose(self) -> None:
        return None
