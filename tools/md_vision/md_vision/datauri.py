"""``data:`` URIs in the text of a read (pure).

An embedded screenshot is a ``data:`` URI of a hundred thousand characters or more: as text it
costs a model some 100,000 tokens, and it says nothing the image block does not. So in the text a
read returns, every ``data:`` URI of at least :data:`MIN_ELIDED_CHARS` characters becomes a short
placeholder that keeps its media type and names the image block carrying it, e.g.

    ![shot](data:image/png;base64,… [160,549 characters: image 1 of this result])

The reference server did the same (it drops an inlined image's markup from the text). The
placeholder is a block of its own (role ``data-uri``), so the source blocks around it stay the
file's own bytes, and the server gives each elided URI in ``_meta`` (``elided``): the ``source``
blocks with those texts in place of the placeholders are the exact source. A server started
with ``--raw-data-uris`` (a read with ``raw_data_uris``, in-process) keeps them in the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# A data URI shorter than this costs less than its placeholder and stays.
MIN_ELIDED_CHARS = 200
PLACEHOLDER_CHARS = 90  # about what a placeholder takes, for sizing a page before it is made

# "data:" + media type and parameters + "," + data, up to whitespace, a quote, a bracket or a
# parenthesis (which end a markdown destination or an HTML attribute).
DATA_URI = re.compile(r"data:[A-Za-z0-9.+/-]*(?:;[^\s,;()\"'<>\[\]]*)*,[^\s()\"'<>\[\]]*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int  # exclusive

    def __len__(self) -> int:
        return self.end - self.start


def data_uri_spans(text: str) -> list[Span]:
    """Where the long ``data:`` URIs are in ``text``, in order."""
    return [
        Span(match.start(), match.end())
        for match in DATA_URI.finditer(text)
        if match.end() - match.start() >= MIN_ELIDED_CHARS
    ]


def shown_chars(text: str) -> int:
    """Characters of ``text`` once its long data URIs are placeholders (for sizing a page)."""
    return len(text) - sum(len(span) - PLACEHOLDER_CHARS for span in data_uri_spans(text))


def media_prefix(uri: str) -> str:
    """``data:image/png;base64,`` of a data URI: what stays visible of it."""
    head = uri.split(",", 1)[0]
    return (head[:60] + "…" if len(head) > 60 else head) + ","


def placeholder(uri: str, carried_by: int | None, reason: str = "") -> str:
    """The text that stands for ``uri``: its media type, its size, and the image block carrying
    it (``carried_by``, 1-based among the images of the result) or why none does."""
    size = f"{len(uri):,} characters"
    if carried_by is not None:
        return f"{media_prefix(uri)}… [{size}: image {carried_by} of this result]"
    return f"{media_prefix(uri)}… [{size} elided{': ' + reason if reason else ''}]"


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of a text block: the source itself (``original`` None), or a placeholder standing
    for the data URI ``original``."""

    text: str
    original: str | None = None


def elide(text: str, describe: Callable[[str], str]) -> list[Piece]:
    """Split ``text`` at its long data URIs; ``describe(uri)`` gives each one's placeholder."""
    pieces: list[Piece] = []
    position = 0
    for span in data_uri_spans(text):
        if span.start > position:
            pieces.append(Piece(text[position : span.start]))
        uri = text[span.start : span.end]
        pieces.append(Piece(describe(uri), uri))
        position = span.end
    if position < len(text) or not pieces:
        pieces.append(Piece(text[position:]))
    return pieces
