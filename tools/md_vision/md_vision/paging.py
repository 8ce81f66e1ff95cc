"""Results sized for a model: the token budget of one result, page cuts, and index cursors (pure).

A model client takes a tool result only up to a limit (common clients cap it at about 25,000
tokens), so ``index_md`` and ``read_md_with_images`` keep the text of one result within a token
budget (``--max-result-tokens``, or ``max_tokens`` per call) and say how to get the rest:

- ``read_md_with_images`` ends a page at a line end and names the next call
  (``line_range=[next, last]``): a plain argument the model already knows.
- ``index_md`` hands out a cursor, as MCP paginates its list results: an opaque string, returned
  with a page when more follows and passed back unchanged to get the next page
  (https://modelcontextprotocol.io/specification/2026-07-28/server/utilities/pagination). A
  cursor names the uri it belongs to and, for a folder, a fingerprint of the file list, so a
  cursor used on another uri, or after files were added or removed, is refused with a message
  instead of silently showing the wrong files.

Tokens are estimated as characters / 4, the usual estimate for English text and markdown; paths
and numbers take more tokens per character, so the default budget (25,000 tokens, 100,000
characters) is a little above what a strict client counts. Lower it with the flag when a client
counts strictly.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

CHARS_PER_TOKEN = 4
DEFAULT_RESULT_TOKENS = 25_000
MIN_RESULT_TOKENS = 500
CURSOR_VERSION = 1

IndexPart = Literal["overview", "detail"]


class CursorError(ValueError):
    """A cursor that cannot continue this index; the message says what to do."""


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def char_budget(tokens: int) -> int:
    """Characters of text that ``tokens`` allow."""
    return tokens * CHARS_PER_TOKEN


def lines_that_fit(lengths: Sequence[int], budget: int) -> int:
    """How many of the leading lines (of these lengths, in characters) fit in ``budget``: at least
    one, so that every page moves on."""
    used = 0
    for count, length in enumerate(lengths):
        used += length
        if used > budget:
            return max(1, count)
    return len(lengths)


def items_that_fit(sizes: Iterable[int], budget: int, *, at_least_one: bool = True) -> int:
    """How many of the leading items (of these sizes) fit in ``budget``."""
    used = 0
    count = 0
    for size in sizes:
        if used + size > budget and (count or not at_least_one):
            break
        used += size
        count += 1
    return count


@dataclass(frozen=True, slots=True)
class IndexCursor:
    """Where the next page of an index starts.

    ``uri_key``: :func:`uri_key` of the resolved uri. ``listing``: :func:`listing_fingerprint` of
    the folder's files ("" for a single file). ``part``: the folder overview (files with their
    top-level headings) or the detailed index. ``file``: position of the next file in sorted order;
    ``row``: its next heading row (a file whose index is larger than a page is split by rows).
    """

    uri_key: str
    listing: str
    part: IndexPart
    file: int
    row: int = 0

    def encode(self) -> str:
        payload = {
            "v": CURSOR_VERSION,
            "u": self.uri_key,
            "l": self.listing,
            "p": "o" if self.part == "overview" else "d",
            "f": self.file,
            "r": self.row,
        }
        raw = json.dumps(payload, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(text: str) -> IndexCursor:
    """Read a cursor made by :meth:`IndexCursor.encode`; raises :class:`CursorError`."""
    invalid = CursorError(
        "this cursor is not one index_md gave out (it must be passed back unchanged); call index_md "
        "without a cursor to start from the first page"
    )
    try:
        raw = base64.urlsafe_b64decode(text.strip() + "=" * (-len(text.strip()) % 4))
        payload = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise invalid from None
    if not isinstance(payload, dict) or payload.get("v") != CURSOR_VERSION:
        raise invalid
    uri, listing, part, file, row = (payload.get(key) for key in ("u", "l", "p", "f", "r"))
    if not (
        isinstance(uri, str)
        and isinstance(listing, str)
        and part in ("o", "d")
        and isinstance(file, int)
        and isinstance(row, int)
        and file >= 0
        and row >= 0
    ):
        raise invalid
    return IndexCursor(uri, listing, "overview" if part == "o" else "detail", file, row)


def uri_key(resolved: str) -> str:
    """A short key of the resolved uri (real path or URL) a cursor belongs to."""
    return hashlib.sha256(resolved.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def listing_fingerprint(paths: Iterable[str]) -> str:
    """A fingerprint of a folder's file list (names and order, not contents): files added or
    removed make another one, edited files do not."""
    names = list(paths)
    checksum = zlib.crc32("\0".join(names).encode("utf-8", "surrogatepass"))
    return f"{len(names)}-{checksum:08x}"
