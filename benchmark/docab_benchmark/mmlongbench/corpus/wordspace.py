"""Word spaces PDFium drops, put back where the glyph positions and the document's own words agree (pure).

PDFium writes a space between two words only when their glyphs stand further apart than about half
the font's space width. Tightly set text (display type, condensed or justified lines) can place two
words closer than that, and they run together: ``TABLEOF CONTENTS``, ``offbut``. A space is put back
only when two independent pieces of evidence agree:

1. **Geometry**, measured per page by the converter (``run_gaps``, ``split_gap``): inside a run of
   letters on one baseline in one size, the gap between two neighbouring glyphs (from the end of
   one glyph's advance to the start of the next, in ems of the font size) is at least
   ``MIN_GAP_EM`` and wider by at least ``MIN_EXCESS_EM`` than every other gap in the run and
   than the usual gap after the same letter on the page (``usual_gaps``). Letter-spaced text
   (every gap wide), kerning (small, mostly negative) and a font whose declared width for a glyph is
   too narrow (the same gap after that glyph everywhere) fail it.
2. **Vocabulary**, decided per document (``restore_word_spaces``): the run is rare in the document
   (at most ``MAX_JOINED_COUNT`` times), and both parts are words the document uses on their own at
   least ``MIN_PART_COUNT`` times, each at least two letters long (``a``, ``A`` and ``I`` excepted).
   Compounds and names whose parts are common words (``overall``, ``airways``, ``Newcastle``) pass
   this test; they keep their spelling because their glyphs are set without a gap.

Why both: on the dev PDFs, runs of letters hold natural gaps of up to 0.1 em (per-glyph positioning
in office documents: ``duri|ng`` at 0.07 em), about as wide as the narrowest dropped spaces (0.07-0.09
em in the cases found), so geometry alone proposes false splits; and about one run per page is a
real word that cuts into two common ones (``show|ing``, ``over|all``), so vocabulary alone would
split real words. The thresholds were chosen on the dev PDFs and the test PDFs of pdf.js and
py-pdf; on test PDFs of pdfplumber and PyMuPDF not looked at before, every space put back was a real
one (benchmark/README.md, "Word spaces PDFium drops", with the command). Only Latin, Greek and
Cyrillic letters are considered: other scripts do not separate words with spaces, or run right to
left. The converter measures gaps only in ``runs_to_measure`` (the measurement is the costly step).
"""

from __future__ import annotations

import itertools
import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from docab_benchmark.mmlongbench.corpus.model import PageContent, TextLine

MIN_GAP_EM: Final = 0.05
"""Smallest gap (ems) between two letters that can stand for a dropped space."""
MIN_EXCESS_EM: Final = 0.05
"""How much wider (ems) that gap must be than every other gap in its run of letters."""
MIN_SINGLE_LETTER_GAP_EM: Final = 0.15
"""Smallest gap (ems) that splits off a one-letter word (``a``, ``I``): wider than any natural gap
inside a word measured (0.11 em), since a lone letter is the easiest part to find by chance."""
USUAL_MIN_SAMPLES: Final = 5
"""Gaps after a letter needed before its usual gap is discounted (``usual_gaps``)."""
MAX_JOINED_COUNT: Final = 2
"""A run of letters seen more often in the document is a word of its own, never split."""
MIN_PART_COUNT: Final = 3
"""Times each part must occur in the document as a word of its own."""
MIN_RUN_LETTERS: Final = 3
"""Shortest run that can hold two words (``a`` or ``I`` and a word of two letters)."""
SINGLE_LETTER_WORDS: Final = frozenset({"a", "A", "I"})
_SAME_LINE_EM: Final = 0.02  # ems two glyph boxes' tops and bottoms may differ on one baseline in one size

LETTER_RUN: Final = re.compile(r"[^\W\d_]+")
"""A run of letters: a token of the vocabulary, and where a dropped space can hide."""


def in_spaced_script(run: str) -> bool:
    """Latin, Greek and Cyrillic letters (and the Latin ligatures ﬀ-ﬆ): scripts that space their words."""
    return all(ord(c) < 0x0530 or 0xFB00 <= ord(c) <= 0xFB06 for c in run)


def word_key(word: str) -> str:
    """The vocabulary's key for a word: case folded, ligatures (ﬁ) and other compatibility forms unfolded."""
    return (word if word.isascii() else unicodedata.normalize("NFKC", word)).casefold()


def run_gaps(boxes: Sequence[tuple[float, float, float, float]]) -> list[float] | None:
    """The gaps (ems) between consecutive glyphs of a run, from their loose boxes ``(left, right, bottom, top)``.

    A loose box spans a glyph's advance horizontally and its font's descent to ascent vertically,
    so its height is the font size. None when the run does not sit on one baseline in one size or
    does not advance left to right (rotated, vertical or right-to-left text): its gaps say nothing.
    """
    gaps: list[float] = []
    for (left, right, bottom, top), (next_left, _, next_bottom, next_top) in itertools.pairwise(boxes):
        em = top - bottom
        if (
            em <= 0
            or right <= left
            or next_left <= left
            or abs(next_bottom - bottom) > _SAME_LINE_EM * em
            or abs(next_top - top) > _SAME_LINE_EM * em
        ):
            return None
        gaps.append((next_left - right) / em)
    return gaps


def usual_gaps(runs: Iterable[tuple[str, Sequence[float]]]) -> dict[str, float]:
    """The median gap (ems, never below 0) after each letter over ``(letters, gaps)`` runs.

    A font whose declared width for a glyph is narrower than its advance shows the same gap after
    that glyph everywhere (0.07 em after every ``t`` in one test PDF): ``split_gap`` wants a word
    space to be wider than that too. Letters seen fewer than ``USUAL_MIN_SAMPLES`` times get no entry.
    """
    after: dict[str, list[float]] = {}
    for letters, gaps in runs:
        for letter, gap in zip(letters, gaps, strict=False):
            after.setdefault(letter, []).append(gap)
    return {
        letter: max(statistics.median(found), 0.0)
        for letter, found in after.items()
        if len(found) >= USUAL_MIN_SAMPLES
    }


def split_gap(
    gaps: Sequence[float], letters: str = "", usual: Mapping[str, float] | None = None
) -> int | None:
    """Index of the gap that stands apart like a word space (rule 1 of the module docstring), or None.

    With ``letters`` (the run) and ``usual`` (``usual_gaps`` of the page), the gap must also be
    ``MIN_EXCESS_EM`` wider than the usual gap after its letter.
    """
    if not gaps:
        return None
    widest = max(range(len(gaps)), key=gaps.__getitem__)
    gap = gaps[widest]
    others = [other for index, other in enumerate(gaps) if index != widest]
    if gap < MIN_GAP_EM or (others and gap - max(others) < MIN_EXCESS_EM):
        return None
    if usual and widest < len(letters) and gap - usual.get(letters[widest], 0.0) < MIN_EXCESS_EM:
        return None
    return widest


def runs_to_measure(texts: Iterable[str]) -> frozenset[str]:
    """The runs of letters (``word_key``) of ``texts`` worth measuring for a dropped space.

    A run seen more than ``MAX_JOINED_COUNT`` times in these pages is seen that often in the
    document, and is never split; nor is a run that does not cut into two words these pages use
    (``a`` and ``I`` count as words). The converter measures glyph gaps only in the runs left,
    a few in a page: the measurement is the costly step. Used on a chunk of pages, it can miss a
    space whose halves the chunk never uses on their own: recall, never precision, is lost.
    """
    counts = Counter(word_key(run) for text in texts for run in LETTER_RUN.findall(text))
    return frozenset(
        key
        for key, count in counts.items()
        if count <= MAX_JOINED_COUNT
        and len(key) >= MIN_RUN_LETTERS
        and in_spaced_script(key)
        and any(_seen(key[:cut], counts) and _seen(key[cut:], counts) for cut in range(1, len(key)))
    )


def _seen(part: str, counts: Counter[str]) -> bool:
    return part in ("a", "i") if len(part) == 1 else counts[part] > 0


def word_counts(pages: Iterable[PageContent]) -> Counter[str]:
    """How often each word (``word_key``) occurs in the pages' PDF text."""
    counts: Counter[str] = Counter()
    for page in pages:
        for line in page.lines:
            counts.update(word_key(word) for word in LETTER_RUN.findall(line.text))
    return counts


def _is_word(part: str, counts: Counter[str], gap: float) -> bool:
    if len(part) == 1:
        return part in SINGLE_LETTER_WORDS and gap >= MIN_SINGLE_LETTER_GAP_EM
    return counts[word_key(part)] >= MIN_PART_COUNT


def splits_into_words(
    run: str, offset: int, counts: Counter[str], gap: float = MIN_SINGLE_LETTER_GAP_EM
) -> bool:
    """Rule 2 of the module docstring: ``run`` is rare and both sides of ``offset`` are common words.

    Never true for a run outside the scripts that space their words (``in_spaced_script``).

    ``gap`` is the candidate's gap (ems): a one-letter part needs ``MIN_SINGLE_LETTER_GAP_EM``.
    """
    return (
        in_spaced_script(run)
        and counts[word_key(run)] <= MAX_JOINED_COUNT
        and _is_word(run[:offset], counts, gap)
        and _is_word(run[offset:], counts, gap)
    )


@dataclass(frozen=True)
class _Run:
    start: int
    end: int


def _run_at(text: str, offset: int) -> _Run | None:
    """The run of letters around ``offset`` (a space would go before ``text[offset]``)."""
    if not 0 < offset < len(text) or not (text[offset - 1].isalpha() and text[offset].isalpha()):
        return None
    start, end = offset - 1, offset + 1
    while start > 0 and LETTER_RUN.match(text, start - 1, start):
        start -= 1
    while end < len(text) and LETTER_RUN.match(text, end, end + 1):
        end += 1
    return _Run(start, end)


def _restore_line(line: TextLine, counts: Counter[str]) -> tuple[TextLine, list[str]]:
    if not line.gaps:
        return line, []
    text, restored = line.text, []
    for candidate in sorted(line.gaps, key=lambda c: c.offset, reverse=True):  # right to left: offsets hold
        run = _run_at(text, candidate.offset)
        if run is None:
            continue
        word = text[run.start : run.end]
        if splits_into_words(word, candidate.offset - run.start, counts, candidate.gap):
            text = f"{text[: candidate.offset]} {text[candidate.offset :]}"
            restored.append(f"{word[: candidate.offset - run.start]} {word[candidate.offset - run.start :]}")
    return replace(line, text=text, gaps=()), restored[::-1]


def restore_word_spaces(pages: Sequence[PageContent]) -> list[PageContent]:
    """``pages`` with the dropped spaces both rules agree on put back.

    Each page's ``spaces_restored`` lists the words split, as written after (``off but``); lines
    lose their ``gaps`` either way. A document without a gap candidate is returned as it is,
    without counting its words.
    """
    if not any(line.gaps for page in pages for line in page.lines):
        return list(pages)
    counts = word_counts(pages)
    result: list[PageContent] = []
    for page in pages:
        lines: list[TextLine] = []
        restored: list[str] = []
        for line in page.lines:
            new_line, words = _restore_line(line, counts)
            lines.append(new_line)
            restored.extend(words)
        result.append(replace(page, lines=tuple(lines), spaces_restored=tuple(restored)))
    return result
