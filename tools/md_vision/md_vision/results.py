"""What md-vision's operations return, typed: the blocks of a read (:class:`ReadResult`), an index
or a page of one (:class:`IndexResult`), and :class:`ToolFailure`, raised for every failure the
caller can act on, with a message fit to show."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from md_vision.index import (
    FileIndex,
    FileProblem,
    IndexRow,
)

TextRole = Literal["source", "label", "placeholder", "note", "data-uri"]


class ToolFailure(Exception):
    """The request cannot be served; ``str()`` says why and what to do instead."""


@dataclass(frozen=True, slots=True)
class TextBlock:
    """A text block of a read. ``role``: ``source``, the file's own text; ``data-uri``, a placeholder
    for the data URI ``original`` (see :mod:`md_vision.datauri`); ``label``, "Image: …" before an
    image; ``placeholder``, an image that could not be shown; ``note``, about the read."""

    text: str
    role: TextRole = "source"
    original: str = ""  # the elided data URI, for role "data-uri"


@dataclass(frozen=True, slots=True)
class ImageBlock:
    data: bytes
    mime_type: str
    source: str  # resolved path or URL ("" for data: URIs)
    description: str  # e.g. "2000x1500 PNG sent as 1568x1176 JPEG"

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")


Block = TextBlock | ImageBlock


@dataclass(frozen=True)
class ReadResult:
    source: str  # path or final URL
    first_line: int
    last_line: int
    heading: str | None
    blocks: tuple[Block, ...]
    notes: tuple[str, ...] = ()
    images_inlined: int = 0
    images_skipped: int = 0  # beyond max_images, left as markdown
    images_failed: int = 0  # placeholders
    next_line_range: tuple[int, int] | None = None  # the rest of the selection, when this page is not all

    @property
    def source_text(self) -> str:
        """The source shown, byte for byte: the ``source`` blocks, with the elided data URIs back in
        place of their placeholders."""
        return "".join(
            block.text if block.role == "source" else block.original
            for block in self.blocks
            if isinstance(block, TextBlock) and block.role in ("source", "data-uri")
        )


@dataclass(frozen=True)
class IndexResult:
    """An index, or one page of it. ``entries``: the files it shows; ``text``: the ``index_md`` text;
    ``next_cursor``: what to pass back for the next page (None on a whole index or the last page);
    ``rows``: for each entry, the heading rows this page shows (empty: all of them); an overview
    page shows each file's first top-level headings (as many as its text lists)."""

    entries: tuple[FileIndex | FileProblem, ...]
    notes: tuple[str, ...] = ()
    text: str = ""
    next_cursor: str | None = None
    rows: tuple[tuple[IndexRow, ...], ...] = ()

    def shown_rows(self) -> list[tuple[IndexRow, ...]]:
        """The heading rows shown of each entry, in order."""
        if self.rows:
            return list(self.rows)
        return [entry.rows if isinstance(entry, FileIndex) else () for entry in self.entries]


Progress = Callable[[float, float | None, str], None]
"""Told how far a long operation is: (done, total or None, a short message); any thread."""
