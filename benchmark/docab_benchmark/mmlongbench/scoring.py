"""The official MMLongBench-Doc scorer, rebuilt from its rules (``eval/eval_score.py``), and its metrics.

Every rule below reproduces the official behaviour, including its quirks, so that numbers stay
comparable with published ones. Three deliberate departures, each of which only turns a crash of
the official code into a score:

- list literals are parsed with ``ast.literal_eval``, never ``eval`` (an unparsable list scores 0,
  as the official runner's blanket ``except`` gives it);
- a gold ``[]`` with a predicted ``[]`` scores 1 (the official code raises ``IndexError``);
- any other failure inside a rule scores 0 instead of propagating (the official runner catches it).

Rules, in the official order:

- ANLS: ``1 - levenshtein / max(len)``; a value <= 0.5 becomes 0; two empty strings score 1.
- Cleaning: lower-case, strip; drop every ``(…)`` with the spaces before it; drop one leading and
  one trailing quote; strip leading ``$`` and trailing ``%``. (The official code also *tries* to
  strip "mile", "miles" and "million" but discards the result: they stay.)
- Exact-match strings (no ANLS): contain ``https://``; end with ``.py`` or ``ipynb``; start with
  ``page``; contain ``a.m.`` or ``p.m.``; or fully match a number with an optional ``-N``/`` N``
  part (phone-like), a date ``YYYY-MM-DD``/``YYYY-MM`` (dash or space), or an e-mail address.
- ``Int``: ``int(gold) == int(float(pred))``; anything unparsable scores 0 (so does "1,000").
- ``Float``: cleaned, parsed; the prediction may match gold, gold/100 or gold*100, within 1 %
  relative tolerance or after rounding both to ``max(min(decimals), 2)`` places.
- ``Str`` and ``None``: cleaned; exact-match golds need equality, the rest score ANLS.
- ``List``: lengths must agree; items cleaned and sorted; float-like or exact-match first gold
  item → the joined lists must be equal, else the minimum ANLS over the pairs.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

ANSWER_FORMATS: Final = ("Int", "Float", "Str", "None", "List")
NOT_ANSWERABLE: Final = "Not answerable"
ANLS_THRESHOLD: Final = 0.5
FLOAT_RELATIVE_TOLERANCE: Final = 0.01

_PARENTHETICAL = re.compile(r"\s*\([^)]*\)")
_EDGE_QUOTE = re.compile(r"^['\"]|['\"]$")
_NUMBER_WITH_PART = re.compile(r"\b\d+(-\d+|\s\d+)?\b")  # phone numbers, "2-3", "12 000"
_DATE_YMD = re.compile(r"\b\d{4}[-\s]\d{2}[-\s]\d{2}\b")
_DATE_YM = re.compile(r"\b\d{4}[-\s]\d{2}\b")
_EMAIL = re.compile(r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}")


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute, each costing 1)."""
    if a == b:
        return 0
    if len(a) > len(b):
        a, b = b, a
    previous = list(range(len(a) + 1))
    for j, char_b in enumerate(b, start=1):
        current = [j]
        for i, char_a in enumerate(a, start=1):
            current.append(
                previous[i - 1] if char_a == char_b else 1 + min(previous[i - 1], previous[i], current[-1])
            )
        previous = current
    return previous[-1]


def anls(gold: str, pred: str, threshold: float = ANLS_THRESHOLD) -> float:
    """Normalised Levenshtein similarity; values at or below ``threshold`` become 0."""
    # The official code measures the upper-cased lengths ("ß" counts 2); kept for identical scores.
    length = max(len(gold.upper()), len(pred.upper()))
    value = 1.0 if length == 0 else 1.0 - levenshtein(gold, pred) / length
    return 0.0 if value <= threshold else value


def clean_string(value: object) -> str:
    """The official answer normalisation (see the module docstring)."""
    text = str(value).lower().strip()
    text = _PARENTHETICAL.sub("", text).strip()
    text = _EDGE_QUOTE.sub("", text).strip()
    text = text.lstrip("$").strip()
    return text.rstrip("%").strip()


def is_exact_match(text: str) -> bool:
    """Strings compared by equality rather than ANLS: URLs, code files, page refs, times, numbers, dates, e-mails."""
    return (
        "https://" in text
        or text.endswith((".py", "ipynb"))
        or text.startswith("page")
        or "a.m." in text
        or "p.m." in text
        or any(p.fullmatch(text) for p in (_NUMBER_WITH_PART, _DATE_YMD, _DATE_YM, _EMAIL))
    )


def _is_float_like(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _decimals(number: float) -> int:
    # Counted on Python's repr of the parsed float, as the official code does ("18.0" has 1).
    text = str(number)
    return len(text.split(".")[-1]) if "." in text else 3


def float_matches(gold: float, pred: float) -> bool:
    """Whether ``pred`` equals ``gold``, ``gold/100`` or ``gold*100`` within 1 % or after rounding."""
    for candidate in (gold / 100, gold, gold * 100):
        if math.isclose(candidate, pred, rel_tol=FLOAT_RELATIVE_TOLERANCE):
            return True
        places = max(min(_decimals(pred), _decimals(candidate)), 2)
        try:
            if round(pred, places) == round(candidate, places):
                return True
        except (OverflowError, ValueError):
            continue
    return False


def _score_int(gold: str, pred: str) -> float:
    try:
        return float(int(gold) == int(float(pred)))
    except (ValueError, OverflowError):
        return 0.0


def _score_float(gold: str, pred: str) -> float:
    try:
        gold_value = float(clean_string(gold))
        pred_value = float(clean_string(pred))
    except ValueError:
        return 0.0
    return float(float_matches(gold_value, pred_value))


def _score_string(gold: str, pred: str) -> float:
    gold_clean, pred_clean = clean_string(gold), clean_string(pred)
    if is_exact_match(gold_clean):
        return float(gold_clean == pred_clean)
    return anls(gold_clean, pred_clean)


class _Unparsable(ValueError):
    pass


def parse_list(value: object) -> list[Any]:
    """A list answer: a list literal when the text starts with ``[``, else a one-item list.

    Raises ``ValueError`` for text that starts with ``[`` but is not a Python literal list.
    """
    if isinstance(value, list):
        return value
    if isinstance(value, str) and value.startswith("["):
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
            raise _Unparsable(f"not a list literal: {value[:80]!r}") from exc
        if not isinstance(parsed, list):
            raise _Unparsable(f"not a list literal: {value[:80]!r}")
        return parsed
    return [value]


def _score_list(gold: str, pred: str) -> float:
    try:
        gold_items, pred_items = parse_list(gold), parse_list(pred)
    except ValueError:
        return 0.0
    if len(gold_items) != len(pred_items):
        return 0.0
    if not gold_items:
        return 1.0  # official: IndexError on gold[0]
    gold_clean = sorted(clean_string(item) for item in gold_items)
    pred_clean = sorted(clean_string(item) for item in pred_items)
    if _is_float_like(gold_clean[0]) or is_exact_match(gold_clean[0]):
        return float("-".join(gold_clean) == "-".join(pred_clean))
    return min(anls(g, p) for g, p in zip(gold_clean, pred_clean, strict=True))


_SCORERS: Final[dict[str, Callable[[str, str], float]]] = {
    "Int": _score_int,
    "Float": _score_float,
    "Str": _score_string,
    "None": _score_string,
    "List": _score_list,
}


def score_answer(gold: str, pred: str, answer_format: str) -> float:
    """Score a predicted answer against the gold one, in [0, 1], by the official rules.

    ``answer_format`` is the gold format (``Int``, ``Float``, ``Str``, ``None``, ``List``); the
    extractor's own format guess is never used. Raises ``ValueError`` for any other format.
    """
    scorer = _SCORERS.get(answer_format)
    if scorer is None:
        raise ValueError(
            f"unknown answer_format {answer_format!r}; expected one of {', '.join(ANSWER_FORMATS)}"
        )
    try:
        return scorer(str(gold), str(pred))
    except (ValueError, TypeError, OverflowError, IndexError, RecursionError):
        return 0.0


# ----------------------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class ScoredAnswer:
    """What the metrics need of one scored question."""

    gold: str
    pred: str
    score: float
    evidence_pages: tuple[int, ...] = ()
    evidence_sources: tuple[str, ...] = ()
    doc_type: str = ""

    @classmethod
    def of(cls, question: Any, pred: str, score: float) -> ScoredAnswer:
        """From anything shaped like ``questions.Question`` (answer, evidence, doc_type)."""
        return cls(
            str(question.answer),
            pred,
            score,
            tuple(question.evidence_pages),
            tuple(question.evidence_sources),
            str(question.doc_type),
        )


@dataclass(frozen=True)
class Metrics:
    """Acc and generalised F1 (both in [0, 1]) over ``n`` questions."""

    n: int
    acc: float
    f1: float
    recall: float
    precision: float

    def as_dict(self) -> dict[str, float | int]:
        return {
            "n": self.n,
            "acc": self.acc,
            "f1": self.f1,
            "recall": self.recall,
            "precision": self.precision,
        }


def acc_and_f1(items: Sequence[ScoredAnswer]) -> Metrics:
    """The official metrics.

    Acc is the mean score. Recall is the summed score of questions whose gold answer is not
    "Not answerable" over their count; precision is that same sum over the number of predictions
    that are not exactly "Not answerable" (case-sensitive). F1 is their harmonic mean, 0 when both
    are 0, and 0 when either denominator is 0 (where the official code hits a ZeroDivisionError).
    """
    n = len(items)
    if n == 0:
        return Metrics(0, 0.0, 0.0, 0.0, 0.0)
    acc = sum(item.score for item in items) / n
    answerable = [item for item in items if item.gold != NOT_ANSWERABLE]
    committed = [item for item in items if item.pred != NOT_ANSWERABLE]
    if not answerable or not committed:
        return Metrics(n, acc, 0.0, 0.0, 0.0)
    hits = sum(item.score for item in answerable)
    recall, precision = hits / len(answerable), hits / len(committed)
    f1 = 2 * recall * precision / (recall + precision) if recall + precision > 0 else 0.0
    return Metrics(n, acc, f1, recall, precision)


@dataclass(frozen=True)
class Summary:
    """Overall metrics and the paper's breakdowns (a question counts under each of its evidence sources)."""

    overall: Metrics
    single_page: Metrics
    cross_page: Metrics
    unanswerable: Metrics
    by_evidence_source: Mapping[str, Metrics]
    by_doc_type: Mapping[str, Metrics]

    def as_dict(self) -> dict[str, Any]:
        return {
            "overall": self.overall.as_dict(),
            "single_page": self.single_page.as_dict(),
            "cross_page": self.cross_page.as_dict(),
            "unanswerable": self.unanswerable.as_dict(),
            "by_evidence_source": {k: v.as_dict() for k, v in self.by_evidence_source.items()},
            "by_doc_type": {k: v.as_dict() for k, v in self.by_doc_type.items()},
        }


def _grouped(
    items: Iterable[ScoredAnswer], keys: Callable[[ScoredAnswer], Iterable[str]]
) -> dict[str, Metrics]:
    groups: dict[str, list[ScoredAnswer]] = {}
    for item in items:
        for key in keys(item):
            groups.setdefault(key, []).append(item)
    return {key: acc_and_f1(groups[key]) for key in sorted(groups)}


def summarise(items: Sequence[ScoredAnswer]) -> Summary:
    """Acc and F1 overall and by the breakdowns the paper reports.

    Single-page: exactly one evidence page. Cross-page: not exactly one, and answerable.
    Unanswerable: gold "Not answerable".
    """
    return Summary(
        overall=acc_and_f1(items),
        single_page=acc_and_f1([i for i in items if len(i.evidence_pages) == 1]),
        cross_page=acc_and_f1([i for i in items if len(i.evidence_pages) != 1 and i.gold != NOT_ANSWERABLE]),
        unanswerable=acc_and_f1([i for i in items if i.gold == NOT_ANSWERABLE]),
        by_evidence_source=_grouped(items, lambda i: i.evidence_sources),
        by_doc_type=_grouped(items, lambda i: (i.doc_type,) if i.doc_type else ()),
    )
