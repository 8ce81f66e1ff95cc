"""``docab merge`` refuses parts run on different data, as a resume does (F6, test_data_change.py):
two parts whose manifests recorded different digests for the same question or converted document
are refused, naming how many and which, unless ``--accept-data-change``. Parts covering different
questions or documents merge, and the merged manifest holds the union of their contents; manifests
an older docab wrote (no ``contents``) still merge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from docab.cli.main import main
from docab.log.manifest import DataContents, QuestionDigest, load_manifest
from docab.log.merge import MergeError, merge_runs
from docab.report.summary import load_run
from tests.harness.synthetic_runs import make_record, write_run


def digests(answer: str = "a") -> QuestionDigest:
    return QuestionDigest(question="q", answer=answer, answer_format="f", evidence="e")


def contents(questions: dict[str, QuestionDigest], documents: dict[str, str]) -> dict[str, Any]:
    return DataContents(questions=questions, documents=documents).model_dump(mode="json")


def part(folder: Path, qids: list[str], doc: str, data: dict[str, Any] | None) -> Path:
    records = [make_record("fs", qid, doc) for qid in qids]
    return write_run(folder, records, {"contents": data} if data is not None else {})


def two_parts_on_different_data(tmp_path: Path) -> tuple[Path, Path]:
    """Two parts sharing question q1 and document d1: q1's gold answer and d1's conversion differ."""
    one = part(
        tmp_path / "p1", ["q1", "q2"], "d1", contents({"q1": digests(), "q2": digests()}, {"d1": "old"})
    )
    two = part(
        tmp_path / "p2",
        ["q1", "q3"],
        "d1",
        contents({"q1": digests("corrected"), "q3": digests()}, {"d1": "converted-again"}),
    )
    return one, two


def test_parts_run_on_different_data_are_refused_unless_accepted(tmp_path: Path) -> None:
    one, two = two_parts_on_different_data(tmp_path)
    out = tmp_path / "merged"
    with pytest.raises(MergeError) as refused:
        merge_runs([one, two], out)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("the parts were run on different data: ")
    said = f"{two}: 1 question's gold answer and 1 converted document differ from what {one} recorded"
    assert f"{said} (questions q1; d1), so the merged run's samples" in message
    assert "--accept-data-change" in message
    assert not out.exists()  # nothing written

    result = merge_runs([one, two], out, accept_data_change=True)
    assert result.records == 3
    assert any(w.startswith(f"accepted: {two}: 1 question's gold answer") for w in result.warnings)
    merged = load_manifest(out / "manifest.json")
    assert merged.merged_from[0].data_change is None
    change = merged.merged_from[1].data_change
    assert change is not None and change.startswith("1 question's gold answer and 1 converted document")
    assert merged.contents is not None  # the union, the later part's entry standing where they differ
    assert set(merged.contents.questions) == {"q1", "q2", "q3"}
    assert merged.contents.questions["q1"].answer == "corrected" and merged.contents.documents == {
        "d1": "converted-again"
    }


def test_parts_covering_different_questions_merge_with_the_union_of_their_contents(tmp_path: Path) -> None:
    one = part(tmp_path / "p1", ["q1", "q2"], "d1", contents({"q1": digests(), "q2": digests()}, {"d1": "x"}))
    two = part(tmp_path / "p2", ["q3"], "d2", contents({"q3": digests("other")}, {"d2": "y"}))
    same = part(tmp_path / "p3", ["q1"], "d1", contents({"q1": digests()}, {"d1": "x"}))  # the same data
    out = tmp_path / "merged"
    assert merge_runs([one, two, same], out).records == 3
    merged = load_manifest(out / "manifest.json")
    assert merged.contents == DataContents(
        questions={"q1": digests(), "q2": digests(), "q3": digests("other")}, documents={"d1": "x", "d2": "y"}
    )
    assert all(p.data_change is None for p in merged.merged_from)


def test_a_late_part_run_on_other_data_than_the_merged_run_is_refused(tmp_path: Path) -> None:
    one = part(tmp_path / "p1", ["q1"], "d1", contents({"q1": digests()}, {"d1": "x"}))
    out = tmp_path / "merged"
    merge_runs([one], out)
    late = part(tmp_path / "late", ["q2"], "d1", contents({"q2": digests()}, {"d1": "converted-again"}))
    with pytest.raises(
        MergeError, match=r"late: 1 converted document differs from what .*merged recorded \(d1\)"
    ):
        merge_runs([late], out)
    assert len(load_manifest(out / "manifest.json").merged_from) == 1  # the output is as it was


def test_manifests_without_contents_still_merge(tmp_path: Path) -> None:
    old = part(tmp_path / "old", ["q1"], "d1", None)  # as an older docab wrote it
    new = part(tmp_path / "new", ["q1", "q2"], "d1", contents({"q1": digests("x")}, {"d1": "y"}))
    out = tmp_path / "merged"
    assert merge_runs([old, new], out).records == 2
    assert load_manifest(out / "manifest.json").contents == DataContents(
        questions={"q1": digests("x")}, documents={"d1": "y"}
    )
    both_old = tmp_path / "merged-old"
    assert merge_runs([old, part(tmp_path / "old2", ["q2"], "d1", None)], both_old).records == 2
    assert load_manifest(both_old / "manifest.json").contents is None


def test_the_cli_refuses_in_one_line_and_merges_with_accept_data_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = two_parts_on_different_data(tmp_path)
    out = tmp_path / "merged"
    assert main(["merge", str(one), str(two), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "1 question's gold answer and 1 converted document differ" in err and "--accept-data-change" in err
    assert not out.exists()
    assert main(["merge", str(one), str(two), "--out", str(out), "--accept-data-change"]) == 0
    printed = capsys.readouterr().out
    assert "3 records from 2 parts" in printed and f"warning: accepted: {two}: 1 question's" in printed


def test_a_report_of_folders_run_on_different_data_warns(tmp_path: Path) -> None:
    one, two = two_parts_on_different_data(tmp_path)
    warnings = load_run(one, two).warnings
    assert any(
        w.startswith(f"{two}: 1 question's gold answer and 1 converted document differ")
        and "--accept-data-change" in w
        for w in warnings
    )
    assert not any("different data" in w for w in load_run(one).warnings)
