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

Each page is read in two passes (``TesseractEngine.passes``, ``docab convert --ocr-passes``): with
Tesseract's global Otsu threshold, then with a local Sauvola threshold, whose words are added where
the first pass read none (``merge_passes``, pure). See ``DEFAULT_PASSES`` for why and what it costs.

An engine is a picklable value sent to worker processes; the loaded Tesseract handle lives in a
per-process cache. ``identify`` runs in the parent before conversion and raises ``OcrUnavailable``
(a one-line, actionable message) when the binding or a language's data is missing: the caller then
warns once and keeps the PDF text.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Protocol, runtime_checkable

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
    """Which engine recognised the text: ``name``, ``version`` and ``method`` as recorded in meta.json."""

    name: str
    version: str
    method: str = ""  # how the engine read, e.g. Tesseract's thresholding passes "otsu+sauvola"


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


_APIS: dict[
    tuple[str, str, str], Any
] = {}  # per process: (tessdata, languages, thresholding) -> a loaded PyTessBaseAPI


def _tesserocr() -> Any:
    try:
        import tesserocr
    except ImportError as exc:  # no wheel for this platform, or the library failed to load
        raise OcrUnavailable(
            f"the tesserocr package cannot be imported ({exc}); pip install tesserocr"
        ) from None
    global _LEPTONICA_QUIET
    if not _LEPTONICA_QUIET:
        _LEPTONICA_QUIET = True
        quiet_leptonica(Path(tesserocr.__file__).parent)
    return tesserocr


_LEPTONICA_QUIET = False
L_SEVERITY_NONE: Final = 6  # Leptonica's message severities: 1 (all) ... 5 (errors only), 6 (none)


def quiet_leptonica(package: Path) -> bool:
    """Silence Leptonica's diagnostics in this process; True when it was found.

    Leptonica, the image library under Tesseract, writes lines such as ``Error in
    boxClipToRectangle: box outside rectangle`` straight to the process's stderr for conditions
    Tesseract handles itself (a few per thousand slide pages). Through ``docab convert`` they land
    in the user's terminal between progress lines and read like failures. ``setMsgSeverity`` on the
    copy of Leptonica tesserocr loaded (bundled beside its wheel, else the system's) turns them off;
    where the library is not found, the messages stay, harmlessly.
    """
    import ctypes
    import ctypes.util

    bundled = [
        *sorted((package.parent / "tesserocr.libs").glob("libleptonica*")),  # Linux wheels (auditwheel)
        *sorted((package.parent / "tesserocr.libs").glob("liblept*")),
        *sorted((package / ".dylibs").glob("libleptonica*")),  # macOS wheels (delocate)
        *sorted((package / ".dylibs").glob("liblept*")),
    ]
    system = [found for name in ("leptonica", "lept") if (found := ctypes.util.find_library(name))]
    for library in [*map(str, bundled), *system]:
        try:
            ctypes.CDLL(library).setMsgSeverity(L_SEVERITY_NONE)
        except (OSError, AttributeError):
            continue
        return True
    return False


Thresholding = Literal["otsu", "sauvola"]
"""How Tesseract turns the grey page into black and white before reading it: ``otsu``, one global
threshold (Tesseract's default), or ``sauvola``, a threshold per neighbourhood."""
THRESHOLDING_METHOD: Final[dict[Thresholding, str]] = {
    "otsu": "0",
    "sauvola": "2",
}  # Tesseract's thresholding_method
DEFAULT_PASSES: Final[tuple[Thresholding, ...]] = ("otsu", "sauvola")
"""Why two passes: one global threshold loses text on coloured boxes, shaded bands and photos (slides
are full of them), which a local threshold keeps, while the local one loses some text the global one
reads. The second pass adds only words where the first found none (``merge_passes``).
``python -m docab_benchmark.mmlongbench.corpus.ocrbench`` on 134 public slide decks turned into
pictures, on the half not used to choose (benchmark/README.md, "OCR"): token recall 0.897 -> 0.922,
numbers 0.713 -> 0.791, at about twice the CPU per OCR'd page (0.36 -> 0.74 s)."""


def parse_passes(text: str) -> tuple[Thresholding, ...]:
    """``otsu+sauvola`` as a tuple of passes; ``ValueError`` with the accepted values otherwise."""
    passes = tuple(part.strip().lower() for part in text.split("+"))
    if not passes or len(set(passes)) != len(passes) or any(p not in THRESHOLDING_METHOD for p in passes):
        raise ValueError(f"{text!r}: give otsu+sauvola (two passes, the default), otsu or sauvola")
    return passes  # type: ignore[return-value]


@dataclass(frozen=True)
class OcrWord:
    """A word Tesseract read: its text, confidence (0-100) and box in pixels (left, top, right, bottom)."""

    text: str
    confidence: float
    box: tuple[int, int, int, int]


OcrLine = tuple[OcrWord, ...]
OcrParagraph = tuple[OcrLine, ...]


Box = tuple[int, int, int, int]
"""A box in pixels: left, top, right, bottom (right and bottom exclusive, as Tesseract gives them)."""


def _overlaps(a: Box, b: Box, share: float = 0.3) -> bool:
    """Whether boxes ``a`` and ``b`` share at least ``share`` of the smaller one's area; a box of no area
    (a point or a stroke) overlaps a box it lies in."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    if width < 0 or height < 0:
        return False
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    if smaller <= 0:  # the box of no area is the same text when it lies inside the other box
        return (width, height) in ((a[2] - a[0], a[3] - a[1]), (b[2] - b[0], b[3] - b[1]))
    return width > 0 and height > 0 and width * height >= share * smaller


def _union(boxes: Iterable[Box]) -> Box:
    lefts, tops, rights, bottoms = zip(*boxes, strict=True)
    return min(lefts), min(tops), max(rights), max(bottoms)


def _row_cost(row: Box, run: Box) -> float | None:
    """How badly ``run`` (a box of new words) fits on ``row`` (a line's box), or None when it is not on
    that row: it must share most of its height with the row and lie within two line heights of its ends
    (a word gap that wide still continues a line). Lower is better: the share of the two boxes' joint
    height they do not share, plus the horizontal gap in units of that reach."""
    height = run[3] - run[1]
    shared = min(row[3], run[3]) - max(row[1], run[1])
    reach = 2 * (row[3] - row[1])
    gap = max(0, row[0] - run[2], run[0] - row[2])
    if height <= 0 or shared < 0.6 * height or gap > reach:
        return None
    joint = max(row[3], run[3]) - min(row[1], run[1])
    return (1 - shared / joint) + (gap / reach if reach else 0.0)


_CELL: Final = 64  # pixels per side of a _Grid cell: about two lines of text at 200 dpi


class _Grid:
    """Boxes by the square cells they cover, so a look-up reads the boxes near a box, not all of them."""

    def __init__(self) -> None:
        self._cells: dict[tuple[int, int], list[int]] = {}

    @staticmethod
    def _keys(box: Box, columns: bool = True) -> Iterator[tuple[int, int]]:
        xs = range(box[0] // _CELL, box[2] // _CELL + 1) if columns else range(1)
        for y in range(box[1] // _CELL, box[3] // _CELL + 1):
            for x in xs:
                yield x, y

    def add(self, box: Box, item: int, *, columns: bool = True) -> None:
        for key in self._keys(box, columns):
            items = self._cells.setdefault(key, [])
            if not items or items[-1] != item:
                items.append(item)

    def near(self, box: Box, *, columns: bool = True) -> set[int]:
        return {item for key in self._keys(box, columns) for item in self._cells.get(key, ())}


def merge_passes(first: Sequence[OcrParagraph], second: Sequence[OcrParagraph]) -> tuple[OcrParagraph, ...]:
    """The first pass's paragraphs with the second pass's words where the first read nothing (pure).

    A second-pass word that overlaps a first-pass word is the same text read again and is dropped.
    The other words of a second-pass line go in runs (words next to each other in that line): a run
    on the row of a first-pass line joins that line in left-to-right order (a number the first pass
    lost beside its label), on the row it fits best when rows overlap; the rest keep their own lines
    and paragraphs, after the first pass's, in the second pass's reading order. Words are found
    through a grid of their boxes, so a page of thousands of words merges in about linear time.
    """
    merged = [[list(line) for line in paragraph] for paragraph in first]
    rows = [line for paragraph in merged for line in paragraph if line]
    bounds = [_union(word.box for word in row) for row in rows]
    read = [word.box for row in rows for word in row]
    words_grid, rows_grid = _Grid(), _Grid()
    for index, box in enumerate(read):
        words_grid.add(box, index)
    for index, box in enumerate(bounds):
        rows_grid.add(box, index, columns=False)  # rows by height only: a run may lie beyond a row's end

    def place(run: list[OcrWord], kept: list[OcrWord]) -> None:
        if not run:
            return
        box = _union(word.box for word in run)
        costs = [
            (cost, index)
            for index in rows_grid.near(box, columns=False)
            if (cost := _row_cost(bounds[index], box)) is not None
        ]
        if not costs:
            kept.extend(run)
            return
        _, index = min(costs)
        rows[index].extend(run)
        rows[index].sort(key=lambda word: word.box[0])
        bounds[index] = _union((bounds[index], box))
        rows_grid.add(bounds[index], index, columns=False)

    extra: list[OcrParagraph] = []
    for paragraph in second:
        lines: list[OcrLine] = []
        for line in paragraph:
            kept: list[OcrWord] = []
            run: list[OcrWord] = []
            for word in line:
                if any(_overlaps(word.box, read[index]) for index in words_grid.near(word.box)):
                    place(run, kept)
                    run = []
                else:
                    run.append(word)
            place(run, kept)
            if kept:
                lines.append(tuple(kept))
        if lines:
            extra.append(tuple(lines))
    return tuple(tuple(tuple(line) for line in paragraph) for paragraph in merged) + tuple(extra)


def _set_thresholding(api: Any, thresholding: Thresholding) -> None:
    """Set a Tesseract handle's thresholding; ``OcrUnavailable`` when this Tesseract lacks it. Before
    5.0 there is no ``thresholding_method`` and Otsu is the only method, so ``otsu`` needs nothing."""
    if (
        not api.SetVariable("thresholding_method", THRESHOLDING_METHOD[thresholding])
        and thresholding != "otsu"
    ):
        raise OcrUnavailable(
            f"this Tesseract cannot use {thresholding} thresholding (it needs Tesseract 5.0 or newer); "
            "upgrade tesserocr, or read with one pass: --ocr-passes otsu"
        )


@dataclass(frozen=True)
class TesseractEngine:
    """Tesseract 5 through tesserocr, one engine per process, language set and thresholding (see the
    module docstring). ``passes`` are the thresholdings read in turn and merged (``merge_passes``)."""

    tessdata: str = ""  # empty: find_tessdata()
    passes: tuple[Thresholding, ...] = DEFAULT_PASSES

    def _folder(self, languages: str) -> Path:
        return Path(self.tessdata) if self.tessdata else find_tessdata(languages)

    def identify(self, languages: str) -> EngineInfo:
        tesserocr = _tesserocr()
        folder = self._folder(languages)
        for lang in languages.split("+"):
            if not (folder / f"{lang}.traineddata").is_file():
                raise OcrUnavailable(f"no Tesseract language data {lang}.traineddata in {folder}")
        if not self.passes or any(method not in THRESHOLDING_METHOD for method in self.passes):
            raise OcrUnavailable(
                f"unknown OCR thresholding {'+'.join(self.passes)!r}; use otsu, sauvola or both"
            )
        # an unloaded handle costs about 2 ms: checked here, a Tesseract that cannot threshold as asked
        # is one warning before conversion, not an error on every page in the workers
        probe = tesserocr.PyTessBaseAPI(path=str(folder) + os.sep, lang=languages, init=False)
        try:
            for thresholding in self.passes:
                _set_thresholding(probe, thresholding)
        finally:
            probe.End()
        version = str(tesserocr.tesseract_version()).split()[1]
        return EngineInfo(
            "tesseract", f"{version} (tesserocr {tesserocr.__version__})", "+".join(self.passes)
        )

    def _api(self, languages: str, thresholding: Thresholding) -> Any:
        folder = str(self._folder(languages))
        api = _APIS.get((folder, languages, thresholding))
        if api is None:
            tesserocr = _tesserocr()
            api = tesserocr.PyTessBaseAPI(path=folder + os.sep, lang=languages)
            try:
                _set_thresholding(api, thresholding)
            except OcrUnavailable:
                api.End()
                raise
            _APIS[(folder, languages, thresholding)] = api
        return api

    def recognise(
        self, pixels: np.ndarray, dpi: float, languages: str, min_confidence: float
    ) -> RecognisedText:
        image = np.ascontiguousarray(pixels)
        merged: tuple[OcrParagraph, ...] = ()
        confidences: list[float] = []
        for number, thresholding in enumerate(self.passes):
            paragraphs, seen = self._read(self._api(languages, thresholding), image, dpi, min_confidence)
            if number == 0:
                confidences = seen
                merged = paragraphs
            else:  # the mean covers every word the first pass saw and the words later passes added
                before = {id(word) for paragraph in merged for line in paragraph for word in line}
                merged = merge_passes(merged, paragraphs)
                confidences += [
                    word.confidence
                    for paragraph in merged
                    for line in paragraph
                    for word in line
                    if id(word) not in before
                ]
        text = tuple(
            tuple(" ".join(word.text for word in line) for line in paragraph) for paragraph in merged
        )
        words = sum(len(line) for paragraph in merged for line in paragraph)
        mean = sum(confidences) / len(confidences) if confidences else 0.0
        return RecognisedText(text, words, round(mean, 1))

    @staticmethod
    def _read(
        api: Any, image: np.ndarray, dpi: float, min_confidence: float
    ) -> tuple[tuple[OcrParagraph, ...], list[float]]:
        """One Tesseract pass: paragraphs of lines of the words kept, and every word's confidence."""
        tesserocr = _tesserocr()
        height, width = image.shape[:2]
        channels = 1 if image.ndim == 2 else image.shape[2]
        api.SetImageBytes(image.tobytes(), width, height, channels, width * channels)
        api.SetSourceResolution(round(dpi))
        api.Recognize()
        ril = tesserocr.RIL
        paragraphs: list[OcrParagraph] = []
        lines: list[OcrLine] = []
        words: list[OcrWord] = []
        confidences: list[float] = []

        def end_line() -> None:
            if words:
                lines.append(tuple(words))
                words.clear()

        def end_paragraph() -> None:
            end_line()
            if lines:
                paragraphs.append(tuple(lines))
                lines.clear()

        iterator = api.GetIterator()
        if iterator is not None:
            for word in tesserocr.iterate_level(iterator, ril.WORD):
                try:
                    text = (word.GetUTF8Text(ril.WORD) or "").strip()
                except RuntimeError:  # tesserocr raises on a word with no text
                    continue
                if not text:
                    continue
                if word.IsAtBeginningOf(ril.PARA) or word.IsAtBeginningOf(ril.BLOCK):
                    end_paragraph()
                elif word.IsAtBeginningOf(ril.TEXTLINE):
                    end_line()
                confidence = float(word.Confidence(ril.WORD))
                confidences.append(confidence)
                box = word.BoundingBox(ril.WORD)
                if confidence >= min_confidence and box is not None:
                    words.append(OcrWord(text, confidence, tuple(int(v) for v in box)))  # type: ignore[arg-type]
        end_paragraph()
        api.Clear()
        return tuple(paragraphs), confidences
