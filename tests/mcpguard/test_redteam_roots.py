"""Client roots under attack (docab_mcpguard.serving): folder names holding percent escapes, and
roots a client declares but fails to give."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ErrorData, ListRootsResult, Root, TextContent

from docab_mcpguard.access import server_settings
from docab_mcpguard.serving import ClientRoots, ConventionalServer, folders_of, svg_icon
from tests.mcpguard.test_serving import SVG

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
ICON = svg_icon(SVG)


@pytest.mark.parametrize("name", ["%2E%2E", "a%2Fb", "100%25", "%41"])
def test_a_root_is_the_folder_its_uri_names_decoded_once(tmp_path: Path, name: str) -> None:
    # A folder literally named "%2E%2E" is sent as ".../%252E%252E"; decoding twice made it "..",
    # so the root's parent (everything beside it) was allowed.
    (tmp_path / "project" / name).mkdir(parents=True)
    (tmp_path / "project" / "A").mkdir()
    folders, skipped = folders_of([Root(uri=(tmp_path / "project" / name).as_uri())])
    assert folders == [str(tmp_path / "project" / name)] and skipped == []


def _roots_server(outcomes: list[ListRootsResult | ErrorData]) -> tuple[ConventionalServer, Any]:
    """A server that follows its client's roots, with a tool saying what they allow; and the
    client's roots callback, answering from ``outcomes`` in turn (the last one repeated)."""
    roots = ClientRoots(server_settings("demo", "DEMO"))
    app = ConventionalServer(
        "demo", title="Demo", version="1", instructions="", website_url="https://example.org", icon=ICON
    )
    app.follow_roots(roots)

    async def allowed(ctx: Context) -> CallToolResult:
        current = await roots.current(ctx)
        shown = "default" if current is None else ",".join(current.roots) or "none"  # type: ignore[union-attr]
        return CallToolResult(content=[TextContent(type="text", text=shown)])

    app.add_tool(allowed, name="allowed", description="The folders allowed now.")

    async def list_roots(_context: Any) -> ListRootsResult | ErrorData:
        return outcomes.pop(0) if len(outcomes) > 1 else outcomes[0]

    return app, list_roots


def test_roots_the_client_fails_to_give_allow_no_folder(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    failure = ErrorData(code=-32603, message="roots unavailable")
    listed = ListRootsResult(roots=[Root(uri=first.as_uri())])

    async def go(outcomes: list[ListRootsResult | ErrorData], changes: int) -> list[str]:
        app, list_roots = _roots_server(outcomes)
        answers = []
        async with Client(app, mode="legacy", list_roots_callback=list_roots) as client:
            for _ in range(changes + 1):
                result = await client.call_tool("allowed", {})
                answers.append(result.content[0].text)
                await client.send_roots_list_changed()
                await asyncio.sleep(0.05)
        return answers

    # Never read: not the server's default folders (wider than any root), but none.
    assert asyncio.run(go([failure], 0)) == ["none"]
    # Read, then changed and unreadable: not the roots the client may just have withdrawn.
    assert asyncio.run(go([listed, failure, listed], 2)) == [str(first), "none", str(first)]
