"""Offline OCR with the system's Tesseract program: no API, no network, no model.

Why the program (over tesserocr): it is the one the system's packages install (Debian's
``tesseract-ocr``, Homebrew's, the Windows installer), so the engine version and the language
packs are the ones the user manages (``apt-get install tesseract-ocr-deu`` adds German with no
Python change). Driving it needs no compiled parts, so the server's base install stays light and works on every platform; tesserocr's wheels bundle their own libtesseract instead
of using the system's. The cost, one process per image, is small next to the OCR itself and is
paid once per image thanks to the result cache. The process is run here (pytesseract only lists
the installed languages) so that it can be bounded: a private temporary file as its input, an
address-space cap, two at a time, killed at the call's deadline or when the call is cancelled,
and with the server on Linux. A page of tiny text once ran for minutes at 1.27 GB, on after its
call was cancelled and after the server's input closed.

Only ``ocr_image`` is served. ``analyze_image`` and ``compare_images`` need a vision model and
say so. Output formats: ``plain`` (Tesseract's text, layout spaces kept), ``markdown``
(paragraphs separated by blank lines; Tesseract does not know headings or tables) and ``json``
(``{"blocks": [{"type": "paragraph", "text", "bbox": [left, top, width, height], "confidence"}]}``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from vision_bridge.backends.base import ProviderError, Task, VisionAnswer, VisionRequest
from vision_bridge.cache import BackendIdentity
from vision_bridge.config import DEFAULT_DECODE_MEMORY_MB
from vision_bridge.errors import ConfigError, ErrorCause, input_error
from vision_bridge.isolation import LoopSemaphore
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

TESSERACT_MEMORY_BYTES = (DEFAULT_DECODE_MEMORY_MB + 1024) << 20
"""Address space one Tesseract process may take: the decode cap plus room for the engine, its
language data and its threads (a 942 KB page of tiny text ran for minutes at 1.27 GB)."""

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


def data_from_tsv(tsv: str) -> dict[str, list[str]]:
    """Tesseract's ``tsv`` output as columns (``level``, ``block_num``, ..., ``text``)."""
    rows = [row.split("\t") for row in tsv.strip("\n").split("\n") if row]
    if len(rows) < 2:
        return {}
    header, body = rows[0], rows[1:]
    columns: dict[str, list[str]] = {name: [] for name in header}
    for row in body:
        row = row + [""] * (len(header) - len(row))  # an empty last word has no cell
        for name, cell in zip(header, row, strict=False):
            columns[name].append(cell)
    return columns


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(data)


def _child_limits(memory_bytes: int) -> Callable[[], None] | None:
    """What runs in the Tesseract process before it starts (POSIX): an address-space cap, and
    on Linux death with the server (``PR_SET_PDEATHSIG``)."""
    if os.name != "posix":
        return None
    import resource
    import signal

    prctl = None
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            prctl = ctypes.CDLL(None, use_errno=True).prctl

    def limit() -> None:
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        if prctl is not None:
            prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG

    return limit


class TesseractBackend:
    tasks: frozenset[Task] = frozenset({"ocr"})
    # Every image reaches Tesseract decoded (in the service's decoding child), flattened over
    # white and re-encoded as PNG: Tesseract reads that file and never a user's bytes.
    # At most 64 MB of PNG (scaled down until it fits): a 722 KB palette image had become 248 MB.
    image_limits = ImageLimits(accepted_mimes=None, opaque_png=True, max_bytes=64 << 20)

    def __init__(
        self, *, command: str = "tesseract", memory_bytes: int = TESSERACT_MEMORY_BYTES, workers: int = 2
    ) -> None:
        self.command = command
        self.memory_bytes = memory_bytes
        self._slots = LoopSemaphore(workers)
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
        lang = tesseract_languages(request.languages, await asyncio.to_thread(self.installed_languages))
        texts = []
        deadline = time.monotonic() + timeout_s
        for part in request.images:
            if part.inline is None:  # the service downloads URLs first for this backend
                raise input_error("the Tesseract backend needs the image's bytes, not a URL")
            count_request()
            texts.append(await self._ocr(part.inline.data, request, lang, deadline - time.monotonic()))
        return VisionAnswer("\n\n".join(texts), TokenUsage(), "ocr")

    async def _ocr(self, png: bytes, request: VisionRequest, lang: str, timeout_s: float) -> str:
        if request.ocr_format == "plain":
            plain = await self._tesseract(png, ["-l", lang, "-c", "preserve_interword_spaces=1"], timeout_s)
            return render_ocr("plain", plain_text=plain, paragraphs=[])
        tsv = await self._tesseract(png, ["-l", lang, "tsv"], timeout_s)
        return render_ocr(
            request.ocr_format, plain_text="", paragraphs=paragraphs_from_data(data_from_tsv(tsv))
        )

    async def _tesseract(self, png: bytes, arguments: list[str], timeout_s: float) -> str:
        """Tesseract's standard output for the image ``png`` (written to a private temporary file):
        at most ``workers`` at once, under the memory cap, killed at ``timeout_s`` or when the call
        is cancelled, and with the server (Linux)."""
        async with self._slots.here():
            with tempfile.TemporaryDirectory(prefix="vision-bridge-ocr-") as folder:
                path = os.path.join(folder, "image.png")
                await asyncio.to_thread(_write, path, png)
                try:
                    process = await asyncio.create_subprocess_exec(
                        self.command,
                        path,
                        "stdout",
                        *arguments,
                        stdin=asyncio.subprocess.DEVNULL,
                        stdout=asyncio.subprocess.PIPE,
                        stderr=asyncio.subprocess.PIPE,
                        preexec_fn=_child_limits(self.memory_bytes),
                    )
                except OSError:
                    raise ProviderError(
                        ErrorCause.API, f"Tesseract is no longer available: {INSTALL_HINT}"
                    ) from None
                try:
                    async with asyncio.timeout(max(timeout_s, 0.001)):
                        out, err = await process.communicate()
                except TimeoutError:
                    raise ProviderError(
                        ErrorCause.TIMEOUT, f"Tesseract took longer than {max(timeout_s, 0):.3g} s"
                    ) from None
                finally:
                    if process.returncode is None:  # timed out or cancelled: it must not run on
                        with contextlib.suppress(ProcessLookupError):
                            process.kill()
        code = process.returncode or 0
        if code != 0:
            detail = " ".join(err.decode("utf-8", "replace").split())[:500] or "no detail"
            if code < 0:
                detail = f"it was stopped by signal {-code} (out of memory?); {detail}"
            raise ProviderError(ErrorCause.API, f"Tesseract failed: {detail}")
        return out.decode("utf-8", "replace")

    async def aclose(self) -> None:
        return None
