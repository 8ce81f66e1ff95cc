"""Prediction files (``docab score``): read, score each record by the official rules, summarise.

A record is a JSON object with the benchmark's fields plus ``pred``. ``answer`` and
``answer_format`` are required; ``evidence_pages``, ``evidence_sources`` and ``doc_type`` feed
the breakdowns (list literals as in samples.json, or JSON lists). A record without ``pred`` (or
with ``null``) scores 0: no answer is a wrong answer. Files are JSON lines, or one JSON list (as
the official runners write ``res_<model>.json``).
"""

from __future__ import annotations

import ast
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docab_benchmark.mmlongbench.scoring import ScoredAnswer, Summary, score_answer, summarise


class PredictionError(Exception):
    """A predictions file that cannot be read at all."""


@dataclass(frozen=True)
class Record:
    line: int
    data: dict[str, Any] | None
    problem: str | None = None


def read_predictions(path: Path) -> list[Record]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PredictionError(f"{path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PredictionError(f"cannot read {path}: {exc}") from None
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PredictionError(f"{path} starts like a JSON list but is not valid JSON ({exc})") from None
        except RecursionError:
            raise PredictionError(f"{path} is JSON nested too deeply to hold predictions") from None
        return [
            Record(
                i + 1,
                item if isinstance(item, dict) else None,
                None if isinstance(item, dict) else "not an object",
            )
            for i, item in enumerate(items)
        ]
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            records.append(Record(number, None, f"not valid JSON ({exc.msg})"))
            continue
        except RecursionError:
            records.append(Record(number, None, "JSON nested too deeply to be a prediction"))
            continue
        records.append(
            Record(number, item, None) if isinstance(item, dict) else Record(number, None, "not an object")
        )
    if not records:
        raise PredictionError(f"{path} holds no predictions")
    return records


def _literal_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if value is None or value == "":
        return []
    parsed = ast.literal_eval(str(value))
    if not isinstance(parsed, (list, tuple)):
        raise ValueError("not a list")
    return list(parsed)


@dataclass(frozen=True)
class ScoredFile:
    rows: tuple[dict[str, Any], ...]  # the scored records, each with "score"
    summary: Summary
    problems: tuple[str, ...]

    def write(self, path: Path) -> None:
        """One JSON line per scored record, written atomically."""
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in self.rows)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def score_records(records: Sequence[Record]) -> ScoredFile:
    rows: list[dict[str, Any]] = []
    items: list[ScoredAnswer] = []
    problems: list[str] = []
    for record in records:
        if record.data is None:
            problems.append(f"line {record.line}: {record.problem}; left out")
            continue
        data = dict(record.data)
        missing = [key for key in ("answer", "answer_format") if data.get(key) is None]
        if missing:
            problems.append(f"line {record.line}: missing {', '.join(missing)}; left out")
            continue
        pred = data.get("pred")
        try:
            score = (
                0.0
                if pred is None
                else score_answer(str(data["answer"]), str(pred), str(data["answer_format"]))
            )
        except ValueError as exc:
            problems.append(f"line {record.line}: {exc}; left out")
            continue
        try:
            pages = tuple(int(p) for p in _literal_list(data.get("evidence_pages")))
            sources = tuple(str(s) for s in _literal_list(data.get("evidence_sources")))
        except (ValueError, SyntaxError, TypeError):
            problems.append(
                f"line {record.line}: unreadable evidence_pages/evidence_sources; breakdowns skip them"
            )
            pages, sources = (), ()
        data["score"] = score
        rows.append(data)
        items.append(
            ScoredAnswer(
                str(data["answer"]),
                "" if pred is None else str(pred),
                score,
                pages,
                sources,
                str(data.get("doc_type") or ""),
            )
        )
    return ScoredFile(tuple(rows), summarise(items), tuple(problems))


def format_summary(summary: Summary) -> str:
    """Acc and F1 overall and per breakdown, as a table (percentages)."""
    o = summary.overall
    lines = [
        f"questions: {o.n}",
        f"Acc {100 * o.acc:5.1f} %   F1 {100 * o.f1:5.1f} %   (recall {100 * o.recall:.1f} %, precision {100 * o.precision:.1f} %)",
        "",
        f"  {'breakdown':<44} {'n':>5} {'Acc %':>7} {'F1 %':>7}",
    ]
    rows = [
        ("single-page", summary.single_page),
        ("cross-page", summary.cross_page),
        ("unanswerable", summary.unanswerable),
    ]
    rows += [(f"evidence: {k}", v) for k, v in summary.by_evidence_source.items()]
    rows += [(f"doc type: {k}", v) for k, v in summary.by_doc_type.items()]
    for name, m in rows:
        lines.append(f"  {name:<44} {m.n:>5} {100 * m.acc:7.1f} {100 * m.f1:7.1f}")
    return "\n".join(lines)
