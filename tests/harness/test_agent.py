"""The agent loop: answer protocols, limits, errors kept, budget and images handled the same for every tool."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from docab.agent.budget import OutputBudget
from docab.agent.evidence import PageMap, ReadTracker
from docab.agent.loop import SampleLimits, run_agent
from docab.agent.toolbox.filesystem import filesystem_tools
from docab.messages import Image, Text, ToolResult, ToolSpec
from docab.models.base import ModelError
from tests.harness.corpus import png_bytes, write_document
from tests.harness.fakes import ScriptedModel, submit, turn


class EchoTool:
    """An in-process tool returning a fixed result (stands for any MCP tool)."""

    def __init__(self, name: str, result: ToolResult) -> None:
        self.spec = ToolSpec(name, "test tool", {"type": "object", "properties": {}})
        self.result = result
        self.calls = 0

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        self.calls += 1
        return self.result


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    write_document(tmp_path / "document")
    return tmp_path


def run(model: ScriptedModel, tools: list[Any], **kwargs: Any):  # type: ignore[no-untyped-def]
    options: dict[str, Any] = {
        "system": "sys",
        "prompt": "Question: q?",
        "protocol": "submit_tool",
        "limits": SampleLimits(),
        "budget": OutputBudget(),
    }
    options.update(kwargs)
    return asyncio.run(run_agent(model, tools=tools, **options))


def test_submit_tool_protocol_ends_on_submission(workspace: Path) -> None:
    model = ScriptedModel([turn("looking", ("grep", {"pattern": "Hermes"})), submit("Hermes")])
    trace = run(model, filesystem_tools(workspace))
    assert trace.status == "ok" and trace.submission is not None and trace.submission.answer == "Hermes"
    assert trace.turns == 2 and [c.name for c in trace.tool_calls] == ["grep", "submit_answer"]
    assert "submit_answer" in [t.name for t in model.seen_tools[0]]
    grep_result = model.seen[1][-1]
    assert grep_result.role == "tool" and "Hermes" in grep_result.text
    assert len(trace.usage) == 2 and all(u.role == "agent" for u in trace.usage)


def test_not_answerable_submission(workspace: Path) -> None:
    trace = run(ScriptedModel([submit("", status="not_answerable")]), filesystem_tools(workspace))
    assert trace.submission is not None and trace.submission.scored_answer == "Not answerable"


def test_a_reply_without_submission_gets_a_reminder(workspace: Path) -> None:
    model = ScriptedModel([turn("I think it is Hermes"), submit("Hermes")])
    trace = run(model, filesystem_tools(workspace))
    assert trace.status == "ok" and trace.turns == 2
    assert "submit_answer" in model.seen[1][-1].text  # the reminder


def test_an_invalid_submission_is_an_error_result_and_the_loop_goes_on(workspace: Path) -> None:
    model = ScriptedModel([turn("", ("submit_answer", {"status": "maybe"})), submit("42")])
    trace = run(model, filesystem_tools(workspace))
    assert trace.submission is not None and trace.submission.answer == "42"
    assert model.seen[1][-1].is_error and "status must be" in model.seen[1][-1].text


def test_extraction_protocol_ends_on_a_plain_reply(workspace: Path) -> None:
    model = ScriptedModel([turn("", ("list_files", {})), turn("The robot is Hermes.")])
    trace = run(model, filesystem_tools(workspace), protocol="extraction")
    assert trace.status == "ok" and trace.final_text == "The robot is Hermes." and trace.submission is None
    assert "submit_answer" not in [t.name for t in model.seen_tools[0]]


def test_turn_limit_is_recorded(workspace: Path) -> None:
    model = ScriptedModel(then=turn("", ("list_files", {})))
    trace = run(model, filesystem_tools(workspace), limits=SampleLimits(max_turns=3))
    assert (trace.status, trace.limit_hit, trace.turns) == ("limit", "turns", 3)
    assert "3 model turns" in trace.errors[0]


def test_token_limit_is_checked_before_each_call(workspace: Path) -> None:
    model = ScriptedModel(then=turn("", ("list_files", {}), tokens=400))
    trace = run(model, filesystem_tools(workspace), limits=SampleLimits(max_tokens=1000))
    assert (trace.status, trace.limit_hit) == ("limit", "tokens")
    assert trace.turns == 3  # 400, 800 (under), 1200 (over: stop before a fourth call)
    # A submission in the turn that crosses the budget still counts.
    crossing = run(
        ScriptedModel([turn("", ("list_files", {}), tokens=900), submit("x")]),
        filesystem_tools(workspace),
        limits=SampleLimits(max_tokens=1000),
    )
    assert crossing.status == "ok"


def test_wall_time_limit_cuts_a_slow_model_call(workspace: Path) -> None:
    model = ScriptedModel(then=submit("late"), delay=30)
    trace = run(model, filesystem_tools(workspace), limits=SampleLimits(max_wall_s=0.2))
    assert (trace.status, trace.limit_hit) == ("limit", "wall_time")
    assert trace.submission is None


def test_wall_time_limit_cuts_a_slow_tool(workspace: Path) -> None:
    class SlowTool(EchoTool):
        async def call(self, arguments: dict[str, Any]) -> ToolResult:
            await asyncio.sleep(30)
            return self.result

    slow = SlowTool("slow", ToolResult(blocks=(Text("x"),)))
    trace = run(ScriptedModel([turn("", ("slow", {}))]), [slow], limits=SampleLimits(max_wall_s=0.2))
    assert (trace.status, trace.limit_hit) == ("limit", "wall_time")
    assert trace.tool_calls[-1].name == "slow" and trace.tool_calls[-1].is_error


def test_model_errors_end_the_sample_but_keep_it(workspace: Path) -> None:
    failed = run(
        ScriptedModel([turn("", ("list_files", {})), ModelError("api", "server said 500", retries=2)]),
        filesystem_tools(workspace),
    )
    assert failed.status == "error" and failed.retries == 2 and "500" in failed.errors[0]
    assert failed.turns == 1 and failed.tool_calls  # what happened before the error is kept
    timed_out = run(ScriptedModel([ModelError("timeout", "no answer in 60 s")]), filesystem_tools(workspace))
    assert timed_out.status == "timeout"


def test_a_crashing_model_client_is_an_error_not_an_exception(workspace: Path) -> None:
    def boom(messages: object) -> object:
        raise RuntimeError("client bug")

    trace = run(ScriptedModel([boom]), filesystem_tools(workspace))  # type: ignore[list-item]
    assert trace.status == "error" and "client bug" in trace.errors[0]


def test_unknown_tool_and_duplicate_tool_names(workspace: Path) -> None:
    model = ScriptedModel([turn("", ("rm_rf", {})), submit("x")])
    trace = run(model, filesystem_tools(workspace))
    assert model.seen[1][-1].is_error and "no tool named 'rm_rf'" in model.seen[1][-1].text
    assert trace.status == "ok"
    clash = run(
        ScriptedModel([submit("x")]), [*filesystem_tools(workspace), EchoTool("grep", ToolResult(()))]
    )
    assert clash.status == "error" and "unique" in clash.errors[0]


def test_budget_applies_to_every_tool_and_truncations_are_logged(workspace: Path) -> None:
    long_text = ToolResult(blocks=(Text("z" * 500),))
    mcp_like = EchoTool("mcp_read", long_text)
    model = ScriptedModel(
        [turn("", ("mcp_read", {}), ("read_file", {"path": "document/document.md"})), submit("x")]
    )
    trace = run(model, [*filesystem_tools(workspace), mcp_like], budget=OutputBudget(limit=100))
    records = {c.name: c for c in trace.tool_calls}
    assert records["mcp_read"].truncated and records["read_file"].truncated
    shown = {m.tool_call_id: m.blocks[0].text for m in model.seen[1] if m.role == "tool"}
    texts = list(shown.values())
    # An MCP tool's text costs its characters; read_file's lines cost their own characters, not
    # the line numbers read_file adds (issue 24: both arms are then cut at the same line).
    assert len(texts[0]) <= 100
    document_chars = sum(len(line.split("\t", 1)[1]) + 1 for line in texts[1].splitlines() if "\t" in line)
    assert document_chars <= 100 < len(texts[1])


def test_text_only_model_sees_a_note_where_images_were(workspace: Path) -> None:
    model = ScriptedModel([turn("", ("read_file", {"path": "document/pages/page-0001.png"})), submit("x")])
    model.supports_images = False
    run(model, filesystem_tools(workspace))
    result = model.seen[1][-1]
    assert not any(isinstance(b, Image) for b in result.blocks)
    assert "image omitted: page-0001.png" in result.text


def test_tool_side_usage_is_booked_under_its_role(workspace: Path) -> None:
    meta = {
        "io.github.docab/usage": {
            "provider": "openai",
            "model": "gpt-v",
            "input_tokens": 50,
            "output_tokens": 5,
        }
    }
    sidecar = EchoTool("ocr_image", ToolResult(blocks=(Text("text in the image"),), meta=meta))
    trace = run(ScriptedModel([turn("", ("ocr_image", {})), submit("x")]), [sidecar])
    roles = [u.role for u in trace.usage]
    assert roles.count("tool-side") == 1 and roles.count("agent") == 2
    assert trace.agent_tokens() == 200  # tool-side tokens do not count against the agent's budget


def test_pages_read_are_tracked_through_the_loop(workspace: Path) -> None:
    page_map = PageMap.from_markdown((workspace / "document/document.md").read_text())
    tracker = ReadTracker(page_map, workspace_root=str(workspace))
    args = {"path": "document/document.md", "offset": page_map.starts[2], "limit": 8}  # page 3 whole
    run(
        ScriptedModel([turn("", ("read_file", args)), submit("x")]),
        filesystem_tools(workspace),
        tracker=tracker,
    )
    assert tracker.pages_read == (3,)


def test_a_cached_tool_answer_keeps_its_original_cost_apart(workspace: Path) -> None:
    """vision-bridge reports zero tokens for a cached answer and its original cost beside them: the
    loop books the zeros as spent and keeps the original cost apart (issue 13, finding 10)."""
    report = {
        "provider": "openai",
        "model": "gpt-v",
        "input_tokens": 0,
        "output_tokens": 0,
        "calls": 0,
        "from_cache": True,
        "original_usage": {"input_tokens": 900, "cached_tokens": 100, "output_tokens": 40},
    }
    cached = EchoTool("ocr_image", ToolResult(blocks=(Text("text"),), meta={"io.github.docab/usage": report}))
    fresh_report = {**report, "from_cache": False, "input_tokens": 900, "output_tokens": 40}
    fresh = EchoTool(
        "analyze_image", ToolResult(blocks=(Text("t"),), meta={"io.github.docab/usage": fresh_report})
    )
    trace = run(
        ScriptedModel([turn("", ("ocr_image", {}), ("analyze_image", {})), submit("x")]), [cached, fresh]
    )
    spent = [u for u in trace.usage if u.role == "tool-side"]
    assert [u.total for u in spent] == [0, 940]
    [original] = trace.cached_tool_usage
    assert (original.role, original.model, original.input_uncached, original.cache_read, original.output) == (
        "tool-side",
        "openai/gpt-v",
        800,
        100,
        40,
    )


def test_images_from_any_tool_cost_the_same(workspace: Path) -> None:
    image = Image(png_bytes(), "image/png")
    mcp_like = EchoTool("mcp_image", ToolResult(blocks=(image,)))
    model = ScriptedModel(
        [turn("", ("mcp_image", {}), ("read_file", {"path": "document/pages/page-0001.png"})), submit("x")]
    )
    trace = run(
        model, [*filesystem_tools(workspace), mcp_like], budget=OutputBudget(limit=50, image_cost=100)
    )
    assert all(c.truncated for c in trace.tool_calls if c.name != "submit_answer")
