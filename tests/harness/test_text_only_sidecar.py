"""A text-only model with md-vision and vision-bridge as its eyes, end to end.

The agent model and the vision model are both answered by the loopback stub (told apart by the
model name in the request); md-vision and vision-bridge run as real stdio MCP servers, as in
harness/docab/configs/mmlongbench-text-only.toml. What must hold: the agent never receives an image, the
sidecar receives the page image inline from the sample's workspace, and the sidecar's tokens are
booked under the role "tool-side", apart from the agent's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from docab.config import parse_config
from docab.runner.launch import RunRequest, launch
from docab.runner.progress import SilentProgress
from tests.harness.corpus import exact_scorer, make_dataset
from tests.harness.test_runner_providers import answer_for
from tests.support.http_server import Request
from tests.support.llm_stub import LLMStub, openai_reply

AGENT_MODEL, VISION_MODEL = "agent-model", "vision-model"


def script(protocol: str, request: Request):  # type: ignore[no-untyped-def]
    body = request.json()
    messages = body["messages"]
    if body["model"] == VISION_MODEL:
        return openai_reply(
            "The page says the company was founded in 1980.", prompt_tokens=1200, completion_tokens=40
        )
    question = next(m["content"] for m in messages if m["role"] == "user")
    if not any(m["role"] == "tool" for m in messages):
        args = json.dumps({"image": "document/pages/page-0001.png", "format": "plain"})
        return openai_reply(None, tool_calls=[("call_1", "ocr_image", args)])
    status, answer = answer_for(question)
    return openai_reply(
        None, tool_calls=[("call_2", "submit_answer", json.dumps({"status": status, "answer": answer}))]
    )


def test_text_only_model_sees_pages_through_vision_bridge(tmp_path: Path, monkeypatch: Any) -> None:
    if shutil.which("vision-bridge") is None or shutil.which("md-vision") is None:
        pytest.skip("the md-vision and vision-bridge console scripts are not installed in this checkout")
    monkeypatch.setenv("DOCAB_TEST_KEY", "k")
    with LLMStub(script) as stub:
        config = parse_config(
            {
                "name": "text-only",
                "model": {
                    "name": f"openai/{AGENT_MODEL}",
                    "base_url": stub.openai_base_url,
                    "api_key_env": "DOCAB_TEST_KEY",
                    "text_only": True,
                },
                "mcp_servers": {
                    "md-vision": {
                        "command": "md-vision",
                        "args": ["--allow-path", "{workspace}", "--allow-domain", "none"],
                    },
                    "vision-bridge": {
                        "command": "vision-bridge",
                        "env": {
                            "VISION_API_BASE_URL": stub.openai_base_url,
                            "VISION_API_KEY": "{env:DOCAB_TEST_KEY}",
                            "VISION_MODEL": VISION_MODEL,
                            "VISION_ALLOWED_PATHS": "{workspace}",
                            "VISION_CACHE_TTL": "0",
                        },
                    },
                },
                "arms": [{"name": "eyes", "tools": ["fs"], "mcp_servers": ["md-vision", "vision-bridge"]}],
            }
        )
        dataset = make_dataset(tmp_path / "corpus", documents=1)
        outcome = launch(
            RunRequest(config, results_dir=tmp_path / "results", concurrency=1, limit=2),
            dataset=dataset,
            scorer=exact_scorer,
            progress=SilentProgress(),
            say=lambda s: None,
        )
        agent_requests = [r.json() for r in stub.requests_for("openai") if r.json()["model"] == AGENT_MODEL]
        vision_requests = [r.json() for r in stub.requests_for("openai") if r.json()["model"] == VISION_MODEL]

    records = outcome.records
    assert len(records) == 2 and all(r.status == "ok" for r in records), [r.errors for r in records]
    for record in records:
        ocr = [c for c in record.tool_calls if c.name == "ocr_image"]
        assert ocr and not ocr[0].is_error
        sidecar = [u for u in record.usage if u.role == "tool-side"]
        assert [(u.input_total, u.output, u.model) for u in sidecar] == [(1200, 40, f"openai/{VISION_MODEL}")]
        assert all(u.role in ("agent", "tool-side") for u in record.usage)
    # The text-only agent never receives an image part; the vision model gets the page inline.
    assert agent_requests and "image_url" not in json.dumps(agent_requests)
    assert len(vision_requests) == 2
    parts = vision_requests[0]["messages"][-1]["content"]
    assert any(
        p["type"] == "image_url" and p["image_url"]["url"].startswith("data:image/png;base64,") for p in parts
    )
