"""A second opinion on where the article ends. Pure: no I/O.

The reader view (trafilatura) often runs on past the article's last paragraph into a company
boilerplate, a "top stories" box, a subscription pitch or a comment widget. A second,
independent extractor (the Readability algorithm, as trafilatura ships it) tends to stop at the
article's end instead, while agreeing with the reader view on everything before it. When the two
agree on the body, the trailing blocks that only the reader view kept are cut.

Guards keep the cut to tails that are furniture:

- the reader view's remaining blocks must be at least MIN_AGREEMENT shared with the second
  opinion (the two found the same article, so a difference at the end is a disagreement about
  where it stops, not about what it is);
- the cut holds at most MAX_CUT_SHARE of the body's words;
- a tail that holds a quotation, a table, code or a list of plain items (no links) stays:
  Readability drops those as not looking like prose (quoted posts, embedded tweets, a closing
  example, a closing list of steps), while a list of links at the end is the furniture this cut
  is for;
- so does a tail of short closing sentences ("The end.", a last line that points to a
  footnote): shorter than Readability reads at all, so its absence there says nothing.

Agreement is measured on word 4-shingles, the unit of the extraction benchmark's metric.
On the extraction benchmark's dev pages (``docab webextract``) the cut fired on 10 pages of half
A: F1 A 0.9880 -> 0.9907. Half A could not choose MAX_CUT_SHARE: 0.3, 0.4 and 0.5 all give
0.9907, and 0.4 is their middle. Half B moved from 0.9680 to 0.9728 (0.9698 with 0.3, 0.9689
with 0.5). B is not a clean hold-out for this rule: some of its pages were read while the rule
was designed, and reading a layout table's cells as blocks came from one of them.
"""

from __future__ import annotations

import re
from collections import Counter
from copy import deepcopy
from typing import TYPE_CHECKING

from markfetch.shingles import shingles

if TYPE_CHECKING:
    from lxml import etree, html

# A block is shared when at least this share of its shingles is in the second opinion.
BLOCK_SHARED = 0.5
MIN_AGREEMENT = 0.9
MAX_CUT_SHARE = 0.4


def second_opinion_text(tree: html.HtmlElement) -> str:
    """The article text the Readability algorithm finds in ``tree`` (left unchanged); "" on failure."""
    from lxml import html
    from trafilatura.readability_lxml import Document

    body = tree.find(".//body")
    try:
        # Readability mutates what it reads, so it reads a copy; of the body only, which is all it
        # looks at (and a third cheaper to copy than the page).
        summary = Document(deepcopy(tree if body is None else body), min_text_length=25).summary()
        return " ".join(html.fromstring(summary).itertext()) if summary.strip() else ""
    except Exception:  # a second opinion that fails is no opinion; the reader view stands alone
        return ""


def trim_unshared_tail(
    container: etree._Element, reference: Counter[tuple[str, ...]]
) -> list[etree._Element]:
    """Remove from ``container`` its trailing blocks that ``reference`` does not share; return them.

    Nothing is removed unless every guard of the module holds.
    """
    if not reference:
        return []  # before reading the blocks, which rewrites layout cells
    blocks = reading_blocks(container)
    if len(blocks) < 2:
        return []
    measured = []  # (shared shingles, all shingles) per block
    for block in blocks:
        own = shingles(" ".join(block.itertext()))
        measured.append((sum((own & reference).values()), sum(own.values())))

    def shared(index: int) -> bool:
        common, total = measured[index]
        return total == 0 or common >= BLOCK_SHARED * total

    end = len(blocks)
    while end > 0 and not shared(end - 1):
        end -= 1
    if end in (0, len(blocks)):
        return []
    tail = blocks[end:]
    kept_common = sum(common for common, _ in measured[:end])
    kept_total = sum(total for _, total in measured[:end])
    cut_total = sum(total for _, total in measured[end:])
    if kept_total == 0 or kept_common < MIN_AGREEMENT * kept_total:
        return []
    if cut_total > MAX_CUT_SHARE * (kept_total + cut_total):
        return []
    if any(_readability_blind_spot(block) for block in tail) or all(_closing_line(block) for block in tail):
        return []
    for block in tail:
        parent = block.getparent()
        if parent is not None:  # a block is always inside the container
            parent.remove(block)
    return tail


def reading_blocks(container: etree._Element) -> list[etree._Element]:
    """The container's blocks in reading order; a layout table is read as the blocks in its cells
    (as the markdown renderer reads it), so an article laid out in a table has an end to find.

    Runs of inline content in a layout cell are wrapped in ``<p>`` in place, which renders the same.
    """
    from markfetch.markdown import is_layout_table, table_rows

    blocks: list[etree._Element] = []
    for child in container:
        if not isinstance(child.tag, str):
            continue
        rows = table_rows(child) if child.tag == "table" else []
        if rows and is_layout_table([cells for _, cells in rows]):
            blocks.extend(block for _, cells in rows for cell in cells for block in _cell_blocks(cell))
        else:
            blocks.append(child)
    return blocks


def _cell_blocks(cell: etree._Element) -> list[etree._Element]:
    """A layout cell's blocks: its block children, with each run of inline content between them
    wrapped in a ``<p>`` (the paragraph the renderer makes of it); the cell itself when it holds
    running text only."""
    from markfetch.markdown import BLOCKS

    children = list(cell)
    if not any(isinstance(child.tag, str) and child.tag in BLOCKS for child in children):
        return [cell]
    leading, cell.text = cell.text, None
    for child in children:
        cell.remove(child)  # its tail goes with it
    paragraph: etree._Element | None = None

    def open_paragraph() -> etree._Element:
        nonlocal paragraph
        if paragraph is None:
            paragraph = cell.makeelement("p", {})
            cell.append(paragraph)
        return paragraph

    if leading and leading.strip():
        open_paragraph().text = leading
    for child in children:
        if isinstance(child.tag, str) and child.tag in BLOCKS:
            tail, child.tail = child.tail, None
            cell.append(child)
            paragraph = None
            if tail and tail.strip():
                open_paragraph().text = tail
        else:
            open_paragraph().append(child)
    return list(cell)


# Readability does not read paragraphs shorter than this (second_opinion_text's min_text_length).
READABILITY_MIN_CHARS = 25
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")


def _closing_line(block: etree._Element) -> bool:
    """A short closing sentence ("The end.", a last line pointing to a footnote): too short for
    Readability to read, so its absence there is no opinion. No links but in-page ones."""
    text = " ".join("".join(block.itertext()).split())
    if block.tag != "p" or not text or len(text) >= READABILITY_MIN_CHARS or not _SENTENCE_END.search(text):
        return False
    return all((link.get("href") or "").startswith("#") for link in block.iter("a"))


def _readability_blind_spot(block: etree._Element) -> bool:
    """Content Readability leaves out although it is the article's: quotes, tables, code, plain lists."""
    for element in block.iter("blockquote", "table", "pre", "ul", "ol", "dl"):
        if element.tag in ("blockquote", "table", "pre") or element.find(".//a") is None:
            return True
    return False
