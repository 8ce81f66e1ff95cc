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
    assert main(["export", str(folder), "--format", fmt]) == 0
    target = folder / f"records.{fmt}"
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
