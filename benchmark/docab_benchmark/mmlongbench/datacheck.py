"""The known defects of MMLongBench-Doc, found in whatever version is loaded, and missing or short PDFs.

The data is kept as published; this check only reports. ``check_questions`` is pure: it takes the
questions and what is known about each PDF (``inspect_documents`` reads that from disk).

Known defects of the 1,082-question GitHub set (../shared/specs/mmlongbench.md): 3 questions cite
page 0; one evidence list holds 1418 (meant 14, 18); one guidebook cites printed page numbers
(288-318) in a 40-page PDF; 10 questions cite pages above 120 (the official runners show only the
first 120); 7 "Not answerable" questions list evidence pages and 12 answerable ones list none; two
pairs of PDFs are byte-identical under different names; 4 ``Int`` answers are not integers and one
``List`` answer is ``"[]"``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from docab_benchmark.mmlongbench.questions import OFFICIAL_PAGE_CAP, Question, QuestionSet
from docab_benchmark.mmlongbench.scoring import NOT_ANSWERABLE


@dataclass(frozen=True)
class PdfInfo:
    """What the check needs of one PDF: ``pages`` is None when it cannot be opened (``error`` says why)."""

    exists: bool
    pages: int | None = None
    sha256: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Finding:
    """One kind of defect: its code, a title, what counts, and one line per occurrence."""

    code: str
    title: str
    count: int
    details: tuple[str, ...] = ()
    expected: int | None = None  # the count the spec gives for this data version
    blocking: bool = False  # the data cannot be run as is (missing or unreadable PDFs)


@dataclass(frozen=True)
class CheckReport:
    version: str
    questions: int
    documents: int
    findings: tuple[Finding, ...] = field(default_factory=tuple)

    @property
    def blocking(self) -> bool:
        return any(f.blocking and f.count for f in self.findings)


EXPECTED: Final[dict[str, dict[str, int]]] = {
    "mmlongbench-doc/github-1082": {
        "page-zero": 3,
        "pages-run-together": 1,
        "printed-page-numbers": 1,
        "above-page-cap": 10,
        "unanswerable-with-evidence": 7,
        "answerable-without-evidence": 12,
        "identical-pdfs": 2,
        "int-not-integer": 4,
        "list-empty": 1,
    }
}
"""Counts stated by the spec, per data version (only the GitHub set's are published)."""


def _q(question: Question) -> str:
    return f"{question.qid} ({question.doc_id})"


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _split_run_together(page: int, limit: int) -> tuple[int, int] | None:
    """``1418`` -> (14, 18) when both halves are valid pages: two page numbers typed without a comma."""
    text = str(page)
    for cut in range(1, len(text)):
        left, right = text[:cut], text[cut:]
        if right.startswith("0"):
            continue
        a, b = int(left), int(right)
        if 1 <= a < b <= limit:
            return a, b
    return None


def check_questions(
    qset: QuestionSet, pdfs: Mapping[str, PdfInfo], *, page_cap: int = OFFICIAL_PAGE_CAP
) -> CheckReport:
    """Every known defect class, counted in ``qset``; ``pdfs`` maps doc ids to what is known of their PDFs."""
    questions = qset.questions
    expected = EXPECTED.get(qset.version, {})

    def finding(
        code: str, title: str, details: Sequence[str], *, count: int | None = None, blocking: bool = False
    ) -> Finding:
        return Finding(
            code,
            title,
            len(details) if count is None else count,
            tuple(details),
            expected.get(code),
            blocking,
        )

    page_zero = [
        f"{_q(q)} cites page 0: {list(q.evidence_pages)}" for q in questions if 0 in q.evidence_pages
    ]
    run_together: list[str] = []
    printed: list[str] = []
    beyond: dict[str, list[tuple[Question, list[int]]]] = {}
    for q in questions:
        info = pdfs.get(q.doc_id)
        if info is None or info.pages is None:
            continue
        over = [p for p in q.evidence_pages if p > info.pages]
        if over:
            beyond.setdefault(q.doc_id, []).append((q, over))
    for doc_id, items in beyond.items():
        limit = pdfs[doc_id].pages or 0
        # one stray number in a document is a typo like 1418; several questions beyond the PDF
        # mean the document was cited by its printed page numbers
        if len(items) == 1:
            q, over = items[0]
            pairs = [_split_run_together(p, limit) for p in over]
            split = [pair for pair in pairs if pair is not None]
            if len(split) == len(pairs):
                run_together.extend(
                    f"{_q(q)} cites {p} in a {limit}-page PDF (meant {a}, {b}?)"
                    for p, (a, b) in zip(over, split, strict=True)
                )
                continue
        pages = sorted({p for _, over in items for p in over})
        printed.append(
            f"{doc_id}: {len(items)} question(s) cite pages {pages[0]}-{pages[-1]} in a {limit}-page PDF "
            "(printed page numbers?)"
        )
    above_cap = [
        f"{_q(q)} cites {[p for p in q.evidence_pages if p > page_cap]}"
        for q in questions
        if any(p > page_cap for p in q.evidence_pages)
    ]
    na_with = [
        f"{_q(q)} lists pages {list(q.evidence_pages)}"
        for q in questions
        if not q.answerable and q.evidence_pages
    ]
    ans_without = [f"{_q(q)} answer {q.answer!r}" for q in questions if q.answerable and not q.evidence_pages]
    format_mismatch = [
        f"{_q(q)} answer {q.answer!r} with format {q.answer_format}"
        for q in questions
        if (q.answer_format == "None") != (q.answer == NOT_ANSWERABLE)
    ]
    int_bad = [
        f"{_q(q)} answer {q.answer!r}"
        for q in questions
        if q.answer_format == "Int" and not _is_int(q.answer)
    ]
    list_empty = [f"{_q(q)}" for q in questions if q.answer_format == "List" and q.answer.strip() == "[]"]

    by_hash: dict[str, list[str]] = {}
    for doc_id in qset.doc_ids:
        info = pdfs.get(doc_id)
        if info is not None and info.sha256:
            by_hash.setdefault(info.sha256, []).append(doc_id)
    identical = [" = ".join(sorted(names)) for names in by_hash.values() if len(names) > 1]

    missing = [doc_id for doc_id in qset.doc_ids if not pdfs.get(doc_id, PdfInfo(False)).exists]
    unreadable = [
        f"{doc_id}: {info.error}"
        for doc_id in qset.doc_ids
        if (info := pdfs.get(doc_id)) is not None and info.exists and info.pages is None
    ]

    findings = (
        finding("page-zero", "questions citing page 0", page_zero),
        finding(
            "pages-run-together", "evidence pages typed without a comma (e.g. 1418 for 14, 18)", run_together
        ),
        finding(
            "printed-page-numbers",
            "documents cited with pages beyond the PDF (printed page numbers?)",
            printed,
        ),
        finding(
            "above-page-cap",
            f"questions citing pages above {page_cap} (hidden from the official runners)",
            above_cap,
        ),
        finding("unanswerable-with-evidence", '"Not answerable" questions listing evidence pages', na_with),
        finding("answerable-without-evidence", "answerable questions listing no evidence page", ans_without),
        finding(
            "format-mismatch", 'answer_format "None" not used exactly for "Not answerable"', format_mismatch
        ),
        finding("identical-pdfs", "byte-identical PDFs under different names (pairs)", identical),
        finding("int-not-integer", "Int answers that are not integers (they always score 0)", int_bad),
        finding("list-empty", 'List answers "[]"', list_empty),
        finding("missing-pdf", "PDFs missing from the documents folder", missing, blocking=True),
        finding("unreadable-pdf", "PDFs that cannot be opened", unreadable, blocking=True),
    )
    return CheckReport(qset.version, len(questions), len(qset.doc_ids), findings)


def inspect_documents(qset: QuestionSet, doc_ids: Iterable[str] | None = None) -> dict[str, PdfInfo]:
    """Page count and SHA-256 of each PDF the questions cite (pypdfium2 opens them; nothing is rendered)."""
    import pypdfium2 as pdfium

    infos: dict[str, PdfInfo] = {}
    for doc_id in doc_ids if doc_ids is not None else qset.doc_ids:
        if qset.documents_dir is None:
            infos[doc_id] = PdfInfo(False)
            continue
        path = qset.pdf_path(doc_id)
        if not path.is_file():
            infos[doc_id] = PdfInfo(False)
            continue
        try:
            data = path.read_bytes()
        except OSError as exc:
            infos[doc_id] = PdfInfo(True, error=f"cannot read ({exc.strerror or exc})")
            continue
        sha = hashlib.sha256(data).hexdigest()
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            infos[doc_id] = PdfInfo(True, None, sha, f"not a readable PDF ({exc})")
            continue
        try:
            infos[doc_id] = PdfInfo(True, len(document), sha)
        finally:
            document.close()
    return infos


def format_report(report: CheckReport, qset: QuestionSet) -> str:
    """The report as a readable table and detail lines."""
    lines = [
        f"data version: {report.version}",
        f"source: {qset.source}",
        f"questions: {report.questions} on {report.documents} documents; PDFs in {qset.documents_dir}",
        "",
    ]
    has_expected = any(f.expected is not None for f in report.findings)
    width = max(len(f.title) for f in report.findings)
    header = f"  {'check':<{width}}  found" + ("  spec" if has_expected else "")
    lines += [header, "  " + "-" * (len(header) - 2)]
    for f in report.findings:
        spec = f"  {f.expected:>4}" if f.expected is not None else ("     -" if has_expected else "")
        lines.append(f"  {f.title:<{width}}  {f.count:>5}{spec}")
    detailed = [f for f in report.findings if f.details]
    if detailed:
        lines.append("")
        for f in detailed:
            lines.append(f"{f.code}:")
            lines.extend(f"  {d}" for d in f.details[:50])
            if len(f.details) > 50:
                lines.append(f"  ... and {len(f.details) - 50} more")
    lines.append("")
    if report.blocking:
        lines.append("result: PDFs are missing or unreadable; questions on them cannot be answered.")
    else:
        lines.append("result: usable (the defects above are kept as published and only reported).")
    return "\n".join(lines)
