"""The default converter: pypdfium2 (BSD/Apache PDFium) for text, page images and embedded figures.

Per page: the text in content-stream order (which is reading order for most born-digital PDFs;
layout-analysing converters can be plugged in instead), one line per text line with the font
size and weight of its first character, read through PDFium's text API; the page rendered at
144 dpi and written as lossless PNG by ``png.encode_png``; and embedded images worth showing on
their own (not tiny, not full-page backgrounds) saved as figures when that is cheap: JPEG streams
are copied as they are, other images decoded and written as PNG up to a pixel cap.

OCR (``RenderSettings.ocr``): each page's PDF text is checked (``textcheck``); in ``auto`` mode a
page with almost no text but ink on it, or with garbled text, is rendered in grey at the OCR
resolution and recognised (``ocr``). A sparse page keeps its PDF lines and gains the OCR text; a
garbled page's PDF text is replaced. ``always`` replaces every page's text with OCR; ``never``
does no OCR. When the engine is unavailable (``preflight`` says so once), the PDF text is kept.

Word spaces (``RenderSettings.word_spaces``): each line records where the glyphs of a run of
letters that could be two words (``wordspace.runs_to_measure``) stand apart like two words
(``TextLine.gaps``); whether a space is put back there is decided for the whole document from its
vocabulary (``wordspace``), when the pages are assembled.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from docab_benchmark.mmlongbench.corpus.model import (
    ConversionError,
    DocumentInfo,
    Figure,
    GapCandidate,
    OcrRecord,
    PageContent,
    RenderSettings,
    TextLine,
    TextSource,
)
from docab_benchmark.mmlongbench.corpus.ocr import EngineInfo, OcrEngine, OcrUnavailable
from docab_benchmark.mmlongbench.corpus.textcheck import check_text, ink_share, needs_ocr
from docab_benchmark.mmlongbench.corpus.wordspace import (
    LETTER_RUN,
    run_gaps,
    runs_to_measure,
    split_gap,
    usual_gaps,
    word_key,
)

REVISION: Final = "4"
"""Bump when this converter's output changes for the same PDF (it invalidates resumed corpora)."""

_LINE = re.compile(r"[^\r\n]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufeff\ufffe\uffff]")
_BOLD_WEIGHT: Final = 600
_FIGURE_MIN_PX: Final = 64
_FIGURE_MIN_AREA: Final = 0.02  # of the page; smaller images are icons and bullets
_FIGURE_MAX_AREA: Final = 0.90  # larger ones are backgrounds or scans: the page image shows them
_FIGURE_MAX_PER_PAGE: Final = 8
_FIGURE_MAX_DECODE_PX: Final = 4_000_000


def _pdfium() -> Any:
    import pypdfium2

    return pypdfium2


_ENGINE_STATUS: dict[tuple[OcrEngine, str], EngineInfo | str] = {}


def engine_status(engine: OcrEngine, languages: str) -> EngineInfo | str:
    """The engine's identity, or why it cannot run (cached per process: engines are frozen, hashable values)."""
    key = (engine, languages)
    if key not in _ENGINE_STATUS:
        try:
            _ENGINE_STATUS[key] = engine.identify(languages)
        except OcrUnavailable as exc:
            _ENGINE_STATUS[key] = str(exc)
    return _ENGINE_STATUS[key]


def _describe_open_error(exc: Exception) -> str:
    text = str(exc)
    if "password" in text.lower():
        return "encrypted: the PDF needs a password"
    if "format" in text.lower() or "file access" in text.lower():
        return f"damaged or not a PDF ({text.strip()[:160]})"
    return f"cannot open the PDF ({text.strip()[:160]})"


@dataclass(frozen=True)
class PdfiumConverter:
    """pypdfium2 conversion (see the module docstring). Picklable; holds settings only."""

    render: RenderSettings = field(default_factory=RenderSettings)
    name: str = "pypdfium2"

    @property
    def version(self) -> str:
        from pypdfium2.version import PDFIUM_INFO, PYPDFIUM_INFO

        from docab_benchmark.mmlongbench.corpus.png import codec_version

        return f"docab-{REVISION}/pypdfium2-{PYPDFIUM_INFO}/pdfium-{PDFIUM_INFO.build}/{codec_version(self._codec)}"

    @property
    def _ocr_engine(self) -> EngineInfo | None:
        """The OCR engine to use, or None (OCR off, or unavailable: then the PDF text is kept)."""
        ocr = self.render.ocr
        if ocr.mode == "never":
            return None
        status = engine_status(ocr.engine, ocr.languages)
        return status if isinstance(status, EngineInfo) else None

    def preflight(self) -> tuple[str, ...]:
        ocr = self.render.ocr
        if ocr.mode == "never":
            return ()
        status = engine_status(ocr.engine, ocr.languages)
        if isinstance(status, EngineInfo):
            return ()
        return (f"OCR is unavailable, so pages keep their PDF text: {status}",)

    @property
    def _codec(self) -> str:
        from docab_benchmark.mmlongbench.corpus.png import default_codec

        return self.render.png_codec or default_codec()

    def settings(self) -> dict[str, object]:
        r = self.render
        engine = self._ocr_engine
        return {
            "dpi": r.dpi,
            "figures": r.figures,
            "max_page_pixels": r.max_page_pixels,
            "png_level": r.png_level,
            "png_codec": self._codec,
            "word_spaces": r.word_spaces,
            "ocr": {
                "mode": r.ocr.mode,
                "languages": r.ocr.languages,
                "dpi": r.ocr.dpi,
                "min_word_confidence": r.ocr.min_word_confidence,
                # a run without the engine is redone once it is installed
                "engine": f"{engine.name} {engine.version}" if engine else "unavailable",
                "method": engine.method if engine else "",
            }
            if r.ocr.mode != "never"
            else {"mode": "never"},
        }

    def _open(self, pdf: Path) -> Any:
        pdfium = _pdfium()
        try:
            return pdfium.PdfDocument(str(pdf))
        except pdfium.PdfiumError as exc:
            raise ConversionError(_describe_open_error(exc)) from None
        except OSError as exc:
            raise ConversionError(f"cannot read the file ({exc.strerror or exc})") from None

    def open(self, pdf: Path) -> DocumentInfo:
        document = self._open(pdf)
        try:
            count = len(document)
            try:
                title = document.get_metadata_value("Title") or ""
            except Exception:  # metadata is optional; a broken info dict must not fail the PDF
                title = ""
        finally:
            document.close()
        if count < 1:
            raise ConversionError("the PDF has no pages")
        return DocumentInfo(page_count=count, title=_CONTROL.sub("", title).strip())

    def convert_pages(self, pdf: Path, first: int, last: int, out_dir: Path) -> list[PageContent]:
        document = self._open(pdf)
        loaded: list[_LoadedPage] = []
        try:
            # Two passes: every page's text first, so the word-space check measures only the runs
            # of letters the chunk's own words say could be two words run together.
            for number in range(first, last + 1):
                loaded.append(_load_page(document, number))
            measure = (
                runs_to_measure(page.text for page in loaded) if self.render.word_spaces else frozenset()
            )
            return [self._convert_page(page, out_dir, measure) for page in loaded]
        finally:
            for page in loaded:
                page.close()
            document.close()

    def _convert_page(self, loaded: _LoadedPage, out_dir: Path, measure: frozenset[str]) -> PageContent:
        pdfium = _pdfium()
        number, page = loaded.number, loaded.page
        if page is None:
            return PageContent(number, (), None, error=loaded.error)
        lines: tuple[TextLine, ...] = ()
        errors: list[str] = []
        if loaded.error:
            errors.append(loaded.error)
        try:
            lines = (
                _page_lines(page, loaded.textpage, loaded.text, measure)
                if loaded.textpage is not None
                else ()
            )
        except pdfium.PdfiumError as exc:
            errors.append(f"text: {exc}")
        check = check_text(" ".join(line.text for line in lines))
        engine = self._ocr_engine
        image, size, dpi, pixels = None, (0, 0), 0.0, None
        try:
            image, size, dpi, pixels = self._render_page(
                page,
                number,
                out_dir,
                keep_pixels=engine is not None
                and (check.verdict != "ok" or self.render.ocr.mode == "always"),
            )
        except (pdfium.PdfiumError, ValueError, MemoryError) as exc:
            errors.append(f"image: {exc}")
        figures = self._figures(page, number, out_dir) if self.render.figures else ()
        source: TextSource = "pdf"
        record: OcrRecord | None = None
        if engine is not None:
            ink = ink_share(pixels) if pixels is not None and check.verdict != "ok" else None
            reason = needs_ocr(self.render.ocr.mode, check, ink)
            if reason is not None:
                try:
                    record = self._ocr(page, engine, reason, pixels, dpi)
                except (pdfium.PdfiumError, ValueError, MemoryError, RuntimeError, OcrUnavailable) as exc:
                    errors.append(f"ocr: {exc}")  # the page keeps its PDF text
            if record is not None and record.words:
                if reason in ("always", "garbled") or not lines:
                    lines, source = (), "ocr"
                else:
                    source = "pdf+ocr"
        return PageContent(
            number, lines, image, size, dpi, figures, "; ".join(errors) or None, source, check, record
        )

    def _ocr(self, page: Any, engine: EngineInfo, reason: str, pixels: Any, rendered_dpi: float) -> OcrRecord:
        """OCR one page: the page image itself when it was rendered at the OCR resolution, else a grey render."""
        ocr = self.render.ocr
        if pixels is not None and abs(rendered_dpi - ocr.dpi) < 0.5:
            image, dpi = pixels, rendered_dpi
        else:
            width_pt, height_pt = page.get_size()
            scale = ocr.dpi / 72.0
            area = width_pt * scale * height_pt * scale
            if area > self.render.max_page_pixels:
                scale *= math.sqrt(self.render.max_page_pixels / area)
            image = page.render(scale=scale, grayscale=True, may_draw_forms=False).to_numpy()
            dpi = round(scale * 72.0, 3)
        found = ocr.engine.recognise(image, dpi, ocr.languages, ocr.min_word_confidence)
        return OcrRecord(
            engine.name,
            engine.version,
            ocr.languages,
            dpi,
            reason,
            found.confidence,
            found.words,
            found.paragraphs,
            engine.method,
        )

    def _render_page(
        self, page: Any, number: int, out_dir: Path, *, keep_pixels: bool = False
    ) -> tuple[str, tuple[int, int], float, Any]:
        """Write the page image; return its path, size, dpi and, with ``keep_pixels``, a copy of its pixels."""
        from docab_benchmark.mmlongbench.corpus.png import encode_png, lossless_grey

        width_pt, height_pt = page.get_size()
        scale = self.render.dpi / 72.0
        pixels = width_pt * scale * height_pt * scale
        if pixels > self.render.max_page_pixels:  # giant pages (posters, maps): keep memory bounded
            scale *= math.sqrt(self.render.max_page_pixels / pixels)
        # The bitmap is freed with its last reference (numpy views share its buffer: no early close).
        bitmap = page.render(scale=scale, rev_byteorder=True, may_draw_forms=False)
        rgb = bitmap.to_numpy()
        grey = lossless_grey(rgb)
        data = encode_png(grey if grey is not None else rgb, level=self.render.png_level, codec=self._codec)
        size = (bitmap.width, bitmap.height)
        relative = f"pages/page-{number:04d}.png"
        (out_dir / relative).write_bytes(data)
        pixels = None
        if keep_pixels:  # a copy: the bitmap's buffer goes with the bitmap
            pixels = grey if grey is not None else rgb.copy()
        return relative, size, round(scale * 72.0, 3), pixels

    def _figures(self, page: Any, number: int, out_dir: Path) -> tuple[Figure, ...]:
        pdfium = _pdfium()
        page_w, page_h = page.get_size()
        page_area = max(page_w * page_h, 1.0)
        figures: list[Figure] = []
        seen: set[str] = set()
        for obj in _image_objects(page):
            if len(figures) >= _FIGURE_MAX_PER_PAGE:
                break
            try:
                saved = _save_figure(obj, page_area, number, len(figures) + 1, out_dir, seen)
            except (pdfium.PdfiumError, ValueError, MemoryError, OSError):
                continue  # a figure is a bonus: the page image already shows it
            if saved is not None:
                figures.append(saved)
        return tuple(figures)


def _image_objects(page: Any, max_depth: int = 3) -> Any:
    """The page's image objects, descending into form XObjects.

    Walks the object tree with PDFium's raw calls and wraps only the images: pypdfium2's
    ``get_objects`` wraps every object before filtering, which costs milliseconds on busy pages.
    """
    pdfium = _pdfium()
    raw = pdfium.raw
    stack: list[tuple[Any, int]] = [(None, 0)]
    while stack:
        form, level = stack.pop()
        count = raw.FPDFFormObj_CountObjects(form) if form is not None else raw.FPDFPage_CountObjects(page)
        for index in range(max(count, 0)):
            obj = (
                raw.FPDFFormObj_GetObject(form, index)
                if form is not None
                else raw.FPDFPage_GetObject(page, index)
            )
            if not obj:
                continue
            kind = raw.FPDFPageObj_GetType(obj)
            if kind == raw.FPDF_PAGEOBJ_IMAGE:
                yield pdfium.PdfImage(obj, page=page, pdf=page.pdf, level=level)
            elif kind == raw.FPDF_PAGEOBJ_FORM and level < max_depth - 1:
                stack.append((obj, level + 1))


def _save_figure(
    obj: Any, page_area: float, number: int, index: int, out_dir: Path, seen: set[str]
) -> Figure | None:
    import numpy as np

    from docab_benchmark.mmlongbench.corpus.png import encode_png

    left, bottom, right, top = obj.get_bounds()
    shown = max(right - left, 0.0) * max(top - bottom, 0.0) / page_area
    if not _FIGURE_MIN_AREA <= shown <= _FIGURE_MAX_AREA:
        return None
    width, height = obj.get_px_size()
    if width < _FIGURE_MIN_PX or height < _FIGURE_MIN_PX:
        return None
    filters = obj.get_filters()
    metadata = obj.get_metadata()
    if filters == ["DCTDecode"] and metadata.bits_per_pixel in (8, 24):
        data, suffix = bytes(obj.get_data(decode_simple=False)), "jpg"  # the JPEG itself, no re-encoding
    elif width * height <= _FIGURE_MAX_DECODE_PX:
        bitmap = obj.get_bitmap(render=False)
        pixels = bitmap.to_numpy()
        if pixels.ndim == 3:  # BGR, BGRx or BGRA from PDFium
            channels = 4 if bitmap.format == _pdfium().raw.FPDFBitmap_BGRA else 3
            pixels = pixels[..., [2, 1, 0, 3][:channels]]
        data, suffix = encode_png(np.ascontiguousarray(pixels)), "png"
    else:
        return None
    digest = hashlib.sha256(data).hexdigest()
    if digest in seen:
        return None
    seen.add(digest)
    relative = f"figures/page-{number:04d}-{index:02d}.{suffix}"
    (out_dir / relative).write_bytes(data)
    return Figure(relative, int(width), int(height), digest)


@dataclass
class _LoadedPage:
    """A page of a chunk with its text page and text (``page`` None: it cannot be loaded, see ``error``)."""

    number: int
    page: Any = None
    textpage: Any = None
    text: str = ""
    error: str | None = None

    def close(self) -> None:
        if self.textpage is not None:
            self.textpage.close()
        if self.page is not None:
            self.page.close()


def _load_page(document: Any, number: int) -> _LoadedPage:
    pdfium = _pdfium()
    try:
        page = document[number - 1]
    except pdfium.PdfiumError as exc:
        return _LoadedPage(number, error=f"page {number} cannot be loaded ({exc})")
    loaded = _LoadedPage(number, page)
    try:
        loaded.textpage = page.get_textpage()
        loaded.text = loaded.textpage.get_text_range()
    except pdfium.PdfiumError as exc:
        loaded.error = f"text: {exc}"
    return loaded


def page_lines(page: Any, *, word_spaces: bool = True) -> tuple[TextLine, ...]:
    """One page's text lines, on its own (the word-space check then skips only the runs this page repeats)."""
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
        return _page_lines(page, textpage, text, runs_to_measure([text]) if word_spaces else frozenset())
    finally:
        textpage.close()


def _page_lines(page: Any, textpage: Any, text: str, measure: frozenset[str]) -> tuple[TextLine, ...]:
    """The page's text lines with the style of their first letter, and gap candidates in the ``measure`` runs."""
    raw = _pdfium().raw
    page_top = page.get_size()[1]
    box = raw.FS_RECTF()
    lines: list[TextLine] = []
    measured: list[tuple[int, str, list[_MeasuredRun]]] = []  # line index, raw line, its runs
    for match in _LINE.finditer(text):
        line = _CONTROL.sub("", match.group()).replace("\t", " ").strip()
        if not line:
            continue
        # Style comes from the first letter or digit: a leading bullet is often set in a symbol
        # font of another size and weight than the text it introduces.
        raw_line = match.group()
        offset = next(
            (i for i, c in enumerate(raw_line) if c.isalnum()), len(raw_line) - len(raw_line.lstrip())
        )
        char = raw.FPDFText_GetCharIndexFromTextIndex(textpage, match.start() + offset)
        size, bold, top, height = 0.0, False, 0.0, 0.0
        if char >= 0:
            size = float(raw.FPDFText_GetFontSize(textpage, char))
            bold = raw.FPDFText_GetFontWeight(textpage, char) >= _BOLD_WEIGHT
            if raw.FPDFText_GetLooseCharBox(textpage, char, ctypes.byref(box)):
                top, height = page_top - box.top, box.top - box.bottom
        if measure:
            runs = _measure_runs(textpage, raw_line, match.start(), measure)
            if runs:
                measured.append((len(lines), raw_line, runs))
        lines.append(TextLine(line, round(size, 2), bold, round(top, 2), round(height, 2)))
    if measured:
        usual = usual_gaps((run.letters, run.gaps) for _, _, runs in measured for run in runs)
        for index, raw_line, runs in measured:
            gaps = _gap_candidates(raw_line, runs, usual)
            if gaps:
                lines[index] = replace(lines[index], gaps=gaps)
    return tuple(lines)


@dataclass(frozen=True)
class _MeasuredRun:
    """A run of letters at ``start`` in its raw line, and the gaps (ems) between its glyphs."""

    start: int
    letters: str
    gaps: list[float]


def _measure_runs(
    textpage: Any, raw_line: str, line_start: int, measure: frozenset[str]
) -> list[_MeasuredRun]:
    """The gaps between the glyphs of each ``measure`` run of letters in the line, from their loose boxes."""
    raw = _pdfium().raw
    loose_box, unicode_of = raw.FPDFText_GetLooseCharBox, raw.FPDFText_GetUnicode
    char_index = raw.FPDFText_GetCharIndexFromTextIndex
    box = raw.FS_RECTF()
    box_ref = ctypes.byref(box)
    handle = textpage.raw  # the bare pointer: ctypes converts it faster than the wrapper
    found: list[_MeasuredRun] = []
    for run in LETTER_RUN.finditer(raw_line):
        letters = run.group()
        if word_key(letters) not in measure:
            continue
        first = char_index(handle, line_start + run.start())
        last = char_index(handle, line_start + run.end() - 1)
        # the run's letters must be consecutive characters (a hidden control character breaks it)
        if first < 0 or last - first != len(letters) - 1 or unicode_of(handle, first) != ord(letters[0]):
            continue
        boxes: list[tuple[float, float, float, float]] = []
        for index in range(first, last + 1):
            if not loose_box(handle, index, box_ref):
                break
            boxes.append((box.left, box.right, box.bottom, box.top))
        gaps = run_gaps(boxes) if len(boxes) == len(letters) else None
        if gaps:
            found.append(_MeasuredRun(run.start(), letters, gaps))
    return found


def _gap_candidates(
    raw_line: str, runs: list[_MeasuredRun], usual: dict[str, float]
) -> tuple[GapCandidate, ...]:
    """Where the glyphs of a measured run stand apart like words (``wordspace.split_gap``)."""
    found: list[GapCandidate] = []
    for run in runs:
        widest = split_gap(run.gaps, run.letters, usual)
        if widest is None:
            continue
        position = run.start + widest + 1  # in raw_line; the line's text drops control characters
        offset = len(_CONTROL.sub("", raw_line[:position]).replace("\t", " ").lstrip())
        found.append(GapCandidate(offset, round(run.gaps[widest], 4)))
    return tuple(found)
