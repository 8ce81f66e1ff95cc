"""The runner: interleaved arms, intention-to-treat, resume, shards and merge, limits, transcripts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from docab.config import RunConfig, parse_config
from docab.errors import RunError
from docab.log.merge import MergeError, merge_runs
from docab.log.records import RECORD_VERSION, RunRecord
from docab.log.store import read_records
from docab.models.base import ModelError
from docab.models.baseline import KeywordBaseline
from docab.runner.launch import RunRequest, launch
from docab.runner.progress import SilentProgress
from docab.runner.schedule import arm_order, plan, shard_of
from tests.harness.corpus import exact_scorer, make_dataset
from tests.harness.fakes import ScriptedModel, submit, turn

FAKE_MD_VISION = "{cwd}/tests/harness/fixtures/fake_md_vision.py"


def config(**overrides: Any) -> RunConfig:
    data: dict[str, Any] = {
        "name": "t",
        "model": {"name": "baseline/keyword"},
        "arms": [{"name": "fs"}, {"name": "fs-again"}],
    }
    data.update(overrides)
    return parse_config(data)


def run(cfg: RunConfig, tmp_path: Path, dataset: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
    options = {
        "model": kwargs.pop("model", None),
        "store": kwargs.pop("store", None),
        "scorer": exact_scorer,
        "progress": SilentProgress(),
        "say": lambda s: None,
    }
    request = RunRequest(cfg, results_dir=tmp_path / "results", **kwargs)
    return launch(request, dataset=dataset, **options)


@pytest.fixture
def dataset(tmp_path: Path):  # type: ignore[no-untyped-def]
    return make_dataset(tmp_path / "corpus", documents=3)


class RecordingBaseline(KeywordBaseline):
    """The baseline, noting the order in which samples start (their first model call)."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[tuple[str, str]] = []
        self.calls = 0

    async def generate(self, system: str, messages: Any, tools: Any, *, max_output_tokens: int):  # type: ignore[no-untyped-def]
        self.calls += 1
        if len(messages) == 1:
            arm = "md" if any(t.name == "index_md" for t in tools) else system.rsplit("ARM=", 1)[-1].strip()
            self.starts.append((messages[0].text, arm))
        return await super().generate(system, messages, tools, max_output_tokens=max_output_tokens)


def test_arm_order_is_seeded_and_independent_of_the_run_shape() -> None:
    arms = ["a", "b", "c"]
    orders = {arm_order(arms, 7, f"q{i}", 0) for i in range(40)}
    assert len(orders) > 3  # the order varies between questions
    assert arm_order(arms, 7, "q1", 0) == arm_order(arms, 7, "q1", 0)  # and is reproducible
    assert [arm_order(arms, 7, f"q{i}", 0) for i in range(20)] != [
        arm_order(arms, 8, f"q{i}", 0) for i in range(20)
    ]


def test_each_question_and_epoch_runs_all_arms_back_to_back(tmp_path: Path, dataset: Any) -> None:
    arms = [{"name": n, "prompt": f"ARM={n}"} for n in ("a", "b", "c")]
    cfg = config(arms=arms, seed=3)
    model = RecordingBaseline()
    outcome = run(cfg, tmp_path, dataset, model=model, concurrency=1, epochs=2)
    assert len(outcome.records) == len(dataset.samples) * 3 * 2
    starts = model.starts
    # In run order, arms come in blocks of three: one block per (question, epoch), every arm once.
    blocks = [starts[i : i + 3] for i in range(0, len(starts), 3)]
    assert all(
        len({q for q, _ in block}) == 1 and {a for _, a in block} == {"a", "b", "c"} for block in blocks
    )
    # The order inside each block is the seeded one, and it is not the same for every block.
    expected = [u.arms for u in plan(list(dataset.samples), ["a", "b", "c"], epochs=2, seed=3)]
    assert [tuple(a for _, a in block) for block in blocks] == expected
    assert len(set(expected)) > 1
    # Epoch by epoch: every question's epoch 0 runs before any epoch 1.
    epochs = [r.epoch for r in read_records(outcome.run_dir / "records.jsonl")]
    assert epochs == sorted(epochs)


def test_records_manifest_and_transcripts(tmp_path: Path, dataset: Any) -> None:
    outcome = run(config(), tmp_path, dataset)
    folder = outcome.run_dir
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["config_hash"] == config().config_hash()
    assert manifest["config"]["model"]["name"] == "baseline/keyword"
    assert manifest["dataset"] == {"source": "suite", "name": "test-suite", "version": "1"}
    assert manifest["models"]["is_baseline"] is True
    assert manifest["packages"]["mcp"] and "commit" in manifest["git"]
    assert manifest["sessions"][0]["finished_at"]
    lines = (folder / "records.jsonl").read_text().splitlines()
    assert len(lines) == 24 and all(json.loads(line)["version"] == RECORD_VERSION for line in lines)
    record = outcome.records[0]
    transcript = json.loads((folder / record.transcript).read_text())
    assert transcript["qid"] == record.qid and transcript["tools"]
    kinds = [e["type"] for e in transcript["events"]]
    assert (
        kinds[0] == "message" and "model_turn" in kinds and "tool_result" in kinds and kinds[-1] == "answer"
    )
    assert transcript["events"][-1]["gold"] == record.gold
    ok = [r for r in outcome.records if r.status == "ok"]
    assert ok and all(r.pages_read for r in ok if r.gold != "Not answerable")


def test_images_are_stored_once_by_hash(tmp_path: Path, dataset: Any) -> None:
    reads_page = turn("", ("read_file", {"path": "document/pages/page-0001.png"}))
    model = ScriptedModel(then=lambda messages: submit("x") if len(messages) > 1 else reads_page)  # type: ignore[arg-type]
    cfg = config(arms=[{"name": "fs"}])
    outcome = run(cfg, tmp_path, make_dataset(tmp_path / "one", documents=1), model=model)
    images = list((outcome.run_dir / "images").iterdir())
    assert len(images) == 1  # four samples showed the same page image: one file
    transcript = json.loads((outcome.run_dir / outcome.records[0].transcript).read_text())
    image_blocks = [
        b
        for e in transcript["events"]
        if e["type"] == "tool_result"
        for b in e["content"]
        if b["type"] == "image"
    ]
    assert image_blocks[0]["path"] == f"images/{images[0].name}"


def test_intention_to_treat_errors_are_kept_in_their_arm(tmp_path: Path, dataset: Any) -> None:
    """A model failure in one arm, a missing document in both: every sample is recorded, scored 0."""
    broken = dataset.samples[0].document_dir / "document.md"
    broken.unlink()

    class ArmAwareModel(ScriptedModel):
        async def generate(self, system, messages, tools, *, max_output_tokens):  # type: ignore[no-untyped-def]
            if "ARM=b" in system and dataset.samples[5].question in messages[0].text:
                raise ModelError("api", "HTTP 500 from the provider", retries=3)
            return submit("x")

    cfg = config(arms=[{"name": "a", "prompt": "ARM=a"}, {"name": "b", "prompt": "ARM=b"}])
    outcome = run(cfg, tmp_path, dataset, model=ArmAwareModel())
    assert len(outcome.records) == len(dataset.samples) * 2
    by_key = {(r.arm, r.qid): r for r in outcome.records}
    missing_doc = dataset.samples[0].qid
    for arm in ("a", "b"):
        record = by_key[(arm, missing_doc)]
        assert (record.status, record.score) == ("error", 0.0) and "document.md" in record.errors[0]
    failed = by_key[("b", dataset.samples[5].qid)]
    assert (failed.status, failed.score, failed.retries) == ("error", 0.0, 3) and "HTTP 500" in failed.errors[
        0
    ]
    assert by_key[("a", dataset.samples[5].qid)].status == "ok"


def test_a_harness_bug_in_one_sample_is_recorded_not_raised(tmp_path: Path, dataset: Any) -> None:
    def scorer(gold: str, prediction: str, answer_format: str) -> float:
        if gold == "1980":
            raise ZeroDivisionError("scorer bug")
        return 1.0

    request = RunRequest(config(), results_dir=tmp_path / "results")
    outcome = launch(request, dataset=dataset, scorer=scorer, progress=SilentProgress(), say=lambda s: None)
    bugged = [r for r in outcome.records if r.gold == "1980"]
    assert bugged and all(r.status == "error" and "scorer bug" in r.errors[0] for r in bugged)
    assert "ZeroDivisionError" in (outcome.run_dir / "logs" / "mcp-harness.stderr.log").read_text()
    assert len(outcome.records) == 24


def test_limits_are_recorded_per_sample(tmp_path: Path, dataset: Any) -> None:
    cfg = config(limits={"max_turns": 2})  # the baseline needs 3 turns
    outcome = run(cfg, tmp_path, dataset)
    assert {(r.status, r.limit_hit, r.score) for r in outcome.records} == {("limit", "turns", 0.0)}


def test_resume_skips_recorded_samples_and_repairs_a_torn_line(tmp_path: Path, dataset: Any) -> None:
    first = run(config(), tmp_path, dataset, limit=4)
    assert len(first.records) == 8
    records_file = first.run_dir / "records.jsonl"
    kept = records_file.read_bytes()
    # A kill in the middle of a write leaves half a line.
    records_file.write_bytes(kept + b'{"run_id": "t", "arm": "fs", "qid": "company-2.pdf#0", "ep')
    model = RecordingBaseline()
    second = run(config(), tmp_path, dataset, model=model)
    assert second.ran == 16 and second.skipped == 8
    assert (
        model.calls == 16 * 4
    )  # only the new samples were run, four turns each (search, structure, read, answer)
    assert records_file.read_bytes().startswith(kept)  # nothing recorded before was lost or rewritten
    keys = [r.key for r in read_records(records_file)]
    assert len(keys) == len(set(keys)) == 24
    third = run(config(), tmp_path, dataset, model=model)
    assert third.ran == 0 and model.calls == 64


def test_a_changed_config_refuses_to_resume_into_the_same_folder(tmp_path: Path, dataset: Any) -> None:
    run(config(), tmp_path, dataset, limit=1)
    with pytest.raises(RunError, match="different config"):
        run(config(limits={"max_turns": 5}), tmp_path, dataset, limit=1)
    # Run controls are not part of the identity: more epochs or workers resume the same run.
    again = run(config(concurrency=2), tmp_path, dataset, limit=1, epochs=2)
    assert again.skipped == 2 and again.ran == 2


def test_shards_split_by_question_and_merge_back(tmp_path: Path, dataset: Any) -> None:
    cfg = config()
    one = run(cfg, tmp_path, dataset, shard=(1, 2))
    two = run(cfg, tmp_path, dataset, shard=(2, 2))
    assert one.run_dir.name == "t.shard-1-of-2"
    q1, q2 = {r.qid for r in one.records}, {r.qid for r in two.records}
    assert q1 and q2 and not q1 & q2 and q1 | q2 == {s.qid for s in dataset.samples}
    assert all(shard_of(q, 2) == 1 for q in q1)
    out = tmp_path / "results" / "t"
    result = merge_runs([one.run_dir, two.run_dir], out)
    assert result.records == 24 and result.duplicates == 0
    merged = list(read_records(out / "records.jsonl"))
    assert Counter(r.key for r in merged).most_common(1)[0][1] == 1
    assert all(r.run_id == "t" and (out / r.transcript).exists() for r in merged)
    manifest = json.loads((out / "manifest.json").read_text())
    assert [p["shard"]["index"] for p in manifest["merged_from"]] == [1, 2]
    # Merging again (say, after re-running a shard) adds nothing twice.
    again = merge_runs([one.run_dir, two.run_dir], out)
    assert again.records == 24 and len(list(read_records(out / "records.jsonl"))) == 24


def test_merge_keeps_the_last_copy_and_skips_bad_lines_and_escaping_paths_with_warnings(
    tmp_path: Path, dataset: Any
) -> None:
    import shutil

    first = run(config(), tmp_path, dataset, limit=2).run_dir
    second = tmp_path / "second"
    shutil.copytree(first, second)
    records = [json.loads(line) for line in (second / "records.jsonl").read_text().splitlines()]
    records[0]["score"] = 1.0 - records[0]["score"]  # a later copy that disagrees
    records[1]["transcript"] = "../../outside.json"
    (tmp_path / "outside.json").write_text("{}")
    lines = [json.dumps(r) for r in records] + ["[1]", '"text"']
    (second / "records.jsonl").write_text("\n".join(lines) + "\n")
    result = merge_runs([first, second], tmp_path / "merged")
    assert result.records == len(records) and result.duplicates == len(records)
    merged = {r.key: r for r in read_records(tmp_path / "merged" / "records.jsonl")}
    changed = RunRecord.from_dict(records[0])
    assert merged[changed.key].score == changed.score  # the last copy won
    assert any("replacing the earlier" in w for w in result.warnings)
    assert sum("is not a run record" in w for w in result.warnings) == 2
    assert any("leaves the run folder" in w for w in result.warnings)
    assert not (tmp_path.parent / "outside.json").exists()  # where the escaping path pointed in the output


def test_merge_refuses_mixed_configs(tmp_path: Path, dataset: Any) -> None:
    a = run(config(), tmp_path, dataset, limit=1)
    b = run(config(name="other", limits={"max_turns": 4}), tmp_path, dataset, limit=1)
    with pytest.raises(MergeError, match="different configs"):
        merge_runs([a.run_dir, b.run_dir], tmp_path / "merged")
    with pytest.raises(MergeError, match="not a run folder"):
        merge_runs([tmp_path], tmp_path / "merged")


def test_worker_scoped_mcp_server_and_baseline_use_it(tmp_path: Path, dataset: Any) -> None:
    """The baseline drives a real MCP server over stdio (a stand-in for md-vision), one per worker."""
    servers = {
        "md": {
            "command": "{python}",
            "args": [FAKE_MD_VISION, "--allow-path", "{workspace}"],
            "scope": "worker",
        }
    }
    cfg = config(mcp_servers=servers, arms=[{"name": "fs"}, {"name": "fs+md", "mcp_servers": ["md"]}])
    outcome = run(cfg, tmp_path, dataset, concurrency=2)
    md = [r for r in outcome.records if r.arm == "fs+md"]
    assert len(md) == 12 and all(r.status == "ok" for r in md)
    # The fair policy: the same search in both arms; only the read goes through the arm's reader.
    assert all({c.name for c in r.tool_calls} == {"grep", "read_md_with_images", "submit_answer"} for r in md)
    fs = [r for r in outcome.records if r.arm == "fs"]
    assert all({c.name for c in r.tool_calls} == {"grep", "read_file", "submit_answer"} for r in fs)
    assert sum(r.score for r in md) >= 9
    assert all(r.pages_read for r in md)
    manifest = json.loads((outcome.run_dir / "manifest.json").read_text())
    assert manifest["mcp_servers"]["md"] == ["index_md", "read_md_with_images"]
    arms = {a["name"]: a for a in manifest["arms"]}
    assert "index_md" in arms["fs+md"]["tool_names"] and "index_md" not in arms["fs"]["tool_names"]
    assert arms["fs+md"]["tool_definition_tokens"] > arms["fs"]["tool_definition_tokens"] > 0


def test_a_server_that_cannot_start_for_one_sample_errors_that_sample_only(
    tmp_path: Path, dataset: Any
) -> None:
    poisoned = dataset.samples[0].document_dir / "document.md"
    poisoned.write_text(poisoned.read_text() + "\nPOISON\n")
    servers = {
        "md": {
            "command": "{python}",
            "args": [FAKE_MD_VISION, "--allow-path", "{workspace}"],
            "env": {"FAKE_MD_VISION_FAIL_ON": "POISON"},
        }
    }
    cfg = config(mcp_servers=servers, arms=[{"name": "fs+md", "mcp_servers": ["md"]}])
    outcome = run(cfg, tmp_path, dataset, first=5, concurrency=3)  # the first document and one more
    statuses = {r.qid: r for r in outcome.records}
    first_doc = [s.qid for s in dataset.samples[:4]]
    assert all(
        statuses[q].status == "error" and "failed to start" in statuses[q].errors[0] for q in first_doc
    )
    assert statuses[dataset.samples[4].qid].status == "ok"
    assert "refusing this document" in (outcome.run_dir / "logs" / "mcp-md.stderr.log").read_text()


def test_a_server_that_never_starts_fails_before_any_sample(tmp_path: Path, dataset: Any) -> None:
    servers = {"md": {"command": "docab-no-such-server"}}
    cfg = config(mcp_servers=servers, arms=[{"name": "fs+md", "mcp_servers": ["md"]}])
    with pytest.raises(RunError, match="was not found"):
        run(cfg, tmp_path, dataset)
    assert not (tmp_path / "results" / "t" / "records.jsonl").exists()


def test_an_mcp_server_crashing_mid_sample_is_restarted_and_recorded(tmp_path: Path, dataset: Any) -> None:
    server = "{cwd}/tests/harness/fixtures/mcp_test_server.py"
    servers = {"crashy": {"command": "{python}", "args": [server], "env": {"TEST_WORKSPACE": "{workspace}"}}}
    cfg = config(mcp_servers=servers, arms=[{"name": "crashy", "mcp_servers": ["crashy"]}])
    model = ScriptedModel([turn("", ("crash_once", {})), turn("", ("crash_once", {})), submit("1980")])
    outcome = run(cfg, tmp_path, dataset, model=model, first=1)  # the first question: founded in 1980
    (record,) = outcome.records
    assert record.status == "ok" and record.score == 1.0  # the sample went on after the restart
    assert any("crashed during crash_once" in e and "restarted" in e for e in record.errors)
    first, second = (m for m in model.seen[2] if m.role == "tool")
    assert first.is_error and "restarted" in first.text
    assert second.text == "fine after a restart"
    assert [c.is_error for c in record.tool_calls[:2]] == [True, False]


def test_a_write_failure_stops_the_run_with_a_clear_error(tmp_path: Path, dataset: Any) -> None:
    from docab.log.store import RunStore

    class FullDisk(RunStore):
        def commit(self, record: Any, transcript: Any) -> None:
            if record.qid == dataset.samples[2].qid:
                raise OSError(28, "No space left on device")
            super().commit(record, transcript)

    store = FullDisk(tmp_path / "results" / "t")
    with pytest.raises(RunError, match="No space left on device") as info:
        run(config(), tmp_path, dataset, concurrency=1, store=store)
    assert "run again with the same config and folder to resume" in str(info.value)
    kept = list(read_records(tmp_path / "results" / "t" / "records.jsonl"))
    assert kept and all(r.qid != dataset.samples[2].qid for r in kept)


def test_an_arm_whose_tools_share_a_name_is_refused_at_start_up() -> None:
    from docab.messages import ToolSpec
    from docab.runner.launch import arms_manifest

    servers = {"md": {"command": "python", "args": ["server.py"]}}
    cfg = config(mcp_servers=servers, arms=[{"name": "fs"}, {"name": "fs+md", "mcp_servers": ["md"]}])
    grep_again = ToolSpec("grep", "a server's own grep", {"type": "object", "properties": {}})
    with pytest.raises(RunError, match=r"arm 'fs\+md' has more than one tool named 'grep'"):
        arms_manifest(cfg, {"md": [grep_again]})
    echo = ToolSpec("echo", "echo", {"type": "object", "properties": {}})
    assert [a.name for a in arms_manifest(cfg, {"md": [echo]})] == ["fs", "fs+md"]


def test_a_results_folder_that_cannot_be_written_is_one_error_before_any_sample(
    tmp_path: Path, dataset: Any
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")  # like a read-only disk, creating the run folder fails
    with pytest.raises(RunError, match=r"cannot create the run folder .*a-file/t: Not a directory") as info:
        run(config(), tmp_path, dataset, run_dir=blocker / "t")
    assert "choose a results folder that can be written" in str(info.value)
