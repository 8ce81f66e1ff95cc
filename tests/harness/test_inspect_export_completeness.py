"""``docab export --format inspect`` is complete (issue 23 item 8): the extractor's tokens in
``model_usage`` (sample and stats), the extractor as the eval's ``grader`` model role, files named
``<arm>-<eval id>.eval`` as the documentation (docs/inspect.md) says, one ``task_id`` per arm, and the arms' tool-definition
cost carried through, so the report of the exported logs is the report of the run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.report.summary import build_report, load_run
from docab.usage import Usage
from tests.conftest import REPO_ROOT
from tests.harness.synthetic_runs import make_record, write_run

inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect-ai is a dev dependency of docab")

AGENT = "openai/gpt-test"
EXTRACTOR = "openai/gpt-extract"
ARMS = [
    {"name": "fs", "tools": ["fs"], "tool_names": ["read"], "tool_definition_tokens": 310},
    {"name": "fs+md-vision", "tools": ["fs"], "mcp_servers": ["md-vision"], "tool_definition_tokens": 905},
]


def extraction_run(folder: Path) -> Path:
    records = []
    for arm in ("fs", "fs+md-vision"):
        for n, doc in enumerate(("d1", "d1", "d2", "d3")):
            record = make_record(
                arm, f"q{n}", doc, score=float(n % 2), protocol="extraction", input_tokens=1000 + n
            )
            extractor = Usage(input_uncached=200, cache_read=50, output=7, role="extractor", model=EXTRACTOR)
            tool_side = Usage(input_uncached=999, output=1, role="tool-side", model="openai/vision")
            records.append(dataclasses.replace(record, usage=(*record.usage, extractor, tool_side)))
    manifest = {
        "arms": ARMS,
        "models": {"agent": AGENT, "extractor": EXTRACTOR},
        "config": {"name": "complete", "answer": {"protocol": "extraction"}},
    }
    return write_run(folder, records, manifest)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = extraction_run(tmp_path_factory.mktemp("export") / "run")
    assert main(["export", str(folder), "--format", "inspect"]) == 0
    return folder


def logs(folder: Path) -> dict[str, inspect_log.EvalLog]:
    found = [inspect_log.read_eval_log(str(p)) for p in sorted((folder / "inspect").glob("*.eval"))]
    return {log.eval.metadata["docab"]["arm"]: log for log in found}


def test_the_extractors_tokens_are_in_model_usage_of_samples_and_stats(exported: Path) -> None:
    log = logs(exported)["fs"]
    sample = (log.samples or [])[0]
    assert set(sample.model_usage) == {AGENT, EXTRACTOR}  # the tool's own model is not the eval's
    assert sample.model_usage[EXTRACTOR].input_tokens == 200
    assert sample.model_usage[EXTRACTOR].input_tokens_cache_read == 50
    assert sample.model_usage[EXTRACTOR].output_tokens == 7
    assert log.stats.model_usage[EXTRACTOR].input_tokens == 4 * 200
    assert log.stats.model_usage[AGENT].input_tokens == sum(1000 + n for n in range(4))
    assert log.stats.role_usage["tool-side"].input_tokens == 4 * 999  # still reported, by role


def test_the_extractor_is_the_grader_model_role(exported: Path) -> None:
    for log in logs(exported).values():
        assert log.eval.model == AGENT
        assert log.eval.model_roles is not None and log.eval.model_roles["grader"].model == EXTRACTOR


def test_files_are_named_as_the_readme_says_with_one_task_id_per_arm(exported: Path) -> None:
    found = logs(exported)
    names = sorted(p.name for p in (exported / "inspect").glob("*.eval"))
    fs, md = found["fs"], found["fs+md-vision"]
    assert names[0] == f"fs-{fs.eval.eval_id}.eval"
    assert names[1].startswith("fs_md-vision-") and names[1].endswith(f"-{md.eval.eval_id}.eval")
    assert (
        "results/demo/inspect/<arm>-<id>.eval" in (REPO_ROOT / "docs" / "inspect.md").read_text()
    )  # moved from the README
    assert fs.eval.task_id and md.eval.task_id and fs.eval.task_id != md.eval.task_id
    # Exporting again writes the same files, not more.
    assert main(["export", str(exported), "--format", "inspect"]) == 0
    assert sorted(p.name for p in (exported / "inspect").glob("*.eval")) == names


def test_export_then_import_gives_the_same_report(exported: Path) -> None:
    run = build_report(load_run(exported)).summary
    back = build_report(load_run(exported / "inspect")).summary
    assert [a.tokens.tool_definition_tokens for a in back.arms] == [310, 905]
    assert [a.tokens.tool_definition_tokens for a in run.arms] == [310, 905]
    assert [a.model_dump_json() for a in back.arms] == [a.model_dump_json() for a in run.arms]
    assert back.comparisons == run.comparisons
