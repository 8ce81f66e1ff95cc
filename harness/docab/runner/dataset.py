"""The questions a run asks, each paired with the converted document folder it is about.

Two sources, both read by the benchmark's own loader (``docab_benchmark.mmlongbench.questions``) with its
filters (``QuestionFilter``): the built-in suite (``docab_benchmark.suite``, generated and converted on
first use into the docab cache, ``$DOCAB_CACHE`` or ``~/.cache/docab``) and MMLongBench-Doc (a
folder in the benchmark's GitHub layout, a ``samples.json``, a parquet file or ``hf:...``), whose
PDFs are converted beforehand with ``docab convert``. Relative paths resolve against the config
file's folder (``base_dir``), and every "not found" names the absolute path it tried.

:func:`dataset_contents` is what a run's manifest records of the questions it asks and the
documents they are about, so a resumed run notices gold answers or a corpus that changed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path

from docab.config import DatasetConfig, resolve_config_path
from docab.errors import DatasetError
from docab.log.identity import digest
from docab.log.manifest import DataContents, QuestionDigest
from docab_benchmark.mmlongbench.questions import Question, QuestionFilter


@dataclass(frozen=True)
class Sample(Question):
    """One question and the folder of its converted document (``document.md``, ``pages/``)."""

    document_dir: Path

    @classmethod
    def from_question(cls, question: Question, document_dir: Path) -> Sample:
        return cls(**{f.name: getattr(question, f.name) for f in fields(Question)}, document_dir=document_dir)


@dataclass(frozen=True)
class Dataset:
    name: str
    version: str
    samples: tuple[Sample, ...]
    extraction_prompt: Path | None = None  # the benchmark's own prompt file, when the source has one
    corpus: Path | None = None


def document_folder(corpus: Path, doc_id: str) -> Path:
    """The converter writes one folder per PDF, named after the PDF's stem."""
    return corpus / Path(doc_id).stem


def from_questions(
    name: str,
    version: str,
    questions: Iterable[Question],
    corpus: Path,
    *,
    extraction_prompt: Path | None = None,
) -> Dataset:
    samples = tuple(Sample.from_question(q, document_folder(corpus, q.doc_id)) for q in questions)
    return Dataset(name, version, samples, extraction_prompt=extraction_prompt, corpus=corpus)


def question_digest(question: Question) -> QuestionDigest:
    """What a question's score depends on, as digests: its text and document, its gold answer, its
    answer format, its evidence (the report's breakdowns and the evidence tracker read it)."""
    return QuestionDigest(
        question=digest(question.doc_id, question.question),
        answer=digest(question.answer),
        answer_format=digest(question.answer_format),
        evidence=digest(repr(question.evidence_pages), repr(question.evidence_sources)),
    )


def document_digest(document_dir: Path) -> str | None:
    """A digest of a converted document's ``document.md`` (what the agent reads, and the page images
    it names) and ``meta.json`` (its pages' line spans, and the conversion); None when it is not
    converted. The page images are left out: they are rendered from the same PDF, and reading them
    all would slow every start."""
    try:
        text = (document_dir / "document.md").read_bytes()
    except OSError:
        return None
    try:
        meta = (document_dir / "meta.json").read_bytes()
    except OSError:
        meta = b""
    return digest(text, meta)


def dataset_contents(samples: Iterable[Sample]) -> DataContents:
    """What a run's manifest records of ``samples``: a :func:`question_digest` per question and a
    :func:`document_digest` per converted document (one not converted is left out)."""
    questions: dict[str, QuestionDigest] = {}
    folders: dict[str, Path] = {}
    for sample in samples:
        questions[sample.qid] = question_digest(sample)
        folders.setdefault(sample.doc_id, sample.document_dir)
    documents = {doc_id: document_digest(folder) for doc_id, folder in folders.items()}
    return DataContents(
        questions=questions,
        documents={doc_id: found for doc_id, found in documents.items() if found is not None},
    )


def question_filter(config: DatasetConfig) -> QuestionFilter:
    def optional(values: list[str] | None) -> frozenset[str] | None:
        return frozenset(values) if values is not None else None

    return QuestionFilter(
        doc_ids=optional(config.doc_ids),
        doc_types=optional(config.doc_types),
        evidence_sources=optional(config.evidence_sources),
        answerable_only=config.answerable_only,
        max_evidence_page=config.max_evidence_page,
        sample=config.sample,
        seed=config.sample_seed,
    )


def load_dataset(config: DatasetConfig, *, results_dir: Path, base_dir: Path | None = None) -> Dataset:
    """Load the configured questions and locate their converted documents.

    ``path`` and ``corpus`` resolve against ``base_dir`` (the config file's folder; None: the
    current folder). Questions whose document is missing from the corpus are kept (they become
    error records, for every arm alike); the launcher lists them before the run. Raises
    :class:`DatasetError`.
    """
    from docab_benchmark.mmlongbench.corpus import ConversionError
    from docab_benchmark.mmlongbench.errors import DataError
    from docab_benchmark.mmlongbench.questions import load_questions

    try:
        if config.source == "suite":
            from docab_benchmark.suite import ensure_suite, ensure_suite_corpus

            corpus = ensure_suite_corpus()
            qset = load_questions(ensure_suite(), criteria=question_filter(config))
            return from_questions(
                "suite", qset.version, qset.questions, corpus, extraction_prompt=qset.extraction_prompt
            )
        remote = str(config.path).startswith("hf:")
        if remote and not config.corpus:
            raise DatasetError(
                f"dataset.path {config.path!r} needs dataset.corpus: the folder of the converted PDFs"
            )
        path = resolve_config_path(config.path or "", base_dir)
        if not remote and not path.exists():
            raise DatasetError(f"dataset.path {config.path!r} not found (looked for {path})")
        qset = load_questions(str(config.path) if remote else path, criteria=question_filter(config))
    except (DataError, ConversionError) as exc:
        raise DatasetError(str(exc)) from None
    except OSError as exc:
        raise DatasetError(f"could not prepare the dataset: {exc.strerror or exc}") from None
    if config.corpus:
        corpus = resolve_config_path(config.corpus, base_dir)
    else:
        corpus = Path(os.path.normpath((results_dir / "corpus" / path.name).absolute()))
    if not corpus.is_dir():
        documents = qset.documents_dir or path
        raise DatasetError(
            f"the converted corpus {corpus} does not exist; convert the PDFs first:\n"
            f"  docab convert {documents} --out {corpus}"
        )
    return from_questions(
        "mmlongbench", qset.version, qset.questions, corpus, extraction_prompt=qset.extraction_prompt
    )
