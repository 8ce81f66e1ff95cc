"""``docab compare BASE NEW``: an arm present in only one of the runs is named, and fails the gate.

Red-team pass 6, finding 4: with the treatment arm renamed in NEW (``fs+md-vision`` -> ``fs+mdv``,
every score 0), the gate compared only the unchanged ``fs`` arm and passed without a word.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docab.cli.main import main
from tests.harness.synthetic_runs import make_record, write_run


def renamed_pair(tmp_path: Path, *, rename: str | None = "fs+mdv") -> tuple[Path, Path]:
    """A base run of fs and fs+md-vision, and a new run where fs is unchanged and fs+md-vision is
    renamed to ``rename`` (dropped when None) and answers nothing right."""
    base, new = [], []
    for d in range(8):
        for q in range(3):
            qid, doc = f"d{d}#{q}", f"d{d}"
            score = 1.0 if q < 2 else 0.0
            base += [
                make_record("fs", qid, doc, score=score),
                make_record("fs+md-vision", qid, doc, score=score),
            ]
            new.append(make_record("fs", qid, doc, score=score))
            if rename is not None:
                new.append(make_record(rename, qid, doc, score=0.0))
    return write_run(tmp_path / "base", base), write_run(tmp_path / "new", new)


def test_the_gate_fails_when_an_arm_of_the_base_is_missing_from_the_new_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = renamed_pair(tmp_path)
    assert main(["compare", str(base), str(new), "--fail-on-drop", "2"]) == 1
    out, err = capsys.readouterr()
    assert "the arm 'fs+md-vision' of base is missing from new (its arms: fs, fs+mdv)" in err
    assert "--a fs+md-vision --b ARM" in err and "--allow-missing-arms" in err
    assert "gate passed" not in err
    # the table says which arms were left out, both ways
    assert "'fs+md-vision' only in base" in out and "'fs+mdv' only in new" in out


def test_the_gate_fails_when_the_new_run_dropped_an_arm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = renamed_pair(tmp_path, rename=None)
    assert main(["compare", str(base), str(new), "--fail-on-drop", "2", "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["passed"] is False
    assert document["unpaired_arms"] == [{"arm": "fs+md-vision", "run": str(base), "side": "base"}]
    assert any("'fs+md-vision' of base is missing from new" in f for f in document["failures"])


def test_json_and_markdown_name_unpaired_arms_without_a_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = renamed_pair(tmp_path)
    assert main(["compare", str(base), str(new), "--format", "json"]) == 0  # nothing gated
    document = json.loads(capsys.readouterr().out)
    assert document["unpaired_arms"] == [
        {"arm": "fs+md-vision", "run": str(base), "side": "base"},
        {"arm": "fs+mdv", "run": str(new), "side": "new"},
    ]
    assert main(["compare", str(base), str(new), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "- warning: arms present in only one run were not compared: 'fs+md-vision' only in base" in out


def test_naming_the_pair_or_opting_out_gates_what_was_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = renamed_pair(tmp_path)
    # the pair named explicitly: the renamed arm is gated, and its drop fails
    assert (
        main(["compare", str(base), str(new), "--a", "fs+md-vision", "--b", "fs+mdv", "--fail-on-drop", "2"])
        == 1
    )
    err = capsys.readouterr().err
    assert "accuracy of fs+mdv @ new fell by" in err and "missing from" not in err
    # the opt-out: only the shared arm is gated, the unpaired ones still named
    assert main(["compare", str(base), str(new), "--fail-on-drop", "2", "--allow-missing-arms"]) == 0
    out, err = capsys.readouterr()
    assert "gate passed" in err and "'fs+md-vision' only in base" in out


def test_runs_with_the_same_arms_report_no_unpaired_arm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = renamed_pair(tmp_path)
    assert main(["compare", str(base), str(base), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["unpaired_arms"] == []
    assert main(["compare", "--help"]) == 0
    assert "--allow-missing-arms" in capsys.readouterr().out
