"""The MCP face, in-process and through a real client over stdio spawning the console script."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from docab_mcpguard import PathPolicy
from markfetch.server import build_server
from markfetch.service import Markfetch
from tests.markfetch.conftest import FakeResolver, site_url
from tests.markfetch.pages import page
from tests.support.http_server import LocalServer, Reply

HTML = "text/html; charset=utf-8"


def console_script() -> str:
    found = shutil.which("markfetch", path=str(Path(sys.executable).parent))
    assert found, "the markfetch console script is not installed in this environment"
    return found


def in_process(settings, roots: list[Path]):
    service = Markfetch(settings, resolver=FakeResolver())
    return build_server(service, PathPolicy.from_dirs(roots)), service


def calls(app, *arguments: dict) -> list:
    """Call fetch_markdown once per argument set, in one session (one event loop, like a real server)."""

    async def go():
        async with Client(app) as client:
            return [await client.call_tool("fetch_markdown", args) for args in arguments]

    return asyncio.run(go())


def test_tool_listing_schema_and_annotations(settings, tmp_path: Path) -> None:
    app, _ = in_process(settings, [tmp_path])

    async def go():
        async with Client(app) as client:
            return (await client.list_tools()).tools

    (tool,) = asyncio.run(go())
    assert tool.name == "fetch_markdown"
    assert set(tool.input_schema["properties"]) == {"url", "savePath", "raw", "overwrite"}
    assert tool.input_schema["required"] == ["url"]
    assert tool.input_schema["properties"]["overwrite"]["default"] is False
    # overwrite: true can replace a file: the tool is not read-only and may be destructive.
    assert tool.annotations.open_world_hint is True and tool.annotations.read_only_hint is False
    assert tool.annotations.destructive_hint is True


def test_markdown_only_in_content_text(server: LocalServer, settings, tmp_path: Path) -> None:
    server.route("/a", Reply(body=page("docs_code"), content_type=HTML))
    app, _ = in_process(settings, [tmp_path])
    (result,) = calls(app, {"url": site_url(server, "/a")})
    assert result.is_error is False
    # The document stays content[0].text; structuredContent holds only what it came from
    # (tests/markfetch/test_conventions.py: and --no-structured-output drops it).
    assert len(result.content) == 1 and "# Using" not in str(result.structured_content)
    assert result.structured_content["title"] == "Using the config_loader module"
    assert result.content[0].text.startswith("# Using the config_loader module\n")
    assert "```python\n" in result.content[0].text


def test_errors_are_is_error_results_with_the_code(server: LocalServer, settings, tmp_path: Path) -> None:
    server.route("/api", Reply.json({"a": 1}))
    app, _ = in_process(settings, [tmp_path])
    wrong_type, internal, raw = calls(
        app,
        {"url": site_url(server, "/api")},
        {"url": server.url("/api")},  # 127.0.0.1 is not allowed here
        {"url": site_url(server, "/api"), "raw": True},
    )
    assert wrong_type.is_error is True and wrong_type.content[0].text.startswith(
        "[unsupported_content_type] "
    )
    assert internal.is_error is True and internal.content[0].text.startswith("[network_error] ")
    assert "loopback" in internal.content[0].text
    assert raw.is_error is False and raw.content[0].text == '{"a": 1}'


def test_save_path_inside_and_outside_the_sandbox(server: LocalServer, settings, tmp_path: Path) -> None:
    server.route("/a", Reply(body=page("article"), content_type=HTML))
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    app, _ = in_process(settings, [root])
    url = site_url(server, "/a")
    escapes = (outside / "b.md", root / "link" / "b.md", root / "link" / ".." / "b.md")
    saved, *refused, failed = calls(
        app,
        {"url": url, "savePath": str(root / "a.md")},
        *({"url": url, "savePath": str(escape)} for escape in escapes),
        {"url": url, "savePath": str(root / "no" / "c.md")},
    )
    assert saved.is_error is False and saved.content[0].text.startswith("Saved ")
    assert (root / "a.md").read_text().startswith("# How tide pools survive the summer")
    for result in refused:
        assert result.is_error is True and result.content[0].text.startswith("[save_forbidden] ")
    assert list(outside.iterdir()) == []
    # forbidden paths, and a missing folder, are refused before any fetch
    assert len(server.requests) == 1
    assert failed.is_error is True and failed.content[0].text.startswith("[save_failed] ")
    assert "its folder does not exist" in failed.content[0].text


def test_fetch_errors_never_touch_the_file(server: LocalServer, settings, tmp_path: Path) -> None:
    server.route("/gone", Reply(status=410, body="gone"))
    (tmp_path / "keep.md").write_text("previous")
    app, _ = in_process(settings, [tmp_path])
    (result,) = calls(
        app, {"url": site_url(server, "/gone"), "savePath": str(tmp_path / "keep.md"), "overwrite": True}
    )
    assert result.content[0].text.startswith("[http_error] ")
    assert (tmp_path / "keep.md").read_text() == "previous"


def test_argument_validation(settings, tmp_path: Path) -> None:
    app, _ = in_process(settings, [tmp_path])
    missing, empty = calls(app, {}, {"url": ""})
    assert missing.is_error is True and empty.is_error is True


def stdio_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    env.update(extra)
    return env


def test_stdio_server_through_a_real_client(server: LocalServer, tmp_path: Path) -> None:
    server.route("/a", Reply(body=page("article"), content_type=HTML))
    server.route("/start", Reply.redirect(f"http://localhost:{server.port}/secret"))
    params = StdioServerParameters(
        command=console_script(),
        args=[],
        env=stdio_env(
            tmp_path, MARKFETCH_ALLOW_HOSTS="127.0.0.1", MARKFETCH_ALLOWED_WRITE_ROOTS=str(tmp_path)
        ),
    )

    async def go():
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            ok = await client.call_tool("fetch_markdown", {"url": server.url("/a")})
            saved = await client.call_tool(
                "fetch_markdown", {"url": server.url("/a"), "savePath": str(tmp_path / "a.md")}
            )
            refused = await client.call_tool("fetch_markdown", {"url": server.url("/start")})
            forbidden = await client.call_tool(
                "fetch_markdown", {"url": server.url("/a"), "savePath": "/etc/x.md"}
            )
            return tools, ok, saved, refused, forbidden

    tools, ok, saved, refused, forbidden = asyncio.run(go())
    assert [t.name for t in tools] == ["fetch_markdown"]
    assert ok.is_error is False and ok.content[0].text.startswith("# How tide pools survive the summer\n")
    assert saved.content[0].text.startswith("Saved ") and (tmp_path / "a.md").exists()
    assert refused.is_error is True and "[network_error]" in refused.content[0].text
    assert "loopback" in refused.content[0].text  # localhost is not in MARKFETCH_ALLOW_HOSTS
    assert forbidden.content[0].text.startswith("[save_forbidden] ")
    assert "/secret" not in [r.path for r in server.requests]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {
                "MARKFETCH_USER_AGENT": "Mozilla/5.0 (X11; Linux x86_64; rv:126.0) Gecko/20100101 Firefox/126.0"
            },
            "MARKFETCH_USER_AGENT",
        ),
        ({"MARKFETCH_ALLOWED_WRITE_ROOTS": "/no/such/dir/anywhere"}, "does not exist"),
        ({"MARKFETCH_ALLOWED_WRITE_ROOTS": "relative"}, "not an absolute path"),
        ({"MARKFETCH_ALLOWED_WRITE_ROOTS": ":/tmp"}, "has an empty entry"),
        ({"MARKFETCH_ALLOWED_WRITE_ROOTS": "/tmp::/tmp"}, "has an empty entry"),
        ({"MARKFETCH_TIMEOUT_MS": "fast"}, "MARKFETCH_TIMEOUT_MS"),
    ],
)
def test_server_refuses_to_start_on_bad_environment(
    tmp_path: Path, env: dict[str, str], message: str
) -> None:
    done = subprocess.run(
        [console_script()],
        env=stdio_env(tmp_path, **env),
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("markfetch: ") and message in done.stderr
    assert "Traceback" not in done.stderr
