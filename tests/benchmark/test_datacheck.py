"""docab data check: every known defect class found, counted against the spec, blocking problems flagged."""

from __future__ import annotations

import shutil
from pathlib import Path

from docab_benchmark.mmlongbench.datacheck import PdfInfo, check_questions, format_report, inspect_documents
from docab_benchmark.mmlongbench.questions import QuestionSet, load_questions, parse_rows
from tests.conftest import shared_data


def q(doc: str, pages: str, answer: str = "5", fmt: str = "Int", i: int = 0) -> dict[str, str]:
    return {
        "doc_id": doc,
        "doc_type": "Guidebook",
        "question": f"q{i} {doc} {pages} {answer}",
        "answer": answer,
        "evidence_pages": pages,
        "evidence_sources": "['Table']",
        "answer_format": fmt,
    }


def test_each_known_defect_is_found() -> None:
    rows = [
        q("a.pdf", "[0]", i=1),
        q("a.pdf", "[1418]", i=2),
        q("guide.pdf", "[288, 290]", i=3),
        q("guide.pdf", "[318]", i=4),
        q("big.pdf", "[121, 130]", i=5),
        q("a.pdf", "[3]", answer="Not answerable", fmt="None", i=6),
        q("a.pdf", "[]", i=7),
        q("a.pdf", "[2]", answer="21%", i=8),
        q("a.pdf", "[2]", answer="[]", fmt="List", i=9),
        q("a.pdf", "[2]", answer="Not answerable", fmt="Str", i=10),
        q("twin.pdf", "[1]", i=11),
        q("gone.pdf", "[1]", i=12),
        q("bad.pdf", "[1]", i=13),
    ]
    qset = QuestionSet("mmlongbench-doc/github-1082", parse_rows(rows), Path("docs"))
    pdfs = {
        "a.pdf": PdfInfo(True, 20, "h1"),
        "guide.pdf": PdfInfo(True, 40, "h2"),
        "big.pdf": PdfInfo(True, 200, "h3"),
        "twin.pdf": PdfInfo(True, 20, "h1"),
        "bad.pdf": PdfInfo(True, None, "h4", "not a readable PDF"),
    }
    report = check_questions(qset, pdfs)
    found = {f.code: f for f in report.findings}
    counts = {code: f.count for code, f in found.items()}
    assert counts == {
        "page-zero": 1,
        "pages-run-together": 1,
        "printed-page-numbers": 1,
        "above-page-cap": 4,  # 1418 and the printed numbers are above 120 too
        "unanswerable-with-evidence": 2,  # the Str-format "Not answerable" lists a page as well
        "answerable-without-evidence": 1,
        "format-mismatch": 1,
        "identical-pdfs": 1,
        "int-not-integer": 1,
        "list-empty": 1,
        "missing-pdf": 1,
        "unreadable-pdf": 1,
    }
    assert "meant 14, 18" in found["pages-run-together"].details[0]
    assert found["printed-page-numbers"].details == (
        "guide.pdf: 2 question(s) cite pages 288-318 in a 40-page PDF (printed page numbers?)",
    )
    assert found["identical-pdfs"].details == ("a.pdf = twin.pdf",)
    assert found["page-zero"].expected == 3 and found["above-page-cap"].expected == 10
    assert report.blocking
    text = format_report(report, qset)
    assert "PDFs are missing or unreadable" in text and "spec" in text


def test_clean_data_is_usable_and_other_versions_show_no_expected_counts(
    suite_dir: Path, tmp_path: Path
) -> None:
    qset = load_questions(suite_dir)
    infos = inspect_documents(qset)
    assert {i.pages for i in infos.values()} == {4}
    report = check_questions(qset, infos)
    assert not report.blocking and all(f.count == 0 for f in report.findings)
    assert all(f.expected is None for f in report.findings)
    # a byte-identical copy under another name is spotted on disk
    docs = tmp_path / "documents"
    shutil.copytree(suite_dir / "documents", docs)
    (docs / "suite-bird-survey.pdf").write_bytes((docs / "suite-visitor-guide.pdf").read_bytes())
    copy = load_questions(suite_dir, documents_dir=docs)
    found = {f.code: f.count for f in check_questions(copy, inspect_documents(copy)).findings}
    assert found["identical-pdfs"] == 1


def test_shared_dev_subset_defects() -> None:
    qset = load_questions(shared_data("mmlongbench-dev"))
    report = check_questions(qset, inspect_documents(qset))
    counts = {f.code: f.count for f in report.findings}
    assert counts["page-zero"] == 1 and counts["answerable-without-evidence"] == 1
    assert counts["missing-pdf"] == 0 and not report.blocking
