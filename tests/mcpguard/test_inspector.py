"""The acceptance check of issue 17 with the MCP Inspector itself: ``mcp-inspector --cli ...
--method tools/list`` shows a title and an output schema for every tool of the three servers.

Optional: it needs ``npx`` and the Inspector package (from the npm cache or the registry); when
either is unavailable the test is skipped with the reason. The version is pinned (override with
DOCAB_INSPECTOR_PACKAGE) so that a new Inspector cannot change what is checked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = os.environ.get("DOCAB_INSPECTOR_PACKAGE", "@modelcontextprotocol/inspector@0.17.2")
BIN = Path(sys.executable).parent


def _npx(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not installed (Node.js), so the MCP Inspector cannot run")
    return subprocess.run(
        [npx, "-y", "--prefer-offline", PACKAGE, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def inspector() -> None:
    try:
        probe = _npx("--cli", "--help")
    except subprocess.TimeoutExpired:
        pytest.skip(f"{PACKAGE} could not be fetched in time (no npm registry or cache here?)")
    if probe.returncode != 0 or "--cli" not in probe.stdout:
        pytest.skip(f"{PACKAGE} is unavailable: {(probe.stderr or probe.stdout).strip()[-300:]}")


def _tools_list(tmp_path: Path, command: str, *args: str, env: dict[str, str] | None = None) -> list[dict]:
    flags = [item for key, value in (env or {}).items() for item in ("-e", f"{key}={value}")]
    done = _npx("--cli", *flags, str(BIN / command), *args, "--method", "tools/list")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)["tools"]


@pytest.mark.parametrize(
    ("command", "args", "env", "names"),
    [
        (
            "md-vision",
            ("--allow-path", "{tmp}", "--allow-host", "none"),
            {},
            {"index_md", "read_md_with_images"},
        ),
        ("markfetch", (), {"HOME": "{tmp}"}, {"fetch_markdown"}),
        (
            "vision-bridge",
            (),
            {
                "VISION_API_BASE_URL": "http://127.0.0.1:9/v1",
                "VISION_API_KEY": "unused",
                "VISION_MODEL": "unused",
                "VISION_CACHE_DIR": "{tmp}/cache",
            },
            {"analyze_image", "ocr_image", "compare_images"},
        ),
    ],
)
def test_inspector_tools_list_shows_titles_and_output_schemas(
    inspector: None, tmp_path: Path, command: str, args: tuple[str, ...], env: dict[str, str], names: set[str]
) -> None:
    tools = _tools_list(
        tmp_path,
        command,
        *(arg.format(tmp=tmp_path) for arg in args),
        env={key: value.format(tmp=tmp_path) for key, value in env.items()},
    )
    assert {tool["name"] for tool in tools} == names
    for tool in tools:
        assert tool.get("title"), tool["name"]
        assert tool.get("outputSchema", {}).get("type") == "object", tool["name"]
        assert tool["annotations"]["title"] == tool["title"]
