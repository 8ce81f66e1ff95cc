"""What a converter hands back for each page; the markdown assembly reads only these records."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from docab_benchmark.mmlongbench.corpus.ocr import OcrSettings
from docab_benchmark.mmlongbench.corpus.textcheck import TextCheck

TextSource = Literal["pdf", "ocr", "pdf+ocr"]


@dataclass(frozen=True)
class GapCandidate:
    """A place in a line where the glyphs of a run of letters stand apart like two words.

    A space may belong before ``text[offset]``: the glyphs there stand ``gap`` ems apart, clearly
    more than the run's other glyphs (``wordspace.split_gap``). Whether the space is put back is
    decided for the whole document, from its vocabulary (``wordspace.restore_word_spaces``).
    """

    offset: int
    gap: float


@dataclass(frozen=True)
class TextLine:
    """One line of page text in reading order.

    ``size`` is the font size in points (0 when unknown) and ``bold`` the weight of the line's
    first character; ``top`` and ``height`` place the line on the page (PDF points, ``top``
    measured downwards from the top edge), so the assembly can see paragraph gaps and column
    jumps. A converter that recognises headings itself sets ``heading`` (1 = most important);
    the assembly then uses it instead of guessing from font sizes. ``gaps`` are the places where
    PDFium may have dropped a word space (``wordspace.restore_word_spaces`` decides).
    """

    text: str
    size: float = 0.0
    bold: bool = False
    top: float = 0.0
    height: float = 0.0
    heading: int | None = None
    gaps: tuple[GapCandidate, ...] = ()


@dataclass(frozen=True)
class Figure:
    """An embedded image saved as a file (``path`` relative to the document folder)."""

    path: str
    width: int
    height: int
    sha256: str


@dataclass(frozen=True)
class OcrRecord:
    """Text recognised on a page: the engine, why the page was OCR'd, and what it found.

    ``reason`` is ``always``, ``garbled``, ``sparse`` or ``empty`` (see ``textcheck``);
    ``confidence`` is the mean word confidence (0-100) over every word Tesseract saw (with two passes:
    the first pass's and the words the second added), ``words`` the number kept (words under the
    minimum confidence are dropped).
    """

    engine: str
    version: str
    languages: str
    dpi: float
    reason: str
    confidence: float
    words: int
    paragraphs: tuple[tuple[str, ...], ...]
    method: str = ""  # how the engine read the page, e.g. Tesseract's thresholding passes "otsu+sauvola"


@dataclass(frozen=True)
class PageContent:
    """One converted page. ``image`` is the rendered page, relative to the document folder.

    ``lines`` is the PDF text kept for the page; ``text_source`` says where the page's text came
    from (``pdf``; ``ocr`` when the PDF had none or it was garbled and replaced; ``pdf+ocr`` when a
    sparse PDF text is kept and OCR text follows it). ``text_check`` is the verdict on the PDF
    text (None when not checked). ``spaces_restored`` lists the words where a word space PDFium
    dropped was put back, as written after (``off but``; see ``wordspace``).
    """

    number: int
    lines: tuple[TextLine, ...]
    image: str | None
    image_size: tuple[int, int] = (0, 0)
    dpi: float = 0.0
    figures: tuple[Figure, ...] = ()
    error: str | None = None
    text_source: TextSource = "pdf"
    text_check: TextCheck | None = None
    ocr: OcrRecord | None = None
    spaces_restored: tuple[str, ...] = ()


@dataclass(frozen=True)
class DocumentInfo:
    """What a converter learns from opening a PDF."""

    page_count: int
    title: str = ""


class ConversionError(Exception):
    """A PDF that cannot be converted (damaged, encrypted, unreadable); the message is fit to show."""


@runtime_checkable
class Converter(Protocol):
    """A PDF converter. Instances must be picklable: they are sent to worker processes.

    ``open`` reads a PDF's page count and title; ``convert_pages`` converts pages ``first`` to
    ``last`` (1-based, inclusive), writing page images to ``out_dir/pages/page-NNNN.png`` and
    figures under ``out_dir/figures/``, and returns their records. Both raise ``ConversionError``.
    ``version`` must change whenever the output for the same PDF would. ``preflight`` runs once in
    the calling process before any page is converted and returns warnings to show the user (for
    example: OCR is unavailable, so the PDF text is kept).
    """

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    def settings(self) -> dict[str, object]: ...

    def open(self, pdf: Path) -> DocumentInfo: ...

    def convert_pages(self, pdf: Path, first: int, last: int, out_dir: Path) -> list[PageContent]: ...

    def preflight(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class RenderSettings:
    """Output settings shared by converters: page image resolution, figures, pixel cap, OCR.

    ``word_spaces``: put back word spaces PDFium drops where glyph positions and the document's
    vocabulary agree (``wordspace``).
    """

    dpi: float = 144.0
    figures: bool = True
    max_page_pixels: int = 40_000_000
    png_level: int = 1
    png_codec: str = ""  # "isal" or "zlib"; empty: isal when installed
    ocr: OcrSettings = field(default_factory=OcrSettings)
    word_spaces: bool = True
    extra: dict[str, object] = field(default_factory=dict)
