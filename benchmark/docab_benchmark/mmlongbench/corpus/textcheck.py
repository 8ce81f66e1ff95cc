"""Is a page's text layer worth keeping? A cheap test on the extracted text, and the OCR decision (pure).

``check_text(text)`` sorts a page's PDF text into one of four verdicts:

- ``empty``: no letter or digit at all;
- ``sparse``: fewer than ``SPARSE_CHARS`` letters and digits (a running header, a page number, a
  slide title): the page's content, if any, is in its images;
- ``garbled``: at least ``GARBLE_MIN_CHARS`` visible characters of which under
  ``RECOGNISABLE_MIN`` (0.4) sit in recognisable tokens (a broken font encoding gives symbol soup like
  ``! "   #$%& '``, glyph names like ``(cid:5)`` or ``g3g4``, or private-use code points);
- ``ok``: anything else.

A token (a run between spaces, stripped of surrounding punctuation) is *recognisable* when it is a
number (digits with ``, . : / - %`` and currency signs between or around them) or a word: letters
of any script, possibly joined by an apostrophe, hyphen or full stop, with at most one change of
case after the first letter (``iPhone``, not ``hElLo``), and, for a Latin word of four letters or
more, at least one vowel (``y`` counts). Leaders (a token of one repeated punctuation mark, such as
a table of contents' ``.......``) count neither way; born-digital pages measured 0.57-1.0 (tables
of contents and code listings lowest), so 0.4 leaves a margin. The share is counted in characters, not tokens, so a page
of short stray symbols and one long word does not pass. What it cannot see: a font whose codes map
to other valid letters (a shifted alphabet reads as words). ``needs_ocr`` decides from the verdict
and the page's ink (the share of the rendered page that differs from its background), so a blank or
title-only page is not sent to OCR for nothing.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np

Verdict = Literal["ok", "sparse", "garbled", "empty"]
OcrMode = Literal["auto", "always", "never"]
OCR_MODES: Final[tuple[OcrMode, ...]] = ("auto", "always", "never")

SPARSE_CHARS: Final = 120
"""Letters and digits below which a page counts as having almost no text."""
GARBLE_MIN_CHARS: Final = 40
"""Visible characters a page needs before it can be called garbled (a few symbols are just symbols)."""
RECOGNISABLE_MIN: Final = 0.4
"""Share of visible characters in recognisable tokens below which the text is garbled."""
INK_MIN: Final = 0.002
"""Share of a sparse page's pixels that must differ from its background before OCR is worth running."""
_INK_DELTA: Final = 48  # grey levels from the background that count as ink
_INK_STEP: Final = 4  # sample every 4th row and column: ink is a page-level share, not a detail

_STRIP = "\"'`([{<«“‘)]}>»”’.,;:!?*•·–—-_|/\\"
_NUMBER = re.compile(r"^[$€£¥#+\-−(]*\d[\d.,:/\-]*[%‰)]*$")
_VOWELS = frozenset("aeiouyàáâãäåæèéêëìíîïòóôõöøùúûüýÿœ")
_LEADER = re.compile(r"^([^\w\s])\1{2,}$")
_GLYPH_NAME = re.compile(r"^(cid:\d+|g\d+|uni[0-9a-f]{4,}|glyph\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class TextCheck:
    """The verdict on a page's PDF text: ``chars`` letters and digits, ``recognisable`` share (0-1)."""

    verdict: Verdict
    chars: int
    recognisable: float


def _is_latin(char: str) -> bool:
    return "LATIN" in unicodedata.name(char, "")


def _recognisable(token: str) -> bool:
    core = token.strip(_STRIP)
    if not core:
        return False
    if core.isascii() and core.isalpha():  # the common case (glyph names hold digits or a colon)
        changes = sum(1 for a, b in itertools.pairwise(core[1:]) if a.islower() != b.islower())
        return changes <= 1 and (len(core) < 4 or not _VOWELS.isdisjoint(core.lower()))
    if _GLYPH_NAME.match(core):
        return False
    if _NUMBER.match(core):
        return True
    parts = re.split(r"['’\-.]", core)
    if not all(part and all(c.isalpha() for c in part) for part in parts):
        return False
    letters = "".join(parts)
    if any(0xE000 <= ord(c) <= 0xF8FF for c in letters):
        return False
    changes = sum(1 for a, b in itertools.pairwise(letters[1:]) if a.islower() != b.islower())
    if changes > 1:
        return False
    latin = [c for c in letters.lower() if _is_latin(c)]
    return not (len(latin) >= 4 and not any(c in _VOWELS for c in latin))


def check_text(text: str) -> TextCheck:
    """The verdict on a page's extracted text (see the module docstring)."""
    chars = sum(1 for c in text if c.isalnum())
    tokens = [t for t in text.split() if not _LEADER.match(t)]
    visible = sum(len(t) for t in tokens)
    good = sum(len(t) for t in tokens if _recognisable(t))
    share = good / visible if visible else 0.0
    if visible >= GARBLE_MIN_CHARS and share < RECOGNISABLE_MIN:
        return TextCheck("garbled", chars, round(share, 3))
    if chars == 0:
        return TextCheck("empty", 0, round(share, 3))
    if chars < SPARSE_CHARS:
        return TextCheck("sparse", chars, round(share, 3))
    return TextCheck("ok", chars, round(share, 3))


def ink_share(pixels: np.ndarray) -> float:
    """Share of sampled pixels that differ from the page's background (its most common grey level)."""
    sample = pixels[::_INK_STEP, ::_INK_STEP]
    grey = sample if sample.ndim == 2 else sample.min(axis=2)  # a saturated colour on white is ink too
    if grey.size == 0:
        return 0.0
    background = int(np.bincount(grey.ravel(), minlength=256).argmax())
    return float(np.count_nonzero(np.abs(grey.astype(np.int16) - background) > _INK_DELTA) / grey.size)


OcrReason = Literal["always", "garbled", "sparse", "empty"]


def needs_ocr(mode: OcrMode, check: TextCheck, ink: float | None) -> OcrReason | None:
    """Why a page should be OCR'd, or None. ``ink`` is ``ink_share`` of the page (None: unknown, assume some)."""
    if mode == "never":
        return None
    if mode == "always":
        return "always"
    if check.verdict == "garbled":
        return "garbled"
    if check.verdict in ("sparse", "empty") and (ink is None or ink >= INK_MIN):
        return check.verdict
    return None
