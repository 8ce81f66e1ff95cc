"""An article's footnotes, kept. Pure: no I/O.

The reader view drops a page's footnote section (``<section class="footnotes"
role="doc-endnotes">`` of Pandoc, markdown-it and Hugo; Sphinx's ``<aside class="footnote">``;
WordPress plugins' ``<div class="footnotes">``), so a cited source or an aside disappears while
its marker stays in the text. The JavaScript markfetch keeps them (Readability keeps the section).

So the footnotes are taken out of the page before extraction (:func:`take_footnotes`) and put
back after it as a numbered list after a rule (:func:`render_footnotes`), with their back-links
("↩") stripped; only notes that the extracted text still points to come back, so the notes of a
sidebar or of a comment thread that the reader view left out stay out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from copy import deepcopy
from dataclasses import dataclass

from lxml import etree

from markfetch.markdown import numbered_items

_ROLES_OF_LISTS = frozenset({"doc-endnotes", "doc-footnotes"})
_ROLES_OF_NOTES = frozenset({"doc-footnote", "doc-endnote"})
_LIST_CLASSES = frozenset({"footnotes", "footnote-list", "footnotes-list", "easy-footnotes-wrapper"})
_NOTE_CLASSES = frozenset({"footnote"})  # Sphinx and docutils: one element per note
_BACKLINK_CLASSES = frozenset(
    {"footnote-backref", "footnote-back", "reversefootnote", "fn-backref", "footnote-return"}
)
_BACKLINK_TEXT = re.compile(r"^\s*(↩\ufe0e?\ufe0f?|\^|↑|⤴|back)\s*$", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Footnote:
    anchor: str  # the id the article's marker links to
    number: int
    content: etree._Element  # the note, back-links and label removed
    section: int  # notes of one footnote section share it (a single note has its own)


def _classes(element: etree._Element) -> set[str]:
    return set((element.get("class") or "").split())


def _is_note_list(element: etree._Element) -> bool:
    return element.tag in ("section", "div", "ol", "aside", "footer") and (
        (element.get("role") or "") in _ROLES_OF_LISTS or bool(_classes(element) & _LIST_CLASSES)
    )


def _is_single_note(element: etree._Element) -> bool:
    return element.tag in ("aside", "div", "section", "p") and (
        (element.get("role") or "") in _ROLES_OF_NOTES or bool(_classes(element) & _NOTE_CLASSES)
    )


def _strip_backlinks(note: etree._Element) -> None:
    for link in list(note.iter("a")):
        role = link.get("role") or ""
        href = link.get("href") or ""
        if (
            role == "doc-backlink"
            or _classes(link) & _BACKLINK_CLASSES
            or href.startswith(("#fnref", "#fnref:", "#ref-"))
            or _BACKLINK_TEXT.match("".join(link.itertext()))
        ):
            _remove_keeping_tail(link)
    for label in [e for e in note.iter("span", "div") if "label" in _classes(e)]:
        _remove_keeping_tail(label)
    for rule in list(note.iter("hr")):
        _remove_keeping_tail(rule)


def _remove_keeping_tail(element: etree._Element) -> None:
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail or ""
    previous = element.getprevious()
    if previous is not None:
        previous.tail = (previous.tail or "") + tail
    else:
        parent.text = (parent.text or "") + tail
    parent.remove(element)


def _label_number(element: etree._Element, default: int) -> int:
    for label in element.iter("span", "a"):
        if "label" in _classes(label) or (label.get("role") or "") == "doc-backlink":
            digits = _DIGITS.search("".join(label.itertext()))
            if digits:
                return int(digits.group())
    return default


def _items_of(listing: etree._Element) -> list[tuple[etree._Element, int]]:
    """The notes of a footnote section: its list items, numbered as the page numbers them."""
    ordered = listing if listing.tag == "ol" else next(listing.iter("ol"), None)
    return [] if ordered is None else numbered_items(ordered)


MAX_NOTES = 1_000  # beyond this many, a page's "notes" are not an article's footnotes


# Candidates found by lxml in C with one cheap test per element (a walk in Python, or a test of
# each class token in XPath, cost 2 ms on an ordinary page); the Python tests below decide.
_CANDIDATES = etree.XPath("//*[contains(@class, 'footnote') or starts-with(@role, 'doc-')]")


def take_footnotes(tree: etree._Element) -> list[Footnote]:
    """Remove the page's footnote sections and notes from ``tree``, and return the notes in
    page order (a note without an id cannot be linked to, and is left where it is)."""
    notes: list[Footnote] = []
    found: list[etree._Element] = []
    taken: set[etree._Element] = set()
    candidates = _CANDIDATES(tree)
    if not isinstance(candidates, list) or len(candidates) > 5 * MAX_NOTES:
        return []  # not an article's notes: a page of them, or a hostile one
    for element in candidates:
        if not isinstance(element, etree._Element) or any(a in taken for a in element.iterancestors()):
            continue
        if _is_note_list(element):
            items = _items_of(element)
            if items and all(item.get("id") for item, _ in items):
                found.append(element)
                taken.add(element)
                notes.extend(_note(item, item.get("id", ""), number, len(found)) for item, number in items)
        elif _is_single_note(element) and element.get("id"):
            found.append(element)
            taken.add(element)
            number = _label_number(element, len(notes) + 1)
            notes.append(_note(element, element.get("id", ""), number, len(found)))
        if len(notes) > MAX_NOTES:
            return []  # nothing was removed yet: the page stays as it is
    for element in found:
        _remove_keeping_tail(element)
    return notes


def _note(element: etree._Element, anchor: str, number: int, section: int) -> Footnote:
    content = deepcopy(element)
    content.tail = None
    _strip_backlinks(content)
    content.tag = "div"
    for name in list(content.attrib):
        del content.attrib[name]
    return Footnote(anchor, number, content, section)


def referenced(notes: list[Footnote], markdown: str) -> list[Footnote]:
    """The notes of every footnote section that the extracted ``markdown`` links to
    (``…#anchor)``) at least once: a section comes back whole."""
    sections = {note.section for note in notes if f"#{note.anchor})" in markdown}
    return [note for note in notes if note.section in sections]


def render_footnotes(notes: list[Footnote], render: Callable[[etree._Element], str]) -> str:
    """The notes as a rule and a numbered list; ``render`` turns HTML into markdown."""
    if not notes:
        return ""
    wrapper = etree.Element("div")
    listing = etree.SubElement(wrapper, "ol")
    for note in notes:
        item = etree.SubElement(listing, "li", value=str(note.number))
        item.append(deepcopy(note.content))
    rendered = render(wrapper).strip()
    return f"---\n\n{rendered}" if rendered else ""
