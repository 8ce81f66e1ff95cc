"""The markdown model: a source text, its line map, frontmatter, headings and image references.

Everything downstream (the index, section reads, line-range reads) works on one
:class:`Document` built by :func:`parse_document` from the *whole* text, and slices the original
source by line. Nothing is ever re-serialised, so a read returns the source byte for byte, and a
line range that starts inside a fence or frontmatter cannot turn into a heading.

Lines are numbered from 1 and end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (as in markdown-it).
The line count agrees with ``wc -l`` for a file that ends with a newline.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from html.parser import HTMLParser
from itertools import accumulate
from typing import Literal

from md_vision.parser import structure_parser

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_FRONTMATTER_OPEN = re.compile(r"---[ \t]*(?:\r\n|\r|\n)")
_FRONTMATTER_CLOSE = re.compile(r"(?:---|\.\.\.)[ \t]*")
_MAY_HOLD_IMAGE = re.compile(r"!\[|<img", re.IGNORECASE)
_SPACES = re.compile(r"\s+")

ImageSyntax = Literal["inline", "reference", "html"]


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
class Frontmatter:
    text: str  # the YAML between the fences, with its line ends
    end_line: int  # line of the closing fence


@dataclass(frozen=True)
class Document:
    text: str
    line_starts: tuple[int, ...]  # offset of each line's start, plus a final len(text)
    frontmatter: Frontmatter | None
    headings: tuple[Heading, ...]
    images: tuple[ImageRef, ...]
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

    def section_end(self, index: int) -> int:
        """Last line of the section opened by ``headings[index]`` (subsections included)."""
        return self._section_ends[index]

    def images_between(self, first: int, last: int) -> list[ImageRef]:
        lines = self._image_lines
        return list(self.images[bisect_left(lines, first) : bisect_right(lines, last)])

    def __post_init__(self) -> None:
        object.__setattr__(self, "_image_lines", tuple(image.line for image in self.images))


def line_starts_of(text: str) -> tuple[int, ...]:
    if "\r" in text:
        starts = [0, *(match.end() for match in _LINE_BREAK.finditer(text))]
    else:  # the common case, at C speed: each line's length plus its "\n"
        starts = [0, *accumulate(len(line) + 1 for line in text.split("\n"))]
        starts.pop()  # the piece after the last "\n" has no line break of its own
        starts.append(len(text))
        if starts[-1] == starts[-2]:
            starts.pop()
    if starts[-1] != len(text):
        starts.append(len(text))  # last line has no line break: close it
    return tuple(starts)


def _find_frontmatter(text: str, line_starts: tuple[int, ...]) -> Frontmatter | None:
    if not _FRONTMATTER_OPEN.match(text):
        return None
    for index in range(1, len(line_starts) - 1):
        start, end = line_starts[index], line_starts[index + 1]
        line = text[start:end].rstrip("\r\n")
        if _FRONTMATTER_CLOSE.fullmatch(line):
            return Frontmatter(text=text[line_starts[1] : start], end_line=index + 1)
    return None


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
    parser = _ImgTags()
    try:
        parser.feed(fragment)
        parser.close()
    except Exception:  # HTMLParser is lenient; a pathological fragment just yields no images
        return []
    return [
        ImageRef(target=src, line=first_line + line + 1, alt=alt, syntax="html", markup=raw)
        for src, alt, line, raw in parser.found
    ]


def _inline_images(content: str, first_line: int, env: dict) -> list[ImageRef]:
    """Images in one inline block whose content starts on 0-based line ``first_line``."""
    md = structure_parser()
    children = md.inline.parse(content, md, env, [])
    found: list[ImageRef] = []
    for token in children:
        span = token.meta
        if not span or "end" not in span:
            continue
        end_line = first_line + content.count("\n", 0, span["end"]) + 1
        markup = content[span["start"] : span["end"]]
        if token.type == "image":
            syntax: ImageSyntax = "inline" if markup.rstrip().endswith(")") else "reference"
            found.append(
                ImageRef(
                    target=str(token.attrs.get("src", "")),
                    line=end_line,
                    alt=token.content,
                    syntax=syntax,
                    markup=markup,
                )
            )
        elif token.type == "html_inline" and token.content[:4].lower() == "<img":
            for image in _html_images(token.content, 0):
                found.append(
                    ImageRef(target=image.target, line=end_line, alt=image.alt, syntax="html", markup=markup)
                )
    return found


def _heading_text(raw: str) -> str:
    return _SPACES.sub(" ", raw).strip()


def parse_document(text: str) -> Document:
    """Parse ``text`` once into a :class:`Document` (pure; no I/O)."""
    line_starts = line_starts_of(text)
    frontmatter = _find_frontmatter(text, line_starts)
    masked = text
    if frontmatter is not None:
        # Keep the line numbering but hide the fences from markdown-it (`---` is a rule or a
        # setext underline to it).
        masked = "\n" * frontmatter.end_line + text[line_starts[frontmatter.end_line] :]
    md = structure_parser()
    env: dict = {}
    tokens = md.parse(masked, env)

    headings: list[Heading] = []
    images: list[ImageRef] = []
    seen: dict[tuple[int, str], int] = {}
    pending_level = 0
    for token in tokens:
        kind = token.type
        if kind == "heading_open":
            pending_level = int(token.tag[1])
            continue
        if kind == "inline":
            content = token.content
            first_line = token.map[0] if token.map else 0
            if pending_level:
                heading_text = _heading_text(content)
                key = (pending_level, heading_text)
                seen[key] = seen.get(key, 0) + 1
                headings.append(
                    Heading(
                        level=pending_level,
                        text=heading_text,
                        line=first_line + 1,
                        occurrence=seen[key],
                        nested=token.level > 1,
                    )
                )
                pending_level = 0
            if _MAY_HOLD_IMAGE.search(content):
                images.extend(_inline_images(content, first_line, env))
        elif kind == "html_block" and token.map and "<img" in token.content.lower():
            images.extend(_html_images(token.content, token.map[0]))
    images.sort(key=lambda image: image.line)  # stable: keeps the order within a line
    line_count = len(line_starts) - 1
    return Document(
        text=text,
        line_starts=line_starts,
        frontmatter=frontmatter,
        headings=tuple(headings),
        images=tuple(images),
        _section_ends=_section_ends(headings, line_count),
    )


def _section_ends(headings: list[Heading], line_count: int) -> tuple[int, ...]:
    """For each heading, the line before the next heading of the same or a higher level."""
    ends = [line_count] * len(headings)
    open_sections: list[int] = []  # indices of headings whose section is still open
    for index, heading in enumerate(headings):
        while open_sections and headings[open_sections[-1]].level >= heading.level:
            ends[open_sections.pop()] = heading.line - 1
        open_sections.append(index)
    return tuple(ends)
