"""Findability: could a text-reading agent find the answer at all? (pure: page texts in, counts out).

A converter bounds what any agent reading its output can answer. For every *answerable* question
(gold format ``Str``, ``Int``, ``Float`` or ``List``, at least one evidence page, every evidence
page within the document), this asks whether the gold answer occurs in the converted text of its
evidence pages, and anywhere in the document. A ``List`` answer counts only when every item occurs.

The matching rule (``normalise`` then ``occurs``), chosen to forgive formatting, not content:

- Unicode NFKC, case folded; curly quotes become straight ones, every dash and minus becomes
  ``-``, soft hyphens and zero-width characters go; a word split by a hyphen at a line end
  (``infor-\\nmation``) is joined.
- Thousands separators inside numbers go (``1,000`` and ``1\\u202f000`` become ``1000``; a plain space
  stays, it separates numbers as often as it groups digits), and a space
  before ``%`` goes (``18 %`` is ``18%``).
- Every other character that is not a letter, digit, ``%``, ``$``, ``.`` or ``-`` becomes a
  space, a ``.`` not between two digits does too (sentence ends), and runs of spaces become one.
- The normalised answer must occur in the normalised text with no letter or digit touching it on
  either side (``5`` does not occur in ``15``, ``cat`` not in ``category``).

This is deliberately literal: an answer computed from the text (a sum, a percentage the
document does not print, a count of items) is not findable as a string, so the figure is a floor
on what an agent could answer and a fair yardstick between converters, not an accuracy.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from docab_benchmark.mmlongbench.questions import Question

FINDABLE_FORMATS: Final = frozenset({"Str", "Int", "Float", "List"})
NO_SOURCE: Final = "(no evidence source)"

_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d]")
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
_LINE_HYPHEN = re.compile(r"(?<=[^\W\d_])-\s*\n\s*(?=[^\W\d_])")
_THOUSANDS = re.compile(r"(?<=\d)[,\u00a0\u202f](?=\d{3}(?!\d))")
_SPACE_PERCENT = re.compile(r"\s+%")
_OTHER = re.compile(r"[^\w%$.\-]|_")
_LONE_DOT = re.compile(r"(?<!\d)\.|\.(?!\d)")
_SPACES = re.compile(r"\s+")


def normalise(text: str) -> str:
    """The matching form of a text (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.replace("\u2018", "'").replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = _DASHES.sub("-", _INVISIBLE.sub("", text))
    text = _LINE_HYPHEN.sub("", text)
    previous = None
    while previous != text:  # 1,234,567 needs two passes: each separator is matched once per pass
        previous, text = text, _THOUSANDS.sub("", text)
    text = _SPACE_PERCENT.sub("%", text)
    text = _LONE_DOT.sub(" ", _OTHER.sub(" ", text))
    return _SPACES.sub(" ", text).strip()


def occurs(answer: str, text: str) -> bool:
    """Whether normalised ``answer`` occurs in normalised ``text`` with no letter or digit touching it."""
    if not answer:
        return False
    pattern = r"(?<![^\W_])" + re.escape(answer) + r"(?![^\W_])"
    return re.search(pattern, text) is not None


def answer_items(question: Question) -> tuple[str, ...]:
    """The strings that must all occur: the list's items for ``List``, else the answer itself."""
    answer = question.answer.strip()
    if question.answer_format == "List" and answer.startswith("["):
        try:
            value = ast.literal_eval(answer)
        except (ValueError, SyntaxError):
            return (answer,)
        if isinstance(value, (list, tuple)):
            return tuple(str(item).strip() for item in value if str(item).strip())
    return (answer,)


def is_findable_question(question: Question, page_count: int) -> bool:
    """Answerable with a checkable answer: a findable format, evidence pages, all within the document."""
    return (
        question.answerable
        and question.answer_format in FINDABLE_FORMATS
        and bool(question.evidence_pages)
        and all(1 <= page <= page_count for page in question.evidence_pages)
        and bool(answer_items(question))
    )


@dataclass(frozen=True)
class QuestionFinding:
    """One question under one converter: found on its evidence pages, and anywhere in the document."""

    qid: str
    sources: tuple[str, ...]
    on_evidence: bool | None  # None: the converter's text has no page boundaries for this document
    anywhere: bool


@dataclass(frozen=True)
class Tally:
    """Questions counted, how many were found on evidence pages and anywhere, and how many had page
    boundaries to look for evidence pages in (``paged``)."""

    questions: int = 0
    on_evidence: int = 0
    anywhere: int = 0
    paged: int = 0

    def add(self, finding: QuestionFinding) -> Tally:
        return Tally(
            self.questions + 1,
            self.on_evidence + bool(finding.on_evidence),
            self.anywhere + finding.anywhere,
            self.paged + (finding.on_evidence is not None),
        )

    @property
    def evidence_share(self) -> float:
        return self.on_evidence / self.paged if self.paged else 0.0

    @property
    def anywhere_share(self) -> float:
        return self.anywhere / self.questions if self.questions else 0.0


@dataclass(frozen=True)
class ConverterFindings:
    """A converter's findings: overall, by evidence source (a question counts under each tag), each question."""

    converter: str
    overall: Tally
    by_source: dict[str, Tally]
    findings: tuple[QuestionFinding, ...] = field(repr=False)
    documents_missing: tuple[str, ...] = ()


def find_answers(
    converter: str,
    questions: Sequence[Question],
    page_texts: Mapping[str, Sequence[str] | None],
    page_counts: Mapping[str, int],
) -> ConverterFindings:
    """Tally ``questions`` against one converter's ``page_texts`` (doc_id -> text of pages 1..N).

    A document whose text does not come as one entry per page (its page count differs) can still
    be searched as a whole; its questions have no evidence-page finding (``on_evidence`` None).

    Questions are those ``is_findable_question`` accepts for ``page_counts`` (the PDFs' page
    counts, the same for every converter). A document the converter could not convert (missing or
    None) counts its questions as not found and is listed in ``documents_missing``.
    """
    findings: list[QuestionFinding] = []
    normalised: dict[str, tuple[list[str], str] | None] = {}
    missing: list[str] = []
    for question in questions:
        if not is_findable_question(question, page_counts.get(question.doc_id, 0)):
            continue
        if question.doc_id not in normalised:
            pages = page_texts.get(question.doc_id)
            if pages is None:
                missing.append(question.doc_id)
                normalised[question.doc_id] = None
            else:
                per_page = [normalise(text) for text in pages]
                normalised[question.doc_id] = (per_page, " \n ".join(per_page))
        texts = normalised[question.doc_id]
        items = [normalise(item) for item in answer_items(question)]
        on_evidence: bool | None = False
        anywhere = False
        if texts is not None:
            per_page, whole = texts
            anywhere = all(occurs(item, whole) for item in items)
            if len(per_page) != page_counts.get(question.doc_id, 0):
                on_evidence = None
            else:
                evidence = " \n ".join(per_page[page - 1] for page in question.evidence_pages)
                on_evidence = all(occurs(item, evidence) for item in items)
        findings.append(
            QuestionFinding(question.qid, question.evidence_sources or (NO_SOURCE,), on_evidence, anywhere)
        )
    overall = Tally()
    by_source: dict[str, Tally] = {}
    for finding in findings:
        overall = overall.add(finding)
        for source in finding.sources:
            by_source[source] = by_source.get(source, Tally()).add(finding)
    return ConverterFindings(
        converter, overall, dict(sorted(by_source.items())), tuple(findings), tuple(dict.fromkeys(missing))
    )


def format_findings(results: Sequence[ConverterFindings], seconds: Mapping[str, float] | None = None) -> str:
    """A plain-text table: one row per converter, overall then by evidence source, with counts."""
    if not results:
        return "no converter was run"
    sources = sorted({source for result in results for source in result.by_source})
    lines = [
        f"{'converter':22s} {'questions':>9s} {'evidence pages':>18s} {'anywhere':>18s}"
        + (f" {'seconds':>8s}" if seconds else "")
    ]
    for result in results:
        tally = result.overall
        row = (
            f"{result.converter:22s} {tally.questions:9d} "
            f"{_share(tally.on_evidence, tally.paged):>18s} {_share(tally.anywhere, tally.questions):>18s}"
        )
        if seconds:
            row += f" {seconds.get(result.converter, 0.0):8.1f}"
        lines.append(row)
    lines.append("")
    lines.append("found on evidence pages, by evidence source (a question counts under each of its sources):")
    header = f"{'source':28s}" + "".join(f" {result.converter:>18s}" for result in results)
    lines.append(header)
    for source in sources:
        cells = []
        for result in results:
            tally = result.by_source.get(source, Tally())
            cells.append(f" {_share(tally.on_evidence, tally.paged):>18s}")
        lines.append(f"{source[:28]:28s}" + "".join(cells))
    for result in results:
        unpaged = result.overall.questions - result.overall.paged
        if unpaged:
            lines.append(
                f"{result.converter}: {unpaged} question(s) in documents without page boundaries in its "
                "output count only anywhere; its evidence-page share is over the rest"
            )
        if result.documents_missing:
            lines.append(
                f"{result.converter}: {len(result.documents_missing)} document(s) not converted, "
                f"their questions count as not found: {', '.join(result.documents_missing)}"
            )
    return "\n".join(lines)


def _share(found: int, total: int) -> str:
    return f"{100 * found / total:5.1f} % ({found}/{total})" if total else "n/a (no pages)"
