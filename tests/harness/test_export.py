"""``docab export`` and the pandas tables behind it."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from docab.cli.main import main
from docab.report.frames import questions_frame, records_frame
from docab.report.summary import build_report, load_run
from tests.harness.synthetic_runs import make_record, random_run, write_run


def test_records_frame_flattens_every_record(tmp_path: Path) -> None:
    records = [
        make_record("fs", "q1", "d1", tools=("grep", "read", "read"), pages_read=(3, 4), extractor_tokens=50),
        make_record("fs", "q2", "d1", gold="Not answerable", evidence_pages=(), status="error", score=0.0),
        make_record("md", "q1", "d1", evidence_pages=(3, 5), pages_read=(3,)),
    ]
    frame = records_frame(records)
    assert len(frame) == 3
    first = frame.iloc[0]
    assert first["calls_grep"] == 1 and first["calls_read"] == 2 and first["tool_call_count"] == 3
    assert (
        first["tokens"] == first["tokens_agent"] + first["tokens_extractor"]
        and first["tokens_extractor"] == 60
    )
    assert first["evidence_recall"] == 1.0 and first["pages_read"] == [3, 4]
    assert first["evidence_pages_kind"] == "single-page"
    assert frame.iloc[1]["evidence_pages_kind"] == "unanswerable" and pd.isna(
        frame.iloc[1]["evidence_recall"]
    )
    assert frame.iloc[2]["evidence_pages_kind"] == "cross-page" and frame.iloc[2]["evidence_recall"] == 0.5
    assert frame.iloc[1]["calls_grep"] == 0  # absent tools count zero, not NaN
    assert [list(g) for g in frame["evidence_pages_groups"]] == [
        ["single-page"],
        ["unanswerable"],
        ["cross-page"],
    ]
    both = records_frame([make_record("fs", "q3", "d1", gold="Not answerable", evidence_pages=(2,))])
    assert list(both.iloc[0]["evidence_pages_groups"]) == [
        "single-page",
        "unanswerable",
    ]  # as the report counts it


def test_questions_frame_reproduces_the_headline_accuracy(tmp_path: Path) -> None:
    run = load_run(random_run(tmp_path / "run", documents=5, per_document=4, epochs=2))
    report = build_report(run)
    frame = questions_frame(report.outcomes)
    assert len(frame) == 2 * 20 and set(frame["epochs"]) == {2}
    means = frame.groupby("arm")["score"].mean()
    for arm in report.summary.arms:
        assert means[arm.arm] == pytest.approx(arm.accuracy.value)


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_export_writes_each_format(tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    folder = random_run(tmp_path / "run", documents=3, per_document=3)
    log = (folder / "records.jsonl").read_bytes()
    assert main(["export", str(folder), "--format", fmt]) == 0
    assert (folder / "records.jsonl").read_bytes() == log  # the run's own log is never replaced
    target = folder / ("records.flat.jsonl" if fmt == "jsonl" else f"records.{fmt}")
    assert f"wrote {target} (18 rows" in capsys.readouterr().err
    if fmt == "parquet":
        back = pd.read_parquet(target)
        assert list(back.iloc[0]["evidence_pages"]) == list(
            records_frame(load_run(folder).records).iloc[0]["evidence_pages"]
        )
    elif fmt == "csv":
        back = pd.read_csv(target)
        assert isinstance(json.loads(back.iloc[0]["evidence_sources"]), list)
    else:
        back = pd.read_json(target, lines=True)
    assert len(back) == 18 and {"arm", "qid", "score", "tokens", "evidence_recall"} <= set(back.columns)


@pytest.mark.parametrize("name", ["records.jsonl", "manifest.json"])
def test_export_never_writes_over_the_runs_own_files(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = random_run(tmp_path / "run", documents=2, per_document=2)
    before = (folder / name).read_bytes()
    assert main(["export", str(folder), "--format", "jsonl", "-o", str(folder / name)]) == 2
    err = capsys.readouterr().err
    assert "is a file of the run itself" in err and len(err.strip().splitlines()) == 1
    assert (folder / name).read_bytes() == before
    assert build_report(load_run(folder)).summary.arms  # the run still reads


def test_export_questions_to_a_chosen_file(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", [make_record("fs", "q", "d", epoch=e) for e in range(3)])
    target = tmp_path / "out.parquet"
    assert main(["export", str(folder), "--level", "questions", "-o", str(target)]) == 0
    frame = pd.read_parquet(target)
    assert len(frame) == 1 and frame.iloc[0]["epochs"] == 3


def test_export_merges_reruns_as_epochs_like_the_report(tmp_path: Path) -> None:
    first = write_run(tmp_path / "r1", [make_record("fs", "q", "d")])
    second = write_run(tmp_path / "r2", [make_record("fs", "q", "d", score=0.0)])
    target = tmp_path / "q.parquet"
    assert main(["export", str(first), str(second), "--level", "questions", "-o", str(target)]) == 0
    assert pd.read_parquet(target).iloc[0]["epochs"] == 1  # a duplicate: the last copy kept
    assert (
        main(
            [
                "export",
                str(first),
                str(second),
                "--reruns-as-epochs",
                "--level",
                "questions",
                "-o",
                str(target),
            ]
        )
        == 0
    )
    assert pd.read_parquet(target).iloc[0]["epochs"] == 2


def test_export_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(tmp_path / "nope")]) == 2
    assert "is not a run folder" in capsys.readouterr().err
    folder = random_run(tmp_path / "run", documents=2, per_document=2)
    assert main(["export", str(folder), "-o", str(tmp_path / "missing" / "x.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("docab export: error: could not write") and "Traceback" not in err


# -- the fixed export schema (issue 17; the column rename is issue 15 item 8) --------------------------


def _two_runs(tmp_path: Path) -> tuple[Path, Path]:
    """Two runs whose values alone would give pyarrow different types: one never hit a limit nor
    logged an error (limit_hit, errors and transcript all empty), the other did."""
    calm = write_run(
        tmp_path / "calm",
        [make_record(arm, f"q{i}", "d1", pages_read=()) for arm in ("fs", "md") for i in range(3)],
    )
    eventful = write_run(
        tmp_path / "eventful",
        [
            make_record("fs", "q0", "d1", status="limit", limit_hit="turns", pages_read=(3,)),
            make_record("fs", "q1", "d2", status="error"),
            make_record("md", "q0", "d1", tools=("read", "md_read")),
            make_record("md", "q1", "d2", gold="Not answerable", evidence_pages=()),
        ],
    )
    return calm, eventful


@pytest.mark.parametrize("level", ["records", "questions"])
def test_exports_of_two_runs_concatenate(tmp_path: Path, level: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from docab.report.frames import QUESTIONS_SCHEMA, RECORDS_SCHEMA

    tables = []
    for folder in _two_runs(tmp_path):
        target = tmp_path / f"{folder.name}.parquet"
        assert main(["export", str(folder), "--level", level, "-o", str(target)]) == 0
        tables.append(pq.read_table(target))
    fixed = RECORDS_SCHEMA if level == "records" else QUESTIONS_SCHEMA
    for table in tables:
        assert table.schema.field("limit_hit" if level == "records" else "limits").type != pa.null()
        assert [table.schema.field(name).type for name in fixed.names] == list(fixed.types)
        assert table.schema.metadata[b"docab.export"] == f"{level}/5".encode()
    # Only the calls_<tool> columns differ (the second run called md_read): Arrow fills them in.
    merged = pa.concat_tables(tables, promote_options="default")
    assert merged.num_rows == sum(t.num_rows for t in tables)
    assert merged.schema.field("calls_md_read").type == (pa.int64() if level == "records" else pa.float64())
    # Without the differing tool columns the schemas are identical: a plain concatenation works.
    shared = [name for name in tables[0].schema.names if name in tables[1].schema.names]
    plain = pa.concat_tables([t.select(shared) for t in tables])
    assert plain.schema.field("evidence_pages").type == pa.list_(pa.int64())
    frame = pd.concat([t.to_pandas() for t in tables], ignore_index=True)
    assert len(frame) == merged.num_rows


def test_export_schema_declares_every_field_and_only_identifiers() -> None:
    import dataclasses

    from docab.log.records import RunRecord
    from docab.report.frames import QUESTIONS_SCHEMA, RECORDS_SCHEMA
    from docab.report.outcomes import QuestionOutcome

    skipped = {"usage", "cached_tool_usage", "cached_model_usage", "tool_calls"}
    fields = [f for f in RunRecord.__dataclass_fields__ if f not in skipped]
    assert fields == RECORDS_SCHEMA.names[: len(fields)]
    per_role = {
        "tokens_by_role",
        "tool_calls_by_name",
        "tool_seconds_by_name",
        "tokens_with_cache",
    }  # flattened
    outcome_fields = [f.name for f in dataclasses.fields(QuestionOutcome) if f.name not in per_role]
    assert outcome_fields == QUESTIONS_SCHEMA.names[: len(outcome_fields)]
    for name in [*RECORDS_SCHEMA.names, *QUESTIONS_SCHEMA.names]:
        assert name.isidentifier(), name
    assert "tokens_tool_side" in RECORDS_SCHEMA.names and "tokens_tool_side" in QUESTIONS_SCHEMA.names


def test_frames_carry_every_role_and_match_the_schema(tmp_path: Path) -> None:
    from docab.report.frames import QUESTIONS_SCHEMA, RECORDS_SCHEMA

    records = [
        make_record("fs", "q1", "d1", extractor_tokens=50),
        make_record("md", "q1", "d1", tools=("index_md",)),
    ]
    frame = records_frame(records)
    assert list(frame.columns) == [*RECORDS_SCHEMA.names, "calls_index_md", "calls_read"]
    assert frame.iloc[0]["tokens_extractor"] == 60 and frame.iloc[0]["tokens_tool_side"] == 0
    assert "tokens_tool-side" not in frame.columns
    questions = questions_frame(build_report(load_run(write_run(tmp_path / "r", records))).outcomes)
    assert list(questions.columns) == [*QUESTIONS_SCHEMA.names, "calls_index_md", "calls_read"]
    assert questions.set_index("arm").loc["md", "tokens_extractor"] == 0.0  # a role an arm never used


def test_a_column_without_a_declared_type_is_refused() -> None:
    from docab.report.frames import ExportSchemaError, export_schema

    with pytest.raises(ExportSchemaError, match="new_field"):
        export_schema(["arm", "new_field", "calls_grep"], level="records")
