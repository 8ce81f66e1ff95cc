"""markfetch and the MCP conventions (issue 17), through the SDK's client over stdio: title and
output schema, structured content beside the text (and the switch that restores the reference's
text-only result), the fetch prompt of the reference fetch server, progress while fetching, logs
through MCP and never on stderr, one-sentence argument errors, and the settings shared with the
other servers (issue 15: --allow-host / MARKFETCH_ALLOW_HOSTS, --allow-path / MARKFETCH_ALLOW_PATHS,
refusals naming the setting)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import LoggingMessageNotificationParams

from markfetch.__main__ import server_flags
from markfetch.config import load_settings, write_policy
from markfetch.server import server_from_env
from tests.markfetch.test_mcp import console_script
from tests.support.http_server import LocalServer, Reply

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
HTML = "text/html; charset=utf-8"
ARTICLE = (
    "<html><head><title>Harbour news | Site</title></head><body><nav>Home About</nav><article>"
    "<h1>Ferries run late</h1>"
    + "".join(
        f"<p>Paragraph {n} about the harbour ferries and their new timetable, in detail.</p>"
        for n in range(40)
    )
    + "</article><footer>all rights reserved</footer></body></html>"
)
T = TypeVar("T")


@pytest.fixture(scope="module")
def site() -> Iterator[LocalServer]:
    with LocalServer() as server:
        server.route("/article", Reply(body=ARTICLE, content_type=HTML))
        server.route("/old", Reply.redirect("/article"))
        server.route(
            "/big",  # a slow page: 8 chunks 0.15 s apart, so progress is reported as it arrives
            Reply(
                body=[ARTICLE[:2000].encode()] + [b"<p>" + b"x" * 60_000 + b"</p>"] * 8 + [b"</body></html>"],
                content_type=HTML,
                chunk_delay=0.15,
            ),
        )
        server.route("/api", Reply.json({"a": 1}))
        yield server


def _params(cwd: Path, *args: str, **env: str) -> StdioServerParameters:
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd)}
    return StdioServerParameters(command=console_script(), args=list(args), env={**base, **env}, cwd=str(cwd))


def _session(
    params: StdioServerParameters,
    scenario: Callable[[Client], Awaitable[T]],
    *,
    errlog: Path | None = None,
    on_log: Callable[[LoggingMessageNotificationParams], Awaitable[None]] | None = None,
) -> T:
    async def go() -> T:
        with (errlog or Path(os.devnull)).open("w") as sink:
            async with Client(
                stdio_client(params, errlog=sink), mode="legacy", logging_callback=on_log
            ) as client:
                return await scenario(client)

    return asyncio.run(go())


def test_tools_list_shows_the_title_and_output_schema(tmp_path: Path) -> None:
    async def scenario(client: Client) -> Any:
        return client.server_info, (await client.list_tools()).tools, (await client.list_prompts()).prompts

    info, (tool,), (prompt,) = _session(_params(tmp_path), scenario)
    assert info.title == "markfetch: web pages as clean markdown" and info.website_url.endswith(
        "/tools/markfetch"
    )
    assert base64.b64decode(info.icons[0].src.split(",", 1)[1]).startswith(b"<svg")
    assert tool.title == "Fetch a web page as markdown" == tool.annotations.title
    assert tool.output_schema["required"] == ["title", "url", "method", "bytes"]
    assert set(tool.output_schema["properties"]) == {"title", "url", "method", "bytes", "saved_to"}
    assert (prompt.name, prompt.description, [(a.name, a.required) for a in prompt.arguments]) == (
        "fetch",
        "Fetch a URL and extract its contents as markdown",
        [("url", True)],
    )


def test_structured_content_gives_title_final_url_and_method(site: LocalServer, tmp_path: Path) -> None:
    async def scenario(client: Client) -> Any:
        return (
            await client.call_tool("fetch_markdown", {"url": site.url("/old")}),
            await client.call_tool("fetch_markdown", {"url": site.url("/api"), "raw": True}),
            await client.call_tool(
                "fetch_markdown", {"url": site.url("/article"), "savePath": str(tmp_path / "page.md")}
            ),
        )

    fetched, raw, saved = _session(_params(tmp_path, "--allow-host", "127.0.0.1"), scenario)
    text = fetched.content[0].text
    assert len(fetched.content) == 1 and text.startswith("# Ferries run late\n\n")
    assert fetched.structured_content == {
        "title": "Ferries run late",
        "url": site.url("/article"),  # after the redirect
        "method": "reader",
        "bytes": len(text.encode()),
        "saved_to": "",
    }
    assert raw.structured_content["method"] == "raw" and raw.content[0].text == '{"a": 1}'
    assert saved.content[0].text.startswith("Saved ") and saved.structured_content["saved_to"] == str(
        tmp_path / "page.md"
    )


def test_the_reference_text_only_result_by_flag_or_variable(site: LocalServer, tmp_path: Path) -> None:
    async def scenario(client: Client) -> Any:
        return (await client.list_tools()).tools[0], await client.call_tool(
            "fetch_markdown", {"url": site.url("/article")}
        )

    tool, fetched = _session(
        _params(tmp_path, "--allow-host", "127.0.0.1", "--no-structured-output"), scenario
    )
    assert tool.output_schema is None
    assert fetched.structured_content is None and fetched.content[0].text.startswith("# Ferries run late")

    async def listed(env: dict[str, str], flag: bool | None = None) -> Any:
        app, _service = server_from_env(env, structured_output=flag)
        async with Client(app) as client:
            return (await client.list_tools()).tools[0].output_schema

    assert asyncio.run(listed({"MARKFETCH_STRUCTURED_OUTPUT": "0"})) is None
    assert asyncio.run(listed({"MARKFETCH_STRUCTURED_OUTPUT": "0"}, True)) is not None  # the flag wins


def test_the_fetch_prompt_as_the_reference_fetch_server(site: LocalServer, tmp_path: Path) -> None:
    async def scenario(client: Client) -> Any:
        good = await client.get_prompt("fetch", {"url": site.url("/article")})
        bad = await client.get_prompt("fetch", {"url": site.url("/api")})
        try:
            await client.get_prompt("fetch", {})
        except MCPError as exc:
            missing = exc.error.message
        return good, bad, missing

    good, bad, missing = _session(_params(tmp_path, "--allow-host", "127.0.0.1"), scenario)
    assert good.description == f"Contents of {site.url('/article')}"
    assert good.messages[0].role == "user" and good.messages[0].content.text.startswith("# Ferries run late")
    assert bad.description == f"Failed to fetch {site.url('/api')}"
    assert bad.messages[0].content.text.startswith("[unsupported_content_type] ")
    assert missing == "the fetch prompt needs the argument url (missing)"


def test_progress_while_fetching_and_logs_through_mcp_not_stderr(site: LocalServer, tmp_path: Path) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[LoggingMessageNotificationParams] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def scenario(client: Client) -> Any:
        await client.set_logging_level("debug")
        return await client.call_tool(
            "fetch_markdown",
            {"url": site.url("/big"), "savePath": str(tmp_path / "big.md")},
            progress_callback=on_progress,
        )

    errlog = tmp_path / "stderr.txt"
    saved = _session(_params(tmp_path, "--allow-host", "127.0.0.1"), scenario, errlog=errlog, on_log=on_log)
    assert not saved.is_error
    assert progress[0] == (0, 2, f"fetching {site.url('/big')}")
    assert progress[-1][:2] == (3, 3) and progress[-1][2].startswith("saved ")
    assert any(message and message.startswith("received ") for _d, _t, message in progress)
    assert all(a[0] < b[0] for a, b in itertools.pairwise(progress))
    assert next(entry.data for entry in logs if entry.logger == "markfetch").startswith(
        f"fetched {site.url('/big')}"
    )
    assert errlog.read_text() == ""  # stderr is for fatal errors only


def test_argument_errors_are_one_sentence(tmp_path: Path) -> None:
    calls = [
        {"url": 42},
        {"url": "x" * 9000},
        {"raw": True},
        {"url": "https://example.com/", "format": "md"},
    ]

    async def scenario(client: Client) -> Any:
        return [await client.call_tool("fetch_markdown", arguments) for arguments in calls]

    texts = [result.content[0].text for result in _session(_params(tmp_path), scenario)]
    assert texts[0].startswith("fetch_markdown: url must be a string of 1 to 8192 characters matching ")
    assert texts[0].endswith("; got 42.")
    assert (
        texts[1].startswith("fetch_markdown: url must be a string of 1 to 8192 characters")
        and "…" in texts[1]
    )
    assert texts[2].startswith("fetch_markdown: url is required (a string of 1 to 8192 characters")
    assert texts[3] == (
        "fetch_markdown has no argument 'format' (given \"md\"); its arguments are url, savePath, raw and overwrite."
    )
    assert not any("pydantic" in text or text.startswith("[") for text in texts)


def test_hosts_and_paths_as_flags_or_variables_and_refusals_naming_them(
    site: LocalServer, tmp_path: Path
) -> None:
    root, other = tmp_path / "root", tmp_path / "other"
    root.mkdir()
    other.mkdir()

    async def scenario(client: Client) -> Any:
        return (
            await client.call_tool(
                "fetch_markdown", {"url": site.url("/article"), "savePath": str(root / "a.md")}
            ),
            await client.call_tool(
                "fetch_markdown", {"url": site.url("/article"), "savePath": str(other / "a.md")}
            ),
        )

    inside, outside = _session(
        _params(tmp_path, "--allow-host", "127.0.0.1", "--allow-path", str(root)), scenario
    )
    assert not inside.is_error, inside.content[0].text
    assert outside.is_error and outside.content[0].text.startswith("[save_forbidden] ")
    assert "start markfetch with --allow-path DIR (or MARKFETCH_ALLOW_PATHS" in outside.content[0].text
    # The variables with the same words, and the older name of the paths' one.
    for env in ({"MARKFETCH_ALLOW_PATHS": str(root)}, {"MARKFETCH_ALLOWED_WRITE_ROOTS": str(root)}):
        assert write_policy(env).roots == (str(root.resolve()),)
    assert write_policy({"MARKFETCH_ALLOW_PATHS": str(other)}, flags=[str(root)]).roots == (
        str(root.resolve()),
    )
    assert load_settings({"MARKFETCH_ALLOW_HOSTS": "127.0.0.1"}).allow_hosts == ("127.0.0.1",)
    assert load_settings({"MARKFETCH_ALLOW_HOSTS": "x.lan"}, host_flags=["127.0.0.1"]).allow_hosts == (
        "127.0.0.1",
    )

    async def loopback(client: Client) -> Any:
        return await client.call_tool("fetch_markdown", {"url": site.url("/article")})

    refused = _session(_params(tmp_path), loopback)
    assert refused.is_error and refused.content[0].text.startswith("[network_error] ")
    assert "run with --allow-host 127.0.0.1 (or MARKFETCH_ALLOW_HOSTS)" in refused.content[0].text


def test_server_flags_alone_start_the_server_anything_else_is_the_cli() -> None:
    assert server_flags([]) is not None
    served = server_flags(["--allow-host", "localhost", "--allow-path=/tmp", "--no-structured-output"])
    assert served is not None and served.allow_host == ["localhost"] and served.structured_output is False
    for cli in (
        ["https://example.com"],
        ["--allow-host", "localhost", "https://example.com"],
        ["-h"],
        ["--raw"],
    ):
        assert server_flags(cli) is None, cli


def test_the_cli_takes_allow_host_and_refuses_none(site: LocalServer, tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}

    def cli(*args: str, **more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [console_script(), *args],
            env={**env, **more},
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )

    allowed = cli("--allow-host", "127.0.0.1", site.url("/article"))
    assert allowed.returncode == 0 and allowed.stdout.startswith("# Ferries run late")
    refused = cli(site.url("/article"))
    assert refused.returncode == 1 and "--allow-host 127.0.0.1 (or MARKFETCH_ALLOW_HOSTS)" in refused.stderr
    nothing = cli(site.url("/article"), MARKFETCH_ALLOW_HOSTS="none")
    assert nothing.returncode == 2 and "MARKFETCH_ALLOW_HOSTS none would refuse every URL" in nothing.stderr
