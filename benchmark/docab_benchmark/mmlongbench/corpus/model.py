"""What a converter hands back for each page; the markdown assembly reads only these records."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class TextLine:
    """One line of page text in reading order.

    ``size`` is the font size in points (0 when unknown) and ``bold`` the weight of the line's
    first character; ``top`` and ``height`` place the line on the page (PDF points, ``top``
    measured downwards from the top edge), so the assembly can see paragraph gaps and column
    jumps. A converter that recognises headings itself sets ``heading`` (1 = most important);
    the assembly then uses it instead of guessing from font sizes.
    """

    text: str
    size: float = 0.0
    bold: bool = False
    top: float = 0.0
    height: float = 0.0
    heading: int | None = None


@dataclass(frozen=True)
class Figure:
    """An embedded image saved as a file (``path`` relative to the document folder)."""

    path: str
    width: int
    height: int
    sha256: str


@dataclass(frozen=True)
class PageContent:
    """One converted page. ``image`` is the rendered page, relative to the document folder."""

    number: int
    lines: tuple[TextLine, ...]
    image: str | None
    image_size: tuple[int, int] = (0, 0)
    dpi: float = 0.0
    figures: tuple[Figure, ...] = ()
    error: str | None = None


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
    ``version`` must change whenever the output for the same PDF would.
    """

    name: str

    @property
    def version(self) -> str: ...

    def settings(self) -> dict[str, object]: ...

    def open(self, pdf: Path) -> DocumentInfo: ...

    def convert_pages(self, pdf: Path, first: int, last: int, out_dir: Path) -> list[PageContent]: ...


@dataclass(frozen=True)
class RenderSettings:
    """Output settings shared by converters: page image resolution, figures, pixel cap."""

    dpi: float = 144.0
    figures: bool = True
    max_page_pixels: int = 40_000_000
    png_level: int = 1
    png_codec: str = ""  # "isal" or "zlib"; empty: isal when installed
    extra: dict[str, object] = field(default_factory=dict)
