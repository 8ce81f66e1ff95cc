"""``docab view``: the page data (pure), the files written, the command, and the page in Chromium."""

from __future__ import annotations

import json
import math
import os
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from docab.cli.main import main
from docab.log.events import TRANSCRIPT_VERSION
from docab.log.records import RunRecord
from docab.report.summary import load_run
from docab.viewer.html import asset, embed_json, render_index, transcript_script
from docab.viewer.page import (
    TranscriptEntry,
    build_index,
    finite,
    plot_order,
    question_text,
    view_transcript,
)
from docab.viewer.writer import MARK, ViewerError, read_transcript, write_viewer
from tests.harness import viewer_runs
from tests.harness.synthetic_runs import make_record, write_run
from tests.harness.viewer_runs import HOSTILE, MARKER
from tests.support.chromium import ENV_OVERRIDE, Chromium, find_chromium

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return viewer_runs.build(tmp_path / "run")


def _index(folder: Path, **kwargs: Any) -> dict[str, Any]:
    run = load_run(folder)
    return build_index(run.records, manifest=run.manifest, **kwargs)


def _row(index: dict[str, Any], qid: str) -> dict[str, Any]:
    return next(q for q in index["questions"] if q["qid"] == qid)


def _embedded(page: str) -> Any:
    match = re.search(r'<script type="application/json" id="docab-data">(.*?)</script>', page, re.S)
    assert match, "the page embeds its data"
    return json.loads(match.group(1))


# -- the page data ------------------------------------------------------------------------------------------


def test_index_has_one_row_per_question_with_every_arm_and_epoch(run_dir: Path) -> None:
    index = _index(run_dir)
    assert index["arms"] == ["fs", "fs+md-vision"]
    assert [q["qid"] for q in index["questions"]] == [
        "q-agree",
        "q-differ",
        "q-error",
        "q-only-fs",
        "q-hostile",
        "q-broken",
        "q-limit",
    ]
    agree = _row(index, "q-agree")
    assert [e["epoch"] for e in agree["arms"]["fs"]["epochs"]] == [0, 1]
    assert agree["arms"]["fs"]["outcome"] == "correct" and agree["arms"]["fs"]["score"] == 1.0
    assert agree["groups"]["evidence pages"] == ["single-page"]
    assert agree["groups"]["document type"] == ["Financial report"]
    assert not agree["disagree"] and agree["versus"] == {"fs+md-vision": "same"}


def test_outcomes_errors_limits_and_disagreement(run_dir: Path) -> None:
    index = _index(run_dir)
    differ = _row(index, "q-differ")
    assert differ["disagree"] and differ["versus"] == {"fs+md-vision": "worse"}
    assert differ["arms"]["fs"]["outcome"] == "correct"
    assert differ["arms"]["fs+md-vision"]["outcome"] == "wrong"
    error = _row(index, "q-error")
    assert error["arms"]["fs"]["outcome"] == "error" and error["arms"]["fs"]["epochs"][0]["errors"] == [
        "boom"
    ]
    assert error["arms"]["fs+md-vision"]["outcome"] == "timeout"
    assert not error["disagree"]  # both scored 0
    limit = _row(index, "q-limit")
    assert limit["arms"]["fs"]["epochs"][0]["limit_hit"] == "turns"
    assert limit["arms"]["fs"]["outcome"] == "limit"
    assert index["outcomes"] == ["correct", "wrong", "error", "timeout", "limit"]


def test_a_question_missing_from_an_arm_has_no_entry_for_it(run_dir: Path) -> None:
    only = _row(_index(run_dir), "q-only-fs")
    assert list(only["arms"]) == ["fs"]
    assert only["versus"] == {} and not only["disagree"]
    assert only["groups"]["evidence pages"] == ["unanswerable"]


def test_missing_and_unreadable_transcripts_are_named_per_epoch(run_dir: Path) -> None:
    run = load_run(run_dir)
    entries = {r.key: TranscriptEntry(number=i, question="Q?") for i, r in enumerate(run.records)}
    broken = next(r for r in run.records if r.qid == "q-broken" and r.arm == "fs")
    entries[broken.key] = TranscriptEntry(problem="transcript unreadable: not valid JSON")
    del entries[next(r.key for r in run.records if r.qid == "q-broken" and r.arm == "fs+md-vision")]
    row = _row(build_index(run.records, manifest=run.manifest, transcripts=entries), "q-broken")
    fs, md = row["arms"]["fs"]["epochs"][0], row["arms"]["fs+md-vision"]["epochs"][0]
    assert fs["transcript"] is None and fs["transcript_problem"] == "transcript unreadable: not valid JSON"
    assert md["transcript"] is None and md["transcript_problem"] == "transcript missing"
    agree = _row(build_index(run.records, manifest=run.manifest, transcripts=entries), "q-agree")
    assert isinstance(agree["arms"]["fs"]["epochs"][0]["transcript"], int)
    assert agree["arms"]["fs"]["epochs"][0]["transcript_problem"] is None
    assert agree["question"] == "Q?"


def test_a_record_without_a_transcript_says_none_was_recorded() -> None:
    record = make_record("fs", "q1", "d.pdf")  # transcript=None, as older runs wrote
    epoch = build_index([record])["questions"][0]["arms"]["fs"]["epochs"][0]
    assert epoch["transcript"] is None
    assert epoch["transcript_problem"] == "no transcript was recorded for this sample"


def test_one_question_one_arm_without_summary() -> None:
    index = build_index([make_record("fs", "only", "d.pdf", score=0.5)])
    assert index["arms"] == ["fs"] and index["reference_arm"] == "fs"
    assert index["summary"]["sections"] == []
    row = index["questions"][0]
    assert row["arms"]["fs"]["outcome"] == "partial" and row["versus"] == {}
    assert index["outcomes"] == ["partial"]


def test_the_summary_becomes_the_reports_tables(run_dir: Path) -> None:
    from docab.report.summary import build_report

    run = load_run(run_dir)
    summary = build_report(run).summary
    index = build_index(run.records, manifest=run.manifest, summary=summary)
    titles = [s["title"] for s in index["summary"]["sections"]]
    assert titles[0] == "Arms" and "fs+md-vision vs fs (paired, 6 questions)" in titles
    assert index["summary"]["source"] == "summary.json"
    assert any("arms cover different questions" in w for w in index["summary"]["warnings"])


def test_baseline_runs_are_labelled_floors() -> None:
    index = build_index([make_record("fs", "q", "d.pdf", model="baseline/keyword")])
    assert index["floor"] and "not a model result" in index["label"]


def _tool_result(content: list[Any], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool_result event as a transcript file holds it (content blocks given as JSON)."""
    return {
        "type": "tool_result",
        "tool_call_id": "call_1",
        "name": "read_file",
        "duration_s": 0.25,
        "is_error": False,
        "truncated": False,
        "content": content,
        "meta": meta or {},
    }


def _image(path: str) -> dict[str, Any]:
    return {"type": "image", "media_type": "image/png", "sha256": "a" * 64, "path": path}


def test_view_transcript_links_only_stored_images(run_dir: Path) -> None:
    stored = "images/" + "a" * 64 + ".png"
    document = {
        "events": [
            _tool_result(
                [
                    _image(stored),
                    _image("images/" + "b" * 64 + ".png"),
                    _image("../../etc/passwd"),
                    _image("javascript:alert(1)"),
                ],
                meta={"io.github.docab/usage": {"input_tokens": 70, "cached_tokens": 20, "output_tokens": 5}},
            )
        ]
    }
    event = view_transcript(document, {stored}).data["events"][0]
    assert [b["src"] for b in event["content"]] == [f"../{stored}", None, None, None]
    assert [b["problem"] for b in event["content"]] == [
        None,
        "image file missing",
        "unsafe path",
        "unsafe path",
    ]
    assert event["usage"] == {
        "role": "tool-side",
        "model": "",
        "input": 70,
        "cache_read": 20,
        "cache_write": 0,
        "output": 5,
        "reasoning": 0,
    }


def _turn(input_uncached: int, output: int, **changes: Any) -> dict[str, Any]:
    return {
        "type": "model_turn",
        "turn": 1,
        "text": "",
        "tool_calls": [],
        "usage": {"input_uncached": input_uncached, "output": output},
        "latency_s": 0.5,
        "retries": 0,
        "stop_reason": "",
        "raw": None,
        **changes,
    }


def test_view_transcript_flags_malformed_parts_and_shows_the_rest() -> None:
    """A damaged transcript: every part that does not match the event models is kept, as raw JSON
    with the reason, in its place; the parts that match are shown in full; nothing raises."""
    assert view_transcript(["not", "a", "dict"]).problem == "transcript unreadable: not a JSON object"
    assert view_transcript(["not", "a", "dict"]).data["problem"] == "transcript unreadable: not a JSON object"
    view = view_transcript(
        {
            "version": TRANSCRIPT_VERSION,
            "tools": "nope",
            "events": [
                "a string",
                {"type": "message", "role": "user", "content": [{"type": "text", "text": "plain text"}]},
                {"type": "message", "role": "user", "content": "a string, not blocks"},
                _turn(12, 0, latency_s=math.nan),
                _turn(8, 2, tool_calls=[None]),
                _turn(6, 4, usage={"input_uncached": "many", "output": None}),
                _turn(
                    8, 2, tool_calls=[{"id": "c", "name": "grep", "arguments": {}, "parse_error": "not JSON"}]
                ),
                {**_tool_result([{"type": "audio"}]), "duration_s": "slow"},
                {"type": "answer", "score": "high", "errors": "boom", "extraction_usage": [{"output": 3}]},
                {"type": "brand_new", "x": 1},
            ],
        }
    )
    assert view.problem is None
    data = view.data
    kinds = [e["type"] for e in data["events"]]
    assert kinds == [
        "other",
        "message",
        "other",
        "model_turn",
        "other",
        "other",
        "model_turn",
        "other",
        "other",
        "other",
    ]
    assert data["tools"] == [] and data["system"] == ""  # the header did not read: left out, and said so
    assert data["events"][1]["content"] == [{"type": "text", "text": "plain text"}]
    first, second = data["events"][3], data["events"][6]
    assert first["latency_s"] is None and first["usage"]["input"] == 12 and first["tokens_so_far"] == 12
    assert second["tokens_so_far"] == 22  # only turns that read count
    assert second["tool_calls"] == [{"id": "c", "name": "grep", "arguments": "{}", "problem": "not JSON"}]
    others = [e for e in data["events"] if e["type"] == "other"]
    assert [e["label"] for e in others] == [
        "str",
        "message",
        "model_turn",
        "model_turn",
        "tool_result",
        "answer",
        "brand_new",
    ]
    assert all(e["problem"].startswith("does not match the transcript format (") for e in others)
    assert "content" in others[1]["problem"] and "duration_s" in others[4]["problem"]
    assert "'brand_new'" in others[-1]["problem"] and '"x": 1' in others[-1]["json"]
    assert '"a string, not blocks"' in others[1]["json"]  # the raw part is kept, not lost
    assert list(view.notices) == data["notices"]
    assert any(
        n.startswith("its header does not match the format (run_id: Field required;") for n in view.notices
    )
    assert "7 of 10 event(s) do not match the transcript format; they are shown as raw JSON" in view.notices
    assert not any("version" in n for n in view.notices)  # the version itself is right
    assert view.question == "plain text" and question_text(data["events"]) == "plain text"
    json.dumps(finite(data), allow_nan=False)  # nothing JSON cannot carry


def test_a_transcript_of_this_version_reads_whole(run_dir: Path) -> None:
    run = load_run(run_dir)
    record = next(r for r in run.records if r.qid == "q-agree" and r.arm == "fs")
    assert record.transcript
    view = view_transcript(json.loads((run_dir / record.transcript).read_text()))
    assert view.problem is None and view.notices == ()
    assert [e["type"] for e in view.data["events"]] == ["message", "model_turn", "tool_result", "answer"]
    assert view.data["tools"][0]["name"] == "read_file" and view.data["system"].startswith("You answer")
    assert view.question == "Question: In which year was Northwind founded?"


def old_format_transcript() -> dict[str, Any]:
    """A transcript as docab wrote it before the event models (format version 1)."""
    return {
        "version": 1,
        "run_id": "old",
        "arm": "fs",
        "qid": "q1",
        "epoch": 0,
        "model": "openai/gpt-4o",
        "system": "sys",
        "tools": [{"name": "grep", "description": "Search.", "input_schema": {"type": "object"}}],
        "events": [
            {"type": "message", "role": "user", "content": [{"type": "text", "text": "Question: when?"}]},
            {
                "type": "model_turn",
                "turn": 1,
                "text": "",
                "tool_calls": [{"id": "c1", "name": "grep", "arguments": {"pattern": "x"}}],
                "usage": {"role": "agent", "model": "", "input_uncached": 90, "cache_read": 0, "output": 10},
                "latency_s": 0.5,
                "retries": 0,
                "stop_reason": "tool_calls",
                "raw": {},
            },
            {"type": "model_error", "kind": "unexpected", "error": "RuntimeError: boom"},  # v1 had no retries
        ],
    }


def test_an_old_format_transcript_is_shown_and_flagged() -> None:
    view = view_transcript(old_format_transcript())
    assert view.problem is None
    assert [e["type"] for e in view.data["events"]] == ["message", "model_turn", "other"]
    assert view.data["events"][2]["label"] == "model_error" and "retries" in view.data["events"][2]["problem"]
    assert view.data["tools"][0]["name"] == "grep"  # the v1 header has this version's fields
    assert view.notices[0] == (
        "this transcript is format version 1; this docab reads version 2: parts that do not match are shown as raw JSON"
    )
    assert view.question == "Question: when?"


def test_the_viewer_writes_damaged_and_old_transcripts_and_flags_them(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = load_run(run_dir)
    damaged = next(r for r in run.records if r.qid == "q-differ" and r.arm == "fs")
    old = next(r for r in run.records if r.qid == "q-hostile" and r.arm == "fs")
    assert damaged.transcript and old.transcript
    document = json.loads((run_dir / damaged.transcript).read_text())
    document["events"][1]["usage"] = "lost"  # one event damaged, the file still JSON
    (run_dir / damaged.transcript).write_text(json.dumps(document))
    (run_dir / old.transcript).write_text(json.dumps(old_format_transcript()))
    assert main(["view", str(run_dir), "--no-plots"]) == 0
    out, err = capsys.readouterr()
    assert "13 of 15 transcripts" in out  # both are still shown
    assert "warning: fs q-differ epoch 0: 1 of 6 event(s) do not match the transcript format" in err
    assert "warning: fs q-hostile epoch 0: this transcript is format version 1" in err
    assert "Traceback" not in err
    index = _embedded((run_dir / "viewer" / "index.html").read_text(encoding="utf-8"))
    number = _row(index, "q-differ")["arms"]["fs"]["epochs"][0]["transcript"]
    script = (run_dir / "viewer" / "transcripts" / f"{number}.js").read_text(encoding="utf-8")
    shown = json.loads(script[len(f"docabTranscriptLoaded({number},") : -len(");\n")])
    assert [e["type"] for e in shown["events"]][:3] == ["message", "other", "tool_result"]
    assert shown["notices"] and "usage" in shown["events"][1]["problem"]


def test_plots_in_reading_order() -> None:
    plots = plot_order(["tokens.png", "zeta.png", "accuracy.png", "accuracy_vs_tokens.png"])
    assert [p.name for p in plots] == ["accuracy.png", "accuracy_vs_tokens.png", "tokens.png", "zeta.png"]
    assert plots[0].entry == {
        "title": "Accuracy and F1 per arm",
        "src": "../plots/accuracy.png",
        "headline": True,
    }
    assert plots[-1].entry == {"title": "zeta", "src": "../plots/zeta.png", "headline": True}
    assert plot_order(["accuracy_by_document_type.png"])[0].entry["headline"] is False


# -- the HTML ------------------------------------------------------------------------------------------------


def test_hostile_text_stays_data_in_the_page(run_dir: Path) -> None:
    index = _index(run_dir)
    page = render_index(index)
    assert (
        _row(index, "q-hostile")["arms"]["fs"]["epochs"][0]["raw_answer"] == HOSTILE
    )  # the data holds it ...
    assert "</script><img" not in page and "<!--" not in page  # ... the page never does, raw
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert _embedded(page) == index  # and it comes back intact
    script = transcript_script(3, {"text": HOSTILE})
    assert "<" not in script and "\u2028" not in script
    assert json.loads(script[len("docabTranscriptLoaded(3,") : -len(");\n")]) == {"text": HOSTILE}


def test_embed_json_refuses_nan_so_the_page_never_holds_invalid_json() -> None:
    with pytest.raises(ValueError):
        embed_json({"x": math.nan})
    assert embed_json(finite({"x": math.nan, "y": [math.inf]})) == '{"x":null,"y":[null]}'


def test_the_page_allows_only_its_own_script_and_style() -> None:
    page = render_index(build_index([make_record("fs", "q", "d.pdf")]))
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy
    assert "script-src 'sha256-" in policy and "style-src 'sha256-" in policy
    for name in ("viewer.js", "viewer.css"):
        assert "</style" not in asset(name).lower() and "</script" not in asset(name).lower()
    assert "innerHTML" not in asset("viewer.js") and "insertAdjacentHTML" not in asset("viewer.js")


# -- the files written --------------------------------------------------------------------------------------


def test_write_viewer_writes_the_page_and_one_script_per_readable_transcript(run_dir: Path) -> None:
    result = write_viewer(run_dir, draw_plots=False)
    assert result.path == run_dir / "viewer" / "index.html"
    assert (result.questions, result.records, result.transcripts) == (7, 15, 13)
    assert sorted(p.split(":")[0] for p in result.problems) == [
        "fs q-broken epoch 0",
        "fs+md-vision q-broken epoch 0",
    ]
    scripts = sorted((run_dir / "viewer" / "transcripts").iterdir())
    assert len(scripts) == 13
    index = _embedded(result.path.read_text(encoding="utf-8"))
    number = _row(index, "q-agree")["arms"]["fs"]["epochs"][1]["transcript"]
    body = (run_dir / "viewer" / "transcripts" / f"{number}.js").read_text(encoding="utf-8")
    assert f"{MARKER} epoch 1" in body
    assert _row(index, "q-agree")["question"] == "Question: In which year was Northwind founded?"
    assert index["summary"]["source"] == "computed" and "summary.json is missing" in index["summary"]["note"]
    assert index["plots"] == []  # draw_plots=False and none present
    assert not list(run_dir.glob(".viewer-*"))  # no staging folder left behind


def test_write_viewer_draws_missing_plots_and_uses_a_fresh_summary(run_dir: Path) -> None:
    from docab.report.summary import build_report

    summary = build_report(load_run(run_dir)).summary
    summary = summary.model_copy(update={"warnings": ["from the file"]})
    (run_dir / "summary.json").write_text(summary.model_dump_json())
    result = write_viewer(run_dir)
    drawn = {p.name for p in result.plots_drawn}
    assert {
        "accuracy.png",
        "accuracy_vs_tokens.png",
        "tokens.png",
        "accuracy_by_evidence_source.png",
    } <= drawn
    index = _embedded(result.path.read_text(encoding="utf-8"))
    assert index["summary"]["source"] == "summary.json" and index["summary"]["warnings"] == ["from the file"]
    assert {p["src"] for p in index["plots"]} == {f"../plots/{name}" for name in drawn}
    assert [p["title"] for p in index["plots"]][:3] == [
        "Accuracy and F1 per arm",
        "Accuracy against cost",
        "Token use per question",
    ]
    assert "Accuracy by evidence source" in [p["title"] for p in index["plots"]]
    # A second run finds the plots fresh and draws nothing.
    assert write_viewer(run_dir).plots_drawn == []


def test_a_summary_older_than_the_records_is_recomputed(run_dir: Path) -> None:
    (run_dir / "summary.json").write_text(json.dumps({"warnings": ["stale"], "arms": []}))
    records = run_dir / "records.jsonl"
    os.utime(run_dir / "summary.json", (records.stat().st_mtime - 60, records.stat().st_mtime - 60))
    index = _embedded(write_viewer(run_dir, draw_plots=False).path.read_text())
    assert index["summary"]["source"] == "computed"
    assert "older than records.jsonl" in index["summary"]["note"]


def test_a_merged_summary_written_into_one_of_its_folders_is_not_shown_as_that_folders(
    run_dir: Path, tmp_path: Path
) -> None:
    from docab.report.summary import build_report

    summary = build_report(load_run(run_dir)).summary
    # as `docab report run_dir shard2` writes it
    summary = summary.model_copy(
        update={"runs": [str(run_dir), str(tmp_path / "shard2")], "warnings": ["merged"]}
    )
    (run_dir / "summary.json").write_text(summary.model_dump_json())
    index = _embedded(write_viewer(run_dir, draw_plots=False).path.read_text())
    assert index["summary"]["source"] == "computed" and "other folders" in index["summary"]["note"]
    assert "merged" not in index["summary"]["warnings"]
    summary = summary.model_copy(update={"runs": [str(run_dir)]})  # its own summary is used
    (run_dir / "summary.json").write_text(summary.model_dump_json())
    index = _embedded(write_viewer(run_dir, draw_plots=False).path.read_text())
    assert index["summary"]["source"] == "summary.json"


def test_a_summary_of_another_layout_is_recomputed(run_dir: Path) -> None:
    (run_dir / "summary.json").write_text(json.dumps({"arms": [{"arm": "fs"}]}))
    index = _embedded(write_viewer(run_dir, draw_plots=False).path.read_text())
    assert index["summary"]["source"] == "computed" and "another layout" in index["summary"]["note"]


@pytest.mark.parametrize(
    ("edit", "note"),
    [
        (
            lambda data: {**data, "version": 1},
            "summary.json is of schema version 1 (this docab reads version 5)",
        ),
        (
            lambda data: {**data, "arms": [{**data["arms"][0], "accuracy": "high"}]},
            "summary.json has another layout",
        ),
        (lambda data: {**data, "seed": None}, "summary.json has another layout"),
    ],
)
def test_a_summary_of_another_version_or_invalid_is_recomputed(run_dir: Path, edit: Any, note: str) -> None:
    from docab.report.summary import build_report

    data = build_report(load_run(run_dir)).summary.model_dump(mode="json")
    data["runs"] = [str(run_dir)]
    data["warnings"] = ["from the file"]
    (run_dir / "summary.json").write_text(json.dumps(edit(data)))
    index = _embedded(write_viewer(run_dir, draw_plots=False).path.read_text())
    assert index["summary"]["source"] == "computed" and note in index["summary"]["note"]
    assert "from the file" not in index["summary"]["warnings"]
    (run_dir / "summary.json").write_text(json.dumps(data))  # the same file, valid: it is used
    index = _embedded(write_viewer(run_dir, draw_plots=False).path.read_text())
    assert index["summary"]["source"] == "summary.json" and index["summary"]["warnings"] == ["from the file"]


def test_rewriting_replaces_the_viewer_whole(run_dir: Path) -> None:
    write_viewer(run_dir, draw_plots=False)
    stale = run_dir / "viewer" / "transcripts" / "999.js"
    stale.write_text("old")
    write_viewer(run_dir, draw_plots=False)
    assert not stale.exists()


def test_a_transcript_outside_the_run_folder_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps({"events": [{"type": "message", "role": "user", "content": "secret"}]}))
    record = make_record("fs", "q", "d.pdf")
    folder = write_run(
        tmp_path / "run", [RunRecord.from_dict({**record.to_dict(), "transcript": "../secret.json"})]
    )
    result = write_viewer(folder, draw_plots=False)
    assert result.transcripts == 0 and "outside the run folder" in result.problems[0]
    assert "secret" not in "".join(p.read_text() for p in (folder / "viewer").rglob("*.*"))


def test_transcript_size_limit_at_its_edge(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"events": []}))
    size = path.stat().st_size
    assert read_transcript(path, max_bytes=size) == ({"events": []}, None)
    document, problem = read_transcript(path, max_bytes=size - 1)
    assert document is None and problem.startswith("transcript too large to show")
    assert read_transcript(tmp_path / "gone.json") == (None, "transcript missing")
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe{")
    assert "not valid JSON" in read_transcript(tmp_path / "bad.json")[1]


# -- a viewer that travels alone (--out) ---------------------------------------------------------------------


def _links(folder: Path) -> list[str]:
    """Every plot and image address the viewer's page and transcript scripts hold."""
    text = "\n".join(
        p.read_text(encoding="utf-8") for p in [folder / "index.html", *folder.glob("transcripts/*.js")]
    )
    return re.findall(r'"src": ?"([^"]+)"', text)


def test_a_standalone_viewer_carries_its_plots_and_images_and_links_only_inside(
    run_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "share" / "demo-viewer"
    out.parent.mkdir()
    result = write_viewer(run_dir, out=out)
    assert result.path == out / "index.html" and result.standalone
    assert (result.questions, result.records, result.transcripts) == (7, 15, 13)
    assert sorted(p.name for p in (out / "plots").iterdir()) == sorted(
        p.name for p in (run_dir / "plots").iterdir()
    )
    assert sorted(p.name for p in (out / "images").iterdir()) == sorted(
        p.name for p in (run_dir / "images").iterdir()
    )
    assert (out / MARK).is_file() and not (run_dir / "viewer").exists()
    links = _links(out)
    assert any(link.startswith("./plots/") for link in links) and any(
        link.startswith("./images/") for link in links
    )
    assert all(link.startswith("./") and ".." not in link for link in links)
    for link in links:  # each resolves inside the folder
        assert (out / link).resolve().is_relative_to(out.resolve()) and (out / link).is_file()
    assert result.bytes_written == sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert not list(out.parent.glob(".demo-viewer-*"))  # no staging folder left behind


def test_a_standalone_viewer_is_replaced_whole_and_skips_linked_files(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "viewer-out"
    out.mkdir()  # an empty folder is accepted
    write_viewer(run_dir, out=out, draw_plots=False)
    (out / "transcripts" / "999.js").write_text("old")
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"not the run's")
    (run_dir / "images" / ("f" * 64 + ".png")).symlink_to(secret)
    write_viewer(run_dir, out=out, draw_plots=False)
    assert not (out / "transcripts" / "999.js").exists()
    assert not (out / "images" / ("f" * 64 + ".png")).exists()  # a symlink in images/ is not followed


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("foreign", "did not write and it is not empty"),
        ("file", "is a file"),
        ("run", "holds the run folder itself"),
        ("parent-of-run", "holds the run folder itself"),
        ("run-images", "inside the run's own files"),
        ("no-parent", "does not exist"),
    ],
)
def test_a_standalone_viewer_never_replaces_a_folder_it_did_not_write(
    run_dir: Path, tmp_path: Path, where: str, message: str
) -> None:
    out = {
        "foreign": tmp_path / "notes",
        "file": tmp_path / "notes.txt",
        "run": run_dir,
        "parent-of-run": tmp_path,
        "run-images": run_dir / "images" / "v",
        "no-parent": tmp_path / "a" / "b",
    }[where]
    if where == "foreign":
        out.mkdir()
        (out / "thesis.tex").write_text("years of work")
    if where == "file":
        out.write_text("x")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(ViewerError, match=message):
        write_viewer(run_dir, out=out, draw_plots=False)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_view_command_out_says_it_travels_alone(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "alone"
    assert main(["view", str(run_dir), "--no-plots", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out.resolve() / 'index.html'} (7 questions" in printed and "travels alone" in printed
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "a.txt").write_text("x")
    assert main(["view", str(run_dir), "--out", str(tmp_path / "taken")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("docab view: error: --out") and "Traceback" not in err


# -- the command ----------------------------------------------------------------------------------------------


def test_view_command_writes_the_viewer_and_names_its_problems(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", str(run_dir), "--no-plots"]) == 0
    out, err = capsys.readouterr()
    assert f"wrote {run_dir / 'viewer' / 'index.html'} (7 questions, 13 of 15 transcripts" in out
    assert "open: file://" in out
    assert "warning: fs q-broken epoch 0: transcript unreadable" in err
    assert "warning: fs+md-vision q-broken epoch 0: transcript missing" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: None, "is not a run folder"),
        (lambda p: p.mkdir(), "has no records.jsonl yet"),
        (lambda p: (p.mkdir(), (p / "records.jsonl").write_text("")), "no run records"),
    ],
)
def test_view_command_errors_are_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: Any, message: str
) -> None:
    folder = tmp_path / "run"
    setup(folder)
    assert main(["view", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("docab view: error: ") and message in err and "Traceback" not in err
    assert not (folder / "viewer").exists()


def test_view_command_reports_a_folder_it_cannot_write(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run_dir / "viewer").write_text("a file where the viewer folder goes")
    assert main(["view", str(run_dir), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "docab view: error: could not write the viewer into" in err
    assert not list(run_dir.glob(".viewer-*"))


def test_view_command_rejects_an_unknown_option_as_a_usage_error(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The report has no resampling any more: --resamples is gone, and saying it is a usage error.
    assert main(["view", str(run_dir), "--resamples", "5"]) == 2
    assert "unrecognized arguments: --resamples 5" in capsys.readouterr().err


def test_view_help_teaches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", "--help"]) == 0
    out = capsys.readouterr().out
    assert "RUN_DIR/viewer/index.html" in out and "no server" in out and "--no-plots" in out
    assert "--out DIR" in out and "travels alone" in out
    assert main(["--help"]) == 0
    assert "docab view RUN_DIR" in capsys.readouterr().out


# -- the page in a browser ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Any:
    binary = find_chromium()
    if binary is None and os.environ.get(ENV_OVERRIDE):
        pytest.skip(f"{ENV_OVERRIDE}={os.environ[ENV_OVERRIDE]!r} is not an executable browser")
    if binary is None:
        pytest.skip(
            f"no Chromium found: install Debian's chromium package (.ci/run does) or set {ENV_OVERRIDE}"
        )
    with Chromium.launch(binary) as browser:
        yield browser


def _png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(PNG) and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


SHOWING = "(qid => document.querySelector('#question h2')?.textContent.startsWith(qid))"
VISIBLE_ROWS = "document.querySelectorAll('#questions tbody tr[data-index]:not([hidden])').length"


def _choose(page: Any, select: str, value: str) -> None:
    page.evaluate(
        f"(() => {{ const s = document.getElementById({json.dumps(select)}); s.value = {json.dumps(value)};"
        " s.dispatchEvent(new Event('change')); })()"
    )


def test_the_viewer_in_headless_chromium(run_dir: Path, chromium: Chromium, tmp_path: Path) -> None:
    write_viewer(run_dir)
    page = chromium.new_page()
    page.navigate((run_dir / "viewer" / "index.html").as_uri())

    # It loads: the header, the summary tables, the plots, every question.
    assert page.wait_until(VISIBLE_ROWS) == 7
    assert page.evaluate("document.querySelector('h1').textContent") == "Run run"
    assert page.evaluate("document.querySelectorAll('#summary table').length") >= 2
    assert page.evaluate("document.querySelectorAll('#plots > .plots img').length") == 4
    page.evaluate("document.querySelectorAll('#plots img').forEach(i => { i.loading = 'eager'; })")
    assert page.wait_until(  # every plot file found through its relative path
        "Array.from(document.querySelectorAll('#plots img')).every(i => i.complete && i.naturalWidth > 0)"
    )

    # The table filters: by outcome and arm, by breakdown, by text; reset shows everything again.
    _choose(page, "filter-outcome", "error")
    assert page.evaluate(VISIBLE_ROWS) == 1
    _choose(page, "filter-outcome", "wrong")
    assert page.evaluate(VISIBLE_ROWS) == 2  # q-differ (fs+md-vision) and q-hostile
    _choose(page, "filter-arm", "fs")
    assert page.evaluate(VISIBLE_ROWS) == 1  # only q-hostile is wrong in fs
    _choose(page, "filter-outcome", "missing")
    assert page.evaluate(VISIBLE_ROWS) == 0
    _choose(page, "filter-arm", "fs+md-vision")
    assert page.evaluate(VISIBLE_ROWS) == 1
    assert page.evaluate("document.querySelector('#question-count').textContent") == "1 of 7 questions"
    page.evaluate("document.getElementById('filter-reset').click()")
    _choose(page, "filter-outcome", "disagree")
    assert page.evaluate(VISIBLE_ROWS) == 1
    page.evaluate("document.getElementById('filter-reset').click()")
    _choose(page, "filter-document-type", "Guidebook")
    assert page.evaluate(VISIBLE_ROWS) == 2
    page.evaluate("document.getElementById('filter-reset').click()")
    page.evaluate(
        "(() => { const s = document.getElementById('filter-search'); s.value = 'NORTHWIND';"
        " s.dispatchEvent(new Event('input')); })()"
    )
    assert page.evaluate(VISIBLE_ROWS) == 2
    page.evaluate("document.getElementById('filter-reset').click()")
    assert page.evaluate(VISIBLE_ROWS) == 7

    # A transcript opens: both arms side by side, the tool output and its image shown.
    page.evaluate("document.querySelector('#questions tbody tr[data-index]').click()")
    page.wait_until(
        f"document.querySelector('#arms') && document.querySelector('#arms').textContent.includes('{MARKER} epoch 0')"
    )
    assert page.evaluate("location.hash") == "#q=q-agree"
    assert page.evaluate("document.querySelectorAll('#arms .arm-column .events').length") == 2
    assert page.evaluate("document.querySelector('#arms').textContent.includes('read_file')")
    page.evaluate("document.querySelectorAll('#arms .event img').forEach(i => { i.loading = 'eager'; })")
    assert page.wait_until(
        "(() => { const i = document.querySelectorAll('#arms .event img');"
        " return i.length === 2 && Array.from(i).every(x => x.complete && x.naturalWidth === 64); })()"
    )
    # The epoch selector switches to the other epoch's transcripts.
    page.evaluate(
        "Array.from(document.querySelectorAll('.epochs button')).find(b => b.textContent === '1').click()"
    )
    page.wait_until(f"document.querySelector('#arms').textContent.includes('{MARKER} epoch 1')")
    screenshot = page.screenshot()
    (tmp_path / "question.png").write_bytes(screenshot)

    # Hostile text is shown as text and runs nothing.
    page.navigate((run_dir / "viewer" / "index.html").as_uri() + "#q=q-hostile")
    page.wait_until(f"{SHOWING}('q-hostile') && document.querySelectorAll('#arms .events').length === 2")
    assert page.evaluate(
        "document.querySelector('#arms').textContent.includes('onerror=\"window.__pwned=1\"')"
    )
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0

    # A missing transcript says so; the page goes on working.
    page.navigate((run_dir / "viewer" / "index.html").as_uri() + "#q=q-broken")
    page.wait_until(
        f"{SHOWING}('q-broken') && document.querySelectorAll('#arms .notice.problem').length === 2"
    )
    assert page.evaluate("document.querySelector('#arms').textContent.includes('transcript missing')")
    page.evaluate("document.getElementById('back').click()")
    page.wait_until("!document.getElementById('overview').hidden")

    overview = page.screenshot()
    (tmp_path / "overview.png").write_bytes(overview)
    for shot in (screenshot, overview):
        assert _png_size(shot) == (1400, 1000) and len(shot) > 20_000  # the viewport, not a blank image
    assert page.errors() == []


def test_a_large_run_is_drawn_a_page_at_a_time_and_sorts(tmp_path: Path, chromium: Chromium) -> None:
    records = [
        make_record("fs", f"q{i:04d}", f"doc{i % 7}.pdf", score=float(i % 3 == 0), input_tokens=1000 + i)
        for i in range(650)
    ]
    folder = write_run(tmp_path / "big", records)
    write_viewer(folder, draw_plots=False)
    page = chromium.new_page()
    page.navigate((folder / "viewer" / "index.html").as_uri())
    assert page.wait_until(VISIBLE_ROWS) == 300
    assert page.evaluate("document.getElementById('question-count').textContent") == "650 of 650 questions"
    assert (
        page.evaluate("document.getElementById('show-more').textContent") == "show 300 more (350 not shown)"
    )
    page.evaluate("document.getElementById('show-more').click()")
    assert page.evaluate(VISIBLE_ROWS) == 600
    page.evaluate("document.getElementById('show-more').click()")
    assert page.evaluate(VISIBLE_ROWS) == 650
    assert page.evaluate("document.getElementById('show-more').hidden")
    # Filters work on every question, not only the drawn ones, and draw the first page again.
    _choose(page, "filter-outcome", "wrong")
    assert page.evaluate("document.getElementById('question-count').textContent") == "433 of 650 questions"
    assert page.evaluate(VISIBLE_ROWS) == 300
    # Sorting by an arm's tokens, both ways.
    first_qid = "document.querySelector('#questions tbody tr[data-index] a.qid').textContent"
    tokens_header = (
        "Array.from(document.querySelectorAll('th.sortable')).find(t => t.textContent.startsWith('tokens'))"
    )
    page.evaluate(f"{tokens_header}.click()")
    assert page.evaluate(first_qid) == "q0001"
    page.evaluate(f"{tokens_header}.click()")
    assert page.evaluate(first_qid) == "q0649"
    assert page.errors() == []


def test_flagged_transcripts_show_their_notices_in_the_browser(run_dir: Path, chromium: Chromium) -> None:
    run = load_run(run_dir)
    old = next(r for r in run.records if r.qid == "q-hostile" and r.arm == "fs")
    assert old.transcript
    (run_dir / old.transcript).write_text(json.dumps(old_format_transcript()))
    write_viewer(run_dir, draw_plots=False)
    page = chromium.new_page()
    page.navigate((run_dir / "viewer" / "index.html").as_uri() + "#q=q-hostile")
    page.wait_until(f"{SHOWING}('q-hostile') && document.querySelectorAll('#arms .events').length === 2")
    notices = "Array.from(document.querySelectorAll('#arms .notice.problem')).map(n => n.textContent)"
    shown = page.evaluate(notices)
    assert any(n.startswith("this transcript is format version 1") for n in shown)
    assert any("does not match the transcript format (model_error.retries" in n for n in shown)
    assert page.evaluate("document.querySelector('#arms').textContent.includes('RuntimeError: boom')")
    assert page.errors() == []


def test_a_standalone_viewer_works_after_the_run_is_gone(
    run_dir: Path, chromium: Chromium, tmp_path: Path
) -> None:
    import shutil

    write_viewer(run_dir, out=tmp_path / "first")
    moved = tmp_path / "elsewhere" / "viewer"
    moved.parent.mkdir()
    (tmp_path / "first").rename(moved)
    shutil.rmtree(run_dir)  # nothing of the run is left: the viewer must carry all it shows
    page = chromium.new_page()
    page.navigate((moved / "index.html").as_uri() + "#q=q-agree")
    page.evaluate("document.querySelectorAll('#plots img').forEach(i => { i.loading = 'eager'; })")
    assert page.wait_until(
        "(() => { const i = document.querySelectorAll('#plots img');"
        " return i.length > 0 && Array.from(i).every(x => x.complete && x.naturalWidth > 0); })()"
    )
    page.wait_until(f"{SHOWING}('q-agree') && document.querySelectorAll('#arms .events').length === 2")
    page.evaluate("document.querySelectorAll('#arms .event img').forEach(i => { i.loading = 'eager'; })")
    assert page.wait_until(
        "(() => { const i = document.querySelectorAll('#arms .event img');"
        " return i.length === 2 && Array.from(i).every(x => x.complete && x.naturalWidth === 64); })()"
    )
    assert page.errors() == []
