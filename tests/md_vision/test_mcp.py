"""The MCP face: a real client over stdio spawning `md-vision`, and the same server in-process."""

from __future__ import annotations

import base64
import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from md_vision.__main__ import parse_settings
from md_vision.server import META_KEY, build_server
from md_vision.settings import LIMIT_FLAGS, Limits
from tests.md_vision.conftest import run, settings_for
from tests.support.http_server import LocalServer, Reply


def _command() -> list[str]:
    script = shutil.which("md-vision") or str(Path(sys.executable).with_name("md-vision"))
    return [script] if os.path.exists(script) else [sys.executable, "-m", "md_vision"]


def _stdio(*args: str) -> StdioServerParameters:
    command = _command()
    return StdioServerParameters(command=command[0], args=[*command[1:], *args], env=dict(os.environ))


async def _session_checks(client, docs: Path) -> None:
    listed = await client.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == {"read_md_with_images", "index_md"}
    read_schema = tools["read_md_with_images"].input_schema
    assert read_schema["required"] == ["uri"]
    line_range = next(
        option for option in read_schema["properties"]["line_range"]["anyOf"] if option.get("type") == "array"
    )
    assert line_range == {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
    assert "prefixItems" not in str(read_schema)
    max_images = read_schema["properties"]["max_images"]
    assert (max_images["minimum"], max_images["maximum"], max_images["default"]) == (0, 50, 10)
    assert tools["index_md"].input_schema["required"] == ["uri"]
    for tool in tools.values():
        annotations = tool.annotations
        assert annotations.read_only_hint and not annotations.destructive_hint
        # --allow-host none: no URL is ever fetched, so the tools do not reach an open world.
        assert annotations.idempotent_hint and not annotations.open_world_hint

    indexed = await client.call_tool("index_md", {"uri": "."})
    assert not indexed.is_error
    assert f'<file path="{docs / "guide.md"}" lines=55 chars=' in indexed.content[0].text
    assert (
        "\n### Notes\t38\t" in indexed.content[0].text and "\n### Notes (2)\t51\t" in indexed.content[0].text
    )

    result = await client.call_tool(
        "read_md_with_images", {"uri": "guide.md", "section": "## Troubleshooting"}
    )
    assert not result.is_error
    kinds = [block.type for block in result.content]
    assert kinds == ["text", "text", "image", "text"]
    assert result.content[1].text.startswith(f"Image: {docs / 'images' / 'panel.png'} (")
    assert base64.b64decode(result.content[2].data) == (docs / "images" / "panel.png").read_bytes()
    assert result.content[2].mime_type == "image/png"
    meta = result.meta[META_KEY]
    assert meta["heading"] == "## Troubleshooting" and meta["roles"] == ["source", "label", "image", "source"]
    source = result.content[0].text + result.content[3].text
    lines = (docs / "guide.md").read_text().splitlines(keepends=True)
    assert source == "".join(lines[44:])  # "### Notes (2)" is a subsection: read to the end

    missing = await client.call_tool("read_md_with_images", {"uri": "guide.md", "section": "## Nowhere"})
    assert missing.is_error and "index_md" in missing.content[0].text
    outside = await client.call_tool("read_md_with_images", {"uri": "/etc/passwd"})
    assert outside.is_error and "outside the allowed paths" in outside.content[0].text
    assert "Traceback" not in outside.content[0].text
    bad_range = await client.call_tool("read_md_with_images", {"uri": "guide.md", "line_range": [3]})
    assert bad_range.is_error
    bad_max = await client.call_tool("read_md_with_images", {"uri": "guide.md", "max_images": 51})
    assert bad_max.is_error


def test_stdio_server(docs: Path) -> None:
    async def go():
        async with Client(_stdio("--allow-path", str(docs), "--allow-domain", "none")) as client:
            await _session_checks(client, docs)

    run(go())


def test_in_process_server(docs: Path) -> None:
    async def go():
        async with Client(build_server(settings_for(docs))) as client:
            await _session_checks(client, docs)

    run(go())


def test_stdio_remote_read_with_equals_form_flags(tmp_path: Path) -> None:
    with LocalServer({"/r.md": Reply(body="<!-- x -->\n# R\n", content_type="text/markdown")}) as server:

        async def go():
            params = _stdio(f"--allow-path={tmp_path}", "--allow-domain=127.0.0.1", "--fetch-timeout=5")
            async with Client(params) as client:
                ok = await client.call_tool("read_md_with_images", {"uri": server.url("/r.md")})
                blocked = await client.call_tool(
                    "read_md_with_images", {"uri": f"http://localhost:{server.port}/r.md"}
                )
                return ok, blocked

        ok, blocked = run(go())
    assert not ok.is_error and ok.content[0].text == "<!-- x -->\n# R\n"
    assert blocked.is_error and "not allowed" in blocked.content[0].text


def _start(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*_command(), *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "--allow-host is required"),
        (["--allow-path", "{tmp}"], "--allow-host is required"),
        (["--allow-domain", "none", "--allow-path", "{tmp}", "--no-structured-output=1"], "ignored explicit"),
        (["--allow-path", "{tmp}/missing", "--allow-domain", "none"], "does not exist"),
        (["--allow-path", "{tmp}/file.txt", "--allow-domain", "none"], "is not a directory"),
        (
            ["--allow-path", "{tmp}", "--allow-domain", "all", "--allow-domain", "example.com"],
            "must stand alone",
        ),
        (["--allow-path", "{tmp}", "--allow-domain", "none", "--allow-domain", "all"], "must stand alone"),
        # `*` is `all` and `*.example.com` is example.com (tests/md_vision/test_reference_conformance.py);
        # a star anywhere else is refused.
        (["--allow-path", "{tmp}", "--allow-domain", "docs.*.com"], "a wildcard can only be"),
        (
            ["--allow-path", "{tmp}", "--allow-domain", "*", "--allow-domain", "example.com"],
            "must stand alone",
        ),
        (["--allow-path", "{tmp}", "--allow-domain", "https://example.com"], "not a URL"),
        (["--allow-path", "{tmp}", "--allow-domain", "example.com:8080"], "without a port"),
        (["--allow-path", "{tmp}", "--allow-domain", "none", "--max-files", "zero"], "expects a number"),
        (["--allow-path", "{tmp}", "--allow-domain", "none", "--max-image-side", "2"], "at least 16"),
        (["--allow-path", "{tmp}", "--allow-domain", "none", "--bogus"], "unrecognized arguments"),
        (["--allow-path"], "expected one argument"),
    ],
)
def test_startup_errors(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "file.txt").write_text("x")
    completed = _start(*[arg.format(tmp=tmp_path) for arg in args])
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr.startswith("md-vision: error: ") and message in completed.stderr
    assert "Traceback" not in completed.stderr


def test_help_teaches_and_does_not_import_the_mcp_sdk() -> None:
    code = (
        "import sys\nfrom md_vision.__main__ import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit as exit:\n    assert exit.code == 0\n"
        "assert not any(name == 'mcp' or name.startswith('mcp.') for name in sys.modules), 'mcp imported'\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    for expected in (
        "index_md",
        "read_md_with_images",
        "--allow-host VALUE",
        "MD_VISION_ALLOW_PATHS",
        "--max-response-bytes",
        "uvx",
    ):
        assert expected in completed.stdout
    assert _start("--version").stdout.startswith("md-vision ")


def test_every_limit_flag_sets_a_limits_field_of_its_own_kind(tmp_path: Path) -> None:
    # parse_settings sets limits by field name, which the type checker cannot follow.
    fields = {field.name: field.type for field in dataclasses.fields(Limits)}
    for item in LIMIT_FLAGS:
        assert fields.get(item.attribute) == item.kind.__name__, item.flag
    argv = ["--allow-path", str(tmp_path), "--allow-domain", "none"]
    wanted = {item.attribute: int(item.minimum) + 1 for item in LIMIT_FLAGS}  # each flag's own range
    for item in LIMIT_FLAGS:
        argv += [item.flag, str(wanted[item.attribute])]
    limits = parse_settings(argv).limits
    for item in LIMIT_FLAGS:
        value = getattr(limits, item.attribute)
        assert value == wanted[item.attribute] and type(value) is item.kind, item.flag


async def _relative_path_checks(client, docs: Path) -> None:
    """Under --relative-paths nothing a result shows names where the allowed folder is."""
    root = str(docs.resolve())
    indexed = await client.call_tool("index_md", {"uri": "guide.md"})
    folder = await client.call_tool("index_md", {"uri": "."})
    read = await client.call_tool("read_md_with_images", {"uri": "guide.md", "section": "## Troubleshooting"})
    missing = await client.call_tool("read_md_with_images", {"uri": "guide.md", "section": "## Nowhere"})
    outside = await client.call_tool("read_md_with_images", {"uri": "/etc/passwd"})
    assert indexed.content[0].text.startswith('<file path="guide.md" lines=55 chars=')
    assert '<file path="guide.md"' in folder.content[0].text
    assert read.content[1].text.startswith("Image: images/panel.png (")
    assert read.meta[META_KEY]["source"] == "guide.md"
    assert missing.is_error and "not found in guide.md" in missing.content[0].text
    assert outside.is_error and "outside the allowed paths (.)" in outside.content[0].text
    for result in (indexed, folder, read, missing, outside):
        shown = " ".join(getattr(block, "text", "") for block in result.content) + str(result.meta)
        assert root not in shown


def test_relative_paths_over_stdio(docs: Path) -> None:
    async def go():
        params = _stdio("--allow-path", str(docs), "--allow-domain", "none", "--relative-paths")
        async with Client(params) as client:
            await _relative_path_checks(client, docs)

    run(go())


def test_relative_paths_in_process(docs: Path) -> None:
    settings = dataclasses.replace(settings_for(docs), relative_paths=True)
    assert settings.show(docs.resolve() / "a" / "b.md") == "a/b.md" and settings.show(docs.resolve()) == "."
    assert settings.show("/elsewhere/c.md") == "/elsewhere/c.md"  # outside the first folder: as is
    assert settings_for(docs).show(docs / "x.md") == str(docs / "x.md")  # the default shows real paths

    async def go():
        async with Client(build_server(settings)) as client:
            await _relative_path_checks(client, docs)

    run(go())
