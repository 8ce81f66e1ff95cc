"""Each server's ``server.json`` (its entry in the MCP Registry) is valid against the Registry's
published schema (2025-12-11, kept in ``tests/fixtures/mcp_registry``) and says what is true of
the server: its PyPI name and version, the flags it takes, the variables it reads, and the
``mcp-name`` marker on its PyPI page that proves the name is ours."""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator, FormatChecker

REPO = Path(__file__).resolve().parents[1]
SCHEMA_FILE = REPO / "tests" / "fixtures" / "mcp_registry" / "2025-12-11" / "server.schema.json"
SERVERS = {  # distribution: (folder, import name)
    "md-vision": ("tools/md_vision", "md_vision"),
    "markfetch": ("tools/markfetch", "markfetch"),
    "vision-bridge": ("tools/vision_bridge", "vision_bridge"),
}


def validator() -> Draft7Validator:
    return Draft7Validator(json.loads(SCHEMA_FILE.read_text()), format_checker=FormatChecker())


def manifest(distribution: str) -> dict[str, Any]:
    folder, _ = SERVERS[distribution]
    data: dict[str, Any] = json.loads((REPO / folder / "server.json").read_text())
    return data


def errors(document: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator().iter_errors(document)]


@pytest.mark.parametrize("distribution", sorted(SERVERS))
def test_server_json_is_valid_against_the_registry_schema(distribution: str) -> None:
    document = manifest(distribution)
    assert document["$schema"] == json.loads(SCHEMA_FILE.read_text())["$id"]
    assert errors(document) == []


@pytest.mark.parametrize("distribution", sorted(SERVERS))
def test_server_json_names_the_published_package(distribution: str) -> None:
    folder, _ = SERVERS[distribution]
    document = manifest(distribution)
    project = tomllib.loads((REPO / folder / "pyproject.toml").read_text())["project"]
    assert document["name"] == f"io.github.docab/{distribution}"
    assert document["version"] == project["version"]
    assert document["repository"]["subfolder"] == folder
    (package,) = document["packages"]
    assert (package["registryType"], package["identifier"], package["version"]) == (
        "pypi",
        project["name"],
        project["version"],
    )
    assert package["transport"] == {"type": "stdio"}
    assert project["scripts"][distribution]  # `uvx <identifier>` runs the script of that name
    # The Registry checks ownership of a PyPI package by this marker on its page (the README).
    readme = (REPO / folder / project["readme"]).read_text()
    assert f"<!-- mcp-name: {document['name']} -->" in readme


@pytest.mark.parametrize("distribution", sorted(SERVERS))
def test_every_argument_and_variable_in_server_json_is_real(distribution: str) -> None:
    (package,) = manifest(distribution)["packages"]
    script = Path(sys.executable).parent / distribution
    help_text = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    for argument in package["packageArguments"]:
        assert re.search(rf"(^|\s|\[){re.escape(argument['name'])}\b", help_text), argument["name"]
    for variable in package["environmentVariables"]:  # each server's --help lists what it reads
        assert re.search(rf"\b{variable['name']}\b", help_text), variable["name"]


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (lambda d: d["packages"][0].update(version="latest"), "version"),
        (lambda d: d.update(name="docab md-vision"), "name"),
        (lambda d: d.update(description="x" * 101), "description"),
        (lambda d: d["packages"][0].pop("transport"), "transport"),
        (lambda d: d["packages"][0]["transport"].update(type="pipe"), "transport"),
        (lambda d: d["repository"].update(url="not a url"), "url"),
    ],
)
def test_the_schema_check_refuses_what_the_registry_refuses(change: Any, complaint: str) -> None:
    document = copy.deepcopy(manifest("md-vision"))
    change(document)
    found = errors(document)
    assert found, f"the validator accepted a document with a bad {complaint}"


def server_parser(distribution: str) -> argparse.ArgumentParser:
    """The parser of the flags the server takes when it serves MCP."""
    if distribution == "markfetch":
        from markfetch.__main__ import build_server_parser

        return build_server_parser()
    _, module = SERVERS[distribution]
    parser: argparse.ArgumentParser = importlib.import_module(f"{module}.__main__").build_parser()
    return parser


# Flags a registry entry does not carry, and why. The registry writes a named argument as
# `--flag=value`, which a switch without a value cannot take.
NOT_IN_MANIFEST = {
    "--skill": "prints vision-bridge's skill file and exits; not a way to run the server",
    "--allow-domain": "md-vision's alias of --allow-host (the JavaScript server's spelling)",
    "--relative-paths": "a switch without a value, for harness sandboxes rather than installed clients",
    "--raw-data-uris": "a switch without a value, changing how reads show data: URIs",
}


@pytest.mark.parametrize("distribution", sorted(SERVERS))
def test_every_server_flag_is_in_server_json_as_an_argument_or_its_variable(distribution: str) -> None:
    """A client configured from the registry can set everything the server's --help offers: each
    flag is a package argument (with the default --help states), or its environment variable is
    listed, or it is in NOT_IN_MANIFEST with a reason."""
    (package,) = manifest(distribution)["packages"]
    arguments = {argument["name"]: argument for argument in package["packageArguments"]}
    variables = {variable["name"] for variable in package["environmentVariables"]}
    missing, wrong_defaults = [], []
    for action in server_parser(distribution)._actions:
        flags = [flag for flag in action.option_strings if flag.startswith("--")]
        if not flags or action.dest in ("help", "version") or flags[0] in NOT_IN_MANIFEST:
            continue
        help_text = " ".join((action.help or "").split())
        listed = [arguments[flag] for flag in flags if flag in arguments]
        variable = re.search(r"\benv ([A-Z][A-Z0-9_]+)", help_text)
        if not listed and not (variable and variable[1] in variables):
            missing.append(flags[0])
        stated = re.search(r"\[([0-9][0-9,.]*)\]$", help_text)
        if listed and stated and listed[0].get("default") != stated[1].replace(",", ""):
            wrong_defaults.append((flags[0], listed[0].get("default"), stated[1]))
    assert missing == [], f"flags of {distribution} that server.json does not offer: {missing}"
    assert wrong_defaults == []


def test_md_vision_starts_with_every_argument_of_server_json_at_its_default() -> None:
    """What a registry client would write, `--flag=default` for every named argument, is a valid
    command line (the arguments without a default are left out, as a client would)."""
    from md_vision.__main__ import parse_settings

    (package,) = manifest("md-vision")["packages"]
    argv = [
        f"{argument['name']}={argument['default']}"
        for argument in package["packageArguments"]
        if "default" in argument
    ]
    assert len(argv) >= 14
    settings = parse_settings(argv, env={})
    assert settings.limits.max_folder_files == 20_000
    assert settings.limits.parse_timeout_s == 30
