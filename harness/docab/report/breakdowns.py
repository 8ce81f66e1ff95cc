"""Accuracy by breakdown (evidence source, evidence pages, document type, answer format, answer path) and the reference rows."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from docab.report import schema, signflip, stats
from docab.report.outcomes import QuestionOutcome

# A breakdown cell spanning fewer documents gets no interval: below 6, no sign pattern of the
# sign-flip test (docab.report.signflip) reaches p < 0.05.
MIN_DOCUMENTS_FOR_INTERVAL = signflip.MIN_DOCUMENTS_FOR_INTERVAL

DIMENSIONS: tuple[schema.Dimension, ...] = (
    "evidence source",
    "evidence pages",
    "document type",
    "answer format",
    "answer path",
)


def evidence_pages_groups(pages: int, answerable: bool) -> list[str]:
    """single-page (exactly one evidence page), cross-page (answerable, any other count) and/or
    unanswerable: the paper's split of questions by their evidence pages."""
    groups = ["single-page"] if pages == 1 else ["cross-page"] if answerable else []
    return groups + ([] if answerable else ["unanswerable"])


def question_groups(outcome: QuestionOutcome) -> list[tuple[schema.Dimension, str]]:
    """The (dimension, group) cells a question counts in; a question may count in several."""
    groups: list[tuple[schema.Dimension, str]] = [
        ("evidence source", s) for s in outcome.evidence_sources
    ] or [("evidence source", "(none)")]
    groups += [
        ("evidence pages", g) for g in evidence_pages_groups(len(outcome.evidence_pages), outcome.answerable)
    ]
    groups.append(("document type", outcome.doc_type or "(unknown)"))
    groups.append(("answer format", outcome.answer_format or "(unknown)"))
    return groups


def _mean_or_none(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def breakdowns(
    arms: Sequence[str],
    outcomes: Mapping[str, Mapping[str, QuestionOutcome]],
    reference: str,
) -> list[schema.Breakdown]:
    cells: dict[tuple[schema.Dimension, str], set[str]] = defaultdict(set)
    for arm in arms:
        for outcome in outcomes[arm].values():
            for cell in question_groups(outcome):
                cells[cell].add(outcome.qid)
    rows: list[schema.Breakdown] = []
    for (dimension, group), qids in sorted(
        cells.items(), key=lambda item: (DIMENSIONS.index(item[0][0]), item[0][1])
    ):
        by_arm: dict[str, schema.BreakdownCell] = {}
        for arm in arms:
            scores = [outcomes[arm][q].score for q in qids if q in outcomes[arm]]
            by_arm[arm] = schema.BreakdownCell(n=len(scores), accuracy=_mean_or_none(scores))
        differences: dict[str, schema.BreakdownDifference] = {}
        base = outcomes[reference]
        for arm in arms:
            if arm == reference:
                continue
            common = sorted(q for q in qids if q in base and q in outcomes[arm])
            if not common:
                continue
            differences[arm] = breakdown_difference(
                [base[q].doc_id for q in common], [outcomes[arm][q].score - base[q].score for q in common]
            )
        rows.append(schema.Breakdown(dimension=dimension, group=group, arms=by_arm, differences=differences))
    # The answer path is each arm's own (tool-submitted or extracted), so it gets no paired difference.
    paths: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for arm in arms:
        for outcome in outcomes[arm].values():
            for protocol in outcome.answer_protocols:
                paths[protocol][arm].append(outcome.score)
    for protocol, per_arm in sorted(paths.items()):
        rows.append(
            schema.Breakdown(
                dimension="answer path",
                group=protocol,
                arms={
                    arm: schema.BreakdownCell(n=len(scores), accuracy=_mean_or_none(scores))
                    for arm, scores in per_arm.items()
                },
                differences={},
            )
        )
    return rows


def breakdown_difference(documents: Sequence[str], gaps: Sequence[float]) -> schema.BreakdownDifference:
    """B − A on one cell: an interval only when the cell spans enough documents for one."""
    docs = np.array(documents, dtype=object)
    count = len(set(documents))
    value = float(np.mean(gaps))
    if count < MIN_DOCUMENTS_FOR_INTERVAL:
        return schema.BreakdownDifference(
            n=len(gaps),
            documents=count,
            value=value,
            note=f"too small for an interval ({count} document{'s' * (count != 1)}; "
            f"{MIN_DOCUMENTS_FOR_INTERVAL} needed)",
        )
    gap = stats.mean_t(gaps, docs)
    return schema.BreakdownDifference(
        n=len(gaps),
        documents=count,
        value=value,
        low=gap.interval.low,
        high=gap.interval.high,
        method=gap.interval.method,
    )


def breakdown_note(rows: Sequence[schema.Breakdown]) -> str:
    cells = sum(len(row.differences) for row in rows)
    if not cells:
        return ""
    return (
        f"{cells} paired difference{'s' * (cells != 1)} over {len(rows)} group{'s' * (len(rows) != 1)}: "
        "each interval is unadjusted for the number of cells, so about 1 in 20 excludes zero by chance; "
        f"cells spanning fewer than {MIN_DOCUMENTS_FOR_INTERVAL} documents get none."
    )


def reference_rows(outcomes: Mapping[str, Mapping[str, QuestionOutcome]]) -> list[schema.ReferenceRow]:
    """Policies that are not arms, on the run's questions: what answering "Not answerable" to every
    question scores (the official scorer gives it 1 on unanswerable gold, 0 elsewhere, and F1 0)."""
    questions: dict[str, bool] = {}
    for by_question in outcomes.values():
        for qid, outcome in by_question.items():
            questions.setdefault(qid, outcome.answerable)
    if not questions:
        return []
    unanswerable = sum(not answerable for answerable in questions.values())
    answerable = len(questions) - unanswerable
    return [
        schema.ReferenceRow(
            name="always Not answerable",
            description='answers "Not answerable" to every question: an arm below it has learnt nothing',
            questions=len(questions),
            accuracy=unanswerable / len(questions),
            answerable_accuracy=0.0 if answerable else None,
            f1=0.0,
        )
    ]
