"""The run record survives a JSON round trip and sums usage per role."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from docab.log.records import RECORD_VERSION, PageShare, RunRecord, ToolCallRecord
from docab.usage import Usage


def make_record() -> RunRecord:
    return RunRecord(
        run_id="r1",
        arm="fs",
        qid="doc.pdf#3",
        doc_id="doc.pdf",
        epoch=0,
        model="openai/gpt-x",
        status="ok",
        score=1.0,
        answer_protocol="submit_tool",
        raw_answer="42",
        extracted_answer="42",
        gold="42",
        answer_format="Int",
        usage=(
            Usage.from_openai({"prompt_tokens": 100, "completion_tokens": 10}),
            Usage.from_openai({"prompt_tokens": 20, "completion_tokens": 2}, role="extractor"),
        ),
        tool_calls=(ToolCallRecord(name="read", duration_s=0.01, arguments={"path": "document.md"}),),
        pages_read=(3, 4),
        page_shares=(PageShare(2, 0.25), PageShare(3, 0.5), PageShare(4, 0.0, image=True)),
        cached_tool_usage=(Usage(input_uncached=900, output=40, role="tool-side", model="openai/gpt-v"),),
        evidence_pages=(4, 7),
    )


def test_round_trip_through_json() -> None:
    record = make_record()
    line = json.dumps(record.to_dict())
    back = RunRecord.from_dict(json.loads(line))
    assert back == record
    assert back.version == RECORD_VERSION
    assert back.key == ("fs", "doc.pdf#3", 0)


def test_usage_totals_by_role_are_written() -> None:
    data = make_record().to_dict()
    assert data["usage_totals"]["agent"]["total"] == 110
    assert data["usage_totals"]["extractor"]["input_total"] == 20
    assert make_record().tokens("agent") == 110
    assert make_record().tokens() == 132


def test_unknown_fields_from_newer_writers_are_ignored() -> None:
    data = make_record().to_dict()
    data["some_future_field"] = 1
    assert RunRecord.from_dict(data).qid == "doc.pdf#3"


def test_to_dict_matches_the_generic_dataclass_conversion() -> None:
    from dataclasses import asdict

    record = make_record()
    expected = asdict(record)
    expected["usage"] = [u.to_dict() for u in record.usage]
    data = record.to_dict()
    del data["usage_totals"]
    assert json.loads(json.dumps(data)) == json.loads(json.dumps(expected))


def test_lines_that_are_json_but_not_records_are_skipped_on_resume_and_named_in_reports(tmp_path) -> None:
    from docab.log.store import read_records, read_records_reporting

    path = tmp_path / "records.jsonl"
    good = json.dumps(make_record().to_dict())
    path.write_text("\n".join(["[1]", '"text"', "{}", good]) + "\n", encoding="utf-8")
    assert [r.qid for r in read_records(path)] == ["doc.pdf#3"]  # resume: no crash
    records, warnings = read_records_reporting(path)
    assert [r.qid for r in records] == ["doc.pdf#3"]
    assert [w.split(" is ")[0] for w in warnings] == [
        "records.jsonl: line 1",
        "records.jsonl: line 2",
        "records.jsonl: line 3",
    ]


def test_transcript_paths_never_collide_after_making_names_safe() -> None:
    from docab.log.transcript import transcript_path

    paths = {
        transcript_path(arm, qid, epoch)
        for arm in ("fs+md", "fs_md", "fs md")
        for qid in ("doc.pdf#3", "doc.pdf_3", "doc.pdf 3", "../doc")
        for epoch in (0, 1)
    }
    assert len(paths) == 3 * 4 * 2
    assert transcript_path("fs", "doc.pdf_3", 0) == "transcripts/fs/doc.pdf_3.e0.json"  # safe names stay
    assert all(".." not in p.split("/") and p.startswith("transcripts/") for p in paths)


def test_lines_not_utf8_or_nested_too_deeply_are_skipped_like_any_bad_line(tmp_path) -> None:
    from docab.log.store import read_records, read_records_reporting

    path = tmp_path / "records.jsonl"
    good = json.dumps(make_record().to_dict()).encode()
    path.write_bytes(b"\n".join([b'{"qid": "\xff\xfe"}', b"[" * 5000 + b"]" * 5000, good]) + b"\n")
    assert [r.qid for r in read_records(path)] == ["doc.pdf#3"]  # resume: no crash
    records, warnings = read_records_reporting(path)  # the report: the run is not refused
    assert [r.qid for r in records] == ["doc.pdf#3"]
    assert warnings == [
        "records.jsonl: line 1 is not UTF-8 text; skipped",
        "records.jsonl: line 2 is JSON nested too deeply to be a record; skipped",
    ]


def test_evidence_inputs_per_record() -> None:
    record = make_record()
    assert [s.read for s in record.page_shares] == [False, True, True]
    assert record.evidence_pages_read == (4,)
    assert record.evidence_recall == 0.5 and record.evidence_precision == 0.5
    assert record.cached_tokens() == 940 and record.tokens() == 132  # the cached cost is not spent
    nothing = RunRecord.from_dict({**make_record().to_dict(), "pages_read": [], "evidence_pages": []})
    assert nothing.evidence_recall is None and nothing.evidence_precision is None


def test_a_version_1_record_still_reads() -> None:
    """A record written before page shares (the committed demo baseline up to issue 13)."""
    line = (Path(__file__).parent / "fixtures" / "record-v1.jsonl").read_text()
    record = RunRecord.from_dict(json.loads(line))
    assert record.version == 1 and not record.reads_by_share
    assert record.page_shares == () and record.cached_tool_usage == ()
    assert record.pages_read == (1, 2, 3) and record.evidence_pages_read == (1,)
    assert record.pages_seen_or_read == (1, 2, 3)  # before version 3, pages_read counted search hits
    assert RECORD_VERSION == 3 and make_record().reads_by_share and make_record().reads_by_opening
    unversioned = json.loads(line)
    del unversioned["version"]
    assert RunRecord.from_dict(unversioned).version == 1


def test_a_score_outside_0_to_1_or_nan_is_not_a_record(tmp_path) -> None:
    """Review finding: a record with "score": NaN loaded silently and printed "nan points"."""
    from docab.log.store import read_records_reporting

    path = tmp_path / "records.jsonl"
    good = make_record().to_dict()
    lines = [json.dumps({**good, "score": value}) for value in (float("nan"), 1.5, "1")] + [json.dumps(good)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    records, warnings = read_records_reporting(path)
    assert len(records) == 1 and len(warnings) == 3
    assert all("score must be a number from 0 to 1" in w for w in warnings)


def test_version_3_keeps_pages_opened_apart_from_pages_seen_in_search_results() -> None:
    """Issue 24, item 2: pages_read counts only what read calls opened; pages_seen adds search."""
    from docab.log.records import PageShare

    shares = (PageShare(1, 0.9, False, 100, 0.9), PageShare(2, 0.1, False, 100, 0.8))
    record = replace(
        make_record(), pages_read=(1,), pages_seen=(1, 2), page_shares=shares, evidence_pages=(2,)
    )
    again = RunRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert again == record
    assert again.evidence_recall == 0.0 and again.pages_seen_or_read == (1, 2)
    assert [s.read for s in again.page_shares] == [True, False]
    assert [s.seen for s in again.page_shares] == [True, True]
    old = dict(record.to_dict(), version=2)
    del old["pages_seen"]
    assert RunRecord.from_dict(old).pages_seen_or_read == (1,)
