"""The markdown model: a source text, its line map, frontmatter, headings and image references.

Everything downstream (the index, section reads, line-range reads) works on one
:class:`Document` built by :func:`parse_document` from the *whole* text, and slices the original
source by line. Nothing is ever re-serialised, so a read returns the source byte for byte, and a
line range that starts inside a fence or frontmatter cannot turn into a heading.

Lines are numbered from 1 and end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (as in CommonMark).
The line count agrees with ``wc -l`` for a file that ends with a newline.

The structure comes from cmark-gfm (:mod:`md_vision.parser`: CommonMark plus GFM tables, rendered
as CommonMark XML with the source position of every block): one pass over a text of up to a
megabyte, pieces cut at block starts over a longer one, which read exactly as one pass
(:mod:`md_vision.pieces`), so a parse costs the memory of one piece. Past :data:`MAX_STRUCTURE`
headings and images the parse stops and :attr:`Document.structure_end` says how far it got. YAML frontmatter, which
CommonMark does not know, is found here and blanked out before parsing (line numbers kept).

**Headings** are cmark's heading nodes. The level is the node's; the line is its first source
line; ``nested`` means it sits inside a list item or a block quote. The text is taken from the
source, not from the rendering: for ``# ATX`` headings the line from the heading's column with the
opening ``#`` run and any closing ``#`` sequence removed; for setext headings the text lines with
their block-quote markers removed. Whitespace is collapsed; emphasis markers and escapes are kept
(``## Sub *emph*``). A raw ``<h2>`` in HTML is not a markdown heading.

**Images** are markdown images (``![alt](src)``, ``![alt][ref]``, ``![alt][]``, ``![ref]``; cmark
resolves the references) and ``<img>`` tags in raw HTML, inline or in HTML blocks (not inside HTML
comments, ``<script>`` or ``<style>``), in document order. Nothing in a code span or code block is
an image, and an image inside another image's alt text belongs to that alt text, as in HTML. The
target is the destination as written, with backslash escapes and entities resolved and no
percent-decoding (``file:`` or ``javascript:`` targets are kept, to be refused with a reason later).

**Where an image is placed** (``ImageRef.line``: a read inlines the image after that line, and the
index counts it in the section holding that line):

- in an HTML block: the line on which its ``<img>`` tag ends;
- in a paragraph, heading or table cell that is one line long: that line;
- in a longer paragraph or setext heading: the line on which the image's markup ends, when that
  is certain: the block's source holds exactly one ``![`` or ``<img`` per image it renders, and
  the image's markup is a one-line ``![alt](dest "title")``, ``![alt][ref]`` or ``![ref]`` (or an
  ``<img>`` tag, whose own line breaks are counted);
- otherwise the block's last line. From the first image of a block that falls back, the block's
  later images fall back too, so images always stay in document order and never come before the
  text that references them.

(cmark-gfm also reports positions for inline nodes, but they are wrong after link reference
definitions, hard line breaks and multi-line link destinations, so they are not used.)

Why one module: the line map, the frontmatter blanking, the heading text and the image references
are all read off one cmark pass and must agree on line numbers; the invariant that a read returns
the source byte for byte has its single home here.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from html import unescape
from html.parser import HTMLParser
from itertools import accumulate, count
from operator import add
from typing import Literal, overload

from md_vision.chunking import PIECE_CHARS
from md_vision.pieces import parse_pieces

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_FRONTMATTER_OPEN = re.compile(r"---[ \t]*(?:\r\n|\r|\n)")
_FRONTMATTER_CLOSE = re.compile(r"(?:---|\.\.\.)[ \t]*")

ImageSyntax = Literal["inline", "reference", "markdown", "html"]


@dataclass(frozen=True, slots=True)
class Heading:
    """A heading as the index shows it and a section read selects it."""

    level: int
    text: str  # the heading's inline source, whitespace collapsed (emphasis markers kept)
    line: int  # first source line of the heading (for setext headings, the first text line)
    occurrence: int = 1  # 2 for the second heading with the same level and text, ...
    nested: bool = False  # inside a list item or a block quote

    @property
    def label(self) -> str:
        """``## Notes``, or ``## Notes (2)`` for the second ``## Notes``: the name to read it by."""
        base = f"{'#' * self.level} {self.text}".rstrip()
        return base if self.occurrence == 1 else f"{base} ({self.occurrence})"


@dataclass(frozen=True, slots=True)
class ImageRef:
    """One image reference: ``![alt](src)``, ``![alt][ref]`` or ``<img src>``."""

    target: str  # destination as written (escapes resolved, no percent-decoding)
    line: int  # source line on which the reference ends; the image is placed after it
    alt: str = ""
    syntax: ImageSyntax = "inline"
    markup: str = ""  # the reference as it appears in the block (for messages)


@dataclass(frozen=True, slots=True)
class StructureEnd:
    """Where a parse stopped reading headings and images (the text is all there)."""

    line: int  # the last line whose headings and images were read
    # "cap": more than MAX_STRUCTURE of them; "dense block": one block (a list item holding a
    # million headings) too dense to parse in pieces (md_vision.chunking)
    reason: Literal["cap", "dense block"]


@dataclass(frozen=True, slots=True)
class Frontmatter:
    text: str  # the YAML between the fences, with its line ends
    end_line: int  # line of the closing fence


@dataclass(frozen=True)
class Document:
    text: str
    line_starts: Sequence[int]  # offset of each line's start, plus a final len(text) (an array)
    frontmatter: Frontmatter | None
    headings: tuple[Heading, ...]
    images: tuple[ImageRef, ...]
    structure_end: StructureEnd | None = None  # None: read to the end; else sections end there
    _section_ends: tuple[int, ...] = field(default=(), repr=False)
    _image_lines: tuple[int, ...] = field(default=(), repr=False, init=False)

    @property
    def line_count(self) -> int:
        return len(self.line_starts) - 1

    @property
    def char_count(self) -> int:
        return len(self.text)

    def lines(self, first: int, last: int) -> str:
        """Source text of lines ``first..last`` (1-based, inclusive), exactly as in the file."""
        first = max(first, 1)
        last = min(last, self.line_count)
        if last < first:
            return ""
        return self.text[self.line_starts[first - 1] : self.line_starts[last]]

    def char_count_of(self, first: int, last: int) -> int:
        """``len(self.lines(first, last))``, without copying the text."""
        first = max(first, 1)
        last = min(last, self.line_count)
        return self.line_starts[last] - self.line_starts[first - 1] if last >= first else 0

    def section_end(self, index: int) -> int:
        """Last line of the section opened by ``headings[index]`` (subsections included)."""
        return self._section_ends[index]

    def images_between(self, first: int, last: int) -> list[ImageRef]:
        lines = self._image_lines
        return list(self.images[bisect_left(lines, first) : bisect_right(lines, last)])

    def __post_init__(self) -> None:
        object.__setattr__(self, "_image_lines", tuple(image.line for image in self.images))


LINE_BLOCK = 1 << 20  # characters split at a time when finding line starts (bounds the temporaries)


def line_starts_of(text: str) -> array[int]:
    """Where each line starts, plus a final ``len(text)``: 8 bytes a line (an int object each
    would be 36, and 10 MB of one-character lines has 5 million)."""
    starts = array("q", [0])
    block_start = 0
    while block_start < len(text):
        block_end = min(block_start + LINE_BLOCK, len(text))
        if text[block_end - 1] == "\r":  # keep "\r\n" in one block
            block_end = min(block_end + 1, len(text))
        block = text[block_start:block_end]
        if "\r" in block:
            starts.extend(block_start + match.end() for match in _LINE_BREAK.finditer(block))
        else:  # the common case, at C speed: after each "\n", the lengths so far plus the "\n"s
            ended = block.split("\n")[:-1]
            starts.extend(map(add, accumulate(map(len, ended)), count(block_start + 1)))
        block_start = block_end
    if starts[-1] != len(text):
        starts.append(len(text))  # last line has no line break: close it
    return starts


def _find_frontmatter(text: str, line_starts: Sequence[int]) -> Frontmatter | None:
    if not _FRONTMATTER_OPEN.match(text):
        return None
    for index in range(1, len(line_starts) - 1):
        start, end = line_starts[index], line_starts[index + 1]
        line = text[start:end].rstrip("\r\n")
        if _FRONTMATTER_CLOSE.fullmatch(line):
            return Frontmatter(text=text[line_starts[1] : start], end_line=index + 1)
    return None


# --- reading cmark's XML ----------------------------------------------------------------------
#
# Every tag in the XML is the parser's own (the document's text is escaped), on a line of its own,
# indented two spaces per level below <document>. The few nodes that matter are found with
# bytes.find on their opening (far faster than a regex over all the text nodes around them) and
# read with a regex at that spot.
_HEADING = re.compile(rb'<heading sourcepos="(\d+):(\d+)-(\d+):(\d+)" level="(\d)"')
_IMAGE_NODE = re.compile(
    rb'<image(?: sourcepos="[^"]*")? destination="(?P<dest>[^"]*)" title="[^"]*"(?P<bare> /)?>'
)
_HTML_NODE = re.compile(
    rb'<html_(?P<html>block|inline)(?: sourcepos="(?P<first>\d+):[^"]*")? xml:space="preserve">(?P<raw>[^<]*)'
)
_QUOTE_TAG = re.compile(rb"<(/?)block_quote\b([^>]*)>")
# The blocks that hold inline content, and so images. Looked up only for images (backwards from
# each), which keeps the scans to the few nodes that matter.
_LEAF_TAGS = (b"<paragraph ", b"<heading ", b"<table_cell ")
_LEAF = re.compile(rb'<\w+ sourcepos="(\d+):(\d+)-(\d+):(\d+)"')
_ALT_TEXT = re.compile(
    rb'<(?:text|code)[^>]*?xml:space="preserve">(?P<text>[^<]*)<|<(?:softbreak|linebreak) />'
)
_RAW_IMG_TAG = re.compile(rb"&lt;img(?:[\s/]|&gt;)", re.IGNORECASE)
_RAW_IMG_ANYWHERE = re.compile(rb"&lt;img", re.IGNORECASE)

# In a block's source: where an image can start (every image starts like this; not everything
# that starts like this is an image).
_IMAGE_START = re.compile(r"!\[|<img(?=[\s/>])", re.IGNORECASE)
# A markdown image whose whole markup is on one line. Alt text with a backtick or "<" is not
# accepted: a code span, raw HTML or autolink there could hide a bracket.
_ESC = r"\\[^\r\n]"
_ALT_CHAR = rf"(?:[^\[\]\\`<\r\n]|{_ESC})"
_DEST_CHAR = rf"(?:[^\x00-\x20()\\\x7f]|{_ESC})"
_ONE_LINE_IMAGE = re.compile(
    rf"!\[{_ALT_CHAR}*(?:\[{_ALT_CHAR}*\]{_ALT_CHAR}*)*\]"
    r"(?:(?P<inline>\([ \t]*(?:"
    rf"(?:<(?:[^<>\\\r\n]|{_ESC})*>|(?!<)(?:{_DEST_CHAR}|\({_DEST_CHAR}*\))+)"
    rf"""(?:[ \t]+(?:"(?:[^"\\\r\n]|{_ESC})*"|'(?:[^'\\\r\n]|{_ESC})*'|\((?:[^()\\\r\n]|{_ESC})*\)))?"""
    r")?[ \t]*\))"
    rf"|\[(?:[^\[\]\\\r\n]|{_ESC})*\]"
    r"|(?![(\[]))"
)
# A block-quote marker; inside a list item the item's indent comes first, so any indent is taken.
_QUOTE_MARKER = re.compile(r"[ \t]*>[ \t]?")
# A link reference definition on one line (`[label]: dest "title"`): cmark keeps those that start
# a setext heading's paragraph inside the heading's position, but not in its content.
_REFERENCE_LINE = re.compile(
    rf" {{0,3}}\[(?P<label>(?:[^\[\]\\\r\n]|{_ESC})+)\]:[ \t]*"
    rf"(?:<(?:[^<>\\\r\n]|{_ESC})*>|(?!<)(?:{_DEST_CHAR}|\({_DEST_CHAR}*\))+)"
    rf"""(?:[ \t]+(?:"(?:[^"\\\r\n]|{_ESC})*"|'(?:[^'\\\r\n]|{_ESC})*'|\((?:[^()\\\r\n]|{_ESC})*\)))?[ \t]*"""
)


STOP_EVERY = 4096  # headings or images read between two looks at the caller's stop check
# Headings and images read from one document; past them the parse stops (Document.structure_end).
# Real documents stay far below (a 1,000-page manual: a few thousand); 10 MB of bare headings
# would be 2.5 million, 17 s of reading and 2 GB (tests/perf/bench_bombs.py).
MAX_STRUCTURE = 200_000


class ParseStopped(Exception):
    """The caller's ``stop`` check said to give up (a deadline passed, the call was cancelled)."""


def _xml_text(raw: bytes) -> str:
    return unescape(raw.decode("utf-8", "replace"))


class _ImgTags(HTMLParser):
    """Collect ``<img src>`` tags with the line on which each tag ends."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str, int, str]] = []  # src, alt, end line (0-based), raw tag

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "img":
            return
        values = {name: value or "" for name, value in attrs}
        raw = self.get_starttag_text() or ""
        line = self.getpos()[0] - 1 + raw.count("\n")
        self.found.append((values.get("src", "").strip(), values.get("alt", ""), line, raw))

    handle_startendtag = handle_starttag


def _html_images(fragment: str, first_line: int) -> list[ImageRef]:
    """``<img>`` tags in raw HTML whose first line is ``first_line`` (1-based)."""
    if "\r" in fragment:  # HTMLParser counts only "\n" as a line end
        fragment = fragment.replace("\r\n", "\n").replace("\r", "\n")
    parser = _ImgTags()
    try:
        parser.feed(fragment)
        parser.close()
    except Exception:  # HTMLParser is lenient; a pathological fragment just yields no images
        return []
    return [
        ImageRef(target=src, line=first_line + line, alt=alt, syntax="html", markup=raw)
        for src, alt, line, raw in parser.found
    ]


@dataclass(slots=True)
class _Block:
    """A paragraph, heading or table cell, as cmark placed it."""

    first: int  # first and last source line
    last: int
    column: int  # 1-based byte column where the block starts on its first line
    end_column: int | None  # on its last line (None: to the end of the line)


@dataclass(slots=True)
class _Found:
    """An image seen in a block, before its line is known."""

    target: str
    html_tag: str | None = None  # the raw tag, for <img> in inline HTML
    alt: str = ""


class _Reader:
    """Turns cmark's XML of a text into headings and image references."""

    def __init__(self, text: str, line_starts: Sequence[int], stop: Callable[[], bool] | None = None) -> None:
        self.stop = stop
        self.text = text
        self.line_starts = line_starts
        self.headings: list[Heading] = []
        self.images: list[ImageRef] = []
        self._seen: dict[tuple[int, str], int] = {}
        self._offset = 0  # lines of the source before the piece being read (md_vision.chunking)
        self._mapped: tuple[int, str, array[int] | None] | None = None  # see _line_map

    def line(self, number: int) -> str:
        """Source line ``number`` without its line break."""
        starts = self.line_starts
        return self.text[starts[number - 1] : starts[number]].rstrip("\r\n")

    def read(self, xml: bytes, offset: int = 0, budget: int | None = None) -> None:
        """Read the headings and images of ``xml``, the XML of the source from line ``offset + 1``.

        ``budget``: read no further than the heading that makes more than that many new headings
        (the caller then keeps the first of them, :meth:`keep_first`)."""
        self._offset = offset
        headings, end = self._read_headings(xml, budget)
        self._read_images(xml if end is None else xml[:end], headings)

    def _read_headings(self, xml: bytes, budget: int | None) -> tuple[dict[int, _Block], int | None]:
        """Headings, in order; returns their blocks by XML position (setext ends corrected), and
        where the heading past ``budget`` starts in the XML (None: all were read)."""
        blocks: dict[int, _Block] = {}
        quotes_seen, quote_depth = 0, 0  # <block_quote> nesting, counted up to `quotes_seen`
        for number, position in enumerate(_tags(xml, b"<heading ")):
            if number % STOP_EVERY == 0:
                self.check()
            if budget is not None and number > budget:
                return blocks, position
            node = _node_at(_HEADING, xml, position)
            block = _block(node, self._offset)
            nested = position - xml.rfind(b"\n", 0, position) - 1 > 2  # not a child of <document>
            if block.last > block.first:  # setext: its text lines may carry block-quote markers
                for tag in _QUOTE_TAG.finditer(xml, quotes_seen, position):
                    quote_depth += -1 if tag[1] else 0 if tag[2].endswith(b"/") else 1
                quotes_seen = position
            self._heading(block, int(node[5]), nested, quote_depth)
            blocks[position] = block
        return blocks, None

    def check(self) -> None:
        if self.stop is not None and self.stop():
            raise ParseStopped

    def drop_after(self, line: int) -> None:
        """Keep what a piece read within its last ``line``: the definitions it carried after it
        make no nodes, so a heading past it cannot be; an image past it is one placed on the
        line that closed its block (the next piece's first), and comes back to ``line``."""
        while self.headings and self.headings[-1].line > line:
            self.headings.pop()
        for number in range(len(self.images) - 1, -1, -1):
            image = self.images[number]
            if image.line <= line:
                break
            self.images[number] = ImageRef(image.target, line, image.alt, image.syntax, image.markup)

    def keep_first(self, limit: int) -> int:
        """Keep the headings and images on the lines before the ``limit + 1``-th of them, in
        line order; returns the last line kept."""
        lines = sorted([heading.line for heading in self.headings] + [image.line for image in self.images])
        last = lines[limit] - 1 if len(lines) > limit else lines[-1] if lines else 0
        self.headings = [heading for heading in self.headings if heading.line <= last]
        self.images = [image for image in self.images if image.line <= last]
        return last

    def _read_images(self, xml: bytes, headings: dict[int, _Block]) -> None:
        self.check()
        nodes = [_node_at(_IMAGE_NODE, xml, position) for position in _tags(xml, b"<image ")]
        raw_html = [_node_at(_HTML_NODE, xml, position) for position in _tags(xml, b"<html_")]
        if raw_html:
            nodes = sorted(nodes + raw_html, key=_start)
        if not nodes:
            return
        # Where each block that can hold images starts in the XML, in order: an image's block is
        # the last one opening before it. Found once, walked forwards with the images (a search
        # backwards from each image would rescan a long paragraph's earlier images: quadratic).
        leaves = _leaf_starts(xml, nodes[0].start(), nodes[-1].start())
        next_leaf = 0
        leaf = -1  # where the block holding the latest images starts in the XML
        block: _Block | None = None
        found: list[_Found] = []  # images of `block` so far
        inside = 0  # end of the current image's alt text: what is in there belongs to the alt
        for number, node in enumerate(nodes):
            if number % STOP_EVERY == 0:
                self.check()
            position = node.start()
            if position < inside:
                continue
            if node.re is _IMAGE_NODE:
                image = _Found(_xml_text(node["dest"]))
                if node["bare"] is None:
                    inside = _closing_image_tag(xml, node.end())
                    image.alt = "".join(
                        " " if part["text"] is None else _xml_text(part["text"])
                        for part in _ALT_TEXT.finditer(xml, node.end(), inside)
                    )
            elif node["html"] == b"block":
                if node["first"] is not None and _RAW_IMG_ANYWHERE.search(node["raw"]):
                    if found:  # keep document order
                        self._place(block, found)
                        found = []
                    # An HTML block: its lines are the source lines, so tag lines are exact.
                    first = int(node["first"]) + self._offset
                    self.images.extend(_html_images(_xml_text(node["raw"]), first))
                continue
            elif _RAW_IMG_TAG.match(node["raw"]):
                tag = _xml_text(node["raw"])
                parsed = _html_images(tag, 1)
                if not parsed:
                    continue
                image = _Found(parsed[0].target, html_tag=tag, alt=parsed[0].alt)
            else:
                continue
            while next_leaf < len(leaves) and leaves[next_leaf] < position:
                next_leaf += 1
            start = leaves[next_leaf - 1] if next_leaf else -1
            if start > leaf:  # a new block: place the previous block's images
                if found:
                    self._place(block, found)
                    found = []
                leaf = start
                block = headings.get(start) or _block(_node_at(_LEAF, xml, start), self._offset)
            found.append(image)
        if found:
            self._place(block, found)

    # --- headings -------------------------------------------------------------------------

    def _heading(self, block: _Block, level: int, nested: bool, quote_depth: int) -> None:
        line = self.line(block.first)
        start = _char_index(line, block.column)
        first_line = block.first
        if block.last == block.first:  # ATX: `## Title ##`
            body = line[start:].lstrip("#").strip(" \t")
            if body.endswith("#"):  # a closing sequence must follow a space (or be all there is)
                kept = body.rstrip("#")
                if not kept or kept[-1] in " \t":
                    body = kept
            text = " ".join(body.split())
        else:  # setext: text lines, then the underline
            block.last = self._underline(block, "=" if level == 1 else "-", quote_depth)
            parts = [line[start:]]
            for number in range(block.first + 1, block.last):
                parts.append(self._strip_quote_markers(self.line(number), quote_depth, lazy=True))
            definitions = 0
            while definitions < len(parts) - 1 and _is_reference_definition(parts[definitions]):
                definitions += 1
            first_line += definitions
            text = " ".join(" ".join(parts[definitions:]).split())
        key = (level, text)
        occurrence = self._seen[key] = self._seen.get(key, 0) + 1
        self.headings.append(Heading(level, text, first_line, occurrence, nested))

    def _underline(self, block: _Block, char: str, quote_depth: int) -> int:
        """The line of a setext heading's underline.

        cmark-gfm ends a setext heading on the line that closed it: the underline itself at the
        end of the document, otherwise the line after it. The underline is the one of the two that
        is a full (not lazy) line of ``=`` or ``-``.
        """
        last = block.last
        candidates: tuple[int, ...] = (last - 1, last, *range(block.first + 1, last - 1))
        for number in candidates:
            if number <= block.first:
                continue
            rest = self._strip_quote_markers(self.line(number), quote_depth, lazy=False)
            if rest is not None:
                rest = rest.strip(" \t")
                if rest and rest == char * len(rest):
                    return number
        return last

    @overload
    @staticmethod
    def _strip_quote_markers(line: str, depth: int, *, lazy: Literal[True]) -> str: ...

    @overload
    @staticmethod
    def _strip_quote_markers(line: str, depth: int, *, lazy: Literal[False]) -> str | None: ...

    @staticmethod
    def _strip_quote_markers(line: str, depth: int, *, lazy: bool) -> str | None:
        """``line`` without its ``depth`` block-quote markers; a lazy line may have fewer
        (without ``lazy``, such a line gives None)."""
        for _ in range(depth):
            marker = _QUOTE_MARKER.match(line)
            if marker is None:
                return line if lazy else None
            line = line[marker.end() :]
        return line

    # --- image lines ----------------------------------------------------------------------

    def _source_of(self, block: _Block) -> tuple[str, int]:
        """The block's source and the text offset where it starts."""
        starts = self.line_starts
        if block.first != block.last:
            return self.text[starts[block.first - 1] : starts[block.last]], starts[block.first - 1]
        line, byte_ends = self._line_map(block.first)
        offset = starts[block.first - 1]
        if byte_ends is None:  # ASCII: byte columns are character indices
            start, end = block.column - 1, block.end_column or len(line)
            return line[start:end], offset + start
        start = _chars_before(byte_ends, block.column - 1)
        end = _chars_before(byte_ends, block.end_column) if block.end_column else len(line)
        return line[start:end], offset + start

    def _line_map(self, number: int) -> tuple[str, array[int] | None]:
        """Line ``number`` and, unless it is ASCII, where each of its characters ends in UTF-8
        bytes. The last line asked for is kept: a table row's cells are all on one line, and
        working it out again for each cell made a long row quadratic."""
        if self._mapped is not None and self._mapped[0] == number:
            return self._mapped[1], self._mapped[2]
        line = self.line(number)
        byte_ends = None
        if not line.isascii():
            lengths = (len(char.encode("utf-8", "surrogatepass")) for char in line)
            byte_ends = array("q", accumulate(lengths))
        self._mapped = (number, line, byte_ends)
        return line, byte_ends

    def _place(self, block: _Block | None, found: list[_Found]) -> None:
        if block is None:  # cannot happen with cmark's output; keep the images anyway
            block = _Block(1, 1, 1, None)
        source, offset = self._source_of(block)
        starts = list(_IMAGE_START.finditer(source))
        matched = len(starts) == len(found) and all(
            (start.group()[0] == "!") == (image.html_tag is None)
            for start, image in zip(starts, found, strict=True)
        )
        exact = matched  # until an image's end cannot be pinned down
        for number, image in enumerate(found):
            line, markup = block.last, ""
            syntax: ImageSyntax = "markdown"
            if image.html_tag is not None:
                syntax, markup = "html", image.html_tag
            if matched:
                start = starts[number].start()
                ends_after = 0  # line breaks inside the markup
                if image.html_tag is not None:
                    ends_after = len(_LINE_BREAK.findall(image.html_tag))
                else:
                    one_line = _ONE_LINE_IMAGE.match(source, start)
                    if one_line is None:
                        exact = False
                    else:
                        syntax = "inline" if one_line["inline"] else "reference"
                        markup = one_line.group()
                if exact:
                    line = bisect_right(self.line_starts, offset + start) + ends_after
            if block.first == block.last:
                line = block.first
            self.images.append(ImageRef(image.target, line, image.alt, syntax, markup))


def _start(match: re.Match[bytes]) -> int:
    return match.start()


def _tags(xml: bytes, opening: bytes) -> Iterator[int]:
    """Where each ``opening`` starts in ``xml`` (bytes.find outruns a regex scan here)."""
    position = xml.find(opening)
    while position >= 0:
        yield position
        position = xml.find(opening, position + len(opening))


def _leaf_starts(xml: bytes, first: int, last: int) -> list[int]:
    """Where the blocks that hold inline content (:data:`_LEAF_TAGS`) open, in order: those that
    may hold an image between XML offsets ``first`` and ``last`` (the last one opening before
    ``first`` and every one up to ``last``). One pass over that stretch of the XML."""
    opening = max(xml.rfind(tag, 0, first) for tag in _LEAF_TAGS)
    starts = [opening] if opening >= 0 else []
    for tag in _LEAF_TAGS:
        starts.extend(_tags_between(xml, tag, max(first, 0), last))
    starts.sort()
    return starts


def _tags_between(xml: bytes, opening: bytes, first: int, last: int) -> Iterator[int]:
    """Where each ``opening`` starts in ``xml[first:last]``."""
    position = xml.find(opening, first, last)
    while position >= 0:
        yield position
        position = xml.find(opening, position + len(opening), last)


def _closing_image_tag(xml: bytes, position: int) -> int:
    """Where the ``</image>`` closing the image opened just before ``position`` starts."""
    depth = 1
    while True:
        close = xml.find(b"</image>", position)
        opening = xml.find(b"<image ", position, close)
        if opening < 0 or close < 0:
            if close < 0:
                return len(xml)
            depth -= 1
            if depth == 0:
                return close
            position = close + 8
        else:
            if not xml.startswith(b"/>", xml.find(b">", opening) - 1):
                depth += 1
            position = opening + 7


def _node_at(pattern: re.Pattern[bytes], xml: bytes, position: int) -> re.Match[bytes]:
    """The node that starts at ``position``, read with ``pattern``.

    Only called where the node's opening was found, and cmark writes every node the same way, so a
    miss means the parser's XML changed: say so instead of failing somewhere later.
    """
    node = pattern.match(xml, position)
    if node is None:
        raise ValueError(f"unexpected cmark XML at byte {position}: {xml[position : position + 80]!r}")
    return node


def _block(node: re.Match[bytes], offset: int) -> _Block:
    """A block from the ``sourcepos`` numbers in groups 1-4 of ``node``, lines moved by ``offset``."""
    first, column, last, end_column = int(node[1]), int(node[2]), int(node[3]), int(node[4])
    first, last = first + offset, last + offset
    if end_column == 0 and last > first:  # cmark's way of saying "to the end of the line before"
        return _Block(first, last - 1, column, None)
    return _Block(first, last, column, end_column)


def _is_reference_definition(line: str) -> bool:
    match = _REFERENCE_LINE.fullmatch(line)
    return match is not None and not match["label"].isspace()


def _chars_before(byte_ends: array[int], byte: int) -> int:
    """Characters that start before UTF-8 byte offset ``byte`` of a line whose characters end at
    ``byte_ends`` (one cut in two counts, as a decoder's replacement character would)."""
    if byte <= 0:
        return 0
    return min(bisect_left(byte_ends, byte) + 1, len(byte_ends))


def _char_index(line: str, column: int) -> int:
    """Index in ``line`` of 1-based byte ``column`` (container markers before it are ASCII)."""
    prefix = line[: column - 1]
    if prefix.isascii():
        return column - 1
    return len(line.encode("utf-8", "surrogatepass")[: column - 1].decode("utf-8", "replace"))


def parse_document(
    text: str,
    stop: Callable[[], bool] | None = None,
    *,
    max_structure: int = MAX_STRUCTURE,
    piece_chars: int = PIECE_CHARS,
) -> Document:
    """Parse ``text`` once into a :class:`Document` (pure; no I/O).

    A text longer than ``piece_chars`` is parsed a piece at a time (:mod:`md_vision.chunking`), so
    its memory is that of one piece; one block too dense to fit a piece stops the parse there
    (:attr:`Document.structure_end` says so too). ``max_structure``: the headings and images read; past that
    count the parse stops, and :attr:`Document.structure_end` says through which line the
    structure is known (the text is all there).

    ``stop``: asked before each piece and then every :data:`STOP_EVERY` headings or images; when
    it answers True the parse gives up with :class:`ParseStopped` (a deadline, a cancelled call).
    cmark itself runs a piece to its end (about 0.4 s per MB of headings)."""
    line_starts = line_starts_of(text)
    frontmatter = _find_frontmatter(text, line_starts)
    masked = text
    hidden = 0  # lines of frontmatter hidden from cmark
    if frontmatter is not None:
        # Keep the line numbering but hide the fences from cmark (`---` is a rule or a setext
        # underline to it).
        hidden = frontmatter.end_line
        masked = "\n" * hidden + text[line_starts[hidden] :]
    reader = _Reader(text, line_starts, stop)
    line_count = len(line_starts) - 1
    structure_end = _read_pieces(reader, masked, line_starts, hidden, max_structure, piece_chars)
    images = reader.images
    for number in range(1, len(images)):  # guard the invariant that `images_between` bisects on
        if images[number].line < images[number - 1].line:
            previous = images[number - 1].line
            image = images[number]
            images[number] = ImageRef(image.target, previous, image.alt, image.syntax, image.markup)
    return Document(
        text=text,
        line_starts=line_starts,
        frontmatter=frontmatter,
        headings=tuple(reader.headings),
        images=tuple(images),
        structure_end=structure_end,
        _section_ends=_section_ends(
            reader.headings, line_count if structure_end is None else structure_end.line
        ),
    )


def _read_pieces(
    reader: _Reader,
    masked: str,
    line_starts: Sequence[int],
    hidden: int,
    max_structure: int,
    piece_chars: int,
) -> StructureEnd | None:
    """Feed ``masked`` (the text, its first ``hidden`` lines blanked) to ``reader`` piece by piece;
    where it stopped before the end, if it did."""
    for piece in parse_pieces(masked, line_starts, hidden, piece_chars, reader.check):
        reader.read(piece.xml, piece.offset, max_structure - len(reader.headings) - len(reader.images))
        reader.drop_after(piece.last)  # nothing comes from the definitions a piece carries
        if len(reader.headings) + len(reader.images) > max_structure:
            return StructureEnd(reader.keep_first(max_structure), "cap")
        if piece.stopped:
            return StructureEnd(piece.last, "dense block")
    return None


def _section_ends(headings: list[Heading], line_count: int) -> tuple[int, ...]:
    """For each heading, the line before the next heading of the same or a higher level."""
    ends = [line_count] * len(headings)
    open_sections: list[int] = []  # indices of headings whose section is still open
    for index, heading in enumerate(headings):
        while open_sections and headings[open_sections[-1]].level >= heading.level:
            ends[open_sections.pop()] = heading.line - 1
        open_sections.append(index)
    return tuple(ends)
