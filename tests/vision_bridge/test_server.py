"""The MCP face through a real MCP client: in-process, and over stdio by spawning the console script."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.support.llm_stub import LLMStub, openai_reply
from tests.vision_bridge.conftest import png_bytes, settings_for
from vision_bridge.server import build_server
from vision_bridge.service import create_service
from vision_bridge.usage import DETAILS_META_KEY, USAGE_META_KEY

SCRIPT = Path(sys.executable).with_name("vision-bridge")
DATA_URL = "data:image/png;base64," + base64.b64encode(png_bytes()).decode()


def in_process(settings, scenario):
    async def go():
        service = create_service(settings)
        async with Client(build_server(service)) as client:
            return await scenario(client)

    return asyncio.run(go())


def test_tools_schemas_and_annotations(llm_stub: LLMStub, tmp_path: Path) -> None:
    async def scenario(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in in_process(settings_for(llm_stub, tmp_path), scenario)}
    assert set(tools) == {"analyze_image", "ocr_image", "compare_images"}
    for tool in tools.values():
        hints = tool.annotations
        assert (
            hints.read_only_hint,
            hints.destructive_hint,
            hints.idempotent_hint,
            hints.open_world_hint,
        ) == (
            True,
            False,
            True,
            True,
        )
        assert "image" in tool.input_schema["properties"] or "images" in tool.input_schema["properties"]
    images = tools["compare_images"].input_schema["properties"]["images"]
    assert (images["type"], images["minItems"], images["maxItems"]) == ("array", 2, 4)
    assert tools["compare_images"].input_schema["required"] == ["images"]
    ocr = tools["ocr_image"].input_schema["properties"]
    assert ocr["format"]["enum"] == ["plain", "markdown", "json"] and ocr["format"]["default"] == "plain"
    assert tools["analyze_image"].input_schema["required"] == ["image"]
    assert "cannot see images" in tools["analyze_image"].description


def test_call_returns_text_and_usage_meta(llm_stub: LLMStub, tmp_path: Path) -> None:
    llm_stub.push("openai", openai_reply("A red rectangle.", prompt_tokens=300, completion_tokens=9))

    async def scenario(client):
        return await client.call_tool("analyze_image", {"image": DATA_URL, "prompt": "What is it?"})

    result = in_process(settings_for(llm_stub, tmp_path), scenario)
    assert not result.is_error
    assert [c.text for c in result.content] == ["A red rectangle."]
    usage = result.meta[USAGE_META_KEY]
    assert (usage["input_tokens"], usage["output_tokens"], usage["calls"], usage["from_cache"]) == (
        300,
        9,
        1,
        False,
    )
    assert result.meta[DETAILS_META_KEY]["tool"] == "analyze_image"
    # The answer and usage again as structuredContent (tests/vision_bridge/test_conventions.py:
    # --no-structured-output drops it); the text stays content[0].
    structured = result.structured_content
    assert structured["answer"] == "A red rectangle."
    assert (structured["usage"]["input_tokens"], structured["usage"]["calls"]) == (300, 1)


def test_errors_are_is_error_results_with_a_typed_cause(llm_stub: LLMStub, tmp_path: Path) -> None:
    async def scenario(client):
        return [
            await client.call_tool("ocr_image", {"image": "/etc/hostname.png"}),
            await client.call_tool("compare_images", {"images": [DATA_URL]}),
            await client.call_tool("ocr_image", {"image": DATA_URL, "format": "html"}),
        ]

    outside, too_few, bad_format = in_process(settings_for(llm_stub, tmp_path), scenario)
    assert outside.is_error
    assert outside.content[0].text.startswith(
        "[vision_error] input: '/etc/hostname.png' is outside the allowed paths"
    )
    assert outside.meta[DETAILS_META_KEY]["error_cause"] == "input"
    assert outside.meta[USAGE_META_KEY]["calls"] == 0
    assert too_few.is_error and bad_format.is_error  # schema validation by the SDK
    assert llm_stub.requests_for("openai") == []


def test_offline_server_marks_model_tools_unavailable(tmp_path: Path) -> None:
    if not Path("/usr/bin/tesseract").exists() and not __import__("shutil").which("tesseract"):
        pytest.skip("Tesseract is not installed (Debian: apt-get install tesseract-ocr)")
    settings = settings_for(None, tmp_path, VISION_BACKEND="tesseract")

    async def scenario(client):
        tools = {t.name: t.description for t in (await client.list_tools()).tools}
        result = await client.call_tool("analyze_image", {"image": DATA_URL})
        return tools, result

    tools, result = in_process(settings, scenario)
    assert tools["analyze_image"].startswith("UNAVAILABLE") and tools["compare_images"].startswith(
        "UNAVAILABLE"
    )
    assert "offline Tesseract" in tools["ocr_image"]
    assert result.is_error and result.content[0].text.startswith("[vision_error] unsupported:")


def stdio_params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(SCRIPT), args=[], env={"PATH": os.environ.get("PATH", ""), **env}
    )


def test_console_script_over_stdio(llm_stub: LLMStub, tmp_path: Path) -> None:
    assert SCRIPT.exists(), "run `uv sync` to install the vision-bridge console script"
    (tmp_path / "shot.png").write_bytes(png_bytes((30, 20), "white"))
    llm_stub.push("openai", openai_reply("plain text here", prompt_tokens=77, completion_tokens=3))
    env = {
        "VISION_API_BASE_URL": llm_stub.openai_base_url,
        "VISION_API_KEY": "stdio-key",
        "VISION_MODEL": "stdio-model",
        "VISION_CACHE_DIR": str(tmp_path / "cache"),
        "VISION_ALLOWED_PATHS": str(tmp_path),
        "VISION_MAX_RETRIES": "0",
    }

    async def go():
        async with Client(stdio_params(env)) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            first = await client.call_tool("ocr_image", {"image": "shot.png", "format": "plain"})
            cached = await client.call_tool("ocr_image", {"image": str(tmp_path / "shot.png")})
            refused = await client.call_tool("analyze_image", {"image": "/etc/passwd"})
            return names, first, cached, refused

    names, first, cached, refused = asyncio.run(go())
    assert names == ["analyze_image", "compare_images", "ocr_image"]
    assert (first.is_error, first.content[0].text) == (False, "plain text here")
    assert first.meta[USAGE_META_KEY]["input_tokens"] == 77
    assert first.meta[USAGE_META_KEY]["model"] == "stdio-model"
    assert cached.meta[USAGE_META_KEY]["from_cache"] is True
    assert cached.meta[USAGE_META_KEY]["input_tokens"] == 0
    assert cached.meta[USAGE_META_KEY]["original_usage"]["input_tokens"] == 77
    assert refused.is_error and refused.content[0].text.startswith("[vision_error] input:")
    request = llm_stub.requests_for("openai")[0]
    assert request.headers["authorization"] == "Bearer stdio-key"
    assert request.json()["messages"][0]["content"][0]["image_url"]["detail"] == "high"


def run_script(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), **env},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_startup_errors_exit_1_with_a_readable_message() -> None:
    missing = run_script(env={})
    assert missing.returncode == 1
    assert "VISION_API_BASE_URL, VISION_API_KEY, VISION_MODEL are not set" in missing.stderr
    assert "Traceback" not in missing.stderr and missing.stdout == ""
    bad = run_script(
        env={
            "VISION_BACKEND": "tesseract",
            "VISION_TESSERACT_CMD": "/nonexistent/tesseract",
            "VISION_CACHE_TTL": "soon",
        }
    )
    assert bad.returncode == 1
    assert "'soon' is not a whole number" in bad.stderr
    no_engine = run_script(
        env={"VISION_BACKEND": "tesseract", "VISION_TESSERACT_CMD": "/nonexistent/tesseract"}
    )
    assert no_engine.returncode == 1
    assert "Tesseract ('/nonexistent/tesseract') was not found: install it" in no_engine.stderr


def test_help_is_instant_and_teaches_the_settings() -> None:
    code = (
        "import sys\n"
        "from vision_bridge.__main__ import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('mcp', 'openai', 'anthropic', 'PIL', 'httpx2', 'pytesseract') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "HEAVY []" in done.stdout
    for name in ("VISION_API_BASE_URL", "VISION_ALLOWED_PATHS", "VISION_BACKEND", "VISION_TIMEOUT"):
        assert name in done.stdout
    skill = run_script("--skill", env={})
    assert skill.returncode == 0 and skill.stdout.startswith("---\nname: vision-sidecar")
