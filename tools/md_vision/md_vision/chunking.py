"""Where a large markdown document may be cut, so that cmark parses it a piece at a time (pure).

cmark builds a tree of the whole document before md-vision reads anything from it, about 70
bytes of tree and 28 bytes of XML per byte of dense markdown (10 MB of headings: 1.3 GB). Parsed
in pieces of about a megabyte, a document costs the memory of one piece, whatever its length, and
the parse can stop between pieces (a deadline, a cancelled call, the structure cap).

**Why a cut is exact.** CommonMark decides where a block *starts* line by line, from the lines
before it only (a setext underline or a table's delimiter row turns the paragraph above into a
heading or a table, but that block still starts where the paragraph did). So when cmark, given the
lines ``a..b``, opens a block at line ``s`` (``a < s <= b``), it opens the same block there given
the whole document; every block that started before ``s`` and is not an ancestor of that block has
ended before ``s``. Parsing ``a..s-1`` and then ``s..`` separately therefore yields the same
blocks, with two kinds of cut:

- at a block of the document's top level;
- at a child of a top-level list or block quote (an item, a quoted block): the next piece then
  opens a new list or quote there, which changes what md-vision does not read (a list's start
  number, tight or loose) and keeps what it does (positions, nesting, the quote depth).

At a table only when the line after its reported start is a delimiter row: cmark-gfm turns the
last line of a paragraph into a table's header and then gives the table the paragraph's first
line (and the paragraph none), so such a table's start is not where it starts.

A piece with no such start inside it (one block longer than a piece: a huge fence, paragraph or
list item) is parsed again twice as long, so the cost stays linear, unless its XML would then
pass :data:`PIECE_XML_PER_CHAR` times a piece's characters: then the parse stops at the latest
block start at any depth (:func:`last_block_start`; what came before it is complete), and the
document's structure is known that far. Pieces are sized by how much XML the last one wrote per
character (:mod:`md_vision.pieces`), so a dense text (a deeply nested list) gets small pieces.

**Link reference definitions** are the one thing CommonMark resolves across the whole document:
``![alt][label]`` in one piece may use a definition in another. Every line that may hold a
definition (:func:`definition_labels`: a label and a colon after any container markers) is
checked by cmark itself, with a probe parsed after its piece (:func:`probe`, :func:`resolved`);
each piece then carries, before or after its own lines, the definitions of the labels it
mentions that cmark found (:func:`carried`), so the first definition of a label wins as in one
parse. What this cannot reproduce: a definition spread over several lines (its label line alone
is not one), and, with its lines in another piece, a setext heading inside a block quote inside a
list item (its images' line; one parse places them on a line after the heading anyway).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html import unescape

PIECE_CHARS = 1_000_000  # characters of markdown per piece; a document this size is parsed whole
# A piece whose XML would pass this many bytes per character of a normal piece is not parsed:
# one block that dense (a list item holding a million headings) stops the parse where it is.
# A megabyte of empty headings writes 14 MB of XML, of setext headings 28 MB, of prose about 2.
PIECE_XML_PER_CHAR = 40
MIN_PIECE_XML = 1 << 20  # below this the XML is never too dense (tiny pieces: its fixed head)

_ESC = r"\\[^\r\n]"
# A line that may hold a link reference definition: after any container markers (block quotes,
# list items, indentation) a label and a colon. Wide on purpose: cmark decides which are
# definitions (:func:`probe`), so a line this misses is a definition lost, one too many costs a
# probe. Lines end at "\n", "\r\n" or a lone "\r"; a byte-order mark may open the text.
_DEFINITION_LINE = re.compile(
    r"(?:\A\ufeff?|(?<=[\r\n]))(?:[ \t]*(?:>|(?:[-+*]|\d{1,9}[.)])(?=[ \t]|$)))*[ \t]*"
    rf"\[(?P<label>(?:[^\[\]\\\r\n]|{_ESC}){{1,999}})\]:",
    re.MULTILINE,
)
# A label as a use may write it: brackets around up to 999 characters, line breaks included.
_BRACKETED = re.compile(r"\[((?:[^\[\]\\]|\\.){1,999})\]", re.DOTALL)

# In cmark's XML every node's opening tag starts a line, indented two spaces per depth below
# <document>, and the document's own text is escaped (no "<" in it): these find the openings.
_TOP_LEVEL = re.compile(rb'\n  <(?P<tag>\w+) sourcepos="(?P<line>\d+):')
_SECOND_LEVEL = re.compile(rb'\n    <(?P<tag>\w+) sourcepos="(?P<line>\d+):')
_CONTAINERS = (b"list", b"block_quote")


def normalise_label(label: str) -> str:
    """A reference label as CommonMark matches it: case-folded, inner whitespace collapsed."""
    return " ".join(label.split()).casefold()


def looks_like_definitions(text: str) -> bool:
    """Whether any line of ``text`` may hold a link reference definition."""
    return "]:" in text and _DEFINITION_LINE.search(text) is not None


def definition_labels(piece: str) -> dict[str, str]:
    """Labels of the lines of ``piece`` that may hold a definition, by normalised label (the
    label as written). Some are not definitions (a line in a fence, or continuing a paragraph):
    cmark says which (:func:`probe`)."""
    found: dict[str, str] = {}
    for match in _DEFINITION_LINE.finditer(piece):
        label = normalise_label(match["label"])
        if label:
            found.setdefault(label, match["label"])
    return found


def probe(labels: dict[str, str]) -> str:
    """Lines to parse after a piece that ask cmark what each label resolves to there: one
    paragraph ``[x][label]`` each (read back with :func:`resolved`). The link text is a plain
    ``x`` so that nothing in it (a backtick) can pair with the label's."""
    return "".join(f"\n\n[x][{raw}]" for raw in labels.values()) + "\n" if labels else ""


_PROBE = re.compile(
    rb'\n  <paragraph sourcepos="(?P<line>\d+):[^>]*>\n    (?:<link(?: sourcepos="[^"]*")? destination="(?P<dest>[^"]*)" title="(?P<title>[^"]*)">)?'
)


@dataclass(frozen=True, slots=True)
class Definition:
    """What a label resolves to, as a line another piece can carry."""

    label: str  # as written
    destination: str
    title: str

    def line(self) -> str:
        def escaped(value: str) -> str:  # every ASCII punctuation escaped: read back literally
            return "".join("\\" + char if char in _PUNCTUATION else char for char in value)

        title = f' "{escaped(self.title)}"' if self.title else ""
        return f"[{self.label}]: <{escaped(self.destination)}>{title}"


_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def resolved(xml: bytes, labels: dict[str, str], last_line: int) -> dict[str, Definition] | None:
    """The definitions the probe after a piece of ``last_line`` lines found (:func:`probe`); None
    when the piece swallowed the probe (it ends in an open fence or HTML block: probe again
    without that block)."""
    probes = [match for match in _PROBE.finditer(xml) if int(match["line"]) > last_line]
    if len(probes) != len(labels):
        return None
    found: dict[str, Definition] = {}
    for label, match in zip(labels, probes, strict=True):
        if match["dest"] is not None:
            destination, title = _xml_value(match["dest"]), _xml_value(match["title"])
            found[label] = Definition(labels[label], destination, title)
    return found


def _xml_value(raw: bytes) -> str:
    return unescape(raw.decode("utf-8", "replace"))


def carried(piece: str, own: int, definitions: dict[str, tuple[int, Definition]]) -> tuple[str, str]:
    """What piece number ``own`` carries: the definitions of the labels it has in brackets, as
    text to put before it (those found by an earlier piece's parse: they win over its own) and
    after it (the others: its own win; a piece's parse also sees the lines after its cut, so the
    definition found by piece ``own`` may lie in the next). Each part is set off by a blank line."""
    if not definitions:
        return "", ""
    before: dict[str, str] = {}
    after: dict[str, str] = {}
    for match in _BRACKETED.finditer(piece):
        label = normalise_label(match[1])
        found = definitions.get(label)
        if found is not None:
            (before if found[0] < own else after)[label] = found[1].line()
    head = "\n".join(before.values()) + "\n\n" if before else ""
    tail = "\n\n" + "\n".join(after.values()) + "\n" if after else ""
    return head, tail


@dataclass(frozen=True, slots=True)
class Cut:
    """Where the next piece starts: a block's first line (1-based, in the piece) and where that
    block's node opens in the piece's XML (what comes before it is complete)."""

    line: int
    xml_position: int


def last_cut(
    xml: bytes, first_line: int, last_line: int, delimiter_after: Callable[[int], bool] | None = None
) -> Cut | None:
    """The latest exact cut in a piece's XML (see the module's docstring), after ``first_line``
    and at most at ``last_line`` (lines outside are the definitions the piece carries); None when
    the piece is one block (parse a longer piece).

    A table is a cut only where ``delimiter_after(line)`` says the line after its reported start
    is a delimiter row (``|---|---|``): then the start is its header row, not a paragraph's first
    line (see the module's docstring).

    Searched from the end: only the last few blocks are looked at, however many the piece has."""
    end = len(xml)
    for top in _openings_backwards(xml, b"\n  <", 0, end):
        line = int(top["line"])
        if line > last_line:
            end = top.start()
            continue
        if top["tag"] in _CONTAINERS:
            for child in _openings_backwards(xml, b"\n    <", top.end(), end):
                if max(line, first_line) < int(child["line"]) <= last_line and _may_cut_at(
                    child, delimiter_after
                ):
                    return Cut(int(child["line"]), child.start() + 1)
        if line > first_line and _may_cut_at(top, delimiter_after):
            return Cut(line, top.start() + 1)
        if line <= first_line:
            return None
        end = top.start()
    return None


def _may_cut_at(node: re.Match[bytes], delimiter_after: Callable[[int], bool] | None) -> bool:
    if node["tag"] != b"table":
        return True
    return delimiter_after is not None and delimiter_after(int(node["line"]))


# A GFM table's delimiter row, after any container markers or indentation.
DELIMITER_ROW = re.compile(r"[ \t>]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*")


def _openings_backwards(xml: bytes, prefix: bytes, start: int, end: int) -> Iterator[re.Match[bytes]]:
    """The opening tags at one depth (``prefix``: a line break and the indent) in
    ``xml[start:end]``, last first."""
    pattern = _TOP_LEVEL if prefix == b"\n  <" else _SECOND_LEVEL
    position = xml.rfind(prefix, start, end)
    while position >= 0:
        match = pattern.match(xml, position)
        if match is not None:  # not a closing tag
            yield match
        position = xml.rfind(prefix, start, position)


# A table's reported start may be a paragraph's (see the module's docstring); where the parse
# stops anyway, what comes before the table node is still complete.
_BLOCK_TAGS = frozenset(
    b"block_quote list item code_block html_block custom_block paragraph heading thematic_break table".split()
)
_ANY_OPENING = re.compile(rb'\n *<(?P<tag>\w+) sourcepos="(?P<line>\d+):')


def last_block_start(xml: bytes, first_line: int, last_line: int) -> Cut | None:
    """The latest block start at any depth after ``first_line`` and at most at ``last_line``:
    every node before it in the XML is complete (but the piece after it cannot start a parse)."""
    position = len(xml)
    while True:
        position = xml.rfind(b"\n", 0, position)
        if position < 0:
            return None
        match = _ANY_OPENING.match(xml, position)
        if match is not None and match["tag"] in _BLOCK_TAGS:
            line = int(match["line"])
            if first_line < line <= last_line:
                return Cut(line, position + 1)
            if line <= first_line:
                return None
