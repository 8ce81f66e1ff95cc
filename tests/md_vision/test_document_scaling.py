"""Reading cmark's XML costs time linear in the document on hostile markdown (issue 26 item 3).

Measured by operation counts, not time: every byte the reader's ``find``/``rfind`` searches of the
XML pass over is counted, and doubling a hostile document must about double the count (a scan
back over a paragraph's earlier images from each image made 4,000 images in one paragraph cost
16 times what 1,000 did).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import SupportsIndex

import pytest

from md_vision.document import _Reader, line_starts_of
from md_vision.parser import markdown_to_xml


class CountingBytes(bytes):
    """Bytes that count how many bytes their searches pass over."""

    scanned: int

    def find(  # type: ignore[override]
        self, sub: bytes, start: SupportsIndex | None = None, end: SupportsIndex | None = None
    ) -> int:
        first = 0 if start is None else int(start)
        last = len(self) if end is None else int(end)
        found = super().find(sub, first, last)
        self.scanned += max(0, (found + len(sub) if found >= 0 else last) - first)
        return found

    def rfind(  # type: ignore[override]
        self, sub: bytes, start: SupportsIndex | None = None, end: SupportsIndex | None = None
    ) -> int:
        first = 0 if start is None else int(start)
        last = len(self) if end is None else int(end)
        found = super().rfind(sub, first, last)
        self.scanned += max(0, last - (found if found >= 0 else first))
        return found


def _scanned(text: str) -> int:
    xml = CountingBytes(markdown_to_xml(text))
    xml.scanned = 0
    reader = _Reader(text, line_starts_of(text))
    reader.read(xml)
    return xml.scanned


def _images_in_one_paragraph(n: int) -> str:
    return "![](x.png)\n" * n


def _references_used(n: int) -> str:
    definitions = "".join(f"[r{i}]: x{i}.png\n" for i in range(n))
    return definitions + "\n" + "".join(f"![a][r{i}]\n" for i in range(n))


def _html_images_in_one_paragraph(n: int) -> str:
    return "text\n" + '<img src="x.png">\n' * n


def _images_in_many_paragraphs(n: int) -> str:
    return "![](x.png)\n\n" * n


def _headings(n: int) -> str:
    return "# h\n\na\n=\n\n" * n


@pytest.mark.parametrize(
    "make",
    [
        _images_in_one_paragraph,
        _references_used,
        _html_images_in_one_paragraph,
        _images_in_many_paragraphs,
        _headings,
    ],
)
def test_reading_scales_linearly(make: Callable[[int], str]) -> None:
    small, large = _scanned(make(1_000)), _scanned(make(4_000))
    assert large <= 5 * small, (small, large)  # linear: about 4 times; quadratic: 16


def test_the_images_are_all_found_and_placed() -> None:
    text = _references_used(500)
    reader = _Reader(text, line_starts_of(text))
    reader.read(markdown_to_xml(text))
    assert [image.target for image in reader.images] == [f"x{i}.png" for i in range(500)]
    assert [image.line for image in reader.images] == list(range(502, 1002))


def test_a_parse_stops_when_told_between_blocks() -> None:
    from md_vision.document import STOP_EVERY, ParseStopped, parse_document

    asked = 0

    def never() -> bool:
        nonlocal asked
        asked += 1
        return False

    text = "# h\n" * (3 * STOP_EVERY) + "![](x.png)\n" * (2 * STOP_EVERY)
    assert len(parse_document(text, never).headings) == 3 * STOP_EVERY
    # before the (one) piece, every STOP_EVERY headings, before the images, every STOP_EVERY images
    assert asked == 1 + 3 + 1 + 2
    with pytest.raises(ParseStopped):
        parse_document(text, lambda: True)
