"""Which pages of the document the agent actually saw, for evidence recall.

The converted corpus writes one ``## Page N`` heading per page in ``document.md`` and page images
as ``pages/page-NNNN.png`` (docs/architecture.md, "Converted corpus"), and headings found inside a
page are level 3 or deeper, so ``## Page N`` spans its whole page. From that:

- a ``read_file`` of ``document.md`` shows numbered lines: each line number maps to its page;
- a ``read_file`` of a page image shows that page;
- an md-vision read says which lines of which file it returned
  (``_meta["io.github.docab/md-vision"]``: ``source``, ``first_line``, ``roles`` of the blocks):
  the lines of ``document.md`` actually shown (its ``source`` blocks that survived the budget)
  map to their pages;
- any other tool returns text that may quote the document: each shown line that occurs exactly
  once in ``document.md`` is located and mapped to its page;
- an image that follows a text naming a page image (``pages/page-0003.png``) counts for that page.

Only what the model was shown counts: the tracker looks at results after the output budget cut
them. Search hits (``grep``) and heading indexes are not reads and do not count.

Pure: the tracker is fed calls and results, and does no I/O (``page_spans`` reads ``meta.json``).
"""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docab.agent.messages import Image, Text, ToolCall, ToolResult

PAGE_HEADING = re.compile(r"^##\s+Page\s+(\d+)\s*$")
PAGE_IMAGE = re.compile(r"(?:^|[/\\])page-0*(\d+)\.(?:png|jpe?g|gif|webp)\b", re.IGNORECASE)
NUMBERED_LINE = re.compile(r"^\s*(\d+)\t", re.MULTILINE)
DOCUMENT_FILE = "document/document.md"
MD_VISION_META = "io.github.docab/md-vision"
MIN_FINGERPRINT_CHARS = 8  # shorter lines ("---", "1", "Total") are too common to locate a read


@dataclass(frozen=True)
class PageMap:
    """Where each page lies in ``document.md``: page numbers and their first lines (1-based)."""

    pages: tuple[int, ...]
    starts: tuple[int, ...]
    line_count: int
    unique_lines: dict[str, int] = field(compare=False, repr=False)

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
        counts = Counter(_fingerprint(line) for line in lines)
        unique = {
            key: number
            for number, line in enumerate(lines, 1)
            if (key := _fingerprint(line)) and counts[key] == 1
        }
        return cls(tuple(pages), tuple(starts), len(lines), unique)

    def page_of_line(self, line: int) -> int | None:
        index = bisect.bisect_right(self.starts, line) - 1
        return self.pages[index] if index >= 0 else None

    def pages_of_lines(self, lines: set[int] | list[int]) -> set[int]:
        return {page for line in lines if (page := self.page_of_line(line)) is not None}

    def locate(self, line: str) -> int | None:
        """The line number of a line that occurs exactly once in the document, else None."""
        key = _fingerprint(line)
        return self.unique_lines.get(key) if key else None


def page_spans(meta_path: Path) -> list[tuple[int, int]] | None:
    """(page, first line) pairs from a corpus ``meta.json`` (``pages[].page``, ``pages[].lines``),
    or None when the file is missing or holds none. Reads a file: the one impure helper here."""
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        spans = [(int(p["page"]), int(p["lines"][0])) for p in meta["pages"]]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    return spans or None


def _fingerprint(line: str) -> str:
    key = " ".join(line.split())
    return key if len(key) >= MIN_FINGERPRINT_CHARS else ""


@dataclass
class ReadTracker:
    """Accumulates the pages and sections one sample's agent read."""

    page_map: PageMap
    workspace_root: str = ""
    document_file: str = DOCUMENT_FILE
    pages: set[int] = field(default_factory=set)
    sections: list[str] = field(default_factory=list)

    def observe(self, call: ToolCall, result: ToolResult) -> None:
        if result.is_error:
            return
        if call.name == "read_file":
            self._observe_file_read(call.arguments, result)
        elif call.name not in ("grep", "list_files"):
            self._observe_other(call.arguments, result)

    def _relative(self, raw: Any) -> str:
        path = str(raw or "").replace("\\", "/")
        root = self.workspace_root.replace("\\", "/").rstrip("/")
        if root and path.startswith(root + "/"):
            path = path[len(root) + 1 :]
        while path.startswith("./"):
            path = path[2:]
        return path

    def _observe_file_read(self, arguments: dict[str, Any], result: ToolResult) -> None:
        path = self._relative(arguments.get("path"))
        if result.images:
            match = PAGE_IMAGE.search(path)
            if match:
                self.pages.add(int(match.group(1)))
            return
        if path != self.document_file:
            return
        numbers = [int(n) for n in NUMBERED_LINE.findall(result.text)]
        if numbers:
            self.pages |= self.page_map.pages_of_lines(numbers)
            self._add_section(f"{self.document_file}:{min(numbers)}-{max(numbers)}")

    def _observe_md_vision(self, result: ToolResult) -> bool:
        """Pages from md-vision's account of the lines it read; False when it gave none usable."""
        meta = result.meta.get(MD_VISION_META) if isinstance(result.meta, dict) else None
        if not isinstance(meta, dict):
            return False
        source, first, roles = meta.get("source"), meta.get("first_line"), meta.get("roles")
        if not isinstance(source, str) or not isinstance(first, int) or not isinstance(roles, list):
            return False
        if not self._relative(source).endswith(self.document_file):
            return True  # a read of another file: nothing of the document was shown
        # Blocks kept by the budget keep their order; a cut one is followed only by the budget's note.
        shown = "".join(
            block.text
            for block, role in zip(result.blocks, roles, strict=False)
            if role == "source" and isinstance(block, Text)
        )
        count = shown.count("\n") + (0 if shown.endswith("\n") or not shown else 1)
        if count:
            self.pages |= self.page_map.pages_of_lines(list(range(first, first + count)))
        return True

    def _observe_other(self, arguments: dict[str, Any], result: ToolResult) -> None:
        section = arguments.get("section")
        if isinstance(section, str) and section.strip():
            self._add_section(section.strip())
        line_range = arguments.get("line_range")
        if isinstance(line_range, list | tuple) and len(line_range) == 2:
            self._add_section(f"{self._relative(arguments.get('uri'))}:{line_range[0]}-{line_range[1]}")
        self._observe_images(result)
        if self._observe_md_vision(result):
            return
        located: list[int] = []
        for block in result.blocks:
            if isinstance(block, Text):
                for line in block.text.splitlines():
                    heading = PAGE_HEADING.match(line.strip())
                    if heading:
                        self.pages.add(int(heading.group(1)))
                    elif (number := self.page_map.locate(line)) is not None:
                        located.append(number)
        self.pages |= self.page_map.pages_of_lines(located)

    def _observe_images(self, result: ToolResult) -> None:
        previous: Text | None = None
        for block in result.blocks:
            if isinstance(block, Text):
                previous = block
            elif isinstance(block, Image):
                named = block.name or (previous.text.strip() if previous is not None else "")
                match = PAGE_IMAGE.search(named)
                if match:
                    self.pages.add(int(match.group(1)))

    def _add_section(self, name: str) -> None:
        if name not in self.sections:
            self.sections.append(name)

    @property
    def pages_read(self) -> tuple[int, ...]:
        return tuple(sorted(self.pages))
