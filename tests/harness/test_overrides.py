"""``docab run --set KEY=VALUE``, ``--model``, ``--base-url``: overrides like Inspect AI's, validated by
the config's own schema, recorded in the manifest, and part of the config hash when they change it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from docab.cli.main import main
from docab.config import (
    ConfigError,
    apply_overrides,
    load_config,
    parse_config,
    parse_override,
    with_overrides,
)
from tests.harness.corpus import write_benchmark_folder
from tests.support.llm_stub import LLMStub

BASE: dict[str, Any] = {"name": "x", "model": "openai/gpt-4o", "arms": [{"name": "fs"}, {"name": "fs+md"}]}


def applied(*texts: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    return apply_overrides(data if data is not None else BASE, [parse_override(t) for t in texts])


@pytest.mark.parametrize(
    ("text", "parts", "value"),
    [
        ("limits.max_turns=10", ("limits", "max_turns"), 10),
        ("model.temperature=0.5", ("model", "temperature"), 0.5),
        ("model.text_only=true", ("model", "text_only"), True),
        ('dataset.doc_types=["Brochure", "Guidebook"]', ("dataset", "doc_types"), ["Brochure", "Guidebook"]),
        ("model.name=openai/gpt-4o-mini", ("model", "name"), "openai/gpt-4o-mini"),  # not TOML: a string
        ('name="2024"', ("name",), "2024"),  # quoted: a string that looks like a number
        ("arms.1.prompt=Use md-vision.", ("arms", 1, "prompt"), "Use md-vision."),
        ('mcp_servers."md.vision".args=["-v"]', ("mcp_servers", "md.vision", "args"), ["-v"]),
        ("model.extra_body={ top_k = 20 }", ("model", "extra_body"), {"top_k": 20}),
    ],
)
def test_keys_are_dotted_and_values_are_toml(text: str, parts: tuple[object, ...], value: object) -> None:
    override = parse_override(text)
    assert override.parts == parts and override.value == value


def test_overrides_create_tables_expand_model_names_and_index_arrays() -> None:
    data = applied("limits.max_turns=5", "model.base_url=http://h/v1", "arms.1.prompt=hint")
    assert data["limits"] == {"max_turns": 5}
    assert data["model"] == {"name": "openai/gpt-4o", "base_url": "http://h/v1"}  # a bare name became a table
    assert data["arms"][1] == {"name": "fs+md", "prompt": "hint"}
    assert BASE["model"] == "openai/gpt-4o"  # the input is left alone
    aliased = applied("model.name=openai/o3", data={**BASE, "model": {"model": "openai/gpt-4o"}})
    assert aliased["model"] == {"name": "openai/o3"}  # the alias is replaced, not left beside the name


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("limits", "give KEY=VALUE"),
        ("a b=1", "is not a dotted key"),
        ("arms.2.prompt=x", "arms is an array of 2; index it with 0 to 1"),
        ("name.first=x", "name is a value, not a table"),
    ],
)
def test_overrides_that_cannot_apply_say_why(text: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        applied(text)


def test_the_schema_checks_an_override_and_names_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config("demo", ["limits.max_turn=3"])
    message = str(caught.value)
    assert "with --set limits.max_turn=3 is not a valid run config" in message
    assert "limits.max_turn: unknown key" in message
    with pytest.raises(ConfigError, match=r"limits\.max_turns: Input should be greater than or equal to 1"):
        load_config("demo", ["limits.max_turns=0"])
    with pytest.raises(ConfigError, match="temperature cannot be set for anthropic"):
        load_config("mmlongbench-openai", ["model.name=anthropic/claude-sonnet-4-5"])


def test_an_override_changes_the_hash_only_when_it_changes_the_config() -> None:
    config = parse_config(BASE)
    assert with_overrides(config, ["model.name=openai/gpt-4o"]).config_hash() == config.config_hash()
    assert with_overrides(config, ["concurrency=16", "epochs=3"]).config_hash() == config.config_hash()
    # Where the endpoint lives is transport, not identity (issue 23): the same run at another URL.
    assert with_overrides(config, ["model.base_url=http://h/v1"]).config_hash() == config.config_hash()
    assert with_overrides(config, ["model.temperature=0.5"]).config_hash() != config.config_hash()


CONFIG = """\
name = "over"
[dataset]
source = "mmlongbench"
path = "bench/data"
corpus = "bench/corpus"
[model]
name = "baseline/keyword"
[[arms]]
name = "fs"
"""


def test_docab_run_records_its_overrides_in_the_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_benchmark_folder(tmp_path / "bench", documents=1)
    config = tmp_path / "over.toml"
    config.write_text(CONFIG)
    results = ["--results", str(tmp_path / "results"), "--quiet", "--first", "1"]
    assert main(["run", str(config), *results, "--set", "limits.max_turns=6", "--set", "seed=0"]) == 0
    manifest = json.loads((tmp_path / "results" / "over" / "manifest.json").read_text())
    assert manifest["sessions"][0]["overrides"] == ["limits.max_turns=6", "seed=0"]
    assert manifest["config"]["limits"]["max_turns"] == 6
    assert manifest["config_hash"] == load_config(config, ["limits.max_turns=6"]).config_hash()
    assert manifest["config_hash"] != load_config(config).config_hash()
    capsys.readouterr()
    # The same folder with another effective config is refused, and the message says how to go on.
    assert main(["run", str(config), *results, "--set", "limits.max_turns=7"]) == 2
    err = capsys.readouterr().err
    assert "different config" in err and "--set name=... or --out" in err
    # --model and --base-url are overrides of model.name and model.base_url.
    assert (
        main(
            [
                "run",
                str(config),
                *results,
                "--model",
                "openai/m",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--set",
                "name=over-local",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "agent model openai/m at http://127.0.0.1:9/v1: connection refused" in err
    # A failed start writes nothing (issue 23; it used to leave a manifest behind).
    assert not (tmp_path / "results" / "over-local").exists()
    with LLMStub(models=["m"]) as stub:
        flags = ["--model", "openai/m", "--base-url", stub.openai_base_url, "--set", "name=over-local"]
        main(["run", str(config), *results, *flags])
    local = json.loads((tmp_path / "results" / "over-local" / "manifest.json").read_text())
    assert local["sessions"][0]["overrides"] == [
        "model.name=openai/m",
        f"model.base_url={stub.openai_base_url}",
        "name=over-local",
    ]


def test_bad_overrides_on_the_command_line_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "demo", "--model", "gpt-4o"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "model: model name 'gpt-4o' must look like provider/model" in err
    assert main(["run", "demo", "--set", "limits"]) == 2
    assert "give KEY=VALUE" in capsys.readouterr().err
