"""Which lines a read returns: the whole file, a section, or a line range (pure).

Section matching, in order:

1. exact: the query equals a heading's label (``## Notes``, or ``## Notes (2)`` for the second);
2. tolerant: the ``#`` marker is optional, case and runs of whitespace are ignored, and so are
   ``*`` and backticks; a trailing `` (n)`` picks the n-th heading with that text; a marker of
   the wrong level is ignored when nothing matches at that level;
3. otherwise the read fails with the closest headings, unless a line range was given too, in
   which case that range is read and the result says so.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from md_vision.document import Document, Heading

_MARKER = re.compile(r"^\s*(#{1,6})\s*")
_OCCURRENCE = re.compile(r"^(.*?)\s*\((\d{1,4})\)$")
_SPACES = re.compile(r"\s+")
_IGNORED = str.maketrans("", "", "*`")


class SelectionError(ValueError):
    """The request cannot select anything; the message says what to do instead."""


@dataclass(frozen=True, slots=True)
class Selection:
    first: int  # 1-based, inclusive
    last: int
    heading: Heading | None = None
    notes: tuple[str, ...] = ()  # said to the caller: tolerant match, fallback, clamping

    @property
    def is_section(self) -> bool:
        return self.heading is not None


def _normalise(text: str) -> str:
    return _SPACES.sub(" ", text.translate(_IGNORED)).strip().casefold()


def match_heading(headings: tuple[Heading, ...], query: str) -> tuple[int | None, bool]:
    """Index of the heading ``query`` names and whether the match was exact (or None)."""
    wanted = query.strip()
    for number, heading in enumerate(headings):
        if heading.label == wanted:
            return number, True
    marker = _MARKER.match(wanted)
    level = len(marker.group(1)) if marker else None
    text = _normalise(wanted[marker.end() :] if marker else wanted)
    normalised = [_normalise(heading.text) for heading in headings]

    def pick(candidates: list[int]) -> int | None:
        at_level = [n for n in candidates if level is None or headings[n].level == level]
        chosen = at_level or candidates
        return chosen[0] if chosen else None

    found = pick([n for n, name in enumerate(normalised) if name == text])
    if found is not None:
        return found, False
    occurrence = _OCCURRENCE.match(text)
    if occurrence:
        base, nth = occurrence.group(1), int(occurrence.group(2))
        same = [n for n, name in enumerate(normalised) if name == base]
        at_level = [n for n in same if level is None or headings[n].level == level] or same
        if 1 <= nth <= len(at_level):
            return at_level[nth - 1], False
    return None, False


def closest_headings(headings: tuple[Heading, ...], query: str, limit: int = 5) -> list[str]:
    marker = _MARKER.match(query)
    text = _normalise(query[marker.end() :] if marker else query)
    by_name: dict[str, str] = {}
    for heading in headings:
        by_name.setdefault(_normalise(heading.text), heading.label)
    close = difflib.get_close_matches(text, list(by_name), n=limit, cutoff=0.4)
    if close:
        return [by_name[name] for name in close]
    # Nothing similar: partial containment, then simply the first headings.
    contains = [label for name, label in by_name.items() if text and (text in name or name in text)]
    return (contains or [heading.label for heading in headings])[:limit]


def _line_range(document: Document, line_range: tuple[int, int] | list[int]) -> Selection:
    first, last = int(line_range[0]), int(line_range[1])
    total = document.line_count
    if first < 1 or last < first:
        raise SelectionError(
            f"line_range must be [start, end] with 1 <= start <= end (1-based, inclusive); got [{first}, {last}]"
        )
    if total == 0:
        raise SelectionError("the file is empty, so no line range can be read")
    if first > total:
        raise SelectionError(f"line_range starts at line {first} but the file has only {total} lines")
    notes: tuple[str, ...] = ()
    if last > total:
        notes = (f"line_range end {last} is past the end of the file; read lines {first}-{total}.",)
        last = total
    return Selection(first, last, notes=notes)


def select(
    document: Document,
    *,
    section: str | None = None,
    line_range: tuple[int, int] | list[int] | None = None,
    name: str = "the file",
) -> Selection:
    """Decide which lines to read. Raises :class:`SelectionError` with an actionable message."""
    if section is not None and section.strip():
        number, exact = match_heading(document.headings, section)
        if number is not None:
            heading = document.headings[number]
            notes: tuple[str, ...] = ()
            if not exact:
                notes = (
                    f"Section {_quoted(section)} matched heading {heading.label!r} at line {heading.line}.",
                )
            return Selection(heading.line, document.section_end(number), heading=heading, notes=notes)
        if line_range is not None:
            selection = _line_range(document, line_range)
            fallback = (
                f"Section {_quoted(section)} was not found in {name}; returned line_range "
                f"[{selection.first}, {selection.last}] instead.",
            )
            return Selection(selection.first, selection.last, notes=fallback + selection.notes)
        raise SelectionError(_not_found(document, section, name))
    if line_range is not None:
        return _line_range(document, line_range)
    return Selection(1, document.line_count)


def _quoted(section: str, limit: int = 200) -> str:
    """The section asked for, as messages quote it: no longer than ``limit`` characters (a
    megabyte-long argument is not echoed back whole)."""
    section = section.strip()
    return repr(section if len(section) <= limit else section[:limit] + "…")


def _not_found(document: Document, section: str, name: str) -> str:
    if not document.headings:
        return f"Section {_quoted(section)} not found: {name} has no headings. Read it without `section`, or use line_range."
    closest = closest_headings(document.headings, section)
    listed = ", ".join(repr(label) for label in closest)
    return (
        f"Section {_quoted(section)} not found in {name}. Closest headings: {listed}. "
        "Call index_md on the same uri to list every heading (with its line numbers), "
        "or pass line_range."
    )
