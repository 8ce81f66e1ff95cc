"""OCR of rendered pages: the engine interface, its settings, and Tesseract through tesserocr.

Why tesserocr (the C API through Cython) rather than pytesseract (which runs the ``tesseract``
program per image): one engine is loaded per worker process and reused for every page, so a page
costs recognition only, not a process start, a model load and a PNG round trip through a temporary
file. ``python -m docab_benchmark.mmlongbench.corpus.perf --compare-bindings`` on the 44 dev pages
auto mode OCRs, at 200 dpi: 0.26-0.27 CPU-s per page against 0.62 for pytesseract with
``OMP_THREAD_LIMIT=1`` and 1.64 without (Debian's tesseract spins OpenMP threads). Its PyPI wheels (Linux x86-64/aarch64, macOS, Windows)
bundle libtesseract, single-threaded, which fits one worker per core; only the language data comes
from the system (Debian: ``tesseract-ocr-eng``, one package per language), found through
``$TESSDATA_PREFIX`` or the usual install folders.

An engine is a picklable value sent to worker processes; the loaded Tesseract handle lives in a
per-process cache. ``identify`` runs in the parent before conversion and raises ``OcrUnavailable``
(a one-line, actionable message) when the binding or a language's data is missing: the caller then
warns once and keeps the PDF text.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np

from docab_benchmark.mmlongbench.corpus.textcheck import OcrMode

DEFAULT_OCR_DPI: Final = 200.0
"""Resolution pages are rendered at for OCR; chosen by measurement (benchmark/README.md, "OCR")."""
DEFAULT_LANGUAGES: Final = "eng"
MIN_WORD_CONFIDENCE: Final = 30.0
"""Words Tesseract is less sure of than this (0-100) are dropped: on pictures they are noise."""

TESSDATA_DIRS: Final = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
    "/usr/local/share/tesseract-ocr/tessdata",
    "/opt/homebrew/share/tessdata",
    "/opt/local/share/tessdata",
    "C:/Program Files/Tesseract-OCR/tessdata",
)


class OcrUnavailable(Exception):
    """The OCR engine cannot run here (binding or language data missing); the message says what to install."""


@dataclass(frozen=True)
class EngineInfo:
    """Which engine recognised the text: ``name`` and ``version`` as recorded in meta.json."""

    name: str
    version: str


@dataclass(frozen=True)
class RecognisedText:
    """What OCR found on a page: paragraphs of lines, the words kept, and the mean word confidence (0-100)."""

    paragraphs: tuple[tuple[str, ...], ...]
    words: int
    confidence: float


@runtime_checkable
class OcrEngine(Protocol):
    """An OCR engine. Instances must be picklable (they travel to worker processes)."""

    def identify(self, languages: str) -> EngineInfo:
        """The engine's name and version; raises ``OcrUnavailable`` when it cannot run ``languages``."""
        ...

    def recognise(
        self, pixels: np.ndarray, dpi: float, languages: str, min_confidence: float
    ) -> RecognisedText:
        """Text on an 8-bit grey ``(h, w)`` or RGB ``(h, w, 3)`` image rendered at ``dpi``, without
        the words recognised with a confidence (0-100) under ``min_confidence``."""
        ...


@dataclass(frozen=True)
class OcrSettings:
    """How pages are OCR'd: ``mode`` (auto, always, never), Tesseract ``languages`` (``eng+deu``),
    the render ``dpi`` for OCR, and the ``engine`` (injectable; Tesseract by default)."""

    mode: OcrMode = "auto"
    languages: str = DEFAULT_LANGUAGES
    dpi: float = DEFAULT_OCR_DPI
    min_word_confidence: float = MIN_WORD_CONFIDENCE
    engine: OcrEngine = field(default_factory=lambda: TesseractEngine())


def find_tessdata(languages: str, env: dict[str, str] | None = None) -> Path:
    """The first folder holding ``<lang>.traineddata`` for every language: ``$TESSDATA_PREFIX``, then ``TESSDATA_DIRS``."""
    env = dict(os.environ) if env is None else env
    wanted = [lang for lang in languages.split("+") if lang]
    if not wanted:
        raise OcrUnavailable("no OCR language given: use a Tesseract code such as eng or eng+deu")
    candidates = [env["TESSDATA_PREFIX"]] if env.get("TESSDATA_PREFIX") else []
    candidates += list(TESSDATA_DIRS)
    for folder in map(Path, candidates):
        for inner in (folder, folder / "tessdata"):
            if all((inner / f"{lang}.traineddata").is_file() for lang in wanted):
                return inner
    missing = " ".join(f"tesseract-ocr-{lang}" for lang in wanted)
    raise OcrUnavailable(
        f"no Tesseract language data for {languages!r} (looked in $TESSDATA_PREFIX and {TESSDATA_DIRS[0]}...); "
        f"install it (Debian: apt-get install {missing}) or set TESSDATA_PREFIX"
    )


_APIS: dict[tuple[str, str], Any] = {}  # per process: (tessdata, languages) -> a loaded PyTessBaseAPI


def _tesserocr() -> Any:
    try:
        import tesserocr
    except ImportError as exc:  # no wheel for this platform, or the library failed to load
        raise OcrUnavailable(
            f"the tesserocr package cannot be imported ({exc}); pip install tesserocr"
        ) from None
    return tesserocr


@dataclass(frozen=True)
class TesseractEngine:
    """Tesseract 5 through tesserocr, one engine per process and language set (see the module docstring)."""

    tessdata: str = ""  # empty: find_tessdata()

    def _folder(self, languages: str) -> Path:
        return Path(self.tessdata) if self.tessdata else find_tessdata(languages)

    def identify(self, languages: str) -> EngineInfo:
        tesserocr = _tesserocr()
        folder = self._folder(languages)
        for lang in languages.split("+"):
            if not (folder / f"{lang}.traineddata").is_file():
                raise OcrUnavailable(f"no Tesseract language data {lang}.traineddata in {folder}")
        version = str(tesserocr.tesseract_version()).split()[1]
        return EngineInfo("tesseract", f"{version} (tesserocr {tesserocr.__version__})")

    def _api(self, languages: str) -> Any:
        folder = str(self._folder(languages))
        api = _APIS.get((folder, languages))
        if api is None:
            tesserocr = _tesserocr()
            api = tesserocr.PyTessBaseAPI(path=folder + os.sep, lang=languages)
            _APIS[(folder, languages)] = api
        return api

    def recognise(
        self, pixels: np.ndarray, dpi: float, languages: str, min_confidence: float
    ) -> RecognisedText:
        tesserocr = _tesserocr()
        api = self._api(languages)
        image = np.ascontiguousarray(pixels)
        height, width = image.shape[:2]
        channels = 1 if image.ndim == 2 else image.shape[2]
        api.SetImageBytes(image.tobytes(), width, height, channels, width * channels)
        api.SetSourceResolution(round(dpi))
        api.Recognize()
        ril = tesserocr.RIL
        paragraphs: list[tuple[str, ...]] = []
        lines: list[str] = []
        words: list[str] = []
        confidences: list[float] = []
        kept = 0

        def end_line() -> None:
            if words:
                lines.append(" ".join(words))
                words.clear()

        def end_paragraph() -> None:
            end_line()
            if lines:
                paragraphs.append(tuple(lines))
                lines.clear()

        iterator = api.GetIterator()
        if iterator is not None:
            for word in tesserocr.iterate_level(iterator, ril.WORD):
                text = (word.GetUTF8Text(ril.WORD) or "").strip()
                if not text:
                    continue
                if word.IsAtBeginningOf(ril.PARA) or word.IsAtBeginningOf(ril.BLOCK):
                    end_paragraph()
                elif word.IsAtBeginningOf(ril.TEXTLINE):
                    end_line()
                confidence = float(word.Confidence(ril.WORD))
                confidences.append(confidence)
                if confidence >= min_confidence:
                    words.append(text)
                    kept += 1
        end_paragraph()
        api.Clear()
        mean = sum(confidences) / len(confidences) if confidences else 0.0
        return RecognisedText(tuple(paragraphs), kept, round(mean, 1))
