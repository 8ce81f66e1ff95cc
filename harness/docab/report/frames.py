"""A run as pandas tables, for notebooks and for ``docab export``.

Two levels, both flat (one scalar or list per cell, so they write to parquet as they are):

- ``records_frame``: one row per run record (arm, question, epoch), as the runner wrote it, with
  tokens per role, tool calls per tool and evidence recall added as columns.
- ``questions_frame``: one row per (arm, question), epochs averaged: the unit the report pairs
  and the statistics resample (``docab.report.outcomes.QuestionOutcome``).

The column names are the record's field names (``docab.log.records.RunRecord``) plus the derived
columns documented in ``RECORD_COLUMNS_ADDED``; every column is a valid identifier (the role
``tool-side`` is spelled ``tool_side`` in column names).

The export schema is fixed: :data:`RECORDS_SCHEMA` and :data:`QUESTIONS_SCHEMA` declare the type
of every column, here and nowhere else, and :func:`arrow_table` writes a frame with them. The only
columns that vary between runs are ``calls_<tool>`` (one per tool some arm called), always int64
(records) or float64 (questions). So the parquet files of any two runs concatenate
(``pyarrow.concat_tables(tables, promote_options="default")``, ``pandas.concat``), whether or not a
run hit a limit or logged an error; pyarrow never guesses a type from the values (an all-empty
column would become type ``null``). A change to a column is a change to these schemas, and to
``EXPORT_SCHEMA_VERSION``, which each parquet file carries in its metadata (``docab.export``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from docab.log.costs import record_cost
from docab.log.records import RunRecord
from docab.report.breakdowns import evidence_pages_groups
from docab.report.outcomes import NOT_ANSWERABLE, QuestionOutcome, evidence_recall, evidence_recall_seen

if TYPE_CHECKING:
    import pandas as pd

# 1: types guessed by pyarrow, the column ``tokens_tool-side``; 2: no page text_chars; 3: no cost;
# 4: cost, or answer_path and extraction_failed, but not both
EXPORT_SCHEMA_VERSION = 5
ROLES = ("agent", "tool-side", "extractor")
CALLS_PREFIX = "calls_"

RECORD_COLUMNS_ADDED = {
    "tokens": "every token of the record, all roles (input including cache, plus output)",
    "tokens_<role>": "tokens of one role: tokens_agent, tokens_tool_side, tokens_extractor",
    "input_uncached, cache_read, cache_write, output, reasoning": "summed over the record's model calls",
    "tokens_cached_tool": "what the tool answers served from a cache originally cost (not spent here)",
    "tokens_cached_model": "what the model replies served from docab's response cache originally cost (not spent here)",
    "extraction_failed": 'the answer extraction ran and its reply could not be parsed ("Failed to extract")',
    "model_calls": "model calls of every role",
    "tool_call_count": "tool calls of the record",
    "calls_<tool>": "calls of one tool (0 when the arm never called it)",
    "cost": "US dollars, every role (docab.pricing): the record's cost, or its usage priced by the table; "
    "null when a model's price is unknown",
    "cost_<role>": "US dollars of one role (cost_agent, cost_tool_side, cost_extractor); null when a price "
    "is unknown",
    "cost_saved_by_cache": "US dollars that answers served from a cache cost when first computed (not spent)",
    "evidence_recall": "share of the gold evidence pages read calls opened (NaN without evidence pages)",
    "evidence_recall_seen": "the same, counting pages search results showed most of too",
    "evidence_pages_kind": "single-page, cross-page or unanswerable: the first group the question counts in",
    "evidence_pages_groups": "every evidence-pages group the question counts in, as the report's breakdown "
    "counts it (an unanswerable question can also be single-page): explode it to slice as the report does",
}

_LISTS = ("errors", "pages_read", "pages_seen", "sections_read", "evidence_pages", "evidence_sources")

_TEXT: pa.DataType = pa.string()
_INT: pa.DataType = pa.int64()
_FLOAT: pa.DataType = pa.float64()
_BOOL: pa.DataType = pa.bool_()
_TEXTS: pa.DataType = pa.list_(pa.string())
_INTS: pa.DataType = pa.list_(pa.int64())
_PAGE_SHARES: pa.DataType = pa.list_(
    pa.struct(
        [
            ("page", pa.int64()),
            ("text_share", pa.float64()),
            ("image", pa.bool_()),
            ("text_chars", pa.int64()),
            ("seen_share", pa.float64()),
        ]
    )
)

RECORDS_SCHEMA = pa.schema(
    [
        # the record's fields (docab.log.records.RunRecord), in its order
        ("run_id", _TEXT),
        ("arm", _TEXT),
        ("qid", _TEXT),
        ("doc_id", _TEXT),
        ("epoch", _INT),
        ("model", _TEXT),
        ("status", _TEXT),
        ("score", _FLOAT),
        ("answer_protocol", _TEXT),
        ("raw_answer", _TEXT),
        ("extracted_answer", _TEXT),
        ("gold", _TEXT),
        ("answer_format", _TEXT),
        ("model_time_s", _FLOAT),
        ("tool_time_s", _FLOAT),
        ("wall_time_s", _FLOAT),
        ("turns", _INT),
        ("retries", _INT),
        ("limit_hit", _TEXT),  # null unless the status is limit
        ("errors", _TEXTS),
        ("pages_read", _INTS),  # opened by read calls
        ("pages_seen", _INTS),  # pages_read plus pages search results showed most of
        (
            "page_shares",
            _PAGE_SHARES,
        ),  # [{page, text_share, image, text_chars, seen_share}]: every page shown anything of
        ("sections_read", _TEXTS),
        ("evidence_pages", _INTS),
        ("evidence_sources", _TEXTS),
        ("doc_type", _TEXT),
        ("transcript", _TEXT),  # null when the run kept none
        ("started_at", _TEXT),
        ("cost", _FLOAT),  # USD, every role; null when a price is unknown
        ("answer_path", _TEXT),  # "prose-fallback", or "" for the protocol's own path
        ("version", _INT),
        # derived (RECORD_COLUMNS_ADDED)
        ("extraction_failed", _BOOL),  # the answer extraction's reply could not be parsed
        ("tokens", _INT),
        ("tokens_agent", _INT),
        ("tokens_tool_side", _INT),
        ("tokens_extractor", _INT),
        ("tokens_cached_tool", _INT),
        ("tokens_cached_model", _INT),
        ("input_uncached", _INT),
        ("cache_read", _INT),
        ("cache_write", _INT),
        ("output", _INT),
        ("reasoning", _INT),
        ("model_calls", _INT),
        ("tool_call_count", _INT),
        ("evidence_recall", _FLOAT),  # NaN without evidence pages
        ("evidence_recall_seen", _FLOAT),  # NaN without evidence pages
        ("evidence_pages_kind", _TEXT),
        ("evidence_pages_groups", _TEXTS),
        ("cost_agent", _FLOAT),
        ("cost_tool_side", _FLOAT),
        ("cost_extractor", _FLOAT),
        ("cost_saved_by_cache", _FLOAT),
    ]
)
"""``records_frame``'s columns and their types; then one int64 ``calls_<tool>`` per tool, by name."""

QUESTIONS_SCHEMA = pa.schema(
    [
        # docab.report.outcomes.QuestionOutcome's fields, in its order
        ("arm", _TEXT),
        ("qid", _TEXT),
        ("doc_id", _TEXT),
        ("model", _TEXT),
        ("epochs", _INT),
        ("score", _FLOAT),
        ("answered", _FLOAT),
        ("answerable", _BOOL),
        ("statuses", _TEXTS),
        ("tokens", _FLOAT),
        ("input_total", _FLOAT),
        ("cache_read", _FLOAT),
        ("first_call_input", _FLOAT),
        ("wall_time_s", _FLOAT),
        ("model_time_s", _FLOAT),
        ("tool_time_s", _FLOAT),
        ("turns", _FLOAT),
        ("tool_calls", _FLOAT),
        ("truncations", _FLOAT),
        ("retries", _FLOAT),
        ("evidence_recall", _FLOAT),
        ("pages_read", _FLOAT),
        ("evidence_found", _FLOAT),
        ("evidence_pages", _INTS),
        ("evidence_sources", _TEXTS),
        ("doc_type", _TEXT),
        ("answer_format", _TEXT),
        ("answer_protocols", _TEXTS),
        ("limits", _TEXTS),
        ("errors", _TEXTS),
        ("evidence_recall_seen", _FLOAT),
        ("tokens_estimated", _BOOL),  # the offline policy's estimated tokens
        ("cost_usd", _FLOAT),  # NaN when a price is unknown
        ("cost_saved_usd", _FLOAT),
        # derived: tokens per role (epochs averaged), the evidence-pages breakdown
        ("tokens_agent", _FLOAT),
        ("tokens_tool_side", _FLOAT),
        ("tokens_extractor", _FLOAT),
        ("tokens_with_anthropic_cache", _FLOAT),  # estimates, docab.report.prompt_cache
        ("tokens_with_openai_cache", _FLOAT),
        ("evidence_pages_kind", _TEXT),
        ("evidence_pages_groups", _TEXTS),
    ]
)
"""``questions_frame``'s columns and their types; then one float64 ``calls_<tool>`` per tool, by name."""


class ExportSchemaError(Exception):
    """A frame column the export schema does not declare: a change to the record or the outcome that
    was not carried into :data:`RECORDS_SCHEMA` / :data:`QUESTIONS_SCHEMA`."""


def role_column(role: str) -> str:
    """The column of a usage role's tokens: ``tokens_agent``, ``tokens_tool_side``, ``tokens_extractor``."""
    return "tokens_" + role.replace("-", "_")


def export_schema(columns: Iterable[str], *, level: Literal["records", "questions"]) -> pa.Schema:
    """The fixed schema of ``level`` plus the ``calls_<tool>`` columns among ``columns``, by name.

    Raises :class:`ExportSchemaError` for any other column the schema does not declare."""
    fixed = RECORDS_SCHEMA if level == "records" else QUESTIONS_SCHEMA
    calls_type = _INT if level == "records" else _FLOAT
    declared = set(fixed.names)
    calls = sorted(c for c in columns if c.startswith(CALLS_PREFIX) and c not in declared)
    unknown = sorted(c for c in columns if c not in declared and not c.startswith(CALLS_PREFIX))
    if unknown:
        raise ExportSchemaError(
            f"the {level} frame has columns without a declared export type: {', '.join(unknown)} "
            "(declare them in docab.report.frames)"
        )
    return pa.schema([*fixed, *(pa.field(c, calls_type) for c in calls)]).with_metadata(
        {"docab.export": f"{level}/{EXPORT_SCHEMA_VERSION}"}
    )


def arrow_table(frame: pd.DataFrame, *, level: Literal["records", "questions"]) -> pa.Table:
    """``frame`` as an Arrow table with the declared types, columns in the schema's order."""
    schema = export_schema(frame.columns, level=level)
    ordered = frame.reindex(columns=schema.names)
    return pa.Table.from_pandas(ordered, schema=schema, preserve_index=False)


def _evidence_pages_columns(pages: int, answerable: bool) -> dict[str, Any]:
    groups = list(evidence_pages_groups(pages, answerable))
    return {"evidence_pages_kind": groups[0], "evidence_pages_groups": groups}


def record_row(record: RunRecord) -> dict[str, Any]:
    row: dict[str, Any] = {
        name: getattr(record, name)
        for name in record.__dataclass_fields__
        if name
        not in ("usage", "cached_tool_usage", "cached_model_usage", "tool_calls", "page_shares", *_LISTS)
    }
    for name in _LISTS:
        row[name] = list(getattr(record, name))
    row["page_shares"] = [
        {
            "page": share.page,
            "text_share": share.text_share,
            "image": share.image,
            "text_chars": share.text_chars,
            "seen_share": share.seen_share,
        }
        for share in record.page_shares
    ]
    row["tokens_cached_tool"] = record.cached_tokens()
    row["tokens_cached_model"] = sum(u.total for u in record.cached_model_usage)
    row["extraction_failed"] = record.extraction_failed
    row["tokens"] = record.tokens()
    for role in ROLES:
        row[role_column(role)] = record.tokens(role)
    for part in ("input_uncached", "cache_read", "cache_write", "output", "reasoning"):
        row[part] = sum(getattr(u, part) for u in record.usage)
    row["model_calls"] = len(record.usage)
    row["tool_call_count"] = len(record.tool_calls)
    for name, calls in Counter(c.name for c in record.tool_calls).items():
        row[CALLS_PREFIX + name] = calls
    cost = record_cost(record)
    row["cost"] = cost.total
    for role in ROLES:
        row["cost_" + role.replace("-", "_")] = None if cost.unpriced else cost.by_role.get(role, 0.0)
    row["cost_saved_by_cache"] = cost.cached_usd
    row["evidence_recall"] = evidence_recall(record)
    row["evidence_recall_seen"] = evidence_recall_seen(record)
    row.update(_evidence_pages_columns(len(record.evidence_pages), record.gold != NOT_ANSWERABLE))
    return row


def records_frame(records: Iterable[RunRecord]) -> pd.DataFrame:
    """One row per record, columns in :data:`RECORDS_SCHEMA`'s order, then ``calls_<tool>`` by name."""
    import pandas as pd

    frame = pd.DataFrame([record_row(r) for r in records])
    calls = [c for c in frame.columns if c.startswith(CALLS_PREFIX)]
    if calls:
        frame[calls] = frame[calls].fillna(0).astype(int)
    return frame.reindex(columns=export_schema(frame.columns, level="records").names)


def question_row(outcome: QuestionOutcome) -> dict[str, Any]:
    row = {
        f.name: getattr(outcome, f.name)
        for f in dataclasses.fields(outcome)
        if f.name not in ("tokens_by_role", "tool_calls_by_name", "tool_seconds_by_name", "tokens_with_cache")
    }
    for rule, tokens in outcome.tokens_with_cache.items():
        row[f"tokens_with_{rule}_cache"] = tokens
    for name in ("statuses", "evidence_pages", "evidence_sources", "answer_protocols", "limits", "errors"):
        row[name] = list(row[name])
    for role in ROLES:
        row[role_column(role)] = outcome.tokens_by_role.get(role, 0.0)
    for name, calls in outcome.tool_calls_by_name.items():
        row[CALLS_PREFIX + name] = calls
    row.update(_evidence_pages_columns(len(outcome.evidence_pages), outcome.answerable))
    return row


def questions_frame(outcomes: Mapping[str, Mapping[str, QuestionOutcome]]) -> pd.DataFrame:
    """From ``Report.outcomes`` (arm -> qid -> outcome)."""
    import pandas as pd

    frame = pd.DataFrame([question_row(o) for by_question in outcomes.values() for o in by_question.values()])
    calls = [c for c in frame.columns if c.startswith(CALLS_PREFIX)]
    if calls:
        frame[calls] = frame[calls].fillna(0.0)
    return frame.reindex(columns=export_schema(frame.columns, level="questions").names)
