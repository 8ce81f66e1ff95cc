"""Assemble converted pages into ``document.md`` (pure: records in, text out).

Layout (the corpus contract in docs/architecture.md)::

    # <title>

    ## Page 1

    ![Page 1](pages/page-0001.png)

    <the page's text in reading order; headings found on the page are ### or deeper>

    _OCR text (Tesseract 5.5.4, eng, 200 dpi, mean word confidence 91 %): recognised from the page image, it may contain errors._

    <text recognised on the page, when it was OCR'd>

    ![Figure 1.1](figures/page-0001-01.jpg)

    ## Page 2
    ...

``## Page N`` is the only level-2 heading and nothing above it but the title is level 1, so a
heading index lists the pages and every line maps back to its page (``meta.json`` keeps the line
spans). Text recognised by OCR follows the page's PDF text (if any was kept), opened by ``ocr_note``'s
italic line that names the engine and its confidence; it runs to the end of the page's text.
Page text cannot break that structure: a line that markdown would read as a heading, a
fence, an HTML block, a list or a quote (any of which could swallow or fake a page heading) has
its first marker escaped with a backslash, which renders as the literal character.

Headings inside a page come from font sizes: the body size is the size carrying the most
characters in the document; short lines at least ``HEADING_MIN_RATIO`` times larger become
headings, the largest size ``###``, the next ``####`` and so on down to ``######``; a short bold
line at body size standing on its own is a heading one level below the sized ones. A heading
starts with a letter or digit and its first letter is not lower-case (bullets and continuation
lines are text), and dot leaders mark a table-of-contents line, not a heading.

A heading never splits text (``continues_text``): a candidate that follows, in the same block, a
line that does not end a sentence (``• Computerized`` then ``Physician Order Entry`` in a larger
font) continues that line, and a candidate followed in the same block by a line starting in
lower case, or ending in a comma, hyphen or joining word, starts a sentence the next line goes
on with; both stay body text (a converter's own ``heading`` levels are trusted). PDF producers often size one word of a list item or sentence
differently, so font size alone cannot tell.

Titles (``choose_title``) never come from the PDF's file name, which would leak it to a reader:
the metadata title when it looks like a real title (``looks_like_title``), else the first page's
most important heading, else ``Document``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
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
    r"^(untitled.*|microsoft (word|powerpoint|excel) - .*|.*\.(docx?|pptx?|xlsx?|indd|pdf|qxd|qxp|rtf|txt|odt|tex)"
    r"|(document|presentation|book|workbook|slide|title)\s*\d*|powerpoint presentation|no title|none)$",
    re.IGNORECASE,
)
_FILE_LIKE = re.compile(r"[_/\\]|\.[A-Za-z0-9]{2,4}$")  # underscores, path separators, an extension
_TITLE_WORD = re.compile(r"[^\W\d_]{2,}")  # a run of two or more letters
_LIST_MARKER = re.compile(
    r"^[\u2022\u25cf\u25cb\u25aa\u25a0\u25e6\u2023\u2043\u27a2\u25ba\u2713\u2714\u00b7*\-\u2013]\s*\S|^[\uf000-\uf0ff]"
)
_LIST_LABEL = re.compile(r"^\(?([a-z]{1,2}|[ivx]{1,4}|\d{1,2})[.)]\s")
_SENTENCE_END: Final = (".", "!", "?", ":", ";", "…", "\u3002")
_JOINING_END = re.compile(
    r"([,\-\u2010\u2013/&+]|\b(and|or|of|the|a|an|to|in|for|with|on|by|at|from))$", re.IGNORECASE
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


NEUTRAL_TITLE: Final = "Document"


def _name_key(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())


def looks_like_title(candidate: str, source_name: str = "") -> bool:
    """Whether a PDF's metadata title reads as a real title rather than a file name or a placeholder.

    A real title has 3-200 characters, at least two words of two or more letters, no underscore,
    path separator or file extension, is not a producer's placeholder (``Untitled``,
    ``Microsoft Word - x.docx``, ``Presentation1``...) and is not the PDF's file name
    (``source_name``) written another way. Single words fail too: a metadata field holding one
    token is far more often a file or job name than a title.
    """
    title = " ".join(candidate.split()).strip(_TITLE_TRIM)
    if not 3 <= len(title) <= 200 or _JUNK_TITLE.match(title) or _FILE_LIKE.search(title):
        return False
    if len(_TITLE_WORD.findall(title)) < 2:
        return False
    stem = _name_key(Path(source_name).stem) if source_name else ""
    return not stem or _name_key(title) != stem


def choose_title(
    metadata_title: str, first_page_headings: Sequence[tuple[int, str]], source_name: str = ""
) -> str:
    """The metadata title when ``looks_like_title``, else page 1's most important heading, else ``Document``.

    Never the file name: ``source_name`` is used only to recognise a metadata title that merely
    repeats it.
    """
    if looks_like_title(metadata_title, source_name):
        return " ".join(metadata_title.split()).strip(_TITLE_TRIM)
    if first_page_headings:
        top = min(level for level, _ in first_page_headings)
        for level, text in first_page_headings:
            candidate = text.strip(_TITLE_TRIM)
            if level == top and sum(c.isalpha() for c in candidate) >= 3:
                if source_name and _name_key(candidate) == _name_key(Path(source_name).stem):
                    continue
                return candidate[:200]
    return NEUTRAL_TITLE


def ocr_note(page: PageContent) -> str:
    """The line that opens a page's OCR text in document.md, so a reader knows it was recognised."""
    ocr = page.ocr
    assert ocr is not None
    return (
        f"_OCR text ({ocr.engine} {ocr.version.split()[0]}, {ocr.languages}, {ocr.dpi:g} dpi, "
        f"mean word confidence {ocr.confidence:.0f} %): recognised from the page image, it may contain errors._"
    )


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


def _ends_sentence(text: str) -> bool:
    return text.rstrip().endswith(_SENTENCE_END)


def _open_list_item(text: str) -> bool:
    """A list item whose text has not ended: a bullet or number, no sentence end, no trailing number."""
    text = text.strip()
    if not (_LIST_MARKER.match(text) or _LIST_NUMBER.match(text)):
        return False
    return not _ends_sentence(text) and not text[-1:].isdigit()


def continues_text(previous: str | None, heading: str, following: str | None) -> bool:
    """Whether a heading candidate is part of the text around it (see the module docstring).

    ``previous`` and ``following`` are the body lines right before and after the candidate in the
    same block (None across a block break or when the neighbour is a heading itself). The
    candidate continues ``previous`` when that line ends in a comma, hyphen or joining word, or is
    a list item that has not ended; ``following`` continues the candidate when it starts in lower
    case (not a list label such as ``a)``) or the candidate ends in a comma, hyphen or joining word. A candidate that reads as a
    whole sentence (six words or more ending in a full stop) is text too.
    """
    if previous is not None and (_JOINING_END.search(previous.rstrip()) or _open_list_item(previous)):
        return True
    if _ends_sentence(heading) and not heading.rstrip().endswith(":") and len(heading.split()) >= 6:
        return True
    if following is None or _ends_sentence(heading):
        return False
    first_letter = next((c for c in following if c.isalpha()), None)
    starts_lower = (
        following[:1].isalpha()
        and first_letter is not None
        and first_letter.islower()
        and not _LIST_LABEL.match(following)  # "a) General guidelines" opens a list under the heading
    )
    return starts_lower or bool(_JOINING_END.search(heading.rstrip()))


@dataclass(frozen=True)
class _Placed:
    """A line with its block break (a paragraph gap or a column jump before it) and heading level."""

    line: TextLine
    new_block: bool
    level: int | None


def _place_lines(page: PageContent, scale: HeadingScale) -> list[_Placed]:
    placed: list[_Placed] = []
    previous: TextLine | None = None
    for line in page.lines:
        gap = line.top - previous.top if previous is not None else 0.0
        height = max(line.height, previous.height if previous is not None else 0.0, 1.0)
        new_block = previous is None or gap > _PARAGRAPH_GAP * height or gap < -1.0
        placed.append(_Placed(line, new_block, scale.level_of(line, stands_alone=new_block)))
        previous = line
    return placed


def _heading_groups(placed: list[_Placed]) -> list[tuple[int, int]]:
    """Runs ``[first, last]`` of heading lines that form one heading: same level, close, short."""
    groups: list[tuple[int, int]] = []
    index = 0
    while index < len(placed):
        level = placed[index].level
        if level is None:
            index += 1
            continue
        last, chars = index, len(placed[index].line.text)
        while last + 1 < len(placed):
            here, after = placed[last].line, placed[last + 1]
            gap = after.line.top - here.top
            height = max(after.line.height, here.height, 1.0)
            same_style = (
                after.level is None
                and placed[index].line.heading is None
                and after.line.text[:1].islower()
                and _size_key(after.line.size) == _size_key(placed[index].line.size)
                and after.line.bold == placed[index].line.bold
            )
            if (
                (after.level != level and not same_style)
                or not -1.0 <= gap <= _HEADING_LINE_GAP * height
                or last - index + 1 >= _MAX_MERGED_HEADING_LINES
                or chars + 1 + len(after.line.text) > _MAX_HEADING_CHARS
            ):
                break
            last += 1
            chars += 1 + len(after.line.text)
        groups.append((index, last))
        index = last + 1
    return groups


def _page_body(page: PageContent, scale: HeadingScale) -> tuple[list[str], list[tuple[int, str]]]:
    """The page's markdown lines and the headings found on it (level, text)."""
    placed = _place_lines(page, scale)
    heading_at: dict[int, tuple[int, int]] = {}  # first line -> (last line, level)
    groups = _heading_groups(placed)
    kept: set[int] = set()
    for first, last in groups:
        previous = placed[first - 1] if first > 0 and not placed[first].new_block else None
        following = placed[last + 1] if last + 1 < len(placed) and not placed[last + 1].new_block else None
        text = " ".join(p.line.text for p in placed[first : last + 1])
        if placed[first].line.heading is None and continues_text(
            previous.line.text if previous is not None and previous.level is None else None,
            text,
            following.line.text if following is not None and following.level is None else None,
        ):
            continue
        kept.add(first)
    for first, last in groups:
        if first in kept:
            level = placed[first].level
            assert level is not None
            heading_at[first] = (last, level)

    out: list[str] = []
    headings: list[tuple[int, str]] = []
    index = 0
    while index < len(placed):
        if index in heading_at:
            last, level = heading_at[index]
            text = _heading_text(" ".join(p.line.text for p in placed[index : last + 1]))
            if out and out[-1] != "":
                out.append("")
            out.extend([f"{'#' * level} {text}", ""])
            headings.append((level, text))
            index = last + 1
            continue
        item = placed[index]
        if item.new_block and out and out[-1] != "":
            out.append("")
        out.append(escape_line(item.line.text))
        index += 1
    while out and out[-1] == "":
        out.pop()
    return out, headings


def assemble_document(
    pages: Sequence[PageContent], *, metadata_title: str = "", source_name: str = ""
) -> AssembledDocument:
    """``document.md`` for ``pages`` (in page order) and each page's line span.

    ``source_name`` is the PDF's file name, used only to reject a metadata title that repeats it.
    """
    scale = heading_scale(pages)
    bodies = [_page_body(page, scale) for page in pages]
    title = choose_title(metadata_title, bodies[0][1] if bodies else [], source_name)
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
        ocr = page.ocr
        if ocr is not None and ocr.words:
            lines.extend([ocr_note(page), ""])
            for paragraph in ocr.paragraphs:
                lines.extend([*(escape_line(text) for text in paragraph), ""])
        elif not body and not page.error:
            found_nothing = ", and OCR found no text" if ocr is not None else ""
            lines.extend([f"_No text layer on this page{found_nothing}: see the page image._", ""])
        for index, figure in enumerate(page.figures, start=1):
            lines.extend([f"![Figure {page.number}.{index}]({figure.path})", ""])
        if page.error:
            lines.extend([f"_Conversion note: {escape_line(page.error)}_", ""])
        spans.append(PageSpan(page.number, first, len(lines) - 1))
    return AssembledDocument("\n".join(lines).rstrip("\n") + "\n", title, tuple(spans), headings)
