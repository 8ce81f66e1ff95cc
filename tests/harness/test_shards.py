"""Shards from a scheduler: ``--shard auto`` reads Slurm array, Kubernetes Indexed Job and
``DOCAB_SHARD`` variables (passed in as a mapping, no process environment touched) and splits a
run exactly as the explicit ``--shard i/N`` does; ``i/N`` counts from 1 everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from docab.cli.main import build_parser, main
from docab.cli.run import request_from
from docab.config import load_config
from docab.runner.launch import select_samples
from docab.runner.schedule import Shard, ShardError, parse_shard, shard_from_environment
from tests.harness.corpus import make_dataset

COUNT = 4


def slurm(task: int, first: int, step: int = 1, *, count: bool = True, last: bool = True) -> dict[str, str]:
    """What Slurm sets in a task of ``--array=first-(first + 3 * step):step`` (4 tasks)."""
    env = {
        "SLURM_JOB_ID": "1000",
        "SLURM_ARRAY_JOB_ID": "1000",
        "SLURM_ARRAY_TASK_ID": str(task),
        "SLURM_ARRAY_TASK_MIN": str(first),
        "SLURM_ARRAY_TASK_STEP": str(step),
    }
    if count:
        env["SLURM_ARRAY_TASK_COUNT"] = str(COUNT)
    if last:
        env["SLURM_ARRAY_TASK_MAX"] = str(first + (COUNT - 1) * step)
    return env


def kubernetes(index: int) -> dict[str, str]:
    return {"JOB_COMPLETION_INDEX": str(index), "DOCAB_SHARD_COUNT": str(COUNT), "HOSTNAME": f"job-{index}-x"}


# Every scheduler, as the environments of its COUNT tasks in their launch order.
SCHEDULERS = {
    "slurm --array=1-4": [slurm(task, 1) for task in range(1, 5)],
    "slurm --array=0-3": [slurm(task, 0) for task in range(0, 4)],
    "slurm --array=5-8 (count only)": [slurm(task, 5, last=False) for task in range(5, 9)],
    "slurm --array=0-6:2 (max only)": [slurm(task, 0, 2, count=False) for task in (0, 2, 4, 6)],
    "kubernetes indexed job": [kubernetes(index) for index in range(COUNT)],
    "DOCAB_SHARD": [{"DOCAB_SHARD": f"{i}/{COUNT}"} for i in range(1, COUNT + 1)],
    "github actions matrix": [{"DOCAB_SHARD": f"{i}/{COUNT}", "GITHUB_ACTIONS": "true"} for i in range(1, 5)],
}


@pytest.mark.parametrize("scheduler", sorted(SCHEDULERS))
def test_auto_splits_a_run_as_the_explicit_shards_do(scheduler: str, tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "corpus", documents=6)  # 24 questions
    explicit = [
        {s.qid for s in select_samples(dataset, limit=None, shard=(i, COUNT))} for i in range(1, COUNT + 1)
    ]
    auto = []
    for env in SCHEDULERS[scheduler]:
        shard = shard_from_environment(env)
        assert shard.count == COUNT and shard.origin
        auto.append({s.qid for s in select_samples(dataset, limit=None, shard=shard.pair)})
    assert auto == explicit  # the k-th task runs shard k, question for question
    assert set().union(*auto) == {s.qid for s in dataset.samples}
    assert sum(len(part) for part in auto) == len(dataset.samples)  # disjoint


@pytest.mark.parametrize(
    ("env", "shard", "origin"),
    [
        (slurm(6, 5), Shard(2, 4), "Slurm array task 6 of 5-8"),
        (slurm(4, 0, 2), Shard(3, 4), "Slurm array task 4 of 0-6:2"),
        (kubernetes(0), Shard(1, 4), "JOB_COMPLETION_INDEX=0 of 4, counted from 0"),
        (kubernetes(3), Shard(4, 4), "JOB_COMPLETION_INDEX=3 of 4, counted from 0"),
        ({"DOCAB_SHARD": " 2/4 ", **slurm(1, 1)}, Shard(2, 4), "DOCAB_SHARD=2/4"),  # explicit wins
        ({"DOCAB_SHARD": "2/4", "DOCAB_SHARD_COUNT": "4"}, Shard(2, 4), "DOCAB_SHARD=2/4"),
    ],
)
def test_the_variables_of_each_scheduler_name_one_shard(
    env: dict[str, str], shard: Shard, origin: str
) -> None:
    found = shard_from_environment(env)
    assert found == shard and found.origin == origin
    assert found.describe() == f"shard {shard.index} of {shard.count} ({origin})"


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({}, "no shard in the environment: set DOCAB_SHARD=i/N, or run as a Slurm array task"),
        ({"SLURM_JOB_ID": "7"}, "this Slurm job is not an array (submit it with sbatch --array=1-N)"),
        (
            {"JOB_COMPLETION_INDEX": "2"},
            "JOB_COMPLETION_INDEX=2 is set (a Kubernetes Indexed Job) but not the number of shards, which "
            "Kubernetes does not put in the environment: set DOCAB_SHARD_COUNT to the Job's spec.completions",
        ),
        (kubernetes(4), "JOB_COMPLETION_INDEX=4 counts from 0, so it must be below DOCAB_SHARD_COUNT=4"),
        ({**kubernetes(1), "DOCAB_SHARD_COUNT": "0"}, "DOCAB_SHARD_COUNT must be at least 1, got 0"),
        (
            {**kubernetes(1), "DOCAB_SHARD_COUNT": "four"},
            "DOCAB_SHARD_COUNT must be a whole number, got 'four'",
        ),
        ({"JOB_COMPLETION_INDEX": "-1", "DOCAB_SHARD_COUNT": "4"}, "must be a whole number, got '-1'"),
        ({**slurm(1, 1), "JOB_COMPLETION_INDEX": "0"}, "both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX"),
        ({"SLURM_ARRAY_TASK_ID": "3"}, "SLURM_ARRAY_TASK_ID is set without the array's range"),
        (
            {
                "SLURM_ARRAY_TASK_ID": "3",
                "SLURM_ARRAY_TASK_MIN": "1",
                "SLURM_ARRAY_TASK_MAX": "7",
                "SLURM_ARRAY_TASK_COUNT": "4",
            },  # --array=1,3,5,7 written as a list: no step in the range
            "the Slurm array is not one evenly spaced range",
        ),
        ({**slurm(9, 1)}, "SLURM_ARRAY_TASK_ID=9 is not one of the array's 4 task ids from 1 in steps of 1"),
        (
            {**slurm(3, 0, 2)},
            "SLURM_ARRAY_TASK_ID=3 is not one of the array's 4 task ids from 0 in steps of 2",
        ),
        ({**slurm(2, 1), "DOCAB_SHARD_COUNT": "3"}, "DOCAB_SHARD_COUNT=3 disagrees with shard 2 of 4 (Slurm"),
        ({"DOCAB_SHARD": "0/4"}, "shards are numbered from 1 (1/4 to 4/4), got '0/4'"),
        ({"DOCAB_SHARD": "x"}, "a shard looks like i/N, e.g. 1/4 for shard 1 of 4; got 'x'"),
    ],
)
def test_variables_that_do_not_say_which_shard_are_refused_with_what_to_set(
    env: dict[str, str], words: str
) -> None:
    with pytest.raises(ShardError) as caught:
        shard_from_environment(env)
    assert words in str(caught.value)


def test_i_of_n_counts_from_1_and_a_0_based_index_is_pointed_to_auto() -> None:
    assert parse_shard("1/4").pair == (1, 4) and parse_shard("4/4").pair == (4, 4)
    with pytest.raises(ShardError) as caught:
        parse_shard("0/4")
    assert str(caught.value) == (
        "shards are numbered from 1 (1/4 to 4/4), got '0/4'; a 0-based index such as Kubernetes' "
        "JOB_COMPLETION_INDEX is read by auto, which adds 1 (set DOCAB_SHARD_COUNT=4)"
    )
    for bad in ("5/4", "1/0", "1/", "/4", "a/b", "1.5/4", "-1/4", "1/4/2"):
        with pytest.raises(ShardError):
            parse_shard(bad)


def run_args(*flags: str):  # type: ignore[no-untyped-def]
    return build_parser().parse_args(["run", "demo", "--quiet", *flags])


def test_the_cli_takes_auto_from_the_scheduler_and_words_its_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = load_config("demo")
    request = request_from(run_args("--shard", "auto"), config, env=slurm(7, 5, last=False))
    assert request.shard == (3, 4) and request.run_id == "demo.shard-3-of-4"  # as --shard 3/4 names it
    # --quiet drops the progress display, never the line a scheduler's log needs to say which shard ran
    assert capsys.readouterr().err == "docab run: shard 3 of 4 (Slurm array task 7 of 5-8)\n"
    assert request.run_id == request_from(run_args("--shard", "3/4"), config).run_id
    loud = request_from(
        build_parser().parse_args(["run", "demo", "--shard", "auto"]), config, env=kubernetes(0)
    )
    assert loud.shard == (1, 4)
    assert capsys.readouterr().err == (
        "docab run: shard 1 of 4 (JOB_COMPLETION_INDEX=0 of 4, counted from 0)\n"
    )
    assert main(["run", "demo", "--shard", "0/4"]) == 2
    err = capsys.readouterr().err
    assert "--shard 0/4: shards are numbered from 1 (1/4 to 4/4)" in err and "Traceback" not in err


def test_help_says_shards_count_from_1_and_what_auto_reads(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--shard i/N|auto run shard i of N, numbered from 1" in text
    assert "JOB_COMPLETION_INDEX with DOCAB_SHARD_COUNT" in text
