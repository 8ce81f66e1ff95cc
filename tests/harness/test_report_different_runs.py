"""``docab report A B`` merges only parts (shards, reruns) of one run: folders run with different
configs are refused, as ``docab merge`` refuses them, with a pointer to ``docab compare A B``.

Red-team pass 6, finding 5: two unrelated runs (config hashes 97288ca9db5b and 8b796c60a468) were
pooled into one A/B with only a warning about duplicated records.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docab.cli.main import main
from docab.log.merge import MergeError, merge_runs
from docab.report.summary import ReportError, load_run
from tests.harness.synthetic_runs import make_record, write_run

HASH_A, HASH_B = "a" * 64, "b" * 64


def one_run(
    folder: Path, config_hash: str, *, model: str = "openai/gpt-test", qids: range = range(4)
) -> Path:
    records = [make_record(arm, f"q{i}", f"d{i % 2}", model=model) for arm in ("fs", "md") for i in qids]
    return write_run(folder, records, {"config_hash": config_hash})


def test_folders_of_different_runs_are_refused_with_a_pointer_to_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = one_run(tmp_path / "first", HASH_A)
    other = one_run(tmp_path / "other", HASH_B, model="openai/stub-model")
    assert main(["report", str(first), str(other), "--no-plots", "--no-write"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("docab report: error:") and err.count("\n") == 1 and "Traceback" not in err
    assert f"{first} ({HASH_A[:12]}), {other} ({HASH_B[:12]})" in err
    assert f"docab compare {first} {other}" in err and "docab merge" in err
    # the same check as docab merge: both refuse the same folders
    with pytest.raises(MergeError, match="different configs"):
        merge_runs([first, other], tmp_path / "merged")
    # a run with a config hash and a run without one are not one run either
    bare = write_run(tmp_path / "bare", [make_record("fs", "q0", "d0")])
    with pytest.raises(ReportError, match="different configs"):
        load_run(first, bare)


def test_shards_and_reruns_of_one_run_still_merge(tmp_path: Path) -> None:
    one = one_run(tmp_path / "s1", HASH_A, qids=range(0, 4))
    two = one_run(tmp_path / "s2", HASH_A, qids=range(4, 8))
    assert len(load_run(one, two).records) == 16
    assert len(load_run(one, one_run(tmp_path / "again", HASH_A), reruns_as_epochs=True).records) == 16
