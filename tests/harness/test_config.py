"""Run configs: shipped configs load; every mistake is reported with the key that holds it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from docab.agent.answer import protocol_instructions
from docab.config import CONFIG_DIR, ConfigError, load_config, parse_config

MINIMAL: dict[str, Any] = {"name": "x", "model": {"name": "baseline/keyword"}, "arms": [{"name": "fs"}]}


def with_(**changes: Any) -> dict[str, Any]:
    return {**MINIMAL, **changes}


def error_of(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    return str(info.value)


@pytest.mark.parametrize("path", sorted(CONFIG_DIR.glob("*.toml")), ids=lambda p: p.stem)
def test_shipped_configs_load(path: Path) -> None:
    config = load_config(path)
    assert len(config.arms) == 2 and config.arms[0].name == "fs" and config.arms[0].mcp_servers == []
    assert "md-vision" in config.arms[1].mcp_servers
    # Confined to the workspace, URLs off, no folder-parser processes (one document per workspace),
    # and paths shown relative to the workspace: no result names where the workspace is.
    assert config.mcp_servers["md-vision"].args == [
        "--allow-path",
        "{workspace}",
        "--allow-domain",
        "none",
        "--workers",
        "1",
        "--relative-paths",
    ]


def test_shipped_configs_share_no_vision_cache_beyond_a_sample() -> None:
    """vision-bridge's disk cache would serve one arm's, epoch's or run's answers to another at zero
    cost: every shipped config that starts it turns the cache off (VISION_CACHE_TTL = 0)."""
    bridges = [
        (path.stem, server)
        for path in sorted(CONFIG_DIR.glob("*.toml"))
        for server in load_config(path).mcp_servers.values()
        if server.command == "vision-bridge"
    ]
    assert [name for name, _ in bridges] == ["mmlongbench-text-only"]
    for _, server in bridges:
        assert server.env.get("VISION_CACHE_TTL") == "0" and server.scope == "sample"


def _starts_vision_bridge(command: str, args: list[str]) -> bool:
    """Whether a server entry runs vision-bridge: its script (``vision-bridge``, ``uvx
    vision-bridge``, a path to it) or its module (``{python} -m vision_bridge``)."""
    words = [Path(word).name for word in (command, *args)]
    return "vision-bridge" in words or "vision_bridge" in words or "vision_bridge.__main__" in words


def _vision_cache_problem(env: dict[str, str]) -> str | None:
    """None when vision-bridge's answer cache is off (VISION_CACHE_TTL <= 0), else what is wrong.
    Off, not keyed per run or per sample: the arms of one question are samples of one run, and a
    cache any two of them share answers the second from the first."""
    ttl = env.get("VISION_CACHE_TTL", "")
    if ttl.strip().lstrip("-").isdigit() and int(ttl) <= 0:
        return None
    return f"VISION_CACHE_TTL={ttl or 'unset (3600 s)'}: the answer cache is on and shared"


@pytest.mark.parametrize("path", sorted(CONFIG_DIR.glob("*.toml")), ids=lambda p: p.stem)
def test_every_shipped_config_keeps_vision_answers_from_crossing_arms_or_runs(path: Path) -> None:
    """Issue 24 item 5: a vision-bridge answer cache shared between arms, epochs or runs serves
    one's answers to another at zero cost and near-zero latency, which changes the cost and latency
    figures an A/B compares. Every shipped config (the demo included) that starts vision-bridge,
    under any spelling of its command, turns the cache off."""
    config = load_config(path)
    for name, server in config.mcp_servers.items():
        if _starts_vision_bridge(server.command, list(server.args)):
            assert _vision_cache_problem(dict(server.env)) is None, (path.stem, name)


def test_the_vision_cache_check_tells_a_shared_cache_from_one_turned_off() -> None:
    assert _starts_vision_bridge("uvx", ["vision-bridge"]) and _starts_vision_bridge(
        "{python}", ["-m", "vision_bridge"]
    )
    assert _starts_vision_bridge("/opt/bin/vision-bridge", []) and not _starts_vision_bridge("md-vision", [])
    assert _vision_cache_problem({"VISION_CACHE_TTL": "0"}) is None
    assert _vision_cache_problem({"VISION_CACHE_TTL": "-1"}) is None
    assert _vision_cache_problem({"VISION_CACHE_DIR": "{workspace}/.vision-cache"}) is not None
    assert _vision_cache_problem({}) is not None  # the default: one hour, in the user's cache folder
    assert _vision_cache_problem({"VISION_CACHE_TTL": "3600", "VISION_CACHE_DIR": "/tmp/shared"}) is not None


def test_the_demo_is_offline_and_shipped_configs_cover_the_brief() -> None:
    demo = load_config("demo")
    assert demo.model.name == "baseline/keyword" and demo.is_baseline
    names = {p.stem for p in CONFIG_DIR.glob("*.toml")}
    assert {"demo", "mmlongbench-openai", "mmlongbench-anthropic", "mmlongbench-text-only"} <= names
    text_only = load_config("mmlongbench-text-only")
    assert text_only.model.text_only and "vision-bridge" in text_only.arms[1].mcp_servers


def test_the_local_server_config_needs_no_key_and_offers_the_tools() -> None:
    """local-llamacpp (run for real by tests/llama): an OpenAI-compatible server on loopback, no key,
    tool_choice "auto" (llama-cpp-python's chatml-function-calling shows the model no tools without
    it), a text-only model, and the answer through submit_answer."""
    local = load_config("local-llamacpp")
    assert local.model.provider == "openai" and local.model.base_url == "http://127.0.0.1:8000/v1"
    assert local.model.api_key_env is None and local.model.extra_body == {"tool_choice": "auto"}
    assert local.model.text_only and local.answer.protocol == "submit_tool"
    assert local.dataset.source == "suite"


def test_unknown_keys_are_named() -> None:
    assert "arms[0].tool: unknown key" in error_of(with_(arms=[{"name": "a", "tool": ["fs"]}]))
    assert "concurency: unknown key" in error_of(with_(concurency=4))


def test_bad_values_name_their_key() -> None:
    assert "model: model name 'gpt-4o' must look like provider/model" in error_of(
        with_(model={"name": "gpt-4o"})
    )
    assert "unknown model provider 'mistral'" in error_of(with_(model={"name": "mistral/large"}))
    assert "unknown baseline policy 'oracle'" in error_of(with_(model={"name": "baseline/oracle"}))
    assert "model: unknown model option(s) temprature" in error_of(
        with_(model={"name": "openai/x", "temprature": 0})
    )
    assert "answer.extractor" in error_of(
        with_(answer={"protocol": "extraction", "extractor": {"name": "x"}})
    )
    assert "limits.max_turns" in error_of(with_(limits={"max_turns": 0}))
    assert "output_budget.unit" in error_of(with_(output_budget={"unit": "bytes"}))
    assert "prompt.user" in error_of(with_(prompt={"user": "no placeholder"}))
    assert "name" in error_of(with_(name="../escape"))
    assert "model: required key is missing" in error_of({"name": "x", "arms": [{"name": "a"}]})
    assert "dataset" in error_of(with_(dataset={"source": "mmlongbench"}))


def test_arms_must_be_consistent() -> None:
    assert "not defined under [mcp_servers]" in error_of(with_(arms=[{"name": "a", "mcp_servers": ["md"]}]))
    assert "unique" in error_of(with_(arms=[{"name": "a"}, {"name": "a"}]))
    assert "no tools" in error_of(with_(arms=[{"name": "a", "tools": []}]))
    assert "arms" in error_of(with_(arms=[]))


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"not found.*shipped configs: .*demo"):
        load_config(tmp_path / "missing.toml")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "a.toml").write_text("")
    with pytest.raises(ConfigError, match=r"is a folder, not a config file \(TOML files in it: a.toml\)"):
        load_config(tmp_path / "configs")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_hash_covers_what_changes_results_only() -> None:
    base = parse_config(MINIMAL)
    assert (
        parse_config(with_(concurrency=32, epochs=3, description="more")).config_hash() == base.config_hash()
    )
    assert parse_config(with_(limits={"max_turns": 3})).config_hash() != base.config_hash()
    assert parse_config(with_(arms=[{"name": "fs", "prompt": "hint"}])).config_hash() != base.config_hash()
    # A bare name and a table with the defaults spelled out are the same model.
    spelled = with_(model={"name": "baseline/keyword", "timeout": 120.0})
    assert parse_config(spelled).config_hash() == parse_config(with_(model="baseline/keyword")).config_hash()


def test_prompts_are_the_same_skeleton_for_every_arm() -> None:
    config = parse_config(with_(arms=[{"name": "a"}, {"name": "b", "prompt": "Use md-vision."}]))
    instructions = protocol_instructions(config.answer.protocol)
    a, b = (config.system_prompt(arm, instructions) for arm in config.arms)
    assert b.startswith(a.rstrip("\n")) and b.rstrip().endswith("Use md-vision.")
    assert "submit_answer" in a
    assert config.user_prompt("Why?") == "Question: Why?"


def test_the_model_sections_are_typed_once_with_the_config() -> None:
    from docab.models.config import ModelConfig

    config = parse_config(with_(answer={"protocol": "extraction", "extractor": "openai/gpt-4o"}))
    assert isinstance(config.model, ModelConfig) and config.model.timeout == 120.0
    assert config.answer.extractor == ModelConfig(name="openai/gpt-4o")
    assert config.extractor_model.name == "openai/gpt-4o"
    plain = parse_config(MINIMAL)
    assert plain.extractor_model is plain.model  # no extractor of its own: the run's model
    assert parse_config(with_(model={"model": "openai/m"})).model.name == "openai/m"  # the alias
    assert "answer.extractor: unknown model option(s) temprature" in error_of(
        with_(answer={"protocol": "extraction", "extractor": {"name": "openai/x", "temprature": 0}})
    )
    assert "model.base_url: Input should be a valid string" in error_of(
        with_(model={"name": "openai/x", "base_url": 8000})
    )
    assert "model: api_key does not belong in a config" in error_of(
        with_(model={"name": "openai/x", "api_key": "k"})
    )


def test_limits_are_the_agent_loops_own_type() -> None:
    from docab.agent.loop import SampleLimits

    limits = parse_config(with_(limits={"max_turns": 3})).limits
    assert type(limits) is SampleLimits and limits.max_turns == 3 and limits.max_wall_s == 900.0
    assert "limits.max_wall_s" in error_of(with_(limits={"max_wall_s": 0}))
    assert "limits.max_turn: unknown key" in error_of(with_(limits={"max_turn": 3}))


def test_numbers_spelled_as_integers_hash_like_their_floats() -> None:
    as_int = with_(model={"name": "openai/m", "temperature": 0, "timeout": 60}, limits={"max_wall_s": 120})
    as_float = with_(
        model={"name": "openai/m", "temperature": 0.0, "timeout": 60.0}, limits={"max_wall_s": 120.0}
    )
    assert parse_config(as_int).config_hash() == parse_config(as_float).config_hash()


def test_the_shipped_demo_config_still_hashes_as_the_committed_baseline_run() -> None:
    import json

    from tests.conftest import REPO_ROOT

    manifest = json.loads((REPO_ROOT / "results" / "baselines" / "demo" / "manifest.json").read_text())
    assert load_config("demo").config_hash() == manifest["config_hash"]


def test_reading_a_config_imports_no_agent_runner_or_client_code() -> None:
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from docab.config import load_config\n"
        "load_config('demo')\n"
        "heavy = ('docab.agent', 'docab.runner', 'docab.models.base', 'docab.models.registry', 'openai', 'mcp')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_baseline_policies_a_config_accepts_are_the_ones_that_exist() -> None:
    from docab.models.baseline import POLICIES
    from docab.models.config import BASELINE_POLICIES

    assert tuple(BASELINE_POLICIES) == tuple(POLICIES)
