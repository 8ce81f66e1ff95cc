"""vision-bridge's client roots under attack, through the SDK's client over stdio: a client that
declares roots but fails to give them gets no local folder, not the server's default ones."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import ErrorData

from tests.support.llm_stub import LLMStub
from tests.vision_bridge.test_conventions import _params, pictures  # noqa: F401 (a fixture)

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


def test_roots_the_client_fails_to_give_allow_no_local_image(
    llm_stub: LLMStub,
    pictures: tuple[Path, Path, Path],  # noqa: F811
) -> None:
    work, _root, _other = pictures

    async def failing(_context: Any) -> ErrorData:
        return ErrorData(code=-32603, message="roots unavailable")

    async def go() -> Any:
        async with Client(_params(llm_stub, work), mode="legacy", list_roots_callback=failing) as client:
            return await client.call_tool("analyze_image", {"image": str(work / "shot.png")})

    refused = asyncio.run(go())
    # The working folder is a default only for a client without roots.
    assert refused.is_error and "cannot be read: no folder is allowed yet" in refused.content[0].text
    assert llm_stub.requests_for("openai") == []
