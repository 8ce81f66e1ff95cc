"""Text overlap in word shingles, the unit of the extraction benchmark's metric. Pure.

Two steps compare texts this way: the second opinion on where an article ends
(:mod:`markfetch.consensus`) and the test for a hidden copy of shown text
(:func:`markfetch.htmlprep.remove_hidden`).
"""

from __future__ import annotations

import re
from collections import Counter

SHINGLE_WORDS = 4
_WORD = re.compile(r"\w+", re.UNICODE)


def shingles(text: str) -> Counter[tuple[str, ...]]:
    """Multiset of windows of SHINGLE_WORDS words (one window for a shorter text, none for none)."""
    words = _WORD.findall(text.casefold())
    if len(words) < SHINGLE_WORDS:
        return Counter([tuple(words)]) if words else Counter()
    return Counter(tuple(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1))
