"""vision-bridge and the MCP conventions (issue 17), through the SDK's client over stdio against
the loopback provider stub: titles and output schemas, the answer and usage as structured
content, the client's roots as the image folders of a server started without any, progress per
step, logs through MCP, one-sentence argument errors for every tool, and the settings shared with
the other servers (issue 15: --allow-host / VISION_ALLOW_HOSTS, --allow-path / VISION_ALLOW_PATHS)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import ListRootsResult, LoggingMessageNotificationParams, Root

from tests.support.llm_stub import LLMStub, openai_reply
from tests.vision_bridge.conftest import png_bytes
from tests.vision_bridge.test_server import SCRIPT
from vision_bridge.config import load_settings
from vision_bridge.errors import ConfigError

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
T = TypeVar("T")
API = {"VISION_API_BASE_URL": "http://127.0.0.1:9/v1", "VISION_API_KEY": "k", "VISION_MODEL": "m"}


def _params(stub: LLMStub | None, cwd: Path, *args: str, **env: str) -> StdioServerParameters:
    base = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(cwd),
        "VISION_CACHE_TTL": "0",
        "VISION_MAX_RETRIES": "0",
    }
    if stub is not None:
        base.update(
            VISION_API_BASE_URL=stub.openai_base_url, VISION_API_KEY="key", VISION_MODEL="vision-test"
        )
    return StdioServerParameters(command=str(SCRIPT), args=list(args), env={**base, **env}, cwd=str(cwd))


def _session(
    params: StdioServerParameters,
    scenario: Callable[[Client], Awaitable[T]],
    *,
    roots: list[Path] | None = None,
    mode: str = "legacy",
    on_log: Callable[[LoggingMessageNotificationParams], Awaitable[None]] | None = None,
) -> T:
    async def list_roots(_context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=path.as_uri()) for path in roots or []])

    async def go() -> T:
        async with Client(
            params,
            mode=mode,
            list_roots_callback=list_roots if roots is not None else None,
            logging_callback=on_log,
        ) as client:
            return await scenario(client)

    return asyncio.run(go())


@pytest.fixture
def pictures(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A working folder, a root folder and another folder, each with shot.png."""
    work, root, other = tmp_path / "work", tmp_path / "root", tmp_path / "other"
    for folder in (work, root, other):
        folder.mkdir()
        (folder / "shot.png").write_bytes(png_bytes((20, 10)))
    return work.resolve(), root.resolve(), other.resolve()


def test_tools_list_shows_titles_and_output_schemas(llm_stub: LLMStub, tmp_path: Path) -> None:
    async def scenario(client: Client) -> Any:
        return client.server_info, (await client.list_tools()).tools

    info, tools = _session(_params(llm_stub, tmp_path), scenario)
    assert info.title == "vision-bridge: eyes for text-only models"
    assert base64.b64decode(info.icons[0].src.split(",", 1)[1]).startswith(b"<svg")
    assert {tool.name: tool.title for tool in tools} == {
        "analyze_image": "Describe an image",
        "ocr_image": "Read the text in an image",
        "compare_images": "Compare images",
    }
    for tool in tools:
        assert tool.output_schema["required"] == ["answer", "usage"] and tool.annotations.open_world_hint
        assert "title" not in str(tool.output_schema)


def test_the_answer_and_usage_as_structured_content(
    llm_stub: LLMStub, pictures: tuple[Path, Path, Path]
) -> None:
    work = pictures[0]
    llm_stub.push("openai", openai_reply("A small white image.", prompt_tokens=120, completion_tokens=6))

    async def scenario(client: Client) -> Any:
        return await client.call_tool("analyze_image", {"image": "shot.png"})

    result = _session(_params(llm_stub, work), scenario)
    assert result.content[0].text == "A small white image."
    assert result.structured_content["answer"] == "A small white image."
    usage = result.structured_content["usage"]
    assert (
        usage["provider"],
        usage["model"],
        usage["input_tokens"],
        usage["output_tokens"],
        usage["calls"],
    ) == (
        "openai",
        "vision-test",
        120,
        6,
        1,
    )
    assert usage["from_cache"] is False and usage["latency_s"] >= 0


def test_structured_output_can_be_turned_off(llm_stub: LLMStub, pictures: tuple[Path, Path, Path]) -> None:
    work = pictures[0]

    async def scenario(client: Client) -> Any:
        return (await client.list_tools()).tools, await client.call_tool("ocr_image", {"image": "shot.png"})

    tools, result = _session(_params(llm_stub, work, "--no-structured-output"), scenario)
    assert all(tool.output_schema is None for tool in tools)
    assert result.structured_content is None and not result.is_error
    # The variable with the same words; the flag wins over it.
    assert not load_settings({**API, "VISION_STRUCTURED_OUTPUT": "off"}).structured_output
    assert load_settings({**API, "VISION_STRUCTURED_OUTPUT": "off"}, structured_output=True).structured_output


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_with_roots_gets_images_inside_them_and_nothing_outside(
    llm_stub: LLMStub, pictures: tuple[Path, Path, Path], mode: str
) -> None:
    work, root, other = pictures

    async def scenario(client: Client) -> Any:
        return [
            await client.call_tool("analyze_image", {"image": str(root / "shot.png")}),
            await client.call_tool("analyze_image", {"image": "shot.png"}),  # the first root
            await client.call_tool(
                "analyze_image", {"image": str(work / "shot.png")}
            ),  # the default, replaced
            await client.call_tool(
                "compare_images", {"images": [str(root / "shot.png"), str(other / "shot.png")]}
            ),
        ]

    inside, relative, default, mixed = _session(_params(llm_stub, work), scenario, roots=[root], mode=mode)
    assert not inside.is_error and not relative.is_error
    for refused in (default, mixed):
        text = refused.content[0].text
        assert (
            refused.is_error
            and text.startswith("[vision_error] input: ")
            and "outside the allowed paths" in text
        )
        assert "MCP client's roots" in text and "--allow-path DIR (or VISION_ALLOW_PATHS" in text
    assert len(llm_stub.requests_for("openai")) == 2


def test_without_roots_or_folders_the_working_and_temp_folders_stay_the_default(
    llm_stub: LLMStub, pictures: tuple[Path, Path, Path]
) -> None:
    work, _root, _other = pictures

    async def scenario(client: Client) -> Any:
        return (
            await client.call_tool("analyze_image", {"image": "shot.png"}),
            await client.call_tool("analyze_image", {"image": "/etc/hostname.png"}),
        )

    allowed, refused = _session(_params(llm_stub, work), scenario)
    assert not allowed.is_error and refused.is_error
    assert "to allow another folder, start vision-bridge with --allow-path DIR (or VISION_ALLOW_PATHS" in (
        refused.content[0].text
    )


def test_allowed_folders_by_flag_win_over_the_clients_roots(
    llm_stub: LLMStub, pictures: tuple[Path, Path, Path]
) -> None:
    work, root, other = pictures

    async def scenario(client: Client) -> Any:
        return (
            await client.call_tool("ocr_image", {"image": str(other / "shot.png")}),
            await client.call_tool("ocr_image", {"image": str(root / "shot.png")}),
        )

    allowed, refused = _session(_params(llm_stub, work, "--allow-path", str(other)), scenario, roots=[root])
    assert not allowed.is_error and refused.is_error


def test_folders_and_hosts_by_variable_with_the_same_words_or_the_older_name(
    pictures: tuple[Path, Path, Path],
) -> None:
    work, root, other = pictures
    for env in ({"VISION_ALLOW_PATHS": str(other)}, {"VISION_ALLOWED_PATHS": str(other)}):
        settings = load_settings({**API, **env}, cwd=str(work))
        assert settings.allowed_paths == (str(other),) and not settings.follow_roots
    flagged = load_settings({**API, "VISION_ALLOW_PATHS": str(other)}, path_flags=[str(root)])
    assert flagged.allowed_paths == (str(root),)  # the flag wins
    assert load_settings(API, cwd=str(work)).follow_roots
    hosts = load_settings({**API, "VISION_ALLOW_HOSTS": "127.0.0.1,images.lan"})
    assert hosts.allow_hosts == ("127.0.0.1", "images.lan") and hosts.url_images
    assert not load_settings(API, host_flags=["none"]).url_images
    with pytest.raises(ConfigError, match="VISION_ALLOW_PATHS and VISION_ALLOWED_PATHS are both set"):
        load_settings({**API, "VISION_ALLOW_PATHS": str(root), "VISION_ALLOWED_PATHS": str(other)})
    with pytest.raises(ConfigError, match="VISION_ALLOW_PATHS entry 'rel' is not an absolute path"):
        load_settings({**API, "VISION_ALLOW_PATHS": "rel"})


def test_image_urls_off_with_allow_host_none_and_internal_hosts_by_flag(
    llm_stub: LLMStub, pictures: tuple[Path, Path, Path]
) -> None:
    work = pictures[0]

    async def scenario(client: Client) -> Any:
        return await client.call_tool("analyze_image", {"image": "http://127.0.0.1:9/pic.png"})

    off = _session(_params(llm_stub, work, "--allow-host", "none"), scenario)
    assert off.is_error and "URLs are disabled on this server (--allow-host none)" in off.content[0].text
    internal = _session(_params(llm_stub, work), scenario)
    assert internal.is_error and "--allow-host 127.0.0.1 (or VISION_ALLOW_HOSTS)" in internal.content[0].text


@pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="Tesseract is not installed (apt-get install tesseract-ocr)"
)
def test_offline_ocr_without_urls_is_not_open_world(pictures: tuple[Path, Path, Path]) -> None:
    work = pictures[0]

    async def scenario(client: Client) -> Any:
        return (await client.list_tools()).tools

    closed = _session(_params(None, work, "--allow-host", "none", VISION_BACKEND="tesseract"), scenario)
    assert not any(tool.annotations.open_world_hint for tool in closed)
    opened = _session(_params(None, work, VISION_BACKEND="tesseract"), scenario)
    assert all(tool.annotations.open_world_hint for tool in opened)  # it may download image URLs


def test_progress_per_step_and_logs_through_mcp(llm_stub: LLMStub, pictures: tuple[Path, Path, Path]) -> None:
    work = pictures[0]
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[LoggingMessageNotificationParams] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def scenario(client: Client) -> Any:
        await client.set_logging_level("debug")
        return await client.call_tool("ocr_image", {"image": "shot.png"}, progress_callback=on_progress)

    result = _session(_params(llm_stub, work), scenario, on_log=on_log)
    assert not result.is_error
    assert progress[0] == (1, 6, "reading the images")
    assert all(a[0] < b[0] for a, b in itertools.pairwise(progress))
    assert any(message == "waiting for the vision model" for _d, _t, message in progress)
    assert any(
        entry.logger == "vision_bridge" and entry.data.startswith("ocr_image: answered by openai vision-test")
        for entry in logs
    )


def test_argument_errors_are_one_sentence_for_every_tool(llm_stub: LLMStub, tmp_path: Path) -> None:
    calls = [
        ("analyze_image", {"image": ["a.png"]}),
        ("analyze_image", {"prompt": "what"}),
        ("analyze_image", {"image": "a.png", "detail": "high"}),
        ("ocr_image", {"image": "a.png", "format": "pdf"}),
        ("ocr_image", {"image": 3}),
        ("ocr_image", {}),
        ("ocr_image", {"image": "a.png", "lang": "en"}),
        ("compare_images", {"images": ["a.png"]}),
        ("compare_images", {"images": "a.png"}),
        ("compare_images", {"prompt": "diff"}),
        ("compare_images", {"images": ["a.png", "b.png"], "mode": "x"}),
    ]

    async def scenario(client: Client) -> Any:
        return [await client.call_tool(name, arguments) for name, arguments in calls]

    texts = [result.content[0].text for result in _session(_params(llm_stub, tmp_path), scenario)]
    assert texts == [
        'analyze_image: image must be a string; got ["a.png"].',
        "analyze_image: image is required (a string); the call did not give it.",
        "analyze_image has no argument 'detail' (given \"high\"); its arguments are image and prompt.",
        'ocr_image: format must be one of plain, markdown, json; got "pdf".',
        "ocr_image: image must be a string; got 3.",
        "ocr_image: image is required (a string); the call did not give it.",
        "ocr_image has no argument 'lang' (given \"en\"); its arguments are image, languages and format.",
        'compare_images: images must be a list of 2 to 4 strings; got ["a.png"].',
        'compare_images: images must be a list of 2 to 4 strings; got "a.png".',
        "compare_images: images is required (a list of 2 to 4 strings); the call did not give it.",
        "compare_images has no argument 'mode' (given \"x\"); its arguments are images and prompt.",
    ]
    assert llm_stub.requests_for("openai") == []
