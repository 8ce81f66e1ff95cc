"""``docab merge`` checks the shard set from the parts' manifests (issue 23 item 8): a missing or
repeated shard is refused unless ``--allow-partial``, whose merged run's report names the missing
shards; merging the late shard in afterwards completes the run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.log.manifest import ShardInfo
from docab.log.merge import MergeError, merge_runs, shard_coverage
from docab.report.summary import build_report, load_run
from tests.harness.synthetic_runs import make_record, write_run


def shard(folder: Path, index: int, count: int) -> Path:
    records = [
        make_record("fs", f"q{index}-{n}", f"d{index}") for n in range(2)
    ]  # each shard its own questions
    return write_run(folder, records, {"shard": {"index": index, "count": count}})


def test_a_missing_shard_is_refused_and_allowed_partial_the_report_names_it(tmp_path: Path) -> None:
    one, three = shard(tmp_path / "s1", 1, 3), shard(tmp_path / "s3", 3, 3)
    out = tmp_path / "merged"
    with pytest.raises(MergeError, match=r"shard 2 of 3 is missing; .*--allow-partial"):
        merge_runs([one, three], out)
    assert not out.exists()  # nothing written

    result = merge_runs([one, three], out, allow_partial=True)
    assert result.records == 4 and result.missing_shards == (2,)
    assert any("shard 2 of 3 is missing" in w for w in result.warnings)
    report = build_report(load_run(out)).summary
    assert any("partial run" in w and "shard 2 of 3 is missing" in w for w in report.warnings)

    # The late shard merged in completes the run: no warning any more.
    result = merge_runs([shard(tmp_path / "s2", 2, 3)], out)
    assert result.records == 6 and result.missing_shards == ()
    assert not any("shard" in w for w in build_report(load_run(out)).summary.warnings)


def test_a_shard_given_twice_is_refused(tmp_path: Path) -> None:
    one, two = shard(tmp_path / "s1", 1, 2), shard(tmp_path / "s2", 2, 2)
    copy = tmp_path / "s1-again"
    shutil.copytree(one, copy)
    with pytest.raises(MergeError, match="shard 1 of 2 is given twice"):
        merge_runs([one, copy, two], tmp_path / "merged")
    # Merging the same shards again into the merged run is a re-merge, not a duplicate.
    merge_runs([one, two], tmp_path / "merged")
    assert merge_runs([one, two], tmp_path / "merged").records == 4


def test_shards_of_different_splits_are_refused(tmp_path: Path) -> None:
    with pytest.raises(MergeError, match=r"split the run differently \(into 2 and 3\)"):
        merge_runs([shard(tmp_path / "a", 1, 2), shard(tmp_path / "b", 2, 3)], tmp_path / "merged")


def test_runs_without_shards_merge_as_before() -> None:
    assert shard_coverage([None, None]).complete
    coverage = shard_coverage([ShardInfo(index=2, count=4)], [ShardInfo(index=1, count=4)])
    assert coverage.missing == (3, 4) and coverage.describe() == "shards 3, 4 of 4 are missing"


def test_the_cli_refuses_in_one_line_and_merges_with_allow_partial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = shard(tmp_path / "s1", 1, 2)
    out = tmp_path / "merged"
    assert main(["merge", str(one), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "shard 2 of 2 is missing" in err and "--allow-partial" in err
    assert main(["merge", str(one), "--out", str(out), "--allow-partial"]) == 0
    printed = capsys.readouterr().out
    assert (
        "2 records from 1 parts" in printed and "warning: a partial run: shard 2 of 2 is missing" in printed
    )
    assert main(["report", str(out), "--no-plots"]) == 0
    assert "shard 2 of 2 is missing" in (out / "report.md").read_text()
