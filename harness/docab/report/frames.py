"""A run as pandas tables, for notebooks and for ``docab export``.

Two levels, both flat (one scalar or list per cell, so they write to parquet as they are):

- ``records_frame``: one row per run record (arm, question, epoch), as the runner wrote it, with
  tokens per role, tool calls per tool and evidence recall added as columns.
- ``questions_frame``: one row per (arm, question), epochs averaged: the unit the report pairs
  and the statistics resample (``docab.report.summary.QuestionOutcome``).

The column names are the record's field names (``docab.log.records.RunRecord``) plus the derived
columns documented in ``RECORD_COLUMNS_ADDED``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from docab.log.records import RunRecord
from docab.report.summary import NOT_ANSWERABLE, QuestionOutcome, evidence_pages_groups, evidence_recall

if TYPE_CHECKING:
    import pandas as pd

RECORD_COLUMNS_ADDED = {
    "tokens": "every token of the record, all roles (input including cache, plus output)",
    "tokens_<role>": "tokens of one role: agent, tool-side, extractor",
    "input_uncached, cache_read, cache_write, output, reasoning": "summed over the record's model calls",
    "model_calls": "model calls of every role",
    "tool_call_count": "tool calls of the record",
    "calls_<tool>": "calls of one tool (0 when the arm never called it)",
    "evidence_recall": "share of the gold evidence pages the agent read (NaN without evidence pages)",
    "evidence_pages_kind": "single-page, cross-page or unanswerable: the first group the question counts in",
    "evidence_pages_groups": "every evidence-pages group the question counts in, as the report's breakdown "
    "counts it (an unanswerable question can also be single-page): explode it to slice as the report does",
}

_LISTS = ("errors", "pages_read", "sections_read", "evidence_pages", "evidence_sources")


def _evidence_pages_columns(pages: int, answerable: bool) -> dict[str, Any]:
    groups = list(evidence_pages_groups(pages, answerable))
    return {"evidence_pages_kind": groups[0], "evidence_pages_groups": groups}


def record_row(record: RunRecord) -> dict[str, Any]:
    row: dict[str, Any] = {
        name: getattr(record, name)
        for name in record.__dataclass_fields__
        if name not in ("usage", "tool_calls", *_LISTS)
    }
    for name in _LISTS:
        row[name] = list(getattr(record, name))
    row["tokens"] = record.tokens()
    for role in ("agent", "tool-side", "extractor"):
        row[f"tokens_{role}"] = record.tokens(role)
    for part in ("input_uncached", "cache_read", "cache_write", "output", "reasoning"):
        row[part] = sum(getattr(u, part) for u in record.usage)
    row["model_calls"] = len(record.usage)
    row["tool_call_count"] = len(record.tool_calls)
    for name, calls in Counter(c.name for c in record.tool_calls).items():
        row[f"calls_{name}"] = calls
    row["evidence_recall"] = evidence_recall(record)
    row.update(_evidence_pages_columns(len(record.evidence_pages), record.gold != NOT_ANSWERABLE))
    return row


def records_frame(records: Iterable[RunRecord]) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame([record_row(r) for r in records])
    calls = [c for c in frame.columns if c.startswith("calls_")]
    if calls:
        frame[calls] = frame[calls].fillna(0).astype(int)
    return frame


def question_row(outcome: QuestionOutcome) -> dict[str, Any]:
    row = {
        f.name: getattr(outcome, f.name)
        for f in dataclasses.fields(outcome)
        if f.name not in ("tokens_by_role", "tool_calls_by_name", "tool_seconds_by_name")
    }
    for name in ("statuses", "evidence_pages", "evidence_sources", "answer_protocols", "limits", "errors"):
        row[name] = list(row[name])
    for role, tokens in outcome.tokens_by_role.items():
        row[f"tokens_{role}"] = tokens
    for name, calls in outcome.tool_calls_by_name.items():
        row[f"calls_{name}"] = calls
    row.update(_evidence_pages_columns(len(outcome.evidence_pages), outcome.answerable))
    return row


def questions_frame(outcomes: Mapping[str, Mapping[str, QuestionOutcome]]) -> pd.DataFrame:
    """From ``Report.outcomes`` (arm -> qid -> outcome)."""
    import pandas as pd

    frame = pd.DataFrame([question_row(o) for by_question in outcomes.values() for o in by_question.values()])
    calls = [c for c in frame.columns if c.startswith("calls_")]
    if calls:
        frame[calls] = frame[calls].fillna(0.0)
    return frame
