"""The agent loop: one model and one tool set on one question, within the sample's limits.

The loop is the same for every arm and every model (LLM clients and the offline baseline):

1. call the model with the system prompt, the conversation and the tool specs;
2. run each tool call in order; every result (filesystem or MCP, error or not) passes through the
   one :class:`OutputBudget`, images are replaced by a note for a text-only model, tool-side token
   use is read from the result's ``_meta``, and the pages shown are tracked;
3. stop when the answer protocol is satisfied (``submit_answer`` called, or a reply without tool
   calls under the extraction protocol), or when a limit is hit. Under ``submit_tool`` a reply in
   prose gets a reminder; after ``prose_fallback_after`` reminders (0: never) the next prose reply
   ends the loop with ``prose_fallback`` set, and the runner extracts the answer from it.

Limits (turns, agent tokens, wall time) are checked before each model call, and the wall time
also bounds every await; a limit that is hit is recorded, with status ``limit``. A model failure
ends the sample with status ``error`` (``timeout`` for a model call that timed out): the sample is
kept and scores 0 (intention-to-treat); so does a wall time that runs out while a model call is
being retried (a rate limit, a 5xx): that is the provider's failure, not the model's outcome.
Tokens billed for replies that could not be used are recorded either way. Nothing is raised to
the caller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from docab.agent.answer import REMINDER, SUBMIT_TOOL, Submission, parse_submission
from docab.agent.budget import OutputBudget
from docab.agent.document_lines import document_lines
from docab.agent.evidence import ReadTracker
from docab.agent.toolbox.base import Tool
from docab.limits import SampleLimits
from docab.log.events import Event, MessageEvent, ModelErrorEvent, ModelTurnEvent, ToolResultEvent
from docab.log.records import AnswerProtocol, Status, ToolCallRecord
from docab.messages import Message, Text, ToolCall, ToolResult, Turn
from docab.models.base import Model, ModelError
from docab.models.meter import SpendCapReached
from docab.models.pacing import RATE_LIMIT_PAUSE
from docab.models.retry import CALL_TRACE, RetryTrace
from docab.protocol import SUBMIT_TOOL_NAME
from docab.usage import Usage

Clock = Callable[[], float]
# Told the outcome of every model call: None for a reply, the ModelError of a failed call (after the
# client's retries). The runner's circuit breaker listens (docab.runner.breaker).
CallObserver = Callable[[ModelError | None], None]


@dataclass
class AgentTrace:
    """Everything one run of the loop produced; the runner turns it into a RunRecord and a transcript."""

    status: Status = "ok"
    limit_hit: str | None = None
    submission: Submission | None = None
    final_text: str = ""
    usage: list[Usage] = field(default_factory=list)
    cached_tool_usage: list[Usage] = field(default_factory=list)  # original cost of cached tool answers
    model_time_s: float = 0.0
    tool_time_s: float = 0.0
    wall_time_s: float = 0.0
    turns: int = 0
    retries: int = 0
    nudges: int = 0  # reminders to call submit_answer after a reply in prose
    prose_fallback: bool = False  # stopped on a prose answer after ``prose_fallback_after`` nudges
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)  # the transcript, in order (``docab.log.events``)

    def agent_tokens(self) -> int:
        """The agent's tokens as the token limit counts them: a reply served from the response
        cache counts what it cost when it was made, so a replay stops where the original run did."""
        return sum((u.cached_original() or u).total for u in self.usage if u.role == "agent")


class _LimitHit(Exception):
    def __init__(self, which: str) -> None:
        self.which = which


def _without_images(result: ToolResult) -> ToolResult:
    """For a text-only model: each image becomes a note naming it (the model clients' own wording),
    before the budget counts the result, so the budget sees what the model sees."""
    if not result.images:
        return result
    from docab.models.text_only import strip_blocks

    return ToolResult(strip_blocks(result.blocks), result.is_error, result.meta, result.truncated)


async def run_agent(
    model: Model,
    *,
    system: str,
    prompt: str,
    tools: Sequence[Tool],
    protocol: AnswerProtocol,
    limits: SampleLimits,
    budget: OutputBudget,
    tracker: ReadTracker | None = None,
    clock: Clock = time.monotonic,
    on_call: CallObserver | None = None,
    prose_fallback_after: int = 0,
    may_call: Callable[[], bool] | None = None,
) -> AgentTrace:
    """Run the agent on one question until it answers or a limit ends it.

    ``may_call`` is asked before each model call; when it says no (the run's spend cap is
    reached) the loop raises :class:`~docab.models.meter.SpendCapReached` and the sample ends
    unrecorded."""
    trace = AgentTrace()
    by_name: dict[str, Tool] = {}
    for tool in tools:
        # The launcher refuses such arms at start-up; this guards direct callers of the loop.
        if tool.spec.name in by_name or (protocol == "submit_tool" and tool.spec.name == SUBMIT_TOOL_NAME):
            trace.status = "error"
            trace.errors.append(
                f"more than one tool is named {tool.spec.name!r} (counting the answer tool); "
                "tool names must be unique in an arm"
            )
            return trace
        by_name[tool.spec.name] = tool
    specs = [t.spec for t in tools] + ([SUBMIT_TOOL] if protocol == "submit_tool" else [])
    trace.messages.append(Message.user(prompt))
    trace.events.append(MessageEvent.of(trace.messages[-1]))
    started = clock()
    deadline = started + limits.max_wall_s

    def remaining() -> float:
        left = deadline - clock()
        if left <= 0:
            raise _LimitHit("wall_time")
        return left

    try:
        while True:
            if trace.turns >= limits.max_turns:
                raise _LimitHit("turns")
            if trace.agent_tokens() >= limits.max_tokens:
                raise _LimitHit("tokens")
            if may_call is not None and not may_call():
                raise SpendCapReached("the run's spend cap was reached")
            turn = await _model_turn(model, system, trace, specs, limits, remaining, on_call)
            if turn is None:
                return trace
            trace.messages.append(turn.message())  # keeps the reasoning some providers need back
            if turn.text:
                trace.final_text = turn.text
            if not turn.tool_calls:
                if protocol == "extraction":
                    return trace
                if prose_fallback_after and trace.nudges >= prose_fallback_after and turn.text.strip():
                    trace.prose_fallback = True  # its prose is taken through the answer extraction
                    return trace
                trace.nudges += 1
                trace.messages.append(Message.user(REMINDER))
                trace.events.append(MessageEvent.of(trace.messages[-1]))
                continue
            for call in turn.tool_calls:
                if call.name == SUBMIT_TOOL_NAME and protocol == "submit_tool":
                    parsed = call.parse_error or parse_submission(call.arguments)
                    if isinstance(parsed, Submission):
                        trace.submission = parsed
                        result = ToolResult(blocks=(Text("answer submitted"),))
                    else:
                        result = ToolResult.error(f"submit_answer: {parsed}")
                    trace.tool_calls.append(
                        ToolCallRecord(SUBMIT_TOOL_NAME, 0.0, result.is_error, False, dict(call.arguments))
                    )
                    _append_tool_result(trace, call, result, 0.0)
                    continue
                await _tool_call(model, by_name, call, trace, budget, tracker, remaining)
            if trace.submission is not None:
                return trace
    except _LimitHit as hit:
        trace.status, trace.limit_hit = "limit", hit.which
        trace.errors.append(_limit_message(hit.which, limits))
        return trace
    finally:
        trace.wall_time_s = clock() - started


async def _model_turn(
    model: Model,
    system: str,
    trace: AgentTrace,
    specs: list[Any],
    limits: SampleLimits,
    remaining: Callable[[], float],
    on_call: CallObserver | None = None,
) -> Turn | None:
    """One model call; None when it failed (the trace then holds the error status).

    A call still failing when the sample's wall time runs out (retrying a rate limit, a 5xx, a
    timeout, waiting out a ``Retry-After``) ends the sample as that failure, not as a limit: the
    model never got its turn, so the sample counts as errored and ``--retry-errors`` runs it
    again. So does a call that was still waiting for the endpoint's rate-limit pause (set by
    another sample's 429). Tokens billed for replies that could not be used are recorded either way."""
    began = time.perf_counter()
    scope = CALL_TRACE.set(None)
    try:
        async with asyncio.timeout(remaining()):
            turn = await model.generate(
                system, list(trace.messages), specs, max_output_tokens=limits.max_output_tokens
            )
    except TimeoutError:
        trace.model_time_s += time.perf_counter() - began
        call = _billed(trace, CALL_TRACE.get())
        if call is not None and not call.failures and call.waiting_on == RATE_LIMIT_PAUSE:
            _model_failed(trace, _paused(model, limits), on_call)
            return None
        if call is None or not call.failures:
            raise _LimitHit("wall_time") from None
        _model_failed(trace, _cut_short(model, call, limits), on_call)
        return None
    except ModelError as exc:
        trace.model_time_s += time.perf_counter() - began
        _billed(trace, CALL_TRACE.get())
        _model_failed(trace, exc, on_call)
        return None
    except Exception as exc:  # a bug in a client must not lose the sample: record it and stop
        trace.model_time_s += time.perf_counter() - began
        _billed(trace, CALL_TRACE.get())
        trace.status = "error"
        trace.errors.append(f"model call failed unexpectedly: {type(exc).__name__}: {exc}")
        trace.events.append(
            ModelErrorEvent(kind="unexpected", error=f"{type(exc).__name__}: {exc}", retries=0)
        )
        return None
    finally:
        CALL_TRACE.reset(scope)
    if on_call is not None:
        on_call(None)
    trace.model_time_s += turn.latency_s
    trace.turns += 1
    trace.retries += turn.retries
    trace.usage.append(turn.usage if turn.usage.role == "agent" else turn.usage.with_role("agent"))
    trace.events.append(ModelTurnEvent.of(trace.turns, turn))
    return turn


def _billed(trace: AgentTrace, call: RetryTrace | None) -> RetryTrace | None:
    """Record the tokens billed for the unusable replies of a call that did not succeed."""
    if call is not None:
        trace.usage.extend(u if u.role == "agent" else u.with_role("agent") for u in call.billed)
    return call


def _cut_short(model: Model, call: RetryTrace, limits: SampleLimits) -> ModelError:
    """The failure of a call the sample's wall time cut short while it was being retried."""
    failure = call.failures[-1]
    retries = f" (after {call.retries} retries)" if call.retries else ""
    url = getattr(model, "url", None)
    return ModelError(
        failure.kind,
        f"{failure.message}{retries}; the sample's wall time of {limits.max_wall_s:g} s ran out "
        "before the call succeeded",
        retries=call.retries,
        status=failure.status,
        role="agent",
        model=model.name,
        url=url if isinstance(url, str) else None,
    )


def _paused(model: Model, limits: SampleLimits) -> ModelError:
    """The failure of a call that never went out: the endpoint was paused by a rate limit (another
    call's 429 or exhausted-limit headers) when the sample's wall time ran out."""
    url = getattr(model, "url", None)
    return ModelError(
        "rate_limit",
        "the call waited for the endpoint's rate-limit pause (a 429 or exhausted-limit headers on "
        f"another call) and the sample's wall time of {limits.max_wall_s:g} s ran out before it was sent",
        role="agent",
        model=model.name,
        url=url if isinstance(url, str) else None,
    )


def _model_failed(trace: AgentTrace, exc: ModelError, on_call: CallObserver | None) -> None:
    trace.retries += exc.retries
    trace.status = "timeout" if exc.kind == "timeout" else "error"
    trace.errors.append(f"model call failed ({exc.kind}): {exc}")
    trace.events.append(ModelErrorEvent(kind=exc.kind, error=str(exc), retries=exc.retries))
    if on_call is not None:
        on_call(exc)


async def _tool_call(
    model: Model,
    by_name: dict[str, Tool],
    call: ToolCall,
    trace: AgentTrace,
    budget: OutputBudget,
    tracker: ReadTracker | None,
    remaining: Callable[[], float],
) -> None:
    tool = by_name.get(call.name)
    began = time.perf_counter()
    if call.parse_error:  # the model's arguments were not a JSON object: let it correct itself
        result = ToolResult.error(call.parse_error)
    elif tool is None:
        offered = ", ".join(sorted(by_name)) or "none"
        result = ToolResult.error(f"there is no tool named {call.name!r}; the tools are: {offered}")
    else:
        try:
            async with asyncio.timeout(remaining()):
                result = await tool.call(dict(call.arguments))
        except TimeoutError:
            trace.tool_time_s += time.perf_counter() - began
            trace.tool_calls.append(
                ToolCallRecord(call.name, time.perf_counter() - began, True, False, dict(call.arguments))
            )
            raise _LimitHit("wall_time") from None
        except Exception as exc:  # tools return errors as results; this is a bug, kept visible
            trace.errors.append(f"tool {call.name} raised {type(exc).__name__}: {exc}")
            result = ToolResult.error(f"{call.name} failed unexpectedly ({type(exc).__name__})")
    duration = time.perf_counter() - began
    trace.tool_time_s += duration
    sidecar = Usage.from_tool_meta(result.meta)
    if sidecar is not None:
        trace.usage.append(sidecar)
    original = Usage.cached_original_from_tool_meta(result.meta)
    if original is not None:
        trace.cached_tool_usage.append(original)
    if not model.supports_images:
        result = _without_images(result)
    shown = budget.apply(result, document_lines(call, result))
    if tracker is not None:
        tracker.observe(call, shown)
    trace.tool_calls.append(
        ToolCallRecord(call.name, round(duration, 6), shown.is_error, shown.truncated, dict(call.arguments))
    )
    _append_tool_result(trace, call, shown, duration)


def _append_tool_result(trace: AgentTrace, call: ToolCall, result: ToolResult, duration: float) -> None:
    trace.messages.append(Message.tool(call.id, result))
    trace.events.append(ToolResultEvent.of(call, result, duration))


def _limit_message(which: str, limits: SampleLimits) -> str:
    if which == "turns":
        return f"limit hit: {limits.max_turns} model turns without a final answer"
    if which == "tokens":
        return f"limit hit: the agent used {limits.max_tokens:,} tokens or more without a final answer"
    return f"limit hit: wall time of {limits.max_wall_s:g} s for the sample"
