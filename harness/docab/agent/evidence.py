"""Which pages of the document the agent was actually shown, and how much of each, for evidence recall.

The converted corpus writes one ``## Page N`` heading per page in ``document.md`` and page images
as ``pages/page-NNNN.png`` (docs/architecture.md, "Converted corpus"), and headings found inside a
page are level 3 or deeper, so ``## Page N`` spans its whole page.

**What counts as reading a page.** A page's *text* is the characters of its lines other than
whitespace, the ``## Page N`` heading, markdown and HTML image references, a heading's ``#``
marker, and the converter's own notes (``_No text layer on this page..._``, ``_OCR text (...)_``,
``_Conversion note: ..._``) (:func:`text_chars`). A page counts as read (``pages_read``) when read
calls (not search results) showed

- at least :data:`READ_SHARE` (half) of its text characters were shown, and it has at least
  :data:`~docab.log.records.LITTLE_TEXT_CHARS` of them, or
- its page image (``pages/page-NNNN.png``) was shown as an image.

Its heading, an image reference, a converter's note or one stray line of a long page is not
reading it, and a page with no or little text (a scanned page, a title slide) can be read only
through its page image. The
graded measure is kept too: :class:`~docab.log.records.PageShare` records, per page the agent was
shown anything of, the share of its text shown and whether its image was.

**What was shown**, tracked per line of ``document.md`` (the most of that line any result showed):

- ``read_file`` of ``document.md``: the numbered lines it returned;
- ``grep`` over ``document.md``: the matching and context lines it printed. These count only
  for *seen* (``pages_seen``, ``PageShare.seen_share``), never for *read*: a page counts as read
  only when a read call opened it (issue 24: 41 % of the pages counted as read in an audit had
  only ever been shown by ``grep``);
- an md-vision read: the lines its ``_meta["io.github.docab/md-vision"]`` says it returned
  (``first_line`` and the ``source`` blocks that survived the budget);
- any other tool's text: each shown line that occurs exactly once in ``document.md`` (and is long
  enough to be told apart) is located and counted;
- an image that ``read_file`` returned for a page image, or that follows a text naming a page image
  (md-vision's ``Image: .../pages/page-0003.png`` label), shows that page's image.

Only what the model was shown counts: the tracker looks at results after the output budget cut
them, without the budget's own closing notice, and after a text-only model's images were replaced
by notes. Indexes and file listings show no document lines and count for nothing.

Pure: the tracker is fed calls and results and does no I/O (``page_spans`` parses ``meta.json``
text the caller read).
"""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from docab.agent.document_lines import LINE_CUT_MARK, MD_VISION_META, NUMBERED_LINE
from docab.log.records import READ_SHARE, PageShare
from docab.messages import Block, Image, Text, ToolCall, ToolResult
from docab.protocol import DOCUMENT_FILE, PAGE_HEADING

PAGE_IMAGE = re.compile(r"(?:^|[/\\])page-0*(\d+)\.(?:png|jpe?g|gif|webp)\b", re.IGNORECASE)
MIN_FINGERPRINT_CHARS = 8  # shorter lines ("---", "1", "Total") are too common to locate a read
_IMAGE_REFERENCE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<img\b[^>]*>", re.IGNORECASE)
# The converter's own notes on a page (docab_benchmark.mmlongbench.corpus.markdown): what it did,
# not what the page says, so they are not page text.
_CONVERTER_NOTE = re.compile(r"^_(?:OCR text|No text layer|Conversion note)\b.*_$")
_HEADING_MARKER = re.compile(r"^\s{0,3}#{1,6}(?=\s|$)")

__all__ = ["READ_SHARE", "PageMap", "PageShare", "ReadTracker", "page_spans", "text_chars"]


def text_chars(line: str) -> int:
    """The characters of a document line that count as page text (see the module docstring)."""
    if PAGE_HEADING.match(line.strip()) or _CONVERTER_NOTE.match(line.strip()):
        return 0
    line = _HEADING_MARKER.sub("", _IMAGE_REFERENCE.sub("", line), count=1)
    return sum(len(part) for part in line.split())


@dataclass(frozen=True)
class PageMap:
    """Where each page lies in ``document.md`` and how much text each line and page holds."""

    pages: tuple[int, ...]  # page numbers, in document order
    starts: tuple[int, ...]  # their first lines (1-based)
    line_count: int
    line_text: tuple[int, ...] = field(default=(), compare=False, repr=False)  # text_chars per line
    page_text: dict[int, int] = field(default_factory=dict, compare=False, repr=False)
    unique_lines: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_markdown(cls, text: str, spans: Sequence[tuple[int, int]] | None = None) -> PageMap:
        """From ``document.md``; ``spans`` (page, first line) from the corpus' ``meta.json`` when
        available, else found from the ``## Page N`` headings (the same thing, by the contract)."""
        lines = text.splitlines()
        pages: list[int] = []
        starts: list[int] = []
        if spans:
            for page, first in sorted(spans, key=lambda s: s[1]):
                pages.append(page)
                starts.append(first)
        else:
            for number, line in enumerate(lines, 1):
                match = PAGE_HEADING.match(line)
                if match:
                    pages.append(int(match.group(1)))
                    starts.append(number)
        line_text = tuple(text_chars(line) for line in lines)
        page_text: dict[int, int] = dict.fromkeys(pages, 0)
        for index, (page, first) in enumerate(zip(pages, starts, strict=True)):
            end = starts[index + 1] - 1 if index + 1 < len(starts) else len(lines)
            page_text[page] += sum(line_text[first - 1 : end])
        counts = Counter(_fingerprint(line) for line in lines)
        unique = {
            key: number
            for number, line in enumerate(lines, 1)
            if (key := _fingerprint(line)) and counts[key] == 1
        }
        return cls(tuple(pages), tuple(starts), len(lines), line_text, page_text, unique)

    def page_of_line(self, line: int) -> int | None:
        index = bisect.bisect_right(self.starts, line) - 1
        return self.pages[index] if index >= 0 and 1 <= line <= self.line_count else None

    def pages_of_lines(self, lines: set[int] | list[int]) -> set[int]:
        return {page for line in lines if (page := self.page_of_line(line)) is not None}

    def text_of_line(self, line: int) -> int:
        return self.line_text[line - 1] if 1 <= line <= len(self.line_text) else 0

    def locate(self, line: str) -> int | None:
        """The line number of a line that occurs exactly once in the document, else None."""
        key = _fingerprint(line)
        return self.unique_lines.get(key) if key else None


def page_spans(meta_text: str) -> list[tuple[int, int]] | None:
    """(page, first line) pairs from the text of a corpus ``meta.json`` (``pages[].page``,
    ``pages[].lines``), or None when it holds none or is not such a file."""
    try:
        meta = json.loads(meta_text)
        spans = [(int(p["page"]), int(p["lines"][0])) for p in meta["pages"]]
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    return spans or None


def _fingerprint(line: str) -> str:
    key = " ".join(line.split())
    return key if len(key) >= MIN_FINGERPRINT_CHARS else ""


@dataclass
class ReadTracker:
    """Accumulates what one sample's agent was shown of its document."""

    page_map: PageMap
    workspace_root: str = ""
    document_file: str = DOCUMENT_FILE
    shown: dict[int, int] = field(default_factory=dict)  # line -> most text characters shown of it
    opened: dict[int, int] = field(default_factory=dict)  # the same, by read calls only (no search)
    page_images: set[int] = field(default_factory=set)  # pages whose page image was shown
    sections: list[str] = field(default_factory=list)

    def observe(self, call: ToolCall, result: ToolResult) -> None:
        if result.is_error:
            return
        # A truncated result ends with the budget's notice (docab.agent.budget): not the tool's output.
        blocks = result.blocks[:-1] if result.truncated else result.blocks
        if call.name == "read_file":
            self._observe_file_read(call.arguments, result.meta, blocks)
        elif call.name == "grep":
            self._observe_search(blocks)
        elif call.name != "list_files":
            self._observe_other(call.arguments, result.meta, blocks)

    # -- what was shown -----------------------------------------------------------------------

    def _show(self, line: int, text: str, *, search: bool = False) -> None:
        """Line ``line`` of the document was shown as ``text`` (all of it, or a leading part), by a
        search result (``search``) or a read call."""
        full = self.page_map.text_of_line(line)
        if full == 0:
            return
        if text.endswith(LINE_CUT_MARK):
            text = text[: -len(LINE_CUT_MARK)]
        chars = min(full, text_chars(text))
        if chars > self.shown.get(line, 0):
            self.shown[line] = chars
        if not search and chars > self.opened.get(line, 0):
            self.opened[line] = chars

    def _relative(self, raw: Any) -> str:
        path = str(raw or "").replace("\\", "/")
        root = self.workspace_root.replace("\\", "/").rstrip("/")
        if root and path.startswith(root + "/"):
            path = path[len(root) + 1 :]
        while path.startswith("./"):
            path = path[2:]
        return path

    def _observe_file_read(
        self, arguments: dict[str, Any], meta: dict[str, Any], blocks: Sequence[Block]
    ) -> None:
        path = self._relative(arguments.get("path"))
        if any(isinstance(b, Image) for b in blocks):
            match = PAGE_IMAGE.search(path)
            if match:
                self.page_images.add(int(match.group(1)))
            return
        if path != self.document_file:
            return
        numbers: list[int] = []
        for block in blocks:
            if isinstance(block, Text):
                for line in block.text.splitlines():
                    numbered = NUMBERED_LINE.match(line)
                    if numbered:
                        numbers.append(int(numbered.group(1)))
                        self._show(numbers[-1], numbered.group(2))
        if numbers:
            self._add_section(f"{self.document_file}:{min(numbers)}-{max(numbers)}")

    def _observe_search(self, blocks: Sequence[Block]) -> None:
        """grep -n output: ``path:N:text`` for matches, ``path-N-text`` for context lines."""
        for block in blocks:
            if not isinstance(block, Text):
                continue
            for line in block.text.splitlines():
                for mark in (":", "-"):
                    prefix = self.document_file + mark
                    if not line.startswith(prefix):
                        continue
                    number, sep, text = line[len(prefix) :].partition(mark)
                    if sep and number.isdigit():
                        self._show(int(number), text, search=True)
                    break

    def _observe_md_vision(self, meta: dict[str, Any], blocks: Sequence[Block]) -> bool:
        """Lines from md-vision's account of what it read; False when it gave none usable."""
        info = meta.get(MD_VISION_META) if isinstance(meta, dict) else None
        if not isinstance(info, dict):
            return False
        source, first, roles = info.get("source"), info.get("first_line"), info.get("roles")
        if not isinstance(source, str) or not isinstance(first, int) or not isinstance(roles, list):
            return False
        if not self._relative(source).endswith(self.document_file):
            return True  # a read of another file: nothing of the document was shown
        # Blocks keep their positions through the budget (an image that did not fit becomes a note
        # in its place; a cut text block keeps its leading part), so roles still line up.
        shown = "".join(
            block.text
            for block, role in zip(blocks, roles, strict=False)
            if role == "source" and isinstance(block, Text)
        )
        for offset, line in enumerate(shown.split("\n")):
            self._show(first + offset, line)
        return True

    def _observe_other(
        self, arguments: dict[str, Any], meta: dict[str, Any], blocks: Sequence[Block]
    ) -> None:
        section = arguments.get("section")
        if isinstance(section, str) and section.strip():
            self._add_section(section.strip())
        line_range = arguments.get("line_range")
        if isinstance(line_range, list | tuple) and len(line_range) == 2:
            self._add_section(f"{self._relative(arguments.get('uri'))}:{line_range[0]}-{line_range[1]}")
        self._observe_images(blocks)
        if self._observe_md_vision(meta, blocks):
            return
        for block in blocks:
            if isinstance(block, Text):
                for line in block.text.splitlines():
                    number = self.page_map.locate(line)
                    if number is not None:
                        self._show(number, line)

    def _observe_images(self, blocks: Sequence[Block]) -> None:
        previous: Text | None = None
        for block in blocks:
            if isinstance(block, Text):
                previous = block
            elif isinstance(block, Image):
                named = block.name or (previous.text.strip() if previous is not None else "")
                match = PAGE_IMAGE.search(named)
                if match:
                    self.page_images.add(int(match.group(1)))

    def _add_section(self, name: str) -> None:
        if name not in self.sections:
            self.sections.append(name)

    # -- what it amounts to -------------------------------------------------------------------

    @property
    def page_shares(self) -> tuple[PageShare, ...]:
        """Every page the agent was shown any text or the image of: the share of its text read calls
        opened (``text_share``) and the share shown by any tool, search results included
        (``seen_share``)."""
        opened = self._chars_by_page(self.opened)
        seen = self._chars_by_page(self.shown)
        shares = []
        for page in sorted(set(seen) | self.page_images):
            total = self.page_map.page_text.get(page, 0)
            text_share = min(1.0, opened.get(page, 0) / total) if total else 0.0
            seen_share = min(1.0, seen.get(page, 0) / total) if total else 0.0
            shares.append(PageShare(page, text_share, page in self.page_images, total, seen_share))
        return tuple(shares)

    def _chars_by_page(self, lines: dict[int, int]) -> dict[int, int]:
        chars: dict[int, int] = {}
        for line, count in lines.items():
            page = self.page_map.page_of_line(line)
            if page is not None:
                chars[page] = chars.get(page, 0) + count
        return chars

    @property
    def pages_read(self) -> tuple[int, ...]:
        """The pages read calls opened: at least half their text, or their page image, shown."""
        return tuple(share.page for share in self.page_shares if share.read)

    @property
    def pages_seen(self) -> tuple[int, ...]:
        """The pages shown at least half the text or the image of, search results included."""
        return tuple(share.page for share in self.page_shares if share.seen)
