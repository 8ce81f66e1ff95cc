"""MMLongBench-Doc questions as typed records, their filters, and ``load_questions``.

The benchmark stores every field as a string, list-like ones included (``"[3, 5]"``,
``"['Table']"``). They are parsed here with ``ast.literal_eval`` only, never ``eval``. The data is
kept exactly as published, defects included (page 0, ``[1418]``...): ``datacheck`` reports them.

Versions: the GitHub ``data/samples.json`` (1,082 questions, the camera-ready set) and the Hugging
Face dataset (1,091, the older set) differ. ``QuestionSet.version`` names which one was loaded:
``mmlongbench-doc/github-1082``, ``mmlongbench-doc/hf-1091``, ``docab-suite/v<N>`` for the built-in
suite, or ``mmlongbench-doc/<origin>-subset-<n>q-<sha8>`` for any other set of rows (such as the dev
subset), where ``sha8`` starts the SHA-256 of the question file so two subsets never share a name.
"""

from __future__ import annotations

import ast
import hashlib
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from docab_benchmark.mmlongbench.errors import DataError
from docab_benchmark.mmlongbench.scoring import ANSWER_FORMATS, NOT_ANSWERABLE
from docab_benchmark.mmlongbench.sources import RawSource, read_source

OFFICIAL_PAGE_CAP: Final = 120
"""The official runners show a model only the first 120 pages of a document."""

EVIDENCE_SOURCES: Final[dict[str, str]] = {
    "text": "Pure-text (Plain-text)",
    "layout": "Generalized-text (Layout)",
    "table": "Table",
    "chart": "Chart",
    "figure": "Figure",
}
"""Short names (for filters and command lines) of the benchmark's evidence-source tags."""

KNOWN_SETS: Final[dict[int, str]] = {1082: "github-1082", 1091: "hf-1091"}
"""Full releases, recognised by their question count (GitHub camera-ready; Hugging Face older)."""

FIELDS: Final = (
    "doc_id",
    "doc_type",
    "question",
    "answer",
    "evidence_pages",
    "evidence_sources",
    "answer_format",
)


@dataclass(frozen=True)
class Question:
    """One benchmark question.

    ``qid`` is derived from the document and the question text (first 10 hex digits of their
    SHA-1), so it is stable across versions and filters; a rare duplicate gets ``-2``, ``-3``...
    ``answer`` and ``answer_format`` are the gold ones as published (``answer_format`` is one of
    ``Int``, ``Float``, ``Str``, ``None``, ``List``; ``None`` means "Not answerable").
    ``evidence_pages`` are 1-based page numbers as published (possibly 0 or beyond the PDF).
    """

    qid: str
    doc_id: str
    doc_type: str
    question: str
    answer: str
    answer_format: str
    evidence_pages: tuple[int, ...]
    evidence_sources: tuple[str, ...]

    @property
    def answerable(self) -> bool:
        return self.answer != NOT_ANSWERABLE

    @property
    def single_page(self) -> bool:
        return len(self.evidence_pages) == 1

    @property
    def cross_page(self) -> bool:
        """The paper's "cross-page" group: not exactly one evidence page, and answerable."""
        return len(self.evidence_pages) != 1 and self.answerable

    def to_row(self) -> dict[str, str]:
        """The benchmark's own string form, as in samples.json (for prediction files)."""
        return {
            "doc_id": self.doc_id,
            "doc_type": self.doc_type,
            "question": self.question,
            "answer": self.answer,
            "evidence_pages": str(list(self.evidence_pages)),
            "evidence_sources": str(list(self.evidence_sources)),
            "answer_format": self.answer_format,
        }


@dataclass(frozen=True)
class QuestionFilter:
    """Which questions to keep. Every criterion given must hold; ``sample`` is applied last.

    ``doc_ids`` match with or without ``.pdf``; ``evidence_sources`` keep a question carrying any
    of them (short names from ``EVIDENCE_SOURCES`` or the full tags); ``max_evidence_page`` drops
    questions citing a page beyond it (``OFFICIAL_PAGE_CAP`` for the official 120-page view);
    ``sample`` keeps a seeded random ``sample`` questions, in their original order.
    """

    doc_ids: frozenset[str] | None = None
    doc_types: frozenset[str] | None = None
    evidence_sources: frozenset[str] | None = None
    answerable_only: bool = False
    max_evidence_page: int | None = None
    sample: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class QuestionSet:
    """Questions of one data version, and where their PDFs are.

    ``total`` is the number of questions before any filter; ``extraction_prompt`` is the
    benchmark's answer-extraction prompt when the source folder holds it.
    """

    version: str
    questions: tuple[Question, ...]
    documents_dir: Path | None
    source: str = ""
    total: int = 0
    extraction_prompt: Path | None = None
    content_sha256: str = field(default="", repr=False)

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.questions)

    @property
    def doc_ids(self) -> tuple[str, ...]:
        """Documents the questions are about, in first-seen order."""
        return tuple(dict.fromkeys(q.doc_id for q in self.questions))

    def pdf_path(self, doc_id: str) -> Path:
        if self.documents_dir is None:
            raise DataError(f"no documents folder is known for {self.source}: pass the folder of the PDFs")
        name = Path(doc_id).name  # doc ids are file names; never let one climb out of the folder
        if name in ("", ".", ".."):
            raise DataError(f"invalid doc_id {doc_id!r}")
        return self.documents_dir / name

    def filter(self, criteria: QuestionFilter) -> QuestionSet:
        return replace(self, questions=select_questions(self.questions, criteria))


# ------------------------------------------------------------------------------------ parsing


def _literal_list(value: Any, *, what: str, where: str) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    if not isinstance(value, str):
        raise DataError(f"{where}: {what} must be a list literal, got {type(value).__name__}")
    try:
        parsed = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise DataError(f"{where}: {what} {value[:60]!r} is not a list literal") from None
    if not isinstance(parsed, (list, tuple)):
        raise DataError(f"{where}: {what} {value[:60]!r} is not a list")
    return list(parsed)


def _pages(value: Any, where: str) -> tuple[int, ...]:
    pages = []
    for item in _literal_list(value, what="evidence_pages", where=where):
        try:
            if isinstance(item, bool) or (isinstance(item, float) and not item.is_integer()):
                raise ValueError
            pages.append(int(item))
        except (TypeError, ValueError):
            raise DataError(f"{where}: evidence page {item!r} is not an integer") from None
    return tuple(pages)


def _sources(value: Any, where: str) -> tuple[str, ...]:
    items = _literal_list(value, what="evidence_sources", where=where)
    if not all(isinstance(item, str) for item in items):
        raise DataError(f"{where}: evidence_sources must hold strings")
    return tuple(items)


def make_qid(doc_id: str, question: str) -> str:
    return hashlib.sha1(f"{doc_id}\n{question}".encode()).hexdigest()[:10]


def parse_rows(rows: Iterable[Mapping[str, Any]], *, location: str = "data") -> tuple[Question, ...]:
    """Typed questions from the benchmark's rows; raises ``DataError`` naming the bad row and field."""
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for index, row in enumerate(rows):
        where = f"{location}, question {index}"
        missing = [name for name in FIELDS if name not in row]
        if missing:
            raise DataError(f"{where}: missing field(s) {', '.join(missing)}")
        doc_id, text = str(row["doc_id"]), str(row["question"])
        answer_format = str(row["answer_format"])
        if answer_format not in ANSWER_FORMATS:
            raise DataError(
                f"{where}: answer_format {answer_format!r} is not one of {', '.join(ANSWER_FORMATS)}"
            )
        qid = make_qid(doc_id, text)
        seen[qid] = seen.get(qid, 0) + 1
        if seen[qid] > 1:
            qid = f"{qid}-{seen[qid]}"
        questions.append(
            Question(
                qid=qid,
                doc_id=doc_id,
                doc_type=str(row["doc_type"]),
                question=text,
                answer=str(row["answer"]),
                answer_format=answer_format,
                evidence_pages=_pages(row["evidence_pages"], where),
                evidence_sources=_sources(row["evidence_sources"], where),
            )
        )
    return tuple(questions)


# ------------------------------------------------------------------------------------ selection


def evidence_tag(name: str) -> str:
    """The full evidence-source tag for a short name (``chart``) or a full tag; ``ValueError`` otherwise."""
    key = name.strip()
    if key.lower() in EVIDENCE_SOURCES:
        return EVIDENCE_SOURCES[key.lower()]
    if key in EVIDENCE_SOURCES.values():
        return key
    valid = ", ".join(EVIDENCE_SOURCES)
    raise ValueError(f"unknown evidence source {name!r}; use one of {valid} (or the full tag)")


def _doc_key(doc_id: str) -> str:
    return doc_id[:-4] if doc_id.lower().endswith(".pdf") else doc_id


def select_questions(questions: Sequence[Question], criteria: QuestionFilter) -> tuple[Question, ...]:
    """The questions meeting ``criteria`` (see ``QuestionFilter``), in their original order."""
    keep: list[Question] = list(questions)
    if criteria.doc_ids is not None:
        wanted = {_doc_key(d) for d in criteria.doc_ids}
        keep = [q for q in keep if _doc_key(q.doc_id) in wanted]
    if criteria.doc_types is not None:
        keep = [q for q in keep if q.doc_type in criteria.doc_types]
    if criteria.evidence_sources is not None:
        tags = {evidence_tag(s) for s in criteria.evidence_sources}
        keep = [q for q in keep if tags.intersection(q.evidence_sources)]
    if criteria.answerable_only:
        keep = [q for q in keep if q.answerable]
    if criteria.max_evidence_page is not None:
        cap = criteria.max_evidence_page
        keep = [q for q in keep if all(page <= cap for page in q.evidence_pages)]
    if criteria.sample is not None:
        if criteria.sample < 0:
            raise ValueError("sample size must be at least 0")
        if criteria.sample < len(keep):
            chosen = sorted(random.Random(criteria.seed).sample(range(len(keep)), criteria.sample))
            keep = [keep[i] for i in chosen]
    return tuple(keep)


# ------------------------------------------------------------------------------------ loading


def detect_version(raw: RawSource, count: int) -> str:
    if raw.marker and raw.marker.get("name") == "docab-suite":
        return f"docab-suite/v{raw.marker.get('version', '?')}"
    if count in KNOWN_SETS:
        return f"mmlongbench-doc/{KNOWN_SETS[count]}"
    return f"mmlongbench-doc/{raw.origin}-subset-{count}q-{raw.content_sha256[:8]}"


def load_questions(
    source: str | Path,
    *,
    documents_dir: str | Path | None = None,
    split: str = "train",
    criteria: QuestionFilter | None = None,
    version: str | None = None,
) -> QuestionSet:
    """Load questions from ``source`` and keep those meeting ``criteria``.

    ``source``: a clone of the benchmark repository, a folder holding ``samples.json`` (the shared
    dev folder, the built-in suite), that JSON file, a ``.parquet``/``.arrow`` file or folder, a
    ``datasets`` ``save_to_disk`` folder, or ``hf:yubo2333/MMLongBench-Doc`` (see ``sources``).
    ``documents_dir`` overrides where the PDFs are; ``version`` overrides the detected label.
    Raises ``DataError`` with a message fit to show when the source cannot be read or parsed.
    """
    raw = read_source(source, documents_dir=documents_dir, split=split)
    questions = parse_rows(raw.rows, location=raw.location)
    qset = QuestionSet(
        version=version or detect_version(raw, len(questions)),
        questions=questions,
        documents_dir=raw.documents_dir,
        source=raw.location,
        total=len(questions),
        extraction_prompt=raw.extraction_prompt,
        content_sha256=raw.content_sha256,
    )
    return qset.filter(criteria) if criteria is not None else qset
