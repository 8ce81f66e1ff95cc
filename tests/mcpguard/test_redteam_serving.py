"""The shared MCP conventions under attack (docab_mcpguard.serving, arguments, paths): names and
paths of a megabyte that must not come back whole in a message, and prompts that fail inside."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError

from docab_mcpguard import PathDenied, PathPolicy
from docab_mcpguard.serving import PromptSpec
from tests.mcpguard.test_serving import _server

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
HUGE = 1_000_000


def test_names_of_a_megabyte_are_not_repeated_whole() -> None:
    async def go() -> list[str]:
        messages = []
        async with Client(_server(), mode="legacy") as client:
            unknown_argument = await client.call_tool("count", {"upto": 3, "x" * HUGE: 1})
            unknown_tool = await client.call_tool("y" * HUGE, {})
            messages += [unknown_argument.content[0].text, unknown_tool.content[0].text]
            for name, arguments in (("greet", {"name": "Ada", "z" * HUGE: "1"}), ("w" * HUGE, {})):
                with pytest.raises(MCPError) as caught:
                    await client.get_prompt(name, arguments)
                messages.append(caught.value.error.message)
        return messages

    argument, tool, prompt_argument, prompt = asyncio.run(go())
    assert argument == (f"count has no argument '{'x' * 79}…' (given 1); its arguments are upto and label.")
    assert tool == f"Unknown tool: '{'y' * 79}…'; the tools are count"
    assert prompt_argument == f"the greet prompt has no argument '{'z' * 79}…'; its arguments are name"
    assert prompt == f"there is no prompt '{'w' * 79}…'; the prompts are greet"


def test_a_refused_path_of_a_megabyte_is_cut_in_the_message(tmp_path: Path) -> None:
    policy = PathPolicy.from_dirs([tmp_path], remedy="allow it")
    with pytest.raises(PathDenied) as outside:
        policy.open("/elsewhere/" + "p" * HUGE)
    assert (
        str(outside.value) == f"'/elsewhere/{'p' * 288}…' is outside the allowed paths ({tmp_path}); allow it"
    )
    with pytest.raises(PathDenied) as uri:
        policy.open("file:///" + "q" * HUGE)
    assert (
        str(uri.value) == f"file: URIs are not accepted; pass a plain path instead of 'file:///{'q' * 291}…'"
    )


def test_a_prompt_that_fails_inside_says_so_without_its_exception_text() -> None:
    app = _server()

    async def broken(_arguments: Any, _ctx: Any) -> Any:
        raise RuntimeError("/home/someone/secret went wrong")

    app.add_prompt_renderer(PromptSpec("broken", "Broken", "Always fails."), broken)

    async def go() -> str:
        async with Client(app, mode="legacy") as client:
            with pytest.raises(MCPError) as caught:
                await client.get_prompt("broken", {})
            return caught.value.error.message

    assert asyncio.run(go()) == "the broken prompt hit an internal error; the server log has details"
