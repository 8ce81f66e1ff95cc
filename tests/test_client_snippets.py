"""The client configuration snippets in each server's README (its PyPI page) work as written:
each of Claude Desktop's, VS Code's and Cursor's is parsed in that client's shape, and the command
it names is started through a real MCP client over stdio, which must list the server's tools.

``uvx NAME`` is run as the ``NAME`` script installed in this environment (what ``uvx`` runs once it
has installed the package from PyPI); the placeholders a user replaces (``/absolute/path/to/...``,
VS Code's ``${workspaceFolder}`` and ``${input:...}``) are replaced by folders of the test's own.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters

from tests.support.mcp_stdio import StdioSession

REPO = Path(__file__).resolve().parents[1]
SERVERS = {
    "md-vision": ("tools/md_vision", {"index_md", "read_md_with_images"}),
    "markfetch": ("tools/markfetch", {"fetch_markdown"}),
    "vision-bridge": ("tools/vision_bridge", {"analyze_image", "ocr_image", "compare_images"}),
}
CLIENTS = ("Claude Desktop", "VS Code", "Cursor")
PLACEHOLDER = "/absolute/path/to/"


def snippets(distribution: str) -> dict[str, dict[str, Any]]:
    """The README's "Client configuration" section: each client's heading and its JSON block."""
    folder, _ = SERVERS[distribution]
    readme = (REPO / folder / "README.md").read_text()
    match = re.search(r"^## Client configuration\n(.*?)(?=^## )", readme, flags=re.S | re.M)
    assert match, f"{folder}/README.md has no '## Client configuration' section"
    found = {}
    for client, block in re.findall(r"^### (.+?)\n.*?```json\n(.*?)```", match.group(1), flags=re.S | re.M):
        found[client] = json.loads(block)
    return found


def entry(client: str, config: dict[str, Any], distribution: str) -> dict[str, Any]:
    """The server's entry, checked against the client's own shape."""
    if client == "VS Code":
        assert set(config) <= {"servers", "inputs"}, "VS Code's mcp.json has servers (and inputs)"
        server: dict[str, Any] = config["servers"][distribution]
        assert server["type"] == "stdio"
        declared = {i["id"] for i in config.get("inputs", ())}
        used = set(re.findall(r"\$\{input:([^}]+)\}", json.dumps(server)))
        assert used <= declared, f"inputs used but not declared: {used - declared}"
        assert all(i["type"] == "promptString" for i in config.get("inputs", ()))
    else:
        assert set(config) == {"mcpServers"}, f"{client} reads mcpServers"
        server = config["mcpServers"][distribution]
        assert "type" not in server or server["type"] == "stdio"
    assert set(server) <= {"type", "command", "args", "env"}
    assert isinstance(server["command"], str) and all(isinstance(a, str) for a in server.get("args", []))
    assert all(isinstance(v, str) for v in server.get("env", {}).values())
    return server


def resolve(value: str, tmp_path: Path) -> str:
    """A placeholder as a user would fill it in: a real folder, a workspace, a typed-in secret."""
    if value.startswith(PLACEHOLDER):
        folder = tmp_path / "user" / value.removeprefix(PLACEHOLDER)
        folder.mkdir(parents=True, exist_ok=True)
        return str(folder)
    value = value.replace("${workspaceFolder}", str(tmp_path / "workspace"))
    return re.sub(r"\$\{input:[^}]+\}", "typed-in-by-the-user", value)


@pytest.mark.parametrize("distribution", sorted(SERVERS))
def test_each_server_readme_has_a_snippet_for_each_client(distribution: str) -> None:
    assert sorted(snippets(distribution)) == sorted(CLIENTS)


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("distribution", sorted(SERVERS))
def test_the_snippet_starts_the_server_through_an_mcp_client(
    distribution: str, client: str, tmp_path: Path
) -> None:
    server = entry(client, snippets(distribution)[client], distribution)
    (tmp_path / "workspace").mkdir()
    command, args = server["command"], [resolve(a, tmp_path) for a in server.get("args", [])]
    assert command == "uvx" and args[0] == distribution, "the snippets run the PyPI package with uvx"
    script = Path(sys.executable).parent / distribution
    env = {name: resolve(value, tmp_path) for name, value in server.get("env", {}).items()}
    params = StdioServerParameters(command=str(script), args=args[1:], env=env, cwd=tmp_path)
    _, tools = SERVERS[distribution]
    with StdioSession(params, timeout=60) as session:
        assert {t.name for t in session.tools()} == tools
        assert session.server_info is not None and session.server_info.name == distribution
        # md-vision and markfetch print nothing while serving; vision-bridge says once what it serves.
        stderr = session.stderr()
        assert stderr == "" or (
            distribution == "vision-bridge" and stderr.startswith("vision-bridge: serving")
        )
