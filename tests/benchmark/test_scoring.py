"""Every official scoring rule pinned with the spec's examples, and the crashes of the official code turned into scores."""

from __future__ import annotations

import pytest

from docab_benchmark.mmlongbench.scoring import (
    ScoredAnswer,
    acc_and_f1,
    anls,
    clean_string,
    is_exact_match,
    levenshtein,
    score_answer,
    summarise,
)


@pytest.mark.parametrize(
    ("pred", "expected"),
    [
        ("0.1829", 1.0),
        ("18.29", 1.0),
        ("18.29%", 1.0),
        ("1829", 1.0),
        ("18.3", 1.0),
        ("18", 0.0),
        ("abc", 0.0),
    ],
)
def test_float_percent_scale_tolerance_and_rounding(pred: str, expected: float) -> None:
    # gold/100, gold, gold*100 all count; 18.3 is within 1 %, 18 is not (and rounds to 18.0 at 2 places)
    assert score_answer("18.29%", pred, "Float") == expected


def test_float_rounding_to_shared_decimals() -> None:
    # 3.049 vs 3.05: not within 1 %? |0.001| <= 0.0305, so tolerance alone matches
    assert score_answer("3.049", "3.05", "Float") == 1.0
    # rounding to max(min(decimals), 2) = 2 places: 1234.567 vs 1234.57
    assert score_answer("1234.567", "1234.57", "Float") == 1.0
    # far values fail both tests
    assert score_answer("0.105", "0.2", "Float") == 0.0
    # currency and parentheticals are cleaned before parsing
    assert score_answer("$30.3", "30.3 (approx)", "Float") == 1.0


def test_float_unparsable_gold_or_pred_scores_zero() -> None:
    assert score_answer("1,000.5", "1000.5", "Float") == 0.0
    assert score_answer("12.5", "", "Float") == 0.0
    assert score_answer("12.5", "nan", "Float") == 0.0


@pytest.mark.parametrize(
    ("gold", "pred", "expected"),
    [
        ("1000", "1000", 1.0),
        ("1000", "1,000", 0.0),  # "1,000" does not parse
        ("1000", "1000.0", 1.0),
        ("7", "7.9", 1.0),  # int(float(pred)) truncates
        ("7", "seven", 0.0),
        ("21%", "21", 0.0),  # non-integer Int golds never score
        ("14:04 CET", "14:04 CET", 0.0),
        ("7", "inf", 0.0),
    ],
)
def test_int_rules(gold: str, pred: str, expected: float) -> None:
    assert score_answer(gold, pred, "Int") == expected


def test_str_1000_vs_1_000_is_an_exact_match_string() -> None:
    assert is_exact_match("1000")
    assert score_answer("1000", "1,000", "Str") == 0.0


@pytest.mark.parametrize(
    "text",
    [
        "555-1234",
        "020 7946",
        "12345",
        "2023-04-05",
        "2023 04",
        "a@b.org",
        "page 3",
        "https://x.org/a",
        "run.py",
        "nb.ipynb",
        "9 a.m.",
        "5 p.m. sharp",
    ],
)
def test_exact_match_patterns(text: str) -> None:
    assert is_exact_match(text)


@pytest.mark.parametrize("text", ["1-800-555-1234", "abc 12", "twelve", "2023-4-5", "x@y"])
def test_not_exact_match(text: str) -> None:
    assert not is_exact_match(text)


def test_phone_numbers_need_equality_not_anls() -> None:
    assert score_answer("555-1234", "555-1234", "Str") == 1.0
    assert score_answer("555-1234", "555-1235", "Str") == 0.0  # ANLS would give 0.875


def test_long_phone_number_falls_back_to_anls() -> None:
    assert score_answer("1-800-555-1234", "1-800-555-1235", "Str") == pytest.approx(1 - 1 / 14)


def test_parentheticals_quotes_dollar_and_percent_are_cleaned() -> None:
    assert clean_string("  Apple Inc. (AAPL) ") == "apple inc."
    assert clean_string("'quoted'") == "quoted"
    assert clean_string("$$12%%") == "12"
    assert clean_string("5 miles") == "5 miles"  # the official no-op suffix strip
    assert score_answer("Graduate School (NUS)", "graduate school", "Str") == 1.0


def test_not_answerable_vs_lowercase_with_period_scores_anls() -> None:
    assert score_answer("Not answerable", "Not answerable", "None") == 1.0
    assert score_answer("Not answerable", "not answerable.", "None") == pytest.approx(1 - 1 / 15)
    assert score_answer("Not answerable", "Fail to answer", "None") == 0.0


def test_anls_threshold_edge() -> None:
    assert anls("abcd", "abcd") == 1.0
    assert anls("abcd", "abxy") == 0.0  # exactly 0.5 becomes 0
    assert anls("abcdefgh", "abcdefxy") == 0.75
    assert anls("", "") == 1.0
    assert anls("", "a") == 0.0
    assert levenshtein("kitten", "sitting") == 3


def test_lists_in_any_order() -> None:
    assert score_answer("['gray', 'red']", "['red', 'gray']", "List") == 1.0
    assert score_answer("['gray', 'red']", "['red', 'grey']", "List") == pytest.approx(0.75)
    assert score_answer("['gray', 'red']", "['red']", "List") == 0.0


def test_numeric_lists_need_exact_join() -> None:
    assert score_answer("['64.3', '62.4', '62.2']", "[62.2, 64.3, 62.4]", "List") == 1.0
    assert score_answer("['90%', '42%', '39%']", "['39%', '42%', '90%']", "List") == 1.0
    assert score_answer("['3', '4']", "['3', '5']", "List") == 0.0


def test_list_scalars_are_wrapped_and_bad_literals_score_zero_without_eval() -> None:
    assert score_answer("['Fact Checker']", "Fact Checker", "List") == 1.0
    assert score_answer("['a']", "[__import__('os').system('echo pwned')]", "List") == 0.0
    assert score_answer("['a', 'b']", "[a, b]", "List") == 0.0
    assert score_answer("['a']", "[" * 5000, "List") == 0.0


def test_gold_empty_list_is_scored_not_crashing() -> None:
    assert score_answer("[]", "[]", "List") == 1.0
    assert score_answer("[]", "['x']", "List") == 0.0
    assert score_answer("[]", "Not answerable", "List") == 0.0


def test_unknown_format_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown answer_format 'Bool'"):
        score_answer("a", "a", "Bool")


def _item(
    gold: str,
    pred: str,
    score: float,
    pages: tuple[int, ...] = (1,),
    sources=("Table",),
    doc_type="Guidebook",
):
    return ScoredAnswer(gold, pred, score, pages, sources, doc_type)


def test_acc_and_generalised_f1_exact_definitions() -> None:
    items = [
        _item("5", "5", 1.0),
        _item("x", "Not answerable", 0.0),  # abstained on an answerable question
        _item("Not answerable", "Not answerable", 1.0, pages=()),
        _item("y", "z", 0.0, pages=(2, 3)),
    ]
    m = acc_and_f1(items)
    assert m.acc == 0.5
    recall = 1.0 / 3  # answerable: 3, score sum 1
    precision = 1.0 / 2  # predictions not "Not answerable": 2
    assert m.recall == pytest.approx(recall)
    assert m.precision == pytest.approx(precision)
    assert m.f1 == pytest.approx(2 * recall * precision / (recall + precision))


def test_precision_counts_only_exact_not_answerable_string() -> None:
    items = [_item("5", "5", 1.0), _item("6", "not answerable", 0.0)]
    assert acc_and_f1(items).precision == 0.5


def test_f1_zero_cases() -> None:
    assert acc_and_f1([]).f1 == 0.0
    assert acc_and_f1([_item("5", "4", 0.0)]).f1 == 0.0
    only_na = [_item("Not answerable", "Not answerable", 1.0, pages=())]
    m = acc_and_f1(only_na)
    assert (m.acc, m.f1) == (1.0, 0.0)


def test_breakdowns() -> None:
    items = [
        _item("5", "5", 1.0, pages=(1,), sources=("Table", "Chart")),
        _item("6", "0", 0.0, pages=(1, 2), sources=("Chart",), doc_type="Brochure"),
        _item("Not answerable", "Not answerable", 1.0, pages=(), sources=()),
        _item("7", "7", 1.0, pages=(), sources=()),  # answerable without evidence: cross-page group
    ]
    s = summarise(items)
    assert (s.single_page.n, s.single_page.acc) == (1, 1.0)
    assert (s.cross_page.n, s.cross_page.acc) == (2, 0.5)
    assert (s.unanswerable.n, s.unanswerable.acc) == (1, 1.0)
    assert {k: v.n for k, v in s.by_evidence_source.items()} == {"Chart": 2, "Table": 1}
    assert s.by_evidence_source["Chart"].acc == 0.5
    assert set(s.by_doc_type) == {"Brochure", "Guidebook"}
    assert s.as_dict()["overall"]["n"] == 4


def test_scored_answer_from_a_question() -> None:
    from docab_benchmark.mmlongbench.questions import parse_rows

    (question,) = parse_rows(
        [
            {
                "doc_id": "d.pdf",
                "doc_type": "Brochure",
                "question": "q",
                "answer": "5",
                "evidence_pages": "[1]",
                "evidence_sources": "['Chart']",
                "answer_format": "Int",
            }
        ]
    )
    item = ScoredAnswer.of(question, "5", score_answer(question.answer, "5", question.answer_format))
    assert item == ScoredAnswer("5", "5", 1.0, (1,), ("Chart",), "Brochure")
