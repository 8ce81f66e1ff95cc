"""Where a tool result shows lines of a document, so the output budget can cut both arms alike.

``read_file`` shows numbered lines (``"    12\\tText"``), md-vision's reader shows the source lines
as they are (its ``_meta["io.github.docab/md-vision"]`` says the first line's number and which
blocks are source). The same document lines therefore cost each arm a different number of
characters, and a budget that counted characters would cut them at different lines (issue 24:
at a 2,000-character budget, md-vision showed more lines in 49 of 114 reads). This module locates
each document line's own characters inside the result's text blocks; :meth:`OutputBudget.apply
<docab.agent.budget.OutputBudget.apply>` then charges those characters, not the tool's framing
around them, and cuts at the same line whichever tool showed it.

Pure: it reads a call and its result, nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from docab.messages import Text, ToolCall, ToolResult

NUMBERED_LINE = re.compile(r"^\s*(\d+)\t(.*)$")
MD_VISION_META = "io.github.docab/md-vision"
LINE_CUT_MARK = " …[line cut]"  # what read_file and grep append to a line they shortened


@dataclass(frozen=True)
class LineSpan:
    """A piece of document line ``number`` inside a text block: ``text[row:start]`` is the tool's
    framing for it (``read_file``'s line number), ``text[start:end]`` the document's own text."""

    number: int
    row: int
    start: int
    end: int

    @property
    def chars(self) -> int:
        return self.end - self.start


BlockLines = tuple[LineSpan, ...]
ResultLines = Mapping[int, BlockLines]  # block index -> the document lines it shows, in order


def document_lines(call: ToolCall, result: ToolResult) -> dict[int, BlockLines]:
    """The document lines ``result`` shows, by block; empty when it shows none we can place."""
    if result.is_error:
        return {}
    info = result.meta.get(MD_VISION_META) if isinstance(result.meta, dict) else None
    if isinstance(info, dict):
        return _md_vision_lines(info, result)
    if call.name == "read_file":
        return _numbered_lines(result)
    return {}


def _numbered_lines(result: ToolResult) -> dict[int, BlockLines]:
    found: dict[int, BlockLines] = {}
    for index, block in enumerate(result.blocks):
        if not isinstance(block, Text):
            continue
        spans: list[LineSpan] = []
        offset = 0
        for line in block.text.split("\n"):
            match = NUMBERED_LINE.match(line)
            if match:
                end = offset + len(line)
                if line.endswith(LINE_CUT_MARK):
                    end -= len(LINE_CUT_MARK)
                spans.append(LineSpan(int(match.group(1)), offset, offset + match.start(2), end))
            offset += len(line) + 1
        if spans:
            found[index] = tuple(spans)
    return found


def _md_vision_lines(info: Mapping[str, Any], result: ToolResult) -> dict[int, BlockLines]:
    first, roles = info.get("first_line"), info.get("roles")
    if not isinstance(first, int) or not isinstance(roles, list) or len(roles) != len(result.blocks):
        return {}
    found: dict[int, BlockLines] = {}
    number = first
    # The source blocks, joined, are the lines first..last; a line may continue across blocks
    # (an elided data URI or an inlined image sits between two pieces of the source).
    for index, (block, role) in enumerate(zip(result.blocks, roles, strict=True)):
        if role != "source" or not isinstance(block, Text):
            continue
        spans: list[LineSpan] = []
        offset = 0
        pieces = block.text.split("\n")
        for position, piece in enumerate(pieces):
            last = position == len(pieces) - 1
            if piece or not last:
                spans.append(LineSpan(number, offset, offset, offset + len(piece)))
            offset += len(piece) + 1
            if not last:
                number += 1
        if spans:
            found[index] = tuple(spans)
    return found
