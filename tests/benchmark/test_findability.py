"""Findability: the matching rule, which questions count, the tally, and the command with a missing peer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from docab_benchmark.mmlongbench.findability import (
    answer_items,
    find_answers,
    format_findings,
    is_findable_question,
    normalise,
    occurs,
)
from docab_benchmark.mmlongbench.questions import Question


def question(
    answer: str, fmt: str = "Str", pages: tuple[int, ...] = (2,), sources: tuple[str, ...] = ("Table",)
) -> Question:
    return Question(f"q-{answer}-{pages}", "doc.pdf", "Report", "?", answer, fmt, pages, sources)


@pytest.mark.parametrize(
    ("answer", "text", "found"),
    [
        ("18.29%", "Democrats were 18.29 % of all voters.", True),
        ("1000", "revenue of 1,000 dollars", True),
        ("5", "in 15 states", False),
        ("cat", "a category", False),
        ("information", "infor-\nmation retrieval", True),
        ("Smith’s report", "SMITH'S REPORT", True),
        ("2014-2015", "in 2014–2015", True),
        ("42", "the answer is 42.", True),
        ("U.S.", "the U.S. economy", True),
        ("3.5", "35 percent", False),
    ],
)
def test_matching_rule(answer: str, text: str, found: bool) -> None:
    assert occurs(normalise(answer), normalise(text)) is found


def test_list_answers_need_every_item_and_bad_questions_are_left_out() -> None:
    assert answer_items(question("['Apple', 'Pear']", "List")) == ("Apple", "Pear")
    assert answer_items(question("[broken", "List")) == ("[broken",)
    assert is_findable_question(question("x"), 3)
    assert not is_findable_question(question("x", pages=(4,)), 3)  # beyond the PDF
    assert not is_findable_question(question("x", pages=(0,)), 3)
    assert not is_findable_question(question("x", pages=()), 3)
    assert not is_findable_question(question("Not answerable", "None"), 3)


def test_tally_by_source_with_unpaged_and_missing_documents() -> None:
    questions = [
        question("apple", pages=(2,), sources=("Table",)),
        question("['pear', 'plum']", "List", pages=(1, 2), sources=("Table", "Chart")),
        question("kiwi", pages=(1,), sources=()),
    ]
    pages = {"doc.pdf": ["pear and kiwi", "apple, plum"]}
    result = find_answers("x", questions, pages, {"doc.pdf": 2})
    assert (result.overall.questions, result.overall.on_evidence, result.overall.anywhere) == (3, 3, 3)
    assert (
        result.by_source["Chart"].questions == 1 and result.by_source["(no evidence source)"].on_evidence == 1
    )
    # kiwi is on page 1 only: asked on page 2 it is found anywhere, not on its evidence page
    moved = find_answers("x", [question("kiwi", pages=(2,))], pages, {"doc.pdf": 2})
    assert (moved.overall.on_evidence, moved.overall.anywhere) == (0, 1)
    whole = find_answers("x", questions, {"doc.pdf": ["pear and kiwi apple, plum"]}, {"doc.pdf": 2})
    assert (whole.overall.paged, whole.overall.anywhere) == (0, 3)
    assert "n/a (no pages)" in format_findings([whole])
    missing = find_answers("y", questions, {}, {"doc.pdf": 2})
    assert missing.documents_missing == ("doc.pdf",) and missing.overall.anywhere == 0
    table = format_findings([result, missing], {"x": 1.0, "y": 2.0})
    assert "100.0 % (3/3)" in table and "y: 1 document(s) not converted" in table


def test_command_on_the_suite_and_a_missing_peer_names_the_uv_line(
    suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from docab.cli.main import main

    assert (
        main(
            [
                "findability",
                "--data",
                str(suite_dir),
                "--corpus",
                str(tmp_path / "c"),
                "--converters",
                "docab",
                "--jobs",
                "1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "docab-suite/v1: 3 PDFs, 12 pages" in out and "docab " in out and "evidence pages" in out
    # peers are comparisons, never docab dependencies: absent here, named with the line that brings them
    assert importlib.util.find_spec("pypdf") is None
    code = main(["findability", "--data", str(suite_dir), "--converters", "docab,pypdf"])
    err = capsys.readouterr().err
    assert code != 0
    assert (
        f"uv run --with 'pypdf' docab findability --data {suite_dir} --converters docab,pypdf\n" in err + "\n"
    )
    assert main(["findability", "--data", str(suite_dir), "--converters", "docx2txt"]) != 0
    assert "unknown converter(s) docx2txt" in capsys.readouterr().err
    # a bad OCR flag is reported before any data is read (the data here does not even exist)
    assert main(["findability", "--data", str(suite_dir / "nowhere"), "--ocr-passes", "binary"]) == 2
    err = capsys.readouterr().err
    assert "--ocr-passes 'binary'" in err and "question data not found" not in err
    # the same checks as docab convert (one shared parser of the OCR flags)
    assert main(["findability", "--data", str(suite_dir / "nowhere"), "--ocr-languages", "eng;rm -rf"]) == 2
    assert "give Tesseract codes joined by '+'" in capsys.readouterr().err
    assert main(["findability", "--data", str(suite_dir / "nowhere"), "--ocr-dpi", "10"]) == 2
    assert "--ocr-dpi must be between 72 and 600" in capsys.readouterr().err
