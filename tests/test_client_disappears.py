"""A client that disappears mid-call (stdin closed, or both pipes closed so that the answer meets
a broken pipe): each server exits 0, prints nothing on stderr and leaves no process behind
(issue 26 item 5: md-vision exited 1 with a 64-line BrokenPipeError traceback)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.http_server import LocalServer, Reply
from tests.support.llm_stub import LLMStub, openai_reply
from tests.support.stdio_process import vanishes_quietly

BIN = Path(sys.executable).parent
HOWS = ["stdin closed", "pipes closed"]


@pytest.fixture
def slow_site() -> Iterator[LocalServer]:
    with LocalServer() as site:
        site.route(
            "/slow.html",
            Reply(
                body="<html><body><h1>Late</h1><p>text</p></body></html>", content_type="text/html", delay=2.0
            ),
        )
        site.route("/slow.md", Reply(body="# Late\n", content_type="text/markdown", delay=2.0))
        yield site


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), **extra}


@pytest.mark.parametrize("how", HOWS)
def test_md_vision(tmp_path: Path, slow_site: LocalServer, how: str) -> None:
    command = [str(BIN / "md-vision"), "--allow-path", str(tmp_path), "--allow-domain", "127.0.0.1"]
    call = {"name": "index_md", "arguments": {"uri": slow_site.url("/slow.md")}}
    assert vanishes_quietly(command, call, how, env=_env(tmp_path)) == (0, "", [])


@pytest.mark.parametrize("how", HOWS)
def test_markfetch(tmp_path: Path, slow_site: LocalServer, how: str) -> None:
    env = _env(tmp_path, MARKFETCH_ALLOW_HOSTS="127.0.0.1")
    call = {"name": "fetch_markdown", "arguments": {"url": slow_site.url("/slow.html")}}
    assert vanishes_quietly([str(BIN / "markfetch")], call, how, env=env) == (0, "", [])


@pytest.mark.parametrize("how", HOWS)
def test_vision_bridge(tmp_path: Path, how: str) -> None:
    from tests.vision_bridge.conftest import png_bytes

    (tmp_path / "shot.png").write_bytes(png_bytes((30, 20), "white"))
    with LLMStub() as stub:
        stub.push("openai", openai_reply("late answer", delay=2.0))
        env = _env(
            tmp_path,
            VISION_API_BASE_URL=stub.openai_base_url,
            VISION_API_KEY="k",
            VISION_MODEL="m",
            VISION_ALLOWED_PATHS=str(tmp_path),
            VISION_CACHE_DIR=str(tmp_path / "cache"),
            VISION_MAX_RETRIES="0",
            VISION_LOG_LEVEL="WARNING",
        )
        call = {"name": "analyze_image", "arguments": {"image": str(tmp_path / "shot.png")}}
        assert vanishes_quietly([str(BIN / "vision-bridge")], call, how, env=env) == (0, "", [])
