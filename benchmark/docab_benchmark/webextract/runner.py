"""Run extractors over benchmark pages, timing each call and scoring each page. No printing."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from docab_benchmark.webextract.data import Page
from docab_benchmark.webextract.extractors import Extractor, markdown_to_text
from docab_benchmark.webextract.metric import (
    PageCounts,
    Scores,
    SnippetCounts,
    SnippetRates,
    aggregate,
    page_counts,
    snippet_counts,
    snippet_rates,
)


@dataclass
class ExtractorResult:
    extractor: Extractor
    counts: dict[str, PageCounts] = field(default_factory=dict)  # page key -> counts
    seconds: dict[str, float] = field(default_factory=dict)  # page key -> extraction time
    failures: list[str] = field(default_factory=list)  # page keys where the extractor raised
    snippets: dict[str, SnippetCounts] = field(default_factory=dict)  # pages with must/must-not sentences

    def scores(self, keys: Sequence[str] | None = None) -> Scores:
        chosen = self.counts if keys is None else {k: self.counts[k] for k in keys if k in self.counts}
        return aggregate(chosen.values())

    def snippet_rates(self, keys: Sequence[str] | None = None) -> SnippetRates:
        chosen = self.snippets if keys is None else {k: self.snippets[k] for k in keys if k in self.snippets}
        return snippet_rates(chosen.values())

    @property
    def ms_per_page(self) -> float:
        return 1000 * sum(self.seconds.values()) / len(self.seconds) if self.seconds else 0.0


Clock = Callable[[], float]


def evaluate(
    pages: Sequence[Page],
    extractors: Sequence[Extractor],
    *,
    repeat: int = 1,
    clock: Clock = time.perf_counter,
    on_page: Callable[[Page], None] | None = None,
) -> list[ExtractorResult]:
    """Score every extractor on every page.

    Extractors are interleaved page by page, so a machine that gets busier or quieter during the
    run affects them alike; with ``repeat`` > 1 the fastest of the runs is kept for each page.
    Every extractor is called once on the first page before timing starts (imports, caches).
    """
    results = [ExtractorResult(extractor) for extractor in extractors]
    if pages:
        for extractor in extractors:
            _safe(extractor, pages[0])
    for page in pages:
        for result in results:
            best = float("inf")
            output = ""
            for _ in range(max(1, repeat)):
                start = clock()
                output, failed = _safe(result.extractor, page)
                best = min(best, clock() - start)
            if failed:
                result.failures.append(page.key)
            text = markdown_to_text(output) if result.extractor.markdown else output
            result.counts[page.key] = page_counts(page.article_body, text)
            if page.must_contain or page.must_not_contain:
                result.snippets[page.key] = snippet_counts(text, page.must_contain, page.must_not_contain)
            result.seconds[page.key] = best
        if on_page is not None:
            on_page(page)
    return results


def _safe(extractor: Extractor, page: Page) -> tuple[str, bool]:
    try:
        return extractor.extract(page.html, page.url) or "", False
    except Exception:  # one bad page must not end a benchmark run; it scores as empty output
        return "", True


@dataclass(frozen=True)
class PartFigures:
    """One extractor's figures on one part of a set (all pages, dev or validation)."""

    pages: int
    precision: float
    recall: float
    f1: float
    must: float | None  # share of must-contain sentences kept (None: the set has none)
    must_not: float | None  # share of must-not-contain sentences let through (lower is better)


def part_figures(result: ExtractorResult, keys: Sequence[str]) -> PartFigures:
    scores = result.scores(keys)
    rates = result.snippet_rates(keys)
    return PartFigures(scores.pages, scores.precision, scores.recall, scores.f1, rates.must, rates.must_not)
