"""cmark over a long text, a piece at a time, so that a parse costs the memory of one piece.

Where the pieces are cut, and why the result equals one parse of the whole text, is
:mod:`md_vision.chunking`'s subject; this module runs cmark on them:

- a text of at most ``piece_chars`` characters is one piece, parsed as it is;
- a longer one without any line that looks like a link reference definition is cut as it goes:
  each parse ends at the latest block start it finds, and the next piece starts there;
- one block too dense to parse in a piece ends the parse there (:data:`Piece.stopped`);
- with such lines, a first walk finds the cuts and, by a probe after each piece, which of those
  lines cmark takes as definitions and what they resolve to; the second parses each piece between
  its cuts, carrying the other pieces' definitions of the labels it mentions. Two parses: the
  price of resolving ``![alt][label]`` exactly wherever its definition is.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from md_vision.chunking import (
    DELIMITER_ROW,
    MIN_PIECE_XML,
    PIECE_XML_PER_CHAR,
    Cut,
    Definition,
    carried,
    definition_labels,
    last_block_start,
    last_cut,
    looks_like_definitions,
    probe,
    resolved,
)
from md_vision.parser import markdown_to_xml


@dataclass(frozen=True, slots=True)
class Piece:
    """cmark's XML of source lines ``first..last`` (1-based), complete blocks only; its line
    ``n`` is source line ``offset + n`` (definitions it carries sit before ``first`` or after
    ``last`` and make no nodes)."""

    xml: bytes
    offset: int
    first: int
    last: int
    stopped: bool = False  # the parse ends here: what follows is one block too dense for a piece


class _Text:
    """The text cmark reads, by source line (0-based starts; frontmatter lines blanked)."""

    def __init__(self, masked: str, line_starts: Sequence[int], hidden: int) -> None:
        self.masked = masked
        self.line_starts = line_starts
        self.hidden = hidden
        self.skipped = line_starts[hidden] - hidden  # characters the blanking removed
        self.line_count = len(line_starts) - 1

    def start(self, line: int) -> int:
        """Where 0-based ``line`` starts in the masked text."""
        return line if line < self.hidden else self.line_starts[line] - self.skipped

    def delimiter_after(self, first: int) -> Callable[[int], bool]:
        """Whether the line after line ``n`` of a piece starting at 0-based line ``first`` is a
        table's delimiter row."""

        def check(line: int) -> bool:
            index = first + line  # 0-based index of the line after piece line ``line``
            if index >= self.line_count:
                return False
            return DELIMITER_ROW.fullmatch(self.lines(index, index + 1).rstrip("\r\n")) is not None

        return check

    def lines(self, first: int, end: int) -> str:
        """0-based lines ``first`` up to ``end`` (excluded)."""
        return self.masked[self.start(first) : self.start(end)]

    def end_after(self, first: int, chars: int) -> int:
        """The line boundary about ``chars`` characters after line ``first`` (at least one line)."""
        # self.start is line_starts shifted by a constant past the hidden lines
        end = bisect_left(
            self.line_starts, self.start(first) + chars + self.skipped, first + 1, self.line_count
        )
        return min(max(end, first + 1), self.line_count)


def parse_pieces(
    masked: str,
    line_starts: Sequence[int],
    hidden: int,
    piece_chars: int,
    check: Callable[[], None],
) -> Iterator[Piece]:
    """The pieces of ``masked`` (the source with its first ``hidden`` lines blank), in order.
    ``check`` is called before each parse (it raises to stop)."""
    text = _Text(masked, line_starts, hidden)
    check()
    if len(masked) <= piece_chars:
        yield Piece(markdown_to_xml(masked), 0, 1, text.line_count)
        return
    if not looks_like_definitions(masked):
        yield from _walk(text, piece_chars, check, None)
        return
    definitions: dict[str, tuple[int, Definition]] = {}
    cuts = [(piece.last, piece.stopped) for piece in _walk(text, piece_chars, check, definitions)]
    first = 0
    for number, (last, stopped) in enumerate(cuts):
        check()
        piece = text.lines(first, last)
        head, tail = carried(piece, number, definitions)
        head_lines = head.count("\n")
        xml = markdown_to_xml(head + piece + tail) if piece else b""
        yield Piece(xml, first - head_lines, first + 1, last, stopped)
        first = last


def _walk(
    text: _Text,
    piece_chars: int,
    check: Callable[[], None],
    definitions: dict[str, tuple[int, Definition]] | None,
) -> Iterator[Piece]:
    """Parse piece after piece, each ending at the latest block start found in it. With
    ``definitions``, probe each piece for them and record the first of each label."""
    budget = max(PIECE_XML_PER_CHAR * piece_chars, MIN_PIECE_XML)  # XML bytes one piece may write
    # The first piece is a quarter: its XML says how dense the text is, and the next pieces are
    # sized to write about half the budget (a deeply nested list writes 128 bytes of XML a
    # character: its pieces are an eighth of the usual).
    first, size, number = 0, max(1, piece_chars // 4), 0
    while True:
        check()
        end = text.end_after(first, size)
        whole = end >= text.line_count
        piece = text.lines(first, end)
        labels = definition_labels(piece) if definitions is not None else {}
        xml = markdown_to_xml(piece + probe(labels))
        lines = end - first
        cut = None if whole else last_cut(xml, 1, lines, text.delimiter_after(first))
        stopped = False
        density = len(xml) / max(1, len(piece))
        next_size = max(1, piece_chars // 16, min(piece_chars, int(budget / 2 / max(density, 1.0))))
        if cut is None and not whole:  # one block longer than the piece
            if 2 * len(xml) <= budget:
                size *= 2  # parse a longer one
                continue
            cut, stopped = last_block_start(xml, 1, lines) or Cut(1, 0), True
        kept = lines if cut is None else cut.line - 1
        if definitions is not None:
            found = resolved(xml, labels, lines)
            if found is None:  # the piece ends in an open fence or HTML block: probe before it
                block = last_cut(xml, 1, lines, text.delimiter_after(first))
                prefix = text.lines(first, first + block.line - 1) if block else ""
                labels = definition_labels(prefix)
                kept_lines = block.line - 1 if block else 0
                found = resolved(markdown_to_xml(prefix + probe(labels)), labels, kept_lines) or {}
            for label, definition in found.items():
                definitions.setdefault(label, (number, definition))
        yield Piece(xml if cut is None else xml[: cut.xml_position], first, first + 1, first + kept, stopped)
        if whole or stopped:
            return
        first, size, number = first + kept, next_size, number + 1
