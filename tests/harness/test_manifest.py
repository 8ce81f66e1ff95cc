"""The run manifest: one typed schema written by the launcher and the store, read by resume, merge
and the report; older shapes and the committed baseline read as the same model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from docab.config import load_config
from docab.log.manifest import (
    MANIFEST_VERSION,
    ArmManifest,
    DatasetInfo,
    Manifest,
    ManifestError,
    ModelsInfo,
    load_manifest,
    parse_manifest,
    readable_manifest,
)
from docab.log.store import RunStore, StoreError, manifest_for, session_info
from docab.report.summary import build_report, load_run
from tests.conftest import REPO_ROOT
from tests.harness.synthetic_runs import make_record, write_run

BASELINE = REPO_ROOT / "results" / "baselines" / "demo" / "manifest.json"


def holds(written: object, original: object) -> bool:
    """``written`` says everything ``original`` says, with the same values."""
    if isinstance(original, dict):
        return isinstance(written, dict) and all(
            k in written and holds(written[k], v) for k, v in original.items()
        )
    if isinstance(original, list):
        return (
            isinstance(written, list)
            and len(written) == len(original)
            and all(holds(w, o) for w, o in zip(written, original, strict=True))
        )
    return written == original


def fresh() -> Manifest:
    return manifest_for(
        run_id="r",
        config={"name": "r"},
        config_hash="abc",
        dataset=DatasetInfo(source="suite", name="suite", version="v1"),
        models=ModelsInfo(agent="baseline/keyword", is_baseline=True),
        shard=(2, 4),
    )


def test_a_written_manifest_reads_back_as_the_same_model(tmp_path: Path) -> None:
    arms = [
        ArmManifest(name="fs", tools=("fs",), tool_names=("grep", "submit_answer"), tool_definition_tokens=9)
    ]
    manifest = (
        fresh()
        .with_session(session_info(["docab", "run"], epochs=1, limit=3))
        .with_tools({"md": ["x"]}, arms)
    )
    store = RunStore(tmp_path)
    store.write_manifest(manifest)
    again = store.read_manifest()
    assert again == manifest and again is not None
    assert again.version == MANIFEST_VERSION and again.shard is not None and again.shard.index == 2
    assert again.sessions[0].argv == ("docab", "run") and again.sessions[0].limit == 3
    assert again.arm("fs") == arms[0] and again.arm("nope") is None
    assert again.mcp_servers == {"md": ("x",)}
    raw = json.loads((tmp_path / "manifest.json").read_text())
    assert raw["arms"][0]["tool_definition_tokens"] == 9 and raw["dataset"]["version"] == "v1"


def test_resuming_adds_a_session_and_another_config_is_refused(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    first = store.begin(fresh(), session=session_info(["a"]))
    second = store.begin(fresh(), session=session_info(["b"]))
    assert [s.argv for s in second.sessions] == [("a",), ("b",)]
    assert second.created_at == first.created_at  # the run keeps its own manifest
    other = fresh().model_copy(update={"config_hash": "zzz"})
    with pytest.raises(StoreError, match="different config"):
        store.begin(other, session=session_info(["c"]))
    finished = second.finished("2026-01-02T00:00:00+00:00")
    assert finished.sessions[-1].finished_at == finished.updated_at == "2026-01-02T00:00:00+00:00"
    assert second.sessions[-1].finished_at is None  # a copy: the one held by the caller is unchanged


@pytest.mark.parametrize(
    "arms",
    [
        ["fs", "fs+md"],  # a list of names
        [{"name": "fs"}, {"name": "fs+md", "tool_definition_tokens": 1293}],  # a list of tables
        {"fs": {}, "fs+md": {"tool_definition_tokens": 1293}},  # a table keyed by name
        {"fs": None, "fs+md": {"name": "fs+md", "tool_definition_tokens": 1293}},
    ],
    ids=["names", "tables", "keyed", "keyed-mixed"],
)
def test_every_accepted_shape_of_arms_reads_as_one_list(arms: Any) -> None:
    manifest = parse_manifest({"run_id": "r", "arms": arms})
    assert manifest.arm_names == ["fs", "fs+md"]
    assert all(isinstance(a, ArmManifest) for a in manifest.arms)
    if not isinstance(arms, list) or isinstance(arms[1], dict):
        entry = manifest.arm("fs+md")
        assert entry is not None and entry.tool_definition_tokens == 1293
    assert json.loads(manifest.to_json())["arms"][0]["name"] == "fs"  # written back in the one shape


def test_the_committed_baseline_manifest_reads_and_matches_the_demo_config() -> None:
    manifest = load_manifest(BASELINE)
    assert manifest.run_id == "demo" and manifest.dataset.version.startswith("docab-suite/")
    assert manifest.arm_names == ["fs", "fs+md-vision"]
    md, fs = manifest.arm("fs+md-vision"), manifest.arm("fs")
    assert md is not None and fs is not None and "index_md" in md.tool_names
    # What the tool definitions cost (characters / 4, rounded up): md-vision's tools on top of fs's.
    assert md.tool_definition_tokens == -(-md.tool_definition_chars // 4)
    assert fs.tool_definition_tokens is not None and md.tool_definition_tokens > fs.tool_definition_tokens
    assert manifest.sessions[0].finished_at and manifest.git.commit
    assert manifest.models.is_baseline and manifest.models.config["name"] == "baseline/keyword"
    # The hash of the shipped demo config still names this run: it resumes and merges.
    assert manifest.config_hash == load_config("demo").config_hash()
    # Nothing the file says is lost when it is written back (fields it left out get their defaults).
    assert holds(json.loads(manifest.to_json()), json.loads(BASELINE.read_text()))


def test_unknown_keys_are_kept_and_a_newer_version_is_refused() -> None:
    manifest = parse_manifest({"run_id": "r", "retry_of": "r0", "sessions": [{"argv": ["x"], "pid": 7}]})
    written = json.loads(manifest.to_json())
    assert written["retry_of"] == "r0" and written["sessions"][0]["pid"] == 7
    with pytest.raises(ManifestError, match=r"manifest version 2 was written by a newer docab"):
        parse_manifest({"version": 2, "run_id": "r"})


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ([1, 2], "not a run manifest"),
        ({"arms": 5}, "arms"),
        ({"arms": [{"tools": ["fs"]}]}, "arms.0.name"),
        ({"sessions": "yesterday"}, "sessions"),
    ],
)
def test_a_manifest_that_is_not_one_is_refused_naming_the_key(data: object, needle: str) -> None:
    with pytest.raises(ManifestError, match="run manifest") as caught:
        parse_manifest(data, source="x/manifest.json")
    assert needle in str(caught.value) and "x/manifest.json" in str(caught.value)
    if isinstance(data, dict):
        assert readable_manifest(data) == Manifest()  # readers that carry on get an empty one


def test_a_broken_manifest_file_is_a_store_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(StoreError, match=r"manifest.json is not valid JSON; move the run folder away"):
        RunStore(tmp_path).read_manifest()


def test_the_report_reads_arm_order_and_tool_cost_from_a_legacy_keyed_manifest(tmp_path: Path) -> None:
    records = [make_record(arm, f"q{i}", f"d{i}") for arm in ("a", "b") for i in range(3)]
    legacy = {"run_id": "legacy", "arms": {"b": {"tool_definition_tokens": 70}, "a": {}}}
    summary = build_report(load_run(write_run(tmp_path / "r", records, legacy))).summary
    assert summary.run_id == "legacy"
    assert [a.arm for a in summary.arms] == ["b", "a"]  # the manifest's order, not the records'
    assert summary.arms[0].tokens.tool_definition_tokens == 70
    assert summary.arms[1].tokens.tool_definition_tokens is None


def test_the_report_warns_about_a_manifest_it_cannot_read(tmp_path: Path) -> None:
    records = [make_record("a", "q1", "d1")]
    folder = write_run(tmp_path / "r", records, {"version": 9})
    run = load_run(folder)
    assert any("is unreadable" in w and "newer docab" in w for w in run.warnings)
    assert run.arms == ["a"]
