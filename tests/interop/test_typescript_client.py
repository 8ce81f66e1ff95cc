"""The three servers under the official TypeScript SDK's MCP client, the client stack of Claude
Desktop and the MCP Inspector (tests/interop/ts_client), over stdio, as a user installs them.

Every other test of the servers uses the Python SDK's client, the same SDK the servers are built
on, so a wire detail both sides of one SDK share (a field name, a schema, a protocol version)
would pass there and fail in a real client. The TypeScript client also checks each result's
structuredContent against the tool's outputSchema: a call that returns passed that check.

Run with ``-m interop`` after ``npm ci`` in tests/interop/ts_client (what .ci/run does); without
node or those packages the tests skip, saying which is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.support.http_server import LocalServer, Reply

pytestmark = pytest.mark.interop

CLIENT_DIR = Path(__file__).parent / "ts_client"
BIN = Path(sys.executable).parent


def _drive(
    command: str, args: list[str], calls: list[dict[str, Any]], env: dict[str, str] | None = None
) -> Any:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (the TypeScript client runs on Node.js >= 18)")
    if not (CLIENT_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        pytest.skip("the TypeScript client is not installed: run 'npm ci' in tests/interop/ts_client")
    plan = {"command": str(BIN / command), "args": args, "env": env or {}, "calls": calls}
    done = subprocess.run(
        [node, str(CLIENT_DIR / "client.mjs"), json.dumps(plan)],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=CLIENT_DIR,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert "failed" not in result, result.get("failed")
    return result


def _text(call: dict[str, Any]) -> str:
    return "\n".join(part["text"] for part in call["content"] if part["type"] == "text")


def test_md_vision_index_and_read_with_an_image_and_its_refusals(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.md").write_text(
        "# Report\n\n## Results\n\nRevenue rose.\n\n![chart](chart.png)\n\n## Other\n\nMore.\n",
        encoding="utf-8",
    )
    Image.new("RGB", (64, 32), (200, 10, 10)).save(docs / "chart.png")
    report = str(docs / "report.md")
    result = _drive(
        "md-vision",
        ["--allow-path", str(docs), "--allow-host", "none"],
        [
            {"name": "index_md", "arguments": {"uri": report}},
            {"name": "read_md_with_images", "arguments": {"uri": report, "section": "## Results"}},
            {"name": "read_md_with_images", "arguments": {"uri": "/etc/passwd"}},
            {"name": "index_md", "arguments": {"uri": report, "bogus": 1}},
        ],
    )
    assert result["server"]["name"] == "md-vision"
    assert {t["name"] for t in result["tools"]} == {"index_md", "read_md_with_images"}
    assert all(t["outputSchema"] and t["readOnlyHint"] for t in result["tools"])
    index, read, outside, bogus = result["calls"]
    assert not index.get("threw") and not index["isError"] and "## Results" in _text(index)
    assert index["structured"] is not None  # and valid against the outputSchema, or the client threw
    assert not read["isError"] and "Revenue rose." in _text(read)
    (image,) = [part for part in read["content"] if part["type"] == "image"]
    assert image["mimeType"] == "image/png" and image["bytes"] > 0
    assert outside["isError"] and "outside the allowed paths" in _text(outside)
    assert bogus["isError"] and "bogus" in _text(bogus) and "Traceback" not in _text(bogus)


def test_markfetch_fetches_a_loopback_page_it_is_allowed_and_refuses_one_it_is_not() -> None:
    page = (
        "<html><head><title>Tide tables</title></head><body><nav><a href='/'>Home</a></nav>"
        "<article><h1>Tide tables</h1><p>The spring tide at the harbour reaches 4.2 metres, "
        "two days after the full moon, and the neap tide 2.1 metres a week later.</p>"
        "<p>Boats moor on the inner quay when the tide is low.</p></article></body></html>"
    )
    with LocalServer({"/tides": Reply(body=page, content_type="text/html; charset=utf-8")}) as server:
        url = server.url("/tides")
        allowed = _drive(
            "markfetch",
            ["--allow-host", "127.0.0.1"],
            [{"name": "fetch_markdown", "arguments": {"url": url}}],
        )
        refused = _drive("markfetch", [], [{"name": "fetch_markdown", "arguments": {"url": url}}])
    assert [t["name"] for t in allowed["tools"]] == ["fetch_markdown"]
    (fetched,) = allowed["calls"]
    assert not fetched.get("threw") and not fetched["isError"], fetched
    assert "4.2 metres" in _text(fetched) and "Home" not in _text(fetched)
    assert fetched["structured"] is not None
    (denied,) = refused["calls"]
    assert (
        denied["isError"] and _text(denied).startswith("[network_error]") and "--allow-host" in _text(denied)
    )


def test_vision_bridge_offline_ocr_and_an_unknown_tool(tmp_path: Path) -> None:
    if shutil.which("tesseract") is None:
        pytest.skip("tesseract is not installed (vision-bridge's offline backend)")
    from PIL import ImageDraw, ImageFont

    image = Image.new("RGB", (600, 120), "white")
    ImageDraw.Draw(image).text((20, 30), "HARBOUR 42", fill="black", font=ImageFont.load_default(size=48))
    path = tmp_path / "sign.png"
    image.save(path)
    result = _drive(
        "vision-bridge",
        [],
        [
            {"name": "ocr_image", "arguments": {"image": str(path)}},
            {"name": "describe_image", "arguments": {"image": str(path)}},
        ],
        env={"VISION_BACKEND": "tesseract", "VISION_ALLOW_PATHS": str(tmp_path)},
    )
    assert {t["name"] for t in result["tools"]} == {"analyze_image", "ocr_image", "compare_images"}
    ocr, unknown = result["calls"]
    assert not ocr.get("threw") and not ocr["isError"], ocr
    assert "HARBOUR" in _text(ocr) and ocr["structured"] is not None
    assert unknown["isError"] and "analyze_image" in _text(unknown)
