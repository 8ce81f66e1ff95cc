"""``docab report`` and ``docab compare`` end to end on synthetic runs, including their failures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.report.plots import write_plots
from docab.report.summary import build_report, load_run
from tests.harness.synthetic_runs import make_record, random_run, write_run

PNG = b"\x89PNG\r\n\x1a\n"


def test_report_writes_markdown_json_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = random_run(tmp_path / "run")
    code = main(["report", str(folder), "--format", "json"])
    assert code == 0
    out, err = capsys.readouterr()
    printed = json.loads(out)
    assert printed["arms"][0]["arm"] == "fs"
    assert json.loads((folder / "summary.json").read_text()) == printed
    assert (folder / "report.md").read_text().startswith("# A/B report: run run")
    plots = sorted(p.name for p in (folder / "plots").iterdir())
    assert plots == [
        "accuracy.png",
        "accuracy_by_answer_format.png",
        "accuracy_by_answer_path.png",
        "accuracy_by_document_type.png",
        "accuracy_by_evidence_pages.png",
        "accuracy_by_evidence_source.png",
        "accuracy_vs_tokens.png",
        "latency.png",
        "tokens.png",
    ]
    assert all((folder / "plots" / p).read_bytes().startswith(PNG) for p in plots)
    assert "wrote" in err


def test_report_markdown_to_stdout_without_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = random_run(tmp_path / "run", documents=4, per_document=3)
    assert main(["report", str(folder), "--format", "markdown", "--no-write"]) == 0
    assert "## fs+md-vision vs fs" in capsys.readouterr().out
    assert not (folder / "report.md").exists() and not (folder / "summary.json").exists()


def test_report_table_prints_the_headline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = random_run(tmp_path / "run", documents=4, per_document=3)
    assert main(["report", str(folder), "--no-write"]) == 0
    out = capsys.readouterr().out
    assert "Arms" in out and "Accuracy" in out and "fs+md-vision" in out


def test_report_of_a_missing_folder_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("docab report: error:") and "is not a run folder" in err
    assert "Traceback" not in err


def test_usage_errors_are_exit_status_2_and_the_report_is_deterministic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # argparse's usage errors come back from main() as exit status 2, not as SystemExit.
    assert main(["report", str(tmp_path), "--resamples", "5"]) == 2
    assert "unrecognized arguments" in capsys.readouterr().err
    # No resampling: the same run gives the same summary, with no seed to choose.
    folder = random_run(tmp_path / "run")
    assert main(["report", str(folder), "--format", "json", "--no-plots"]) == 0
    first = capsys.readouterr().out
    assert main(["report", str(folder), "--format", "json", "--no-plots"]) == 0
    assert capsys.readouterr().out == first


def test_compare_arms_within_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = random_run(tmp_path / "run")
    assert main(["compare", str(folder), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    (only,) = document["comparisons"]
    assert [a["arm"] for a in only["arms"]] == ["fs", "fs+md-vision"]
    assert only["comparison"]["paired"] == 60
    assert [c["metric"] for c in only["checks"]] == ["accuracy", "F1", "evidence recall", "tokens", "latency"]
    assert {c["verdict"] for c in only["checks"]} == {"not gated"}  # no threshold given
    assert document["passed"] is True


def make_pair(
    tmp_path: Path,
    new_accuracy: float,
    *,
    arms: tuple[str, ...] = ("fs+md-vision",),
    new_tokens: int = 1000,
    new_pages: tuple[int, ...] = (3,),
) -> tuple[Path, Path]:
    """A baseline run and a new run of the same arm(s) over the same questions."""
    base, new = [], []
    for arm in arms:
        for d in range(20):
            for q in range(5):
                qid, doc = f"d{d}#{q}", f"d{d}"
                base.append(make_record(arm, qid, doc, score=1.0 if q < 4 else 0.0, pages_read=(3,)))
                new.append(
                    make_record(
                        arm,
                        qid,
                        doc,
                        score=1.0 if q < round(5 * new_accuracy) else 0.0,
                        input_tokens=new_tokens,
                        pages_read=new_pages,
                    )
                )
    return write_run(tmp_path / "base", base), write_run(tmp_path / "new", new)


def test_compare_two_runs_gate_fails_on_a_real_drop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = make_pair(tmp_path, new_accuracy=0.4)  # 80 % -> 40 %
    code = main(["compare", str(base), str(new), "--fail-on-drop", "2", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "accuracy of fs+md-vision @ new fell by 40.0 points against fs+md-vision @ base" in err
    assert "F1 of fs+md-vision @ new fell by" in err
    document = json.loads(out)
    labels = [a["arm"] for a in document["comparisons"][0]["arms"]]
    assert labels == ["fs+md-vision @ base", "fs+md-vision @ new"]
    assert document["passed"] is False and len(document["failures"]) == 2


def test_compare_two_runs_gate_passes_without_a_drop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = make_pair(tmp_path, new_accuracy=0.8)
    code = main(["compare", str(base), str(new), "--fail-on-drop", "2", "--format", "markdown"])
    assert code == 0 and "fs+md-vision @ new vs fs+md-vision @ base" in capsys.readouterr().out


def test_compare_needs_an_arm_choice_when_ambiguous(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = random_run(tmp_path / "one", documents=2, per_document=2)
    two = random_run(tmp_path / "two", documents=2, per_document=2, arms=("x", "y"))
    assert main(["compare", str(one), str(two), "--a", "fs"]) == 2
    assert "choose one with --b" in capsys.readouterr().err
    assert main(["compare", str(one), str(two), "--a", "nope", "--b", "x"]) == 2
    assert "has no arm 'nope'" in capsys.readouterr().err
    single = write_run(tmp_path / "single", [make_record("fs", "q", "d")])
    assert main(["compare", str(single)]) == 2
    assert "has only the arm 'fs'" in capsys.readouterr().err


def test_plots_are_written_for_a_floor_run_without_tokens(tmp_path: Path) -> None:
    records = [
        make_record(
            arm, f"q{i}", f"d{i % 3}", model="baseline/keyword", input_tokens=0, output_tokens=0, score=i % 2
        )
        for arm in ("fs", "fs+md-vision")
        for i in range(9)
    ]
    report = build_report(load_run(write_run(tmp_path / "floor", records)))
    written = write_plots(report, tmp_path / "plots")
    assert all(p.read_bytes().startswith(PNG) for p in written)


def test_docab_help_lists_the_report_commands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "docab.cli.main", "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0 and "report" in result.stdout and "compare" in result.stdout
    probe = "import sys, docab.cli.main; docab.cli.main.build_parser(); print('numpy' in sys.modules, 'rich' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert loaded.stdout.split() == ["False", "False"]


def test_compare_two_runs_pairs_every_shared_arm_and_gates_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = make_pair(tmp_path, new_accuracy=0.8, arms=("fs", "fs+md-vision"), new_tokens=2000)
    code = main(["compare", str(base), str(new), "--max-tokens-rise", "10"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "Gate: fs @ new against fs @ base" in out and "Gate: fs+md-vision @ new against" in out
    assert err.count("tokens of") == 2 and "rose by" in err
    # A generous threshold passes the same change.
    assert main(["compare", str(base), str(new), "--max-tokens-rise", "150"]) == 0
    assert "gate passed" in capsys.readouterr().err


def test_compare_gates_evidence_recall_from_a_gate_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = make_pair(tmp_path, new_accuracy=0.8, new_pages=())  # the new run reads no evidence page
    gate = tmp_path / "gate.toml"
    gate.write_text("[gate]\naccuracy_drop_points = 1\nevidence_recall_drop_points = 5\n")
    assert main(["compare", str(base), str(new), "--gate", str(gate)]) == 1
    err = capsys.readouterr().err
    assert "evidence recall of fs+md-vision @ new fell by 100.0 points" in err
    assert "accuracy" not in err  # unchanged accuracy passes
    # A flag overrides the file.
    assert (
        main(
            [
                "compare",
                str(base),
                str(new),
                "--gate",
                str(gate),
                "--max-recall-drop",
                "100",
            ]
        )
        == 0
    )


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "cannot read the gate file"),
        ("[gate\n", "is not valid TOML"),
        ("[limits]\naccuracy_drop_points = 1\n", "no [gate] table"),
        ("[gate]\naccuracy_drop = 1\n", "unknown key(s) accuracy_drop"),
        ("[gate]\ntokens_rise_percent = -5\n", "must be a number of 0 or more"),
    ],
)
def test_bad_gate_files_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, needle: str
) -> None:
    base, new = make_pair(tmp_path, new_accuracy=0.8)
    gate = tmp_path / "gate.toml"
    if content is not None:
        gate.write_text(content)
    assert main(["compare", str(base), str(new), "--gate", str(gate)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("docab compare: error:") and needle in err and "Traceback" not in err


def test_bad_threshold_flags_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, new = make_pair(tmp_path, new_accuracy=0.8)
    assert main(["compare", str(base), str(new), "--max-f1-drop", "-1"]) == 2
    assert "0 or more" in capsys.readouterr().err
    assert main(["compare", str(base), str(new), "--max-latency-rise", "fast"]) == 2
    assert "expected a number" in capsys.readouterr().err


def test_two_runs_without_a_shared_arm_ask_for_a_choice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = random_run(tmp_path / "one", documents=2, per_document=2)
    two = random_run(tmp_path / "two", documents=2, per_document=2, arms=("x", "y"))
    assert main(["compare", str(one), str(two)]) == 2
    assert "share no arm; choose the two with --a and --b" in capsys.readouterr().err


def test_two_runs_in_folders_of_the_same_name_keep_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = make_pair(tmp_path, new_accuracy=0.4)
    (tmp_path / "x").mkdir(), (tmp_path / "y").mkdir()
    base, new = base.rename(tmp_path / "x" / "demo"), new.rename(tmp_path / "y" / "demo")
    assert main(["compare", str(base), str(new), "--fail-on-drop", "2"]) == 1
    assert f"accuracy of fs+md-vision @ {new} fell by 40.0 points" in capsys.readouterr().err
