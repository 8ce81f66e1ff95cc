"""The report on synthetic runs: exact figures on a hand-made run, robustness on awkward ones."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from docab.report.arms import FLOOR_LABEL
from docab.report.breakdowns import question_groups
from docab.report.comparisons import planning_statement
from docab.report.outcomes import evidence_recall, question_outcomes
from docab.report.render import print_console, to_markdown
from docab.report.schema import SUMMARY_VERSION, ArmSummary, Summary, SummaryFormatError, parse_summary
from docab.report.summary import ReportError, build_report, load_run
from tests.harness.synthetic_runs import make_record, random_run, write_run

RESAMPLES = 500


def tiny_records() -> list:
    """Three documents, two questions each; arm md fixes q2 and q4 and errors on q5."""
    a_scores = {"q1": 1, "q2": 0, "q3": 1, "q4": 0, "q5": 0, "q6": 1}
    b_scores = {"q1": 1, "q2": 1, "q3": 1, "q4": 1, "q5": 0, "q6": 1}
    docs = {"q1": "d1", "q2": "d1", "q3": "d2", "q4": "d2", "q5": "d3", "q6": "d3"}
    records = []
    for qid, doc in docs.items():
        unanswerable = qid == "q6"
        common = {
            "gold": "Not answerable" if unanswerable else "42",
            "answer_format": "None" if unanswerable else "Int",
            "evidence_pages": () if unanswerable else ((3,) if qid in ("q1", "q3") else (3, 4)),
        }
        records.append(
            make_record(
                "fs",
                qid,
                doc,
                score=a_scores[qid],
                answer="Not answerable" if unanswerable else None,
                pages_read=(3,),
                **common,
            )
        )
        error = qid == "q5"
        records.append(
            make_record(
                "md",
                qid,
                doc,
                model="openai/gpt-test",
                status="error" if error else "ok",
                score=b_scores[qid],
                answer="" if error else ("Not answerable" if unanswerable else None),
                input_tokens=2000,
                cached_tokens=1000,
                wall_time_s=20.0,
                tools=("md_index", "md_read"),
                pages_read=(3, 4),
                **common,
            )
        )
    return records


@pytest.fixture
def tiny_run(tmp_path: Path) -> Path:
    return write_run(
        tmp_path / "tiny", tiny_records(), {"arms": {"fs": {"tool_definition_tokens": 420}, "md": {}}}
    )


def arm(summary: Summary, name: str) -> ArmSummary:
    found = summary.arm(name)
    assert found is not None, f"no arm {name!r}"
    return found


def test_per_arm_figures_match_the_official_definitions(tiny_run: Path) -> None:
    summary = build_report(load_run(tiny_run)).summary
    fs, md = arm(summary, "fs"), arm(summary, "md")
    assert fs.accuracy.value == pytest.approx(0.5)
    assert md.accuracy.value == pytest.approx(5 / 6)
    assert fs.accuracy.method == "korn-graubard"  # small sample: exact-type interval
    # F1: recall = precision = 2/5 for fs (one "Not answerable" prediction), 4/5 for md
    assert fs.f1.value == pytest.approx(0.4)
    assert md.f1.value == pytest.approx(0.8)
    assert md.status.model_dump() == {"ok": 5, "error": 1, "timeout": 0, "limit": 0}
    assert (fs.questions, fs.documents, fs.epochs) == (6, 3, 1)
    # evidence recall: fs read only page 3 -> q1 1, q2 .5, q3 1, q4 .5, q5 .5 -> 0.7
    assert fs.evidence is not None and md.evidence is not None
    assert fs.evidence.recall.value == pytest.approx(0.7)
    assert fs.evidence.questions == 5
    assert md.evidence.recall.value == pytest.approx(1.0)
    assert fs.tokens.total.median == 1100
    assert md.tokens.cache_read_share == pytest.approx(0.5)
    assert fs.tokens.cache_read_share == 0
    assert fs.tokens.tool_definition_tokens == 420 and md.tokens.tool_definition_tokens is None
    assert md.tool_calls.by_name["md_read"].calls == 6
    assert md.time.wall_s.median == 20.0
    assert not fs.floor and summary.label == ""


def test_paired_comparison_itt_and_pairs_dropped(tiny_run: Path) -> None:
    summary = build_report(load_run(tiny_run)).summary
    (comparison,) = summary.comparisons
    assert (comparison.a, comparison.b, comparison.paired) == ("fs", "md", 6)
    itt = comparison.itt
    assert itt is not None
    assert itt.accuracy.difference.value == pytest.approx(2 / 6)
    assert itt.f1.difference.value == pytest.approx(0.4)
    assert itt.accuracy.mcnemar_ignoring_documents.model_dump() == {
        "only_a_correct": 0,
        "only_b_correct": 2,
        "p_value": pytest.approx(0.5),
    }
    clustered = itt.accuracy.clustered_mcnemar
    assert (clustered.only_a_correct, clustered.only_b_correct) == (0, 2)
    assert clustered.p_value is not None and 0 < clustered.p_value < 1
    assert itt.tokens.ratio.value == pytest.approx(2100 / 1100)
    assert itt.latency.difference.value == pytest.approx(10.0)
    dropped = comparison.sensitivity
    assert dropped is not None and (dropped.dropped, dropped.paired) == (1, 5)
    assert dropped.accuracy is not None
    assert dropped.accuracy.difference.value == pytest.approx(2 / 5)
    assert comparison.first_call_input_difference is not None
    assert comparison.first_call_input_difference.median == 1000
    assert "not resolvable" in itt.mde.statement


def test_breakdowns_follow_the_paper(tiny_run: Path) -> None:
    rows = build_report(load_run(tiny_run)).summary.breakdowns
    cells = {(r.dimension, r.group): r for r in rows}
    single = cells[("evidence pages", "single-page")]
    assert single.arms["fs"].model_dump() == {"n": 2, "accuracy": 1.0}
    cross = cells[("evidence pages", "cross-page")]
    assert cross.arms["fs"].n == 3 and cross.arms["md"].accuracy == pytest.approx(2 / 3)
    assert cells[("evidence pages", "unanswerable")].arms["md"].n == 1
    assert cells[("answer format", "Int")].differences["md"].value == pytest.approx(0.4)
    assert ("document type", "Academic paper") in cells
    assert cells[("answer path", "submit_tool")].arms


def test_question_groups_count_under_every_evidence_source() -> None:
    record = make_record(
        "a", "q", "d", evidence_sources=("Table", "Chart"), evidence_pages=(1, 2), gold="Not answerable"
    )
    (outcome,) = question_outcomes([record])["a"].values()
    groups = question_groups(outcome)
    assert ("evidence source", "Table") in groups and ("evidence source", "Chart") in groups
    assert ("evidence pages", "unanswerable") in groups and ("evidence pages", "cross-page") not in groups


def test_epochs_are_averaged_before_pairing(tmp_path: Path) -> None:
    records = [
        make_record("a", "q1", "d1", epoch=0, score=1),
        make_record("a", "q1", "d1", epoch=1, score=0),
        make_record("a", "q2", "d2", epoch=0, score=1),
        make_record("a", "q2", "d2", epoch=1, score=1),
    ]
    summary = build_report(load_run(write_run(tmp_path / "e", records))).summary
    a = arm(summary, "a")
    assert a.questions == 2 and a.records == 4 and a.epochs == 2
    assert a.accuracy.value == pytest.approx(0.75)


def test_evidence_recall_of_a_record() -> None:
    assert evidence_recall(make_record("a", "q", "d", evidence_pages=(2, 4), pages_read=(4, 9))) == 0.5
    assert math.isnan(evidence_recall(make_record("a", "q", "d", evidence_pages=())))


def test_a_baseline_run_is_labelled_a_floor_everywhere(tmp_path: Path) -> None:
    folder = random_run(tmp_path / "demo", model="baseline/keyword", documents=3, per_document=3)
    report = build_report(load_run(folder))
    summary = report.summary
    assert summary.floor is True and summary.label == FLOOR_LABEL
    assert all(a.floor and a.label == FLOOR_LABEL for a in summary.arms)
    markdown = to_markdown(summary)
    assert FLOOR_LABEL in markdown.splitlines()[0]
    assert "baseline/keyword (floor)" in markdown
    assert "a floor, not a model result" in markdown

    from rich.console import Console

    console = Console(record=True, width=200)
    print_console(summary, console)
    assert FLOOR_LABEL in console.export_text()


def test_markdown_holds_the_tables(tiny_run: Path) -> None:
    markdown = to_markdown(build_report(load_run(tiny_run)).summary)
    assert "## Arms" in markdown and "## md vs fs (paired, 6 questions)" in markdown
    assert "| Accuracy | 50.0 % | 83.3 % | +33.3 pts" in markdown
    assert "clustered McNemar p = " in markdown and "(b = 0, c = 2)" in markdown
    assert "Plain McNemar, which ignores documents" in markdown and "p = 0.500" in markdown
    assert "Sensitivity, 1 pair(s) not finished normally in an arm (1 error) dropped" in markdown
    assert "## Accuracy by breakdown" in markdown and "## Method" in markdown


def test_summary_is_strict_json(tmp_path: Path) -> None:
    folder = random_run(tmp_path / "r", documents=1, per_document=2)  # one document: NaN intervals
    summary = build_report(load_run(folder)).summary
    text = json.dumps(summary.model_dump(mode="json"), allow_nan=False)  # raises if a NaN slipped through
    assert json.loads(text)["version"] == SUMMARY_VERSION == 5
    itt = summary.comparisons[0].itt
    assert itt is not None and itt.accuracy.difference.low is None  # undefined, not NaN
    assert "NaN" not in summary.model_dump_json() and "Infinity" not in summary.model_dump_json()


@pytest.mark.parametrize(
    ("documents", "per_document"),
    [(1, 1), (1, 4), (2, 1), (10, 6)],
)
def test_awkward_runs_still_report(tmp_path: Path, documents: int, per_document: int) -> None:
    folder = random_run(tmp_path / "r", documents=documents, per_document=per_document, epochs=2)
    report = build_report(load_run(folder))
    markdown = to_markdown(report.summary)
    assert "## Arms" in markdown
    comparison = report.summary.comparisons[0]
    assert comparison.paired == documents * per_document
    assert comparison.itt is not None
    gap = comparison.itt.accuracy.difference
    if documents == 1:  # one cluster: no interval and no MDE, said so rather than made up
        assert gap.low is None and gap.high is None
        assert comparison.itt.mde.observed is None
        assert comparison.itt.mde.statement.startswith("The minimum detectable effect cannot be estimated")
    elif documents < 6:  # the sign-flip test cannot reach p < 0.05 on fewer than 6 documents
        assert gap.low is None and gap.high is None and gap.method == "none"
        assert gap.p_value is not None and gap.p_value >= 2 / 2**documents
    else:
        assert gap.low is not None and gap.value is not None and gap.high is not None
        assert gap.low <= gap.value <= gap.high
        assert "not resolvable" in comparison.itt.mde.statement
    for arm_summary in report.summary.arms:  # exact intervals from two documents, however small
        low, high = arm_summary.accuracy.low, arm_summary.accuracy.high
        if documents == 1:  # one document says nothing of another: no interval, not a narrow one
            assert low is None and high is None and arm_summary.accuracy.method == "none"
        else:
            assert low is not None and high is not None and 0 <= low <= high <= 1


def test_a_single_arm_run_has_no_comparison(tmp_path: Path) -> None:
    folder = write_run(
        tmp_path / "one", [make_record("fs", "q1", "d1"), make_record("fs", "q2", "d2", score=0)]
    )
    summary = build_report(load_run(folder)).summary
    assert summary.comparisons == [] and len(summary.arms) == 1
    assert "## fs" not in to_markdown(summary)


def test_arms_on_different_questions_pair_only_the_common_ones(tmp_path: Path) -> None:
    records = [make_record("a", f"q{i}", f"d{i}") for i in range(4)] + [make_record("b", "q0", "d0")]
    summary = build_report(load_run(write_run(tmp_path / "p", records))).summary
    assert summary.comparisons[0].paired == 1
    assert any("different questions" in w for w in summary.warnings)


def test_an_arm_of_the_config_without_records_is_named_not_dropped_silently(tmp_path: Path) -> None:
    records = [make_record("fs", "q1", "d1"), make_record("fs", "q2", "d2", score=0)]
    manifest = {"run_id": "r", "arms": [{"name": "fs"}, {"name": "fs+md-vision"}]}
    summary = build_report(load_run(write_run(tmp_path / "r", records, manifest))).summary
    assert [a.arm for a in summary.arms] == ["fs"] and summary.comparisons == []
    assert any("fs+md-vision of the run's config have no records" in w for w in summary.warnings)


def test_reference_arm_can_be_chosen_and_unknown_arms_are_refused(tiny_run: Path) -> None:
    run = load_run(tiny_run)
    summary = build_report(run, reference="md").summary
    assert summary.reference_arm == "md" and summary.comparisons[0].b == "fs"
    with pytest.raises(ReportError, match="reference arm 'nope'"):
        build_report(run, reference="nope")
    with pytest.raises(ReportError, match=r"arm\(s\) nope not in this run"):
        build_report(run, arms=["fs", "nope"])


# -- loading -----------------------------------------------------------------------------------------


def test_a_torn_last_line_and_bad_lines_are_skipped_with_warnings(tiny_run: Path) -> None:
    path = tiny_run / "records.jsonl"
    lines = path.read_text().splitlines()
    lines.insert(2, "this is not json")
    lines.append(lines[0][:40])  # a killed writer's half line
    path.write_text("\n".join(lines))
    run = load_run(tiny_run)
    assert len(run.records) == 12
    assert any("line 3 is not JSON" in w for w in run.warnings)
    assert any("last line is incomplete" in w for w in run.warnings)


def test_duplicates_keep_the_last_copy(tiny_run: Path) -> None:
    path = tiny_run / "records.jsonl"
    again = make_record("fs", "q2", "d1", score=1)  # a rerun fixed q2
    path.write_text(path.read_text() + json.dumps(again.to_dict()) + "\n")
    run = load_run(tiny_run)
    assert len(run.records) == 12
    assert any("more than once" in w for w in run.warnings)
    assert arm(build_report(run).summary, "fs").accuracy.value == pytest.approx(4 / 6)


def test_shards_merge(tmp_path: Path) -> None:
    records = tiny_records()
    one = write_run(tmp_path / "s1", records[:6])
    two = write_run(tmp_path / "s2", records[6:])
    run = load_run(one, two)
    assert len(run.records) == 12 and run.arms == ["fs", "md"]


def test_reruns_of_one_config_merge_as_further_epochs(tmp_path: Path) -> None:
    first = write_run(
        tmp_path / "r1", [make_record("a", "q1", "d1", score=1), make_record("a", "q2", "d2", score=1)]
    )
    again = [
        make_record("a", "q1", "d1", score=0),
        make_record("a", "q1", "d1", epoch=1, score=0),
        make_record("a", "q3", "d3", score=1),  # only in the rerun: stays epoch 0
    ]
    second = write_run(tmp_path / "r2", again)
    run = load_run(first, second, reruns_as_epochs=True)
    assert sorted((r.qid, r.epoch) for r in run.records) == [
        ("q1", 0),
        ("q1", 1),
        ("q1", 2),
        ("q2", 0),
        ("q3", 0),
    ]
    assert not any("more than once" in w for w in run.warnings)
    a = arm(build_report(run).summary, "a")
    assert a.epochs == 3 and a.accuracy.value == pytest.approx((1 / 3 + 1 + 1) / 3)
    # Without the flag the rerun's copy of (q1, epoch 0) replaces the first run's.
    assert len(load_run(first, second).records) == 4


def test_records_that_are_not_run_records_are_reported(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "x", [make_record("fs", "q1", "d1")])
    with (folder / "records.jsonl").open("a") as handle:
        handle.write(json.dumps({"hello": "world"}) + "\n")
    run = load_run(folder)
    assert len(run.records) == 1 and any("not a run record" in w for w in run.warnings)


@pytest.mark.parametrize(
    ("setup", "needle"),
    [
        (lambda p: None, "is not a run folder"),
        (lambda p: p.mkdir(), "has no records.jsonl yet"),
        (lambda p: (p.mkdir(), (p / "records.jsonl").write_text("")), "no run records"),
    ],
)
def test_unusable_folders_give_clear_errors(tmp_path: Path, setup, needle: str) -> None:
    folder = tmp_path / "run"
    setup(folder)
    with pytest.raises(ReportError, match=needle):
        load_run(folder)


def test_missing_manifest_is_a_warning_not_an_error(tiny_run: Path) -> None:
    (tiny_run / "manifest.json").unlink()
    run = load_run(tiny_run)
    assert any("no manifest.json" in w for w in run.warnings) and run.arms == ["fs", "md"]


def test_planning_statement_before_a_run() -> None:
    text = planning_statement(1082)
    # (1.96 + 0.84) * sqrt(0.3 * 1.7 / 1082) = 6.08 points
    assert text.startswith("With 1082 questions, accuracy differences under 6.1 points are not resolvable")
    assert "ICC 0.1" in text and "30%" in text


# -- the summary's schema ------------------------------------------------------------------------------


def test_summary_round_trips_through_json_and_the_model(tiny_run: Path) -> None:
    summary = build_report(load_run(tiny_run)).summary
    text = summary.model_dump_json(indent=2)
    back = parse_summary(text)
    assert back == summary
    assert back.model_dump_json(indent=2) == text  # a second trip changes nothing
    assert to_markdown(back) == to_markdown(summary)  # readers see the same report
    # The information a v1 reader had is all there, under the names the schema documents.
    data = json.loads(text)
    assert set(data) == {
        "version",
        "runs",
        "run_id",
        "floor",
        "label",
        "reference_arm",
        "confidence",
        "arms",
        "reference_rows",
        "comparisons",
        "breakdowns",
        "breakdown_note",
        "warnings",
        "prices",
        "unrecorded_usd",
        "interrupted_calls",
        "interrupted_usd",
        "plan",
        "version_changes",
    }
    accuracy = data["arms"][0]["accuracy"]
    assert set(accuracy) == {"value", "low", "high", "method"} and accuracy["value"] == 0.5
    assert accuracy["method"] == "korn-graubard" and 0 < accuracy["low"] < 0.5 < accuracy["high"] < 1
    assert data["comparisons"][0]["itt"]["accuracy"]["clustered_mcnemar"]["only_b_correct"] == 2
    assert data["comparisons"][0]["itt"]["accuracy"]["mcnemar_ignoring_documents"]["only_b_correct"] == 2


def test_a_summary_with_undefined_figures_round_trips(tmp_path: Path) -> None:
    folder = random_run(tmp_path / "r", documents=1, per_document=2)
    summary = build_report(load_run(folder)).summary
    assert parse_summary(summary.model_dump_json()) == summary


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not JSON"),
        ("[1, 2]", "has another layout (not a JSON object)"),
        ('{"arms": []}', "has another layout (no schema version)"),
        ('{"version": 1, "arms": []}', "is of schema version 1 (this docab reads version 5)"),
        ('{"version": 2, "arms": []}', "is of schema version 2 (this docab reads version 5)"),
        ('{"version": 3, "arms": []}', "is of schema version 3 (this docab reads version 5)"),
        ('{"version": 4, "arms": []}', "is of schema version 4 (this docab reads version 5)"),
        ('{"version": 5, "arms": [{"arm": "fs"}]}', "has another layout ("),
    ],
)
def test_text_that_is_not_a_summary_of_this_version_is_named(text: str, message: str) -> None:
    with pytest.raises(SummaryFormatError) as caught:
        parse_summary(text)
    assert str(caught.value).startswith(message)


def test_a_summary_with_an_unknown_field_is_another_layout(tiny_run: Path) -> None:
    data = build_report(load_run(tiny_run)).summary.model_dump(mode="json")
    data["arms"][0]["surprise"] = 1
    with pytest.raises(SummaryFormatError, match=r"first at arms\.0\.surprise"):
        parse_summary(json.dumps(data))


def test_the_summary_is_immutable(tiny_run: Path) -> None:
    summary = build_report(load_run(tiny_run)).summary
    with pytest.raises(ValueError, match="frozen"):
        summary.run_id = "other"  # type: ignore[misc]


def test_answerable_accuracy_not_answerable_use_and_the_reference_row(tiny_run: Path) -> None:
    summary = build_report(load_run(tiny_run)).summary
    fs, md = arm(summary, "fs"), arm(summary, "md")
    assert fs.answerable_questions == 5 and fs.answerable_accuracy.value == pytest.approx(0.4)
    assert md.answerable_accuracy.value == pytest.approx(0.8)
    assert fs.not_answerable.model_dump() == {
        "answered": pytest.approx(1 / 6),
        "correct": 1.0,  # its one "Not answerable" was on the unanswerable question
        "found": 1.0,
    }
    (reference,) = summary.reference_rows
    assert reference.name == "always Not answerable" and reference.questions == 6
    assert reference.accuracy == pytest.approx(1 / 6) and reference.f1 == 0.0
    assert reference.answerable_accuracy == 0.0
    itt = summary.comparisons[0].itt
    assert itt is not None and itt.answerable.questions == 5
    assert itt.answerable.difference.value == pytest.approx(0.4)
    markdown = to_markdown(summary)
    assert "(always Not answerable)" in markdown and "Acc answerable" in markdown


def test_evidence_precision_and_tokens_per_evidence_page(tiny_run: Path) -> None:
    summary = build_report(load_run(tiny_run)).summary
    fs, md = arm(summary, "fs").evidence, arm(summary, "md").evidence
    assert fs is not None and md is not None and fs.questions == 5
    assert fs.recall.value == pytest.approx(0.7) and md.recall.value == pytest.approx(1.0)
    # fs read page 3 of each question, always evidence; md read 3 and 4 where only 3 was evidence twice
    assert fs.precision is not None and fs.precision.value == pytest.approx(1.0)
    assert md.precision is not None and md.precision.value == pytest.approx(8 / 10)
    fs_tokens = sum(o.tokens for q, o in build_report(load_run(tiny_run)).outcomes["fs"].items() if q != "q6")
    assert fs.tokens_per_evidence_page == pytest.approx(fs_tokens / 5)
    itt = summary.comparisons[0].itt
    assert itt is not None and itt.evidence is not None and itt.evidence.precision is not None
    assert itt.evidence.precision.difference.value == pytest.approx(0.8 - 1.0)


def test_the_sensitivity_view_drops_every_unfinished_status_and_counts_them(tmp_path: Path) -> None:
    records = []
    for i, (status_a, status_b) in enumerate(
        [("ok", "ok"), ("ok", "limit"), ("timeout", "ok"), ("error", "limit"), ("ok", "ok"), ("ok", "ok")]
    ):
        records.append(make_record("a", f"q{i}", f"d{i % 3}", status=status_a, score=float(status_a == "ok")))
        records.append(make_record("b", f"q{i}", f"d{i % 3}", status=status_b, score=float(status_b == "ok")))
    summary = build_report(load_run(write_run(tmp_path / "s", records))).summary
    sensitivity = summary.comparisons[0].sensitivity
    assert sensitivity is not None
    assert (sensitivity.dropped, sensitivity.paired) == (3, 3)  # a limit-hit pair is dropped too
    assert sensitivity.dropped_by_status.model_dump() == {"error": 1, "timeout": 1, "limit": 1}
    assert "(1 error, 1 timeout, 1 limit)" in to_markdown(summary)


def test_breakdowns_say_how_many_cells_and_that_they_are_unadjusted(tmp_path: Path) -> None:
    summary = build_report(load_run(random_run(tmp_path / "r", documents=12, per_document=5))).summary
    cells = sum(len(row.differences) for row in summary.breakdowns)
    assert cells > 5 and summary.breakdown_note.startswith(f"{cells} paired differences over")
    assert "unadjusted" in summary.breakdown_note
    small = [d for row in summary.breakdowns for d in row.differences.values() if d.documents < 6]
    wide = [d for row in summary.breakdowns for d in row.differences.values() if d.documents >= 6]
    assert small and all(d.low is None and d.note.startswith("too small for an interval") for d in small)
    # cells of 6-29 documents: the sign-flip test (issue 24); 30 and more: the cluster-robust t
    assert wide and all(d.method == "sign-flip" for d in wide if d.documents < 30 and d.low is not None)
    assert "no interval:" in to_markdown(summary)


def test_evidence_recall_counts_pages_opened_and_recall_seen_adds_search_results() -> None:
    """Issue 24, item 2: both are reported per arm with intervals; the headline recall (which the
    gate and the CI baseline read) counts only pages a read call opened."""
    from docab.report.arms import evidence_summary
    from docab.report.outcomes import question_outcomes

    records = [
        make_record("fs", f"q{i}", f"d{i % 3}", pages_read=(3,) if i < 2 else (), pages_seen=(3,))
        for i in range(6)
    ]
    outcomes = list(question_outcomes(records)["fs"].values())
    evidence = evidence_summary(outcomes)
    assert evidence is not None and evidence.recall_seen is not None
    assert evidence.recall.value == pytest.approx(2 / 6)
    assert evidence.recall_seen.value == pytest.approx(1.0)
    assert evidence.recall.method == evidence.recall_seen.method
