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

import re
import statistics
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
    precisions = [c.precision for c in pages if c.tp + c.fp > 0]
    recalls = [c.recall for c in pages if c.tp + c.fn > 0]
    precision = statistics.fmean(precisions) if precisions else 0.0
    recall = statistics.fmean(recalls) if recalls else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Scores(precision=precision, recall=recall, f1=f1, pages=len(pages))
