"""Run configs: shipped configs load; every mistake is reported with the key that holds it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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
    # Confined to the workspace, URLs off, and no folder-parser processes (one document per workspace).
    assert config.mcp_servers["md-vision"].args == [
        "--allow-path",
        "{workspace}",
        "--allow-domain",
        "none",
        "--workers",
        "1",
    ]


def test_the_demo_is_offline_and_shipped_configs_cover_the_brief() -> None:
    demo = load_config("demo")
    assert demo.model_spec().name == "baseline/keyword" and demo.is_baseline
    names = {p.stem for p in CONFIG_DIR.glob("*.toml")}
    assert {"demo", "mmlongbench-openai", "mmlongbench-anthropic", "mmlongbench-text-only"} <= names
    text_only = load_config("mmlongbench-text-only")
    assert text_only.model_spec().text_only and "vision-bridge" in text_only.arms[1].mcp_servers


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
    a, b = (config.system_prompt(arm) for arm in config.arms)
    assert b.startswith(a.rstrip("\n")) and b.rstrip().endswith("Use md-vision.")
    assert "submit_answer" in a
    assert config.user_prompt("Why?") == "Question: Why?"
