"""Answer-extraction failures are first-class (issue 23 item 4): a record whose extractor reply could
not be parsed ("Failed to extract", status ok, score 0) is counted per arm in summary.json, shown in
report.md and the terminal, warned about loudly above 10 %, counted by --max-error-share, run again
by --retry-errors, marked in the viewer and in the records export."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

from rich.console import Console

from docab.log.manifest import Manifest
from docab.log.records import RunRecord
from docab.report.frames import records_frame
from docab.report.render import print_console, to_markdown
from docab.report.schema import ArmSummary, parse_summary
from docab.report.summary import RunData, build_report
from docab.runner.failures import counts_as_error, tally_errors
from docab.viewer.page import outcome
from tests.harness.synthetic_runs import make_record


def run(failed_per_arm: dict[str, int], questions: int = 10) -> list[RunRecord]:
    records = []
    for arm, failed in failed_per_arm.items():
        for i in range(questions):
            record = make_record(arm, f"q{i}", f"d{i % 5}", protocol="extraction", extractor_tokens=50)
            if i < failed:
                record = dataclasses.replace(record, extracted_answer="Failed to extract", score=0.0)
            records.append(record)
    return records


def report(records: list[RunRecord]):  # type: ignore[no-untyped-def]
    return build_report(RunData((Path("r"),), Manifest(), tuple(records)))


def test_counted_per_arm_in_the_summary_and_report_md() -> None:
    summary = report(run({"a": 0, "b": 3})).summary
    a, b = summary.arm("a"), summary.arm("b")
    assert a is not None and b is not None
    assert (a.extraction.of, a.extraction.failed) == (10, 0)
    assert (b.extraction.of, b.extraction.failed) == (10, 3)
    text = to_markdown(summary)
    assert "b: extraction failed: 3 of 10." in text and "a: extraction failed: 0 of 10." in text
    assert any("EXTRACTION FAILED on 3 of 10 answers of arm b" in w for w in summary.warnings)
    again = parse_summary(summary.model_dump_json())
    assert again.arm("b").extraction.failed == 3  # type: ignore[union-attr]


def test_no_warning_at_or_below_ten_percent() -> None:
    summary = report(run({"a": 1, "b": 0})).summary
    assert not any("EXTRACTION FAILED" in w for w in summary.warnings)


def test_the_terminal_shows_them() -> None:
    summary = report(run({"a": 5})).summary
    out = io.StringIO()
    print_console(summary, Console(file=out, width=200))
    shown = out.getvalue()
    assert "extraction failed: 5 of 10" in shown and "EXTRACTION FAILED" in shown


def test_a_summary_written_before_the_field_still_loads() -> None:
    summary = report(run({"a": 2})).summary
    data = summary.model_dump(mode="json")
    for arm in data["arms"]:
        del arm["extraction"]
    old = parse_summary(json.dumps(data))
    assert old.arms[0].extraction.failed == 0
    assert "extraction" in ArmSummary.model_fields


def test_submit_tool_records_are_not_extractions() -> None:
    record = make_record("a", "q", "d", protocol="submit_tool")
    record = dataclasses.replace(record, extracted_answer="Failed to extract", score=0.0)
    assert not record.extraction_ran and not record.extraction_failed


def test_max_error_share_counts_them_and_retry_errors_reruns_them() -> None:
    records = run({"a": 2})
    tally = tally_errors(records)
    assert tally.errored == 2 and tally.exceeds(0.1) and not tally.exceeds(0.2)
    assert "answer extraction failed" in tally.summary(0.0)
    assert sum(counts_as_error(r) for r in records) == 2


def test_viewer_and_export_mark_them() -> None:
    records = run({"a": 1}, questions=2)
    assert [outcome(r) for r in records] == ["unextracted", "correct"]
    frame = records_frame(records)
    assert list(frame["extraction_failed"]) == [True, False]
    assert list(frame["answer_path"]) == ["", ""]
