"""The built-in suite: deterministic, in the benchmark's schema and layout, covering every category."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from docab_benchmark.mmlongbench.questions import EVIDENCE_SOURCES, load_questions
from docab_benchmark.suite import SUITE_SEED, ensure_suite, ensure_suite_corpus
from docab_benchmark.suite.content import build_documents, hidden_answer_leaks, samples


def pdf_text(path: Path) -> str:
    document = pdfium.PdfDocument(str(path))
    return "\n".join(document[i].get_textpage().get_text_range() for i in range(len(document)))


def test_generating_twice_gives_identical_files(suite_dir: Path, tmp_path: Path) -> None:
    other = ensure_suite(tmp_path / "again")
    assert (other / "samples.json").read_bytes() == (suite_dir / "samples.json").read_bytes()
    for pdf in (suite_dir / "documents").glob("*.pdf"):
        assert (other / "documents" / pdf.name).read_bytes() == pdf.read_bytes()
    assert samples(build_documents(SUITE_SEED)) == json.loads((suite_dir / "samples.json").read_text())


def test_loaded_like_the_benchmark_with_full_coverage(suite_dir: Path) -> None:
    qset = load_questions(suite_dir)
    assert qset.version == "docab-suite/v1"
    assert qset.documents_dir == suite_dir / "documents"
    rows = json.loads((suite_dir / "samples.json").read_text())
    assert all(
        set(r)
        == {"doc_id", "doc_type", "question", "answer", "evidence_pages", "evidence_sources", "answer_format"}
        and all(isinstance(v, str) for v in r.values())
        for r in rows
    )
    questions = qset.questions
    assert {tag for q in questions for tag in q.evidence_sources} == set(EVIDENCE_SOURCES.values())
    assert {q.answer_format for q in questions} == {"Int", "Float", "Str", "None", "List"}
    assert any(q.single_page for q in questions) and any(q.cross_page for q in questions)
    assert all(q.answer_format == "None" for q in questions if not q.answerable) and any(
        not q.answerable for q in questions
    )
    for q in questions:
        pages = len(pdfium.PdfDocument(str(qset.pdf_path(q.doc_id))))
        assert all(1 <= p <= pages for p in q.evidence_pages)


def test_chart_and_figure_answers_are_only_in_images(suite_dir: Path) -> None:
    assert hidden_answer_leaks(build_documents(SUITE_SEED)) == []
    qset = load_questions(suite_dir)
    visual = [q for q in qset if q.evidence_sources and set(q.evidence_sources) <= {"Chart", "Figure"}]
    assert len(visual) >= 6
    for q in visual:
        text = pdf_text(qset.pdf_path(q.doc_id))
        items = (
            [i.strip(" '\"") for i in q.answer.strip("[]").split(",")]
            if q.answer_format == "List"
            else [q.answer.rstrip("%")]
        )
        for item in items:
            assert not re.search(rf"(?<![\w.]){re.escape(item)}(?![\w.])", text), (q.question, item)


def test_reuse_repair_and_refusal(suite_dir: Path, tmp_path: Path) -> None:
    stamp = (suite_dir / "samples.json").stat().st_mtime_ns
    assert ensure_suite(suite_dir) == suite_dir
    assert (suite_dir / "samples.json").stat().st_mtime_ns == stamp  # reused, not regenerated
    broken = ensure_suite(tmp_path / "broken")
    (broken / "documents" / "suite-bird-survey.pdf").unlink()
    assert (ensure_suite(broken) / "documents" / "suite-bird-survey.pdf").is_file()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="holds no docab suite"):
        ensure_suite(foreign)
    assert (foreign / "notes.txt").read_text() == "mine"


def test_default_location_follows_docab_cache_and_corpus_is_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCAB_CACHE", str(tmp_path / "cache"))
    folder = ensure_suite()
    assert folder == tmp_path / "cache" / "suite-v1"
    corpus = ensure_suite_corpus()
    assert corpus == folder / "corpus"
    assert len(json.loads((corpus / "manifest.json").read_text())["documents"]) == 3
