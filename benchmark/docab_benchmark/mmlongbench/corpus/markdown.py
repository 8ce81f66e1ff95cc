"""Assemble converted pages into ``document.md`` (pure: records in, text out).

Layout (the corpus contract in docs/architecture.md)::

    # <title>

    ## Page 1

    ![Page 1](pages/page-0001.png)

    <the page's text in reading order; headings found on the page are ### or deeper>

    ![Figure 1.1](figures/page-0001-01.jpg)

    ## Page 2
    ...

``## Page N`` is the only level-2 heading and nothing above it but the title is level 1, so a
heading index lists the pages and every line maps back to its page (``meta.json`` keeps the line
spans). Page text cannot break that structure: a line that markdown would read as a heading, a
fence, an HTML block, a list or a quote (any of which could swallow or fake a page heading) has
its first marker escaped with a backslash, which renders as the literal character.

Headings inside a page come from font sizes: the body size is the size carrying the most
characters in the document; short lines at least ``HEADING_MIN_RATIO`` times larger become
headings, the largest size ``###``, the next ``####`` and so on down to ``######``; a short bold
line at body size standing on its own is a heading one level below the sized ones. A heading
starts with a letter or digit and its first letter is not lower-case (bullets and continuation
lines are text), and dot leaders mark a table-of-contents line, not a heading.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from docab_benchmark.mmlongbench.corpus.model import PageContent, TextLine

HEADING_MIN_RATIO: Final = 1.08
FIRST_PAGE_HEADING_LEVEL: Final = 3
MAX_HEADING_LEVEL: Final = 6
_MAX_HEADING_CHARS: Final = 150
_MAX_BOLD_HEADING_CHARS: Final = 80
_MAX_HEADING_WORDS: Final = 20
_PARAGRAPH_GAP: Final = 2.5  # line heights between two lines that start a new block (PDFium joins hyphenated lines, so 2 is common inside a paragraph)
_MAX_MERGED_HEADING_LINES: Final = 3
_HEADING_LINE_GAP: Final = 1.5  # line heights: closer lines of one size continue the same heading
_TITLE_TRIM: Final = " \t_-=*~|"

_LIST_NUMBER = re.compile(r"^(\d{1,9})([.)])(\s|$)")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_BLOCK_START: Final = ("#", "<", ">", "-", "+", "*", "=", "|", "`", "~", "_")
_JUNK_TITLE = re.compile(
    r"^(untitled.*|microsoft (word|powerpoint|excel) - .*|.*\.(docx?|pptx?|xlsx?|indd|pdf|qxd|qxp|rtf|txt))$",
    re.IGNORECASE,
)


def escape_line(text: str) -> str:
    """Text that markdown reads as a plain paragraph line, whatever its first characters."""
    if not text:
        return text
    if text[0] in _BLOCK_START or text[0] == "\\":
        return "\\" + text
    if _LIST_NUMBER.match(text):
        return _LIST_NUMBER.sub(lambda m: f"{m.group(1)}\\{m.group(2)}{m.group(3)}", text, count=1)
    return text


def _heading_text(text: str) -> str:
    """Inline heading text: one line, no trailing ``#`` run (markdown would drop it as a closing sequence)."""
    text = " ".join(text.split())
    if text.endswith("#"):
        text = text[:-1] + "\\#"
    return text


def _size_key(size: float) -> float:
    return round(size * 2) / 2  # half points: the same style renders with tiny float differences


@dataclass(frozen=True)
class HeadingScale:
    """Font sizes (half points) that make headings, and their markdown levels."""

    body: float
    levels: dict[float, int]

    @property
    def bold_level(self) -> int:
        return min(FIRST_PAGE_HEADING_LEVEL + len(self.levels), MAX_HEADING_LEVEL)

    def level_of(self, line: TextLine, *, stands_alone: bool) -> int | None:
        if line.heading is not None:
            return min(FIRST_PAGE_HEADING_LEVEL + max(line.heading, 1) - 1, MAX_HEADING_LEVEL)
        text = line.text
        if len(text) > _MAX_HEADING_CHARS or len(text.split()) > _MAX_HEADING_WORDS:
            return None
        first_letter = next((c for c in text if c.isalpha()), None)
        # headings start with a capital or a number, and table-of-contents lines carry dot leaders
        if first_letter is None or first_letter.islower() or not text[0].isalnum() or "...." in text:
            return None
        level = self.levels.get(_size_key(line.size))
        if level is not None:
            return level
        if (
            line.bold
            and stands_alone
            and self.body > 0
            and _size_key(line.size) >= self.body
            and len(text) <= _MAX_BOLD_HEADING_CHARS
            and not text.endswith((".", ",", ";", ":"))
        ):
            return self.bold_level
        return None


def heading_scale(pages: Sequence[PageContent]) -> HeadingScale:
    chars: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            if line.size > 0:
                chars[_size_key(line.size)] += len(line.text)
    if not chars:
        return HeadingScale(0.0, {})
    body = max(chars, key=lambda size: (chars[size], -size))  # ties: the smaller size is body text
    larger = sorted((s for s in chars if s >= body * HEADING_MIN_RATIO), reverse=True)
    levels = {size: min(FIRST_PAGE_HEADING_LEVEL + i, MAX_HEADING_LEVEL) for i, size in enumerate(larger)}
    return HeadingScale(body, levels)


def choose_title(metadata_title: str, first_page_headings: Sequence[tuple[int, str]], fallback: str) -> str:
    """The PDF's own title when it looks like one, else the first page's most important heading, else ``fallback``."""
    title = " ".join(metadata_title.split()).strip(_TITLE_TRIM)
    if 3 <= len(title) <= 200 and sum(c.isalpha() for c in title) >= 3 and not _JUNK_TITLE.match(title):
        return title
    if first_page_headings:
        top = min(level for level, _ in first_page_headings)
        for level, text in first_page_headings:
            candidate = text.strip(_TITLE_TRIM)
            if level == top and sum(c.isalpha() for c in candidate) >= 3:
                return candidate[:200]
    return fallback


@dataclass(frozen=True)
class PageSpan:
    """Lines of ``document.md`` (1-based, inclusive) from a page's ``## Page N`` to its last line."""

    page: int
    first_line: int
    last_line: int


@dataclass(frozen=True)
class AssembledDocument:
    markdown: str
    title: str
    spans: tuple[PageSpan, ...]
    headings: int


def _page_body(page: PageContent, scale: HeadingScale) -> tuple[list[str], list[tuple[int, str]]]:
    """The page's markdown lines and the headings found on it (level, text)."""
    out: list[str] = []
    headings: list[tuple[int, str]] = []
    previous: TextLine | None = None
    open_heading: tuple[int, list[str]] | None = None  # a heading still collecting lines: level, texts

    def close_heading() -> None:
        nonlocal open_heading
        if open_heading is not None:
            level, texts = open_heading
            text = _heading_text(" ".join(texts))
            if out and out[-1] != "":
                out.append("")
            out.extend([f"{'#' * level} {text}", ""])
            headings.append((level, text))
            open_heading = None

    for line in page.lines:
        gap = line.top - previous.top if previous is not None else 0.0
        height = max(line.height, previous.height if previous is not None else 0.0, 1.0)
        new_block = previous is None or gap > _PARAGRAPH_GAP * height or gap < -1.0
        level = scale.level_of(line, stands_alone=new_block)
        if level is not None:
            if (
                open_heading is not None
                and open_heading[0] == level
                and -1.0 <= gap <= _HEADING_LINE_GAP * height
                and len(open_heading[1]) < _MAX_MERGED_HEADING_LINES
                and sum(len(t) + 1 for t in open_heading[1]) + len(line.text) <= _MAX_HEADING_CHARS
            ):
                open_heading[1].append(line.text)
            else:
                close_heading()
                open_heading = (level, [line.text])
        else:
            close_heading()
            if new_block and out and out[-1] != "":
                out.append("")
            out.append(escape_line(line.text))
        previous = line
    close_heading()
    while out and out[-1] == "":
        out.pop()
    return out, headings


def assemble_document(
    pages: Sequence[PageContent], *, metadata_title: str = "", fallback_title: str = "Document"
) -> AssembledDocument:
    """``document.md`` for ``pages`` (in page order) and each page's line span."""
    scale = heading_scale(pages)
    bodies = [_page_body(page, scale) for page in pages]
    title = choose_title(metadata_title, bodies[0][1] if bodies else [], fallback_title)
    lines: list[str] = [f"# {_heading_text(title) or 'Document'}", ""]
    spans: list[PageSpan] = []
    headings = 0
    for page, (body, found) in zip(pages, bodies, strict=True):
        first = len(lines) + 1
        lines.extend([f"## Page {page.number}", ""])
        if page.image:
            lines.extend([f"![Page {page.number}]({page.image})", ""])
        headings += len(found)
        if body:
            lines.extend([*body, ""])
        elif not page.error:
            lines.extend(["_No text layer on this page: see the page image._", ""])
        for index, figure in enumerate(page.figures, start=1):
            lines.extend([f"![Figure {page.number}.{index}]({figure.path})", ""])
        if page.error:
            lines.extend([f"_Conversion note: {escape_line(page.error)}_", ""])
        spans.append(PageSpan(page.number, first, len(lines) - 1))
    return AssembledDocument("\n".join(lines).rstrip("\n") + "\n", title, tuple(spans), headings)
