"""The questions a run asks, each paired with the converted document folder it is about.

Two sources, both in the MMLongBench-Doc schema (``benchmark.mmlongbench.questions.Question``):
the built-in suite (``benchmark.suite``) and MMLongBench-Doc itself (a folder in the benchmark's
GitHub layout, converted with ``docab convert``). Filters are plain functions on samples.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config import DatasetConfig
from harness.errors import CommandError


@dataclass(frozen=True)
class Sample:
    """One question and the folder of its converted document (``document.md``, ``pages/``)."""

    qid: str
    doc_id: str
    doc_type: str
    question: str
    answer: str
    answer_format: str
    evidence_pages: tuple[int, ...]
    evidence_sources: tuple[str, ...]
    document_dir: Path

    @classmethod
    def from_question(cls, question: Any, document_dir: Path) -> Sample:
        return cls(
            qid=str(question.qid),
            doc_id=str(question.doc_id),
            doc_type=str(getattr(question, "doc_type", "") or ""),
            question=str(question.question),
            answer=str(question.answer),
            answer_format=str(question.answer_format),
            evidence_pages=tuple(int(p) for p in getattr(question, "evidence_pages", ()) or ()),
            evidence_sources=tuple(str(s) for s in getattr(question, "evidence_sources", ()) or ()),
            document_dir=document_dir,
        )


@dataclass(frozen=True)
class Dataset:
    name: str
    version: str
    samples: tuple[Sample, ...]

    @property
    def missing_documents(self) -> list[Sample]:
        return [s for s in self.samples if not (s.document_dir / "document.md").is_file()]


def select(samples: Sequence[Sample], config: DatasetConfig) -> list[Sample]:
    """Apply the config's filters, in a documented order: ids, types, sources, answerable, sample."""
    chosen = list(samples)
    if config.doc_ids is not None:
        wanted = set(config.doc_ids)
        chosen = [s for s in chosen if s.doc_id in wanted or Path(s.doc_id).stem in wanted]
    if config.doc_types is not None:
        types = {t.lower() for t in config.doc_types}
        chosen = [s for s in chosen if s.doc_type.lower() in types]
    if config.evidence_sources is not None:
        sources = {t.lower() for t in config.evidence_sources}
        chosen = [s for s in chosen if sources & {e.lower() for e in s.evidence_sources}]
    if config.answerable_only:
        chosen = [s for s in chosen if s.answer != "Not answerable"]
    if config.sample is not None and config.sample < len(chosen):
        picked = set(random.Random(config.sample_seed).sample(range(len(chosen)), config.sample))
        chosen = [s for i, s in enumerate(chosen) if i in picked]
    return chosen


def document_folder(corpus: Path, doc_id: str) -> Path:
    """The converter writes one folder per PDF, named after the PDF's stem."""
    return corpus / Path(doc_id).stem


def from_questions(name: str, version: str, questions: Iterable[Any], corpus: Path) -> Dataset:
    samples = tuple(Sample.from_question(q, document_folder(corpus, q.doc_id)) for q in questions)
    return Dataset(name, version, samples)


def load_dataset(config: DatasetConfig, *, results_dir: Path) -> Dataset:
    """Load the configured questions and locate their converted documents.

    The built-in suite is generated and converted on first use. MMLongBench-Doc must have been
    converted with ``docab convert``; questions whose document is missing are kept (they become
    error records, for both arms alike) and listed by the caller.
    """
    dataset = _load_suite(results_dir) if config.source == "suite" else _load_mmlongbench(config, results_dir)
    return Dataset(dataset.name, dataset.version, tuple(select(dataset.samples, config)))


def _load_suite(results_dir: Path) -> Dataset:
    try:
        from benchmark.suite import ensure_suite
    except ImportError:
        raise CommandError(
            "the built-in suite (benchmark.suite) is not available in this checkout yet"
        ) from None
    suite = ensure_suite(results_dir / "suite")
    return from_questions("suite", str(suite.version), suite.questions, Path(suite.corpus_dir))


def _load_mmlongbench(config: DatasetConfig, results_dir: Path) -> Dataset:
    try:
        from benchmark.mmlongbench.questions import load_questions
    except ImportError:
        raise CommandError("the MMLongBench-Doc loader (benchmark.mmlongbench) is not available") from None
    path = Path(config.path or "").expanduser()
    if not path.exists():
        raise CommandError(f"dataset.path {str(path)!r} does not exist")
    question_set = load_questions(path)
    corpus = Path(config.corpus).expanduser() if config.corpus else results_dir / "corpus" / path.name
    if not corpus.is_dir():
        documents = getattr(question_set, "documents_dir", None) or path
        raise CommandError(
            f"the converted corpus {str(corpus)!r} does not exist; convert the PDFs first:\n"
            f"  docab convert {documents} --out {corpus}"
        )
    return from_questions("mmlongbench", str(question_set.version), question_set.questions, corpus)
