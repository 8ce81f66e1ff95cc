"""The benchmark metric on examples small enough to count by hand."""

from __future__ import annotations

import pytest

from docab_benchmark.webextract.metric import (
    PageCounts,
    aggregate,
    page_counts,
    paired_f1_difference,
    shingles,
    tokenize,
)


def test_tokens_are_word_runs_including_underscores_and_unicode() -> None:
    assert tokenize("Hello, world! snake_case 42 café–bar 日本") == [
        "Hello",
        "world",
        "snake_case",
        "42",
        "café",
        "bar",
        "日本",
    ]


def test_shingles_are_four_token_windows_with_multiplicity() -> None:
    assert shingles("a b c d e") == {("a", "b", "c", "d"): 1, ("b", "c", "d", "e"): 1}
    assert shingles("a b c d a b c d") == {
        ("a", "b", "c", "d"): 2,
        ("b", "c", "d", "a"): 1,
        ("c", "d", "a", "b"): 1,
        ("d", "a", "b", "c"): 1,
    }
    assert shingles("a b") == {("a", "b"): 1}  # shorter than 4 tokens: one shingle of all
    assert shingles("  ,. ") == {}


def test_page_counts_by_hand() -> None:
    # true: a b c d e f -> abcd bcde cdef ; predicted: a b c d x -> abcd bcdx
    # TP 1 (abcd), FP 1 (bcdx), FN 2 (bcde, cdef); normalised by 4.
    counts = page_counts("a b c d e f", "a b c d x")
    assert counts == PageCounts(0.25, 0.25, 0.5)
    assert counts.precision == pytest.approx(0.5)
    assert counts.recall == pytest.approx(1 / 3)


def test_multiset_overlap_counts_repeats() -> None:
    # predicted repeats the whole text: every shingle twice, plus the seams
    counts = page_counts("a b c d e", "a b c d e a b c d e")
    # true: abcd bcde (2); predicted: abcd x2, bcde x2, cdea, deab, eabc (7). TP 2, FP 5, FN 0.
    assert (counts.tp, counts.fp, counts.fn) == pytest.approx((2 / 7, 5 / 7, 0.0))
    assert counts.recall == 1.0 and counts.precision == pytest.approx(2 / 7)


def test_edge_rules() -> None:
    assert page_counts("", "") == PageCounts(0.0, 0.0, 0.0)
    perfect = page_counts("same text here now", "same text here now")
    assert (perfect.precision, perfect.recall) == (1.0, 1.0)
    nothing = page_counts("some true text here", "")
    assert (nothing.tp, nothing.fp, nothing.fn) == (0.0, 0.0, 1.0)
    assert nothing.recall == 0.0


def test_aggregate_skips_pages_as_the_benchmark_does() -> None:
    pages = [
        page_counts("a b c d e f", "a b c d x"),  # P 1/2, R 1/3
        page_counts("some true text here", ""),  # no prediction: skipped for P, R 0
        page_counts("", "spurious words in output"),  # no truth: P 0, skipped for R
        page_counts("", ""),  # skipped for both
    ]
    scores = aggregate(pages)
    assert scores.precision == pytest.approx((0.5 + 0.0) / 2)
    assert scores.recall == pytest.approx((1 / 3 + 0.0) / 2)
    assert scores.f1 == pytest.approx(2 * 0.25 * (1 / 6) / (0.25 + 1 / 6))
    assert scores.pages == 4


def test_aggregate_of_nothing_is_zero() -> None:
    assert aggregate([]).f1 == 0.0


PERFECT = PageCounts(1.0, 0.0, 0.0)
HALF_MISSED = PageCounts(0.5, 0.0, 0.5)  # precision 1, recall 0.5


def test_paired_difference_of_identical_scores_is_exactly_zero() -> None:
    pages = [PERFECT, HALF_MISSED, PageCounts(0.5, 0.5, 0.0)]
    diff = paired_f1_difference(pages, pages)
    assert (diff.estimate, diff.low, diff.high, diff.pages) == (0.0, 0.0, 0.0, 3)


def test_paired_difference_estimate_is_the_f1_gap_and_its_interval_brackets_it() -> None:
    first = [PERFECT] * 20
    second = [PERFECT] * 10 + [HALF_MISSED] * 10  # recall 0.75, precision 1
    diff = paired_f1_difference(first, second)
    assert diff.estimate == pytest.approx(1.0 - 2 * 0.75 / 1.75)
    assert 0.0 < diff.low <= diff.estimate <= diff.high < 0.3
    # Resampling keeps pairs together: the same pages in another order give the same figures.
    assert paired_f1_difference(first[::-1], second[::-1]).estimate == pytest.approx(diff.estimate)
    assert paired_f1_difference(first, second) == diff  # fixed seed: reproducible


def test_paired_difference_needs_the_same_pages() -> None:
    with pytest.raises(ValueError, match="same pages"):
        paired_f1_difference([PERFECT], [PERFECT, PERFECT])
    assert paired_f1_difference([], []).pages == 0
