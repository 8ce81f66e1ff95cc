"""The article-extraction benchmark's metric, exactly as the benchmark defines it.

Text is split into ``\\w+`` tokens; shingles are windows of 4 consecutive tokens (a text with
fewer than 4 tokens is one shingle of all of them; an empty text has none). For each page the
multiset overlap of predicted and true shingles gives TP, FP and FN, normalised to sum to 1 so a
long page weighs no more than a short one. Precision and recall are averaged over pages: a page
with no predicted and no true-positive shingles (TP + FP = 0) is left out of the precision
average, one with TP + FN = 0 out of the recall average, and a page with FP = FN = 0 scores 1.
F1 is the harmonic mean of the averaged precision and recall.

This mirrors ``evaluate.py`` of scrapinghub/article-extraction-benchmark, so figures computed here
are comparable with the published table.
"""

from __future__ import annotations

import random
import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

SHINGLE_SIZE = 4
_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text or "")


def shingles(text: str, size: int = SHINGLE_SIZE) -> Counter[tuple[str, ...]]:
    """Multiset of ``size``-token windows of ``text``."""
    tokens = tokenize(text)
    if not tokens:
        return Counter()
    if len(tokens) < size:
        return Counter([tuple(tokens)])
    return Counter(tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1))


@dataclass(frozen=True)
class PageCounts:
    """Normalised shingle overlap of one page: ``tp + fp + fn`` is 1, or all are 0 for two empty texts."""

    tp: float
    fp: float
    fn: float

    @property
    def precision(self) -> float:
        if self.fp == self.fn == 0:
            return 1.0
        if self.tp == self.fp == 0:
            return 0.0
        return self.tp / (self.tp + self.fp)

    @property
    def recall(self) -> float:
        if self.fp == self.fn == 0:
            return 1.0
        if self.tp == self.fn == 0:
            return 0.0
        return self.tp / (self.tp + self.fn)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def page_counts(true: str, predicted: str) -> PageCounts:
    """TP, FP and FN of ``predicted`` against ``true`` for one page, normalised to sum to 1."""
    true_shingles = shingles(true)
    predicted_shingles = shingles(predicted)
    tp = sum((true_shingles & predicted_shingles).values())
    fp = sum((predicted_shingles - true_shingles).values())
    fn = sum((true_shingles - predicted_shingles).values())
    total = tp + fp + fn
    if total == 0:
        return PageCounts(0.0, 0.0, 0.0)
    return PageCounts(tp / total, fp / total, fn / total)


@dataclass(frozen=True)
class Scores:
    precision: float
    recall: float
    f1: float
    pages: int


def aggregate(counts: Iterable[PageCounts]) -> Scores:
    """Average per-page precision and recall with the benchmark's skip rules; F1 from the averages."""
    pages: Sequence[PageCounts] = list(counts)
    precision, recall = _averages(_terms(pages))
    return Scores(precision=precision, recall=recall, f1=_harmonic(precision, recall), pages=len(pages))


_Term = tuple[float | None, float | None]  # a page's precision and recall, None where skipped


def _terms(pages: Sequence[PageCounts]) -> list[_Term]:
    return [(c.precision if c.tp + c.fp > 0 else None, c.recall if c.tp + c.fn > 0 else None) for c in pages]


def _averages(terms: Sequence[_Term]) -> tuple[float, float]:
    precisions = [p for p, _ in terms if p is not None]
    recalls = [r for _, r in terms if r is not None]
    return (
        statistics.fmean(precisions) if precisions else 0.0,
        statistics.fmean(recalls) if recalls else 0.0,
    )


def _harmonic(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


@dataclass(frozen=True)
class Difference:
    """F1 of one extractor minus another's on the same pages, with a 95 % paired bootstrap interval."""

    estimate: float
    low: float
    high: float
    pages: int


def paired_f1_difference(
    first: Sequence[PageCounts],
    second: Sequence[PageCounts],
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> Difference:
    """``F1(first) - F1(second)``, the two scored on the same pages in the same order.

    The interval resamples pages with replacement, keeping each page's pair together, so it says
    how far the difference could move on another draw of pages like these; a different set of
    sites is such a draw. Percentile interval, fixed seed: the same inputs give the same interval.
    """
    if len(first) != len(second):
        raise ValueError("the two extractors must be scored on the same pages")
    estimate = aggregate(first).f1 - aggregate(second).f1
    if not first:
        return Difference(0.0, 0.0, 0.0, 0)
    rng = random.Random(seed)
    n = len(first)
    terms = (_terms(first), _terms(second))
    draws = []
    for _ in range(resamples):
        picks = [rng.randrange(n) for _ in range(n)]
        draws.append(
            _harmonic(*_averages([terms[0][i] for i in picks]))
            - _harmonic(*_averages([terms[1][i] for i in picks]))
        )
    draws.sort()
    return Difference(
        estimate=estimate,
        low=draws[int(0.025 * (resamples - 1))],
        high=draws[int(0.975 * (resamples - 1))],
        pages=n,
    )


# --- "must contain" and "must not contain" sentences -------------------------------------------
#
# The web-content-extraction benchmark gives each page sentences a good extraction keeps ("with")
# and boilerplate it leaves out ("without"); its runner counts a sentence as present when it is a
# case-insensitive substring of the output. Here both sides are also NFKC-normalised and their
# whitespace collapsed, so that a sentence split over two lines by a markdown renderer (or a
# non-breaking space in the page) still counts.


def _normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


@dataclass(frozen=True)
class SnippetCounts:
    """How many of one page's must / must-not sentences an output contains."""

    must_found: int
    must_total: int
    must_not_found: int
    must_not_total: int


def snippet_counts(text: str, must_contain: Sequence[str], must_not_contain: Sequence[str]) -> SnippetCounts:
    """Which of the page's sentences ``text`` contains (case-insensitive substrings, see above)."""
    normal = _normalise(text)

    def found(snippets: Sequence[str]) -> int:
        return sum(1 for snippet in snippets if _normalise(snippet) and _normalise(snippet) in normal)

    return SnippetCounts(
        found(must_contain), len(must_contain), found(must_not_contain), len(must_not_contain)
    )


@dataclass(frozen=True)
class SnippetRates:
    """Mean share of must sentences kept (higher is better) and of must-not sentences let through
    (lower is better), each over the pages that have such sentences (None when none has)."""

    must: float | None
    must_not: float | None
    pages_with_must: int
    pages_with_must_not: int


def snippet_rates(counts: Iterable[SnippetCounts]) -> SnippetRates:
    pages = list(counts)
    kept = [c.must_found / c.must_total for c in pages if c.must_total]
    leaked = [c.must_not_found / c.must_not_total for c in pages if c.must_not_total]
    return SnippetRates(
        statistics.fmean(kept) if kept else None,
        statistics.fmean(leaked) if leaked else None,
        len(kept),
        len(leaked),
    )
