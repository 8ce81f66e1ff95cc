"""Start-up writes nothing it cannot stand behind (issue 23 item 1).

Preflight (model endpoints, MCP servers) passes before the run folder is created or changed, so a
failed start never blocks the corrected command; the run's identity (the hash that guards resuming)
covers what changes results and leaves out where the endpoint lives and how it is reached; a run
resumed at another URL says so and records it in its sessions; a manifest written before the URL
left the identity still resumes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from docab.agent.toolbox.mcp_session import MCPServerSpec, MCPStartError
from docab.cli.main import main
from docab.config import load_config, parse_config
from docab.log.identity import identity_hash, identity_of
from docab.log.manifest import EndpointInfo
from docab.runner.launch import endpoint_changes, preflight
from tests.harness.corpus import write_benchmark_folder
from tests.harness.test_endpoints import local_config, local_server_script
from tests.support.llm_stub import LLMStub

MODELS = ["stub-model", "gpt-4o"]


def run(config: Path, results: Path, *flags: str) -> int:
    return main(["run", str(config), "--results", str(results), "--quiet", *flags])


def manifest_of(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "manifest.json").read_text())
    return data


def legacy_hash(config: dict[str, Any]) -> str:
    """The hash docab wrote before issue 23: the whole config but the run controls, URL included."""
    kept = {
        k: v
        for k, v in config.items()
        # max_cost: a run control added later (issue 28), which that docab never wrote
        if k not in ("concurrency", "epochs", "description", "max_error_share", "max_cost")
    }
    return hashlib.sha256(json.dumps(kept, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# -- the identity ------------------------------------------------------------------------------------

BASE: dict[str, Any] = {
    "name": "x",
    "model": {"name": "openai/m", "temperature": 0.0},
    "answer": {"protocol": "extraction", "extractor": {"name": "openai/e"}},
    "arms": [{"name": "fs"}],
}


def hash_with(**model: Any) -> str:
    return parse_config({**BASE, "model": {**BASE["model"], **model}}).config_hash()


def test_the_identity_leaves_out_where_the_endpoint_lives_and_how_it_is_reached() -> None:
    plain = hash_with()
    for transport in (
        {"base_url": "http://127.0.0.1:8000/v1"},
        {"api_key_env": "LOCAL_KEY"},
        {"headers": {"X-Gateway": "${GATEWAY}"}},
        {"concurrency": 64, "http_backend": "httpx"},
        {"timeout": 600, "max_retries": 0, "retry_base_delay": 2, "retry_max_delay": 5, "retry_after_cap": 9},
    ):
        assert hash_with(**transport) == plain, transport
    for result in (
        {"name": "openai/other"},
        {"temperature": 0.5},
        {"max_output_tokens": 99},
        {"text_only": True},
    ):
        assert hash_with(**result) != plain, result
    extractor_elsewhere = {
        **BASE,
        "answer": {**BASE["answer"], "extractor": {"name": "openai/e", "base_url": "http://h/v1"}},
    }
    assert parse_config(extractor_elsewhere).config_hash() == plain
    prompts = {**BASE, "arms": [{"name": "fs", "prompt": "hint"}]}
    assert parse_config(prompts).config_hash() != plain
    # A config that sets no transport hashes as it always did (the committed baselines still match).
    demo = load_config("demo")
    before = demo.model_dump(mode="json")  # as written before [breaker] and prose_fallback_after existed
    del before["breaker"]
    before["answer"] = {k: v for k, v in before["answer"].items() if k != "prose_fallback_after"}
    assert demo.config_hash() == legacy_hash(before)
    # Pure, on the JSON a manifest stores.
    stored = parse_config({**BASE, "model": {**BASE["model"], "base_url": "http://a/v1"}}).model_dump(
        mode="json"
    )
    assert identity_hash(stored) == plain and identity_of(stored)["model"]["base_url"] is None


def test_endpoint_changes_name_the_role_and_both_urls() -> None:
    before = (EndpointInfo(role="agent", model="openai/m", base_url="http://a/v1", key_env="K"),)
    now = (EndpointInfo(role="agent", model="openai/m", base_url="http://b/v1", key_env="L"),)
    assert endpoint_changes(before, now) == [
        "the agent endpoint moved from http://a/v1 to http://b/v1",
        "the agent key is read from $L, no longer $K",
    ]
    assert endpoint_changes(before, before) == []


# -- a failed start -------------------------------------------------------------------------------------


def test_a_start_with_the_server_down_writes_nothing_and_the_corrected_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    stopped = LLMStub().start()
    dead = stopped.openai_base_url
    stopped.stop()
    config, results = local_config(tmp_path, "http://unused/v1"), tmp_path / "results"
    assert run(config, results, "--base-url", dead, "--limit", "1") == 2
    err = capsys.readouterr().err
    assert "connection refused" in err and "was left as it was" in err
    assert not (results / "local").exists()
    with LLMStub(local_server_script, models=MODELS) as stub:
        assert run(config, results, "--base-url", stub.openai_base_url, "--limit", "1") == 0
    assert len((results / "local" / "records.jsonl").read_text().splitlines()) == 1


def test_a_start_with_a_bad_mcp_server_writes_nothing_and_the_fixed_command_runs(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    data, corpus = write_benchmark_folder(tmp_path / "bench", documents=1)
    text = f"""
name = "mcp"
[dataset]
source = "mmlongbench"
path = "{data}"
corpus = "{corpus}"
[model]
name = "baseline/keyword"
[mcp_servers.md]
command = "{{command}}"
args = ["--allow-path", "{{{{workspace}}}}", "--allow-domain", "none", "--workers", "1", "--relative-paths"]
[[arms]]
name = "fs"
[[arms]]
name = "fs+md"
mcp_servers = ["md"]
"""
    config, results = tmp_path / "mcp.toml", tmp_path / "results"
    config.write_text(text.format(command="md-vision-typo"))
    assert run(config, results, "--first", "1") == 2
    assert "fix the [mcp_servers] config" in capfd.readouterr().err
    assert not (results / "mcp").exists()
    config.write_text(text.format(command="md-vision"))
    assert run(config, results, "--first", "1") == 0, capfd.readouterr().err
    assert manifest_of(results / "mcp")["mcp_servers"]["md"]


def test_the_mcp_preflight_removes_its_scratch_folder_when_a_server_fails(tmp_path: Path) -> None:
    bad = MCPServerSpec(name="bad", command="definitely-not-a-command-docab")
    with pytest.raises(MCPStartError):
        asyncio.run(preflight([bad], scratch_parent=tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_a_folder_of_another_config_is_refused_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, corpus = write_benchmark_folder(tmp_path / "bench", documents=1)
    config = tmp_path / "same.toml"
    config.write_text(
        f'name = "same"\n[dataset]\nsource = "mmlongbench"\npath = "{data}"\ncorpus = "{corpus}"\n'
        '[model]\nname = "baseline/keyword"\n[[arms]]\nname = "fs"\n'
    )
    results = tmp_path / "results"
    assert run(config, results, "--first", "1") == 0
    before = (results / "same" / "manifest.json").read_bytes()
    assert run(config, results, "--first", "1", "--set", "limits.max_turns=3") == 2
    assert "different config" in capsys.readouterr().err
    assert (results / "same" / "manifest.json").read_bytes() == before


# -- resuming at another URL ------------------------------------------------------------------------------


def test_a_run_resumed_at_another_url_is_the_same_run_and_its_sessions_say_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config, results = local_config(tmp_path, "http://unused/v1"), tmp_path / "results"
    with LLMStub(local_server_script, models=MODELS) as first:
        assert run(config, results, "--base-url", first.openai_base_url, "--first", "1") == 0
    capsys.readouterr()
    with LLMStub(local_server_script, models=MODELS) as second:
        assert run(config, results, "--base-url", second.openai_base_url, "--first", "2") == 0
    out = capsys.readouterr().out
    assert "resuming; 1 samples already recorded, 1 to run" in out
    assert f"the agent endpoint moved from {first.openai_base_url} to {second.openai_base_url}" in out
    manifest = manifest_of(results / "local")
    urls = [[(e["role"], e["base_url"]) for e in s["endpoints"]] for s in manifest["sessions"]]
    assert urls == [
        [("agent", first.openai_base_url), ("extractor", first.openai_base_url)],
        [("agent", second.openai_base_url), ("extractor", second.openai_base_url)],
    ]
    assert manifest["config_hash"] == load_config(config).config_hash()
    assert len((results / "local" / "records.jsonl").read_text().splitlines()) == 2


def test_a_run_whose_manifest_holds_the_old_hash_still_resumes_at_another_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config, results = local_config(tmp_path, "http://unused/v1"), tmp_path / "results"
    with LLMStub(local_server_script, models=MODELS) as first:
        assert run(config, results, "--base-url", first.openai_base_url, "--first", "1") == 0
    # As an older docab wrote it: the URL counted in the hash, sessions recorded no endpoints.
    path = results / "local" / "manifest.json"
    old = manifest_of(results / "local")
    old["config_hash"] = legacy_hash(old["config"])
    for session in old["sessions"]:
        del session["endpoints"]
    assert old["config_hash"] != load_config(config).config_hash()
    path.write_text(json.dumps(old))
    capsys.readouterr()
    with LLMStub(local_server_script, models=MODELS) as second:
        assert run(config, results, "--base-url", second.openai_base_url, "--first", "2") == 0
    out = capsys.readouterr().out
    assert "resuming; 1 samples already recorded" in out
    assert f"moved from {first.openai_base_url} to {second.openai_base_url}" in out
    resumed = manifest_of(results / "local")
    assert resumed["config_hash"] == load_config(config).config_hash()  # now this docab's identity
    assert len(resumed["sessions"]) == 2
