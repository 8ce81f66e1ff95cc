"""Loading questions: safe literal parsing, typed records, versions, every source kind, filters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docab_benchmark.mmlongbench.errors import DataError
from docab_benchmark.mmlongbench.questions import (
    OFFICIAL_PAGE_CAP,
    QuestionFilter,
    load_questions,
    make_qid,
    parse_rows,
    select_questions,
)
from tests.conftest import shared_data


def row(i: int = 0, **over: str) -> dict[str, str]:
    base = {
        "doc_id": f"doc{i % 3}.pdf",
        "doc_type": ["Guidebook", "Academic paper", "Brochure"][i % 3],
        "question": f"question {i}?",
        "answer": "5",
        "evidence_pages": "[1, 2]",
        "evidence_sources": "['Table']",
        "answer_format": "Int",
    }
    base.update(over)
    return base


def write_github_clone(root: Path, rows: list[dict[str, str]]) -> Path:
    (root / "data" / "documents").mkdir(parents=True)
    (root / "eval").mkdir()
    (root / "data" / "samples.json").write_text(json.dumps(rows), encoding="utf-8")
    (root / "eval" / "prompt_for_answer_extraction.md").write_text("PROMPT", encoding="utf-8")
    return root


def test_string_fields_are_parsed_into_typed_tuples() -> None:
    (q,) = parse_rows([row(evidence_pages="[3, 5]", evidence_sources="['Pure-text (Plain-text)', 'Chart']")])
    assert q.evidence_pages == (3, 5)
    assert q.evidence_sources == ("Pure-text (Plain-text)", "Chart")
    assert q.qid == make_qid("doc0.pdf", "question 0?")
    assert q.to_row()["evidence_pages"] == "[3, 5]"


def test_real_lists_and_empty_strings_are_accepted() -> None:
    (q,) = parse_rows([row(evidence_pages=[4], evidence_sources="")])  # type: ignore[arg-type]
    assert (q.evidence_pages, q.evidence_sources) == ((4,), ())


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("evidence_pages", "[1, 2", "is not a list literal"),
        ("evidence_pages", "__import__('os').system('true')", "is not a list literal"),
        ("evidence_pages", "['x']", "is not an integer"),
        ("evidence_pages", "[1.5]", "is not an integer"),
        ("evidence_pages", "5", "is not a list"),
        ("evidence_sources", "[1]", "must hold strings"),
        ("answer_format", "Bool", "answer_format 'Bool'"),
    ],
)
def test_bad_fields_name_the_question(field: str, value: str, message: str) -> None:
    with pytest.raises(DataError, match=rf"samples.json, question 1: .*{message}"):
        parse_rows([row(0), row(1, **{field: value})], location="samples.json")


def test_missing_field_is_reported() -> None:
    broken = row()
    del broken["answer_format"]
    with pytest.raises(DataError, match="missing field"):
        parse_rows([broken])


def test_duplicate_questions_get_distinct_qids() -> None:
    a, b = parse_rows([row(0), row(0)])
    assert b.qid == f"{a.qid}-2"


def test_filters_each_and_sample_is_seeded_and_ordered() -> None:
    qs = parse_rows(
        [
            row(i, answer="Not answerable", answer_format="None", evidence_pages="[]", evidence_sources="[]")
            if i % 4 == 0
            else row(i)
            for i in range(40)
        ]
    )
    assert {q.doc_id for q in select_questions(qs, QuestionFilter(doc_ids=frozenset({"doc1"})))} == {
        "doc1.pdf"
    }
    assert {q.doc_type for q in select_questions(qs, QuestionFilter(doc_types=frozenset({"Brochure"})))} == {
        "Brochure"
    }
    assert all(q.answerable for q in select_questions(qs, QuestionFilter(answerable_only=True)))
    assert len(select_questions(qs, QuestionFilter(evidence_sources=frozenset({"table"})))) == 30
    assert select_questions(qs, QuestionFilter(evidence_sources=frozenset({"chart"}))) == ()
    first = select_questions(qs, QuestionFilter(sample=7, seed=3))
    assert first == select_questions(qs, QuestionFilter(sample=7, seed=3))
    assert first != select_questions(qs, QuestionFilter(sample=7, seed=4))
    assert list(first) == sorted(first, key=qs.index)
    assert len(select_questions(qs, QuestionFilter(sample=100))) == 40
    with pytest.raises(ValueError, match="unknown evidence source 'pictures'"):
        select_questions(qs, QuestionFilter(evidence_sources=frozenset({"pictures"})))


def test_page_cap_drops_questions_citing_pages_beyond_it() -> None:
    qs = parse_rows(
        [row(0, evidence_pages="[120]"), row(1, evidence_pages="[119, 121]"), row(2, evidence_pages="[]")]
    )
    kept = select_questions(qs, QuestionFilter(max_evidence_page=OFFICIAL_PAGE_CAP))
    assert [q.question for q in kept] == ["question 0?", "question 2?"]


def test_github_clone_layout_finds_documents_and_prompt(tmp_path: Path) -> None:
    root = write_github_clone(tmp_path / "MMLongBench-Doc", [row(i) for i in range(1082)])
    qset = load_questions(root)
    assert qset.version == "mmlongbench-doc/github-1082"
    assert qset.documents_dir == root / "data" / "documents"
    assert qset.extraction_prompt == root / "eval" / "prompt_for_answer_extraction.md"
    assert qset.pdf_path("doc1.pdf") == root / "data" / "documents" / "doc1.pdf"
    assert qset.pdf_path("../../etc/passwd") == root / "data" / "documents" / "passwd"


def test_subset_version_names_count_and_content(tmp_path: Path) -> None:
    folder = tmp_path / "flat"
    folder.mkdir()
    (folder / "samples.json").write_text(json.dumps([row(i) for i in range(5)]))
    a = load_questions(folder)
    assert a.version.startswith("mmlongbench-doc/github-subset-5q-")
    (folder / "samples.json").write_text(json.dumps([row(i, answer="6") for i in range(5)]))
    assert load_questions(folder / "samples.json").version != a.version
    assert load_questions(folder, version="mine").version == "mine"
    filtered = load_questions(folder, criteria=QuestionFilter(sample=2))
    assert (len(filtered), filtered.total) == (2, 5)


def test_huggingface_parquet_snapshot_and_save_to_disk(tmp_path: Path) -> None:
    import datasets

    rows = [row(i) for i in range(1091)]
    snapshot = tmp_path / "hf"
    (snapshot / "data").mkdir(parents=True)
    (snapshot / "documents").mkdir()
    datasets.Dataset.from_list(rows).to_parquet(str(snapshot / "data" / "train-00000-of-00001.parquet"))
    qset = load_questions(snapshot)
    assert qset.version == "mmlongbench-doc/hf-1091"
    assert qset.documents_dir == snapshot / "documents"
    assert qset.questions[3].evidence_pages == (1, 2)
    # the parquet file itself, with the PDFs given explicitly
    single = load_questions(
        snapshot / "data" / "train-00000-of-00001.parquet", documents_dir=tmp_path / "pdfs"
    )
    assert (len(single), single.documents_dir) == (1091, tmp_path / "pdfs")
    saved = tmp_path / "saved"
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows[:10])}).save_to_disk(str(saved))
    assert len(load_questions(saved)) == 10
    with pytest.raises(DataError, match="no split 'test'"):
        load_questions(saved, split="test")
    arrow = next((saved / "train").glob("*.arrow"))
    assert len(load_questions(arrow)) == 10


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "is not valid JSON"), ('{"a": 1}', "must hold a JSON list")],
)
def test_unreadable_samples_file(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "samples.json").write_text(content)
    with pytest.raises(DataError, match=message):
        load_questions(tmp_path)


def test_missing_and_unknown_sources(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="question data not found"):
        load_questions(tmp_path / "nope")
    with pytest.raises(DataError, match="no questions found"):
        load_questions(tmp_path)
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(DataError, match=r"neither a samples \.json"):
        load_questions(tmp_path / "x.txt")
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match="cannot read parquet data"):
        load_questions(tmp_path / "bad.parquet")


def test_shared_dev_folder_loads_with_its_prompt() -> None:
    dev = shared_data("mmlongbench-dev")
    qset = load_questions(dev)
    assert (len(qset), len(qset.doc_ids)) == (117, 14)
    assert qset.version.startswith("mmlongbench-doc/github-subset-117q-")
    assert qset.extraction_prompt == dev / "prompt_for_answer_extraction.md"
    assert all(qset.pdf_path(d).is_file() for d in qset.doc_ids)
    first = qset.questions[0]
    assert (first.answer, first.answer_format, first.evidence_pages) == ("18.29%", "Float", (3, 5))
