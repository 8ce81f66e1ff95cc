"""markfetch's fetch prompt under attack, through the SDK's client in-process: the prompt takes
its url outside the tool's schema, so its length is checked there, and a failure inside the
service reaches the client as one line without its exception text; a savePath holding a NUL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError

from docab_mcpguard import PathPolicy
from markfetch.server import MAX_URL_CHARS, build_server


class _Broken:
    """Stands for markfetch.service.Markfetch: its fetch fails with a bug."""

    async def fetch_document(self, url: str, **_options: Any) -> Any:
        raise RuntimeError("/home/someone/secret went wrong")


def _prompt_error(service: Any, url: str) -> str:
    async def go() -> str:
        async with Client(build_server(service, PathPolicy(("/",))), mode="legacy") as client:
            with pytest.raises(MCPError) as caught:
                await client.get_prompt("fetch", {"url": url})
            return caught.value.error.message

    return asyncio.run(go())


def test_a_prompt_url_over_the_tools_limit_is_refused_without_repeating_it() -> None:
    url = "http://" + "a" * 1_000_000 + ".com/"
    assert _prompt_error(_Broken(), url) == (
        f"the fetch prompt's url is {len(url):,} characters long; at most {MAX_URL_CHARS:,}"
    )


def test_a_failure_inside_the_fetch_prompt_is_one_line_without_its_text() -> None:
    assert _prompt_error(_Broken(), "https://example.com/") == (
        "the fetch prompt hit an internal error; the server log has details"
    )


def test_a_save_path_with_a_nul_character_is_refused_in_words(tmp_path: Path) -> None:
    async def go() -> Any:
        async with Client(build_server(_Broken(), PathPolicy.from_dirs([tmp_path])), mode="legacy") as client:
            return await client.call_tool(
                "fetch_markdown", {"url": "https://example.com/", "savePath": f"{tmp_path}/page\x00.md"}
            )

    refused = asyncio.run(go())
    assert refused.is_error
    assert refused.content[0].text == "[save_forbidden] savePath contains a NUL character; give a file path"
