"""Test doubles for the harness: a scripted model and a model that fails on demand."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from docab.messages import Message, ToolCall, ToolSpec, Turn
from docab.models.base import ModelError
from docab.usage import Usage

Step = Turn | ModelError | Callable[[Sequence[Message]], Turn]


def turn(
    text: str = "", *calls: tuple[str, dict[str, Any]], tokens: int = 100, latency: float = 0.01
) -> Turn:
    tool_calls = tuple(ToolCall(f"c{i}_{name}", name, args) for i, (name, args) in enumerate(calls))
    return Turn(text, tool_calls, Usage(input_uncached=tokens - 10, output=10, model="fake"), latency)


def submit(answer: str, status: str = "answered") -> Turn:
    return turn("", ("submit_answer", {"status": status, "answer": answer}))


@dataclass
class ScriptedModel:
    """Plays ``steps`` in order (a Turn, a ModelError to raise, or a function of the messages);
    after the script, repeats ``then``. ``delay`` sleeps before each answer."""

    steps: list[Step] = field(default_factory=list)
    then: Step | None = None
    delay: float = 0.0
    name: str = "fake/scripted"
    supports_images: bool = True
    is_baseline: bool = False
    seen: list[list[Message]] = field(default_factory=list)
    seen_tools: list[list[ToolSpec]] = field(default_factory=list)

    async def generate(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_output_tokens: int
    ) -> Turn:
        self.seen.append(list(messages))
        self.seen_tools.append(list(tools))
        if self.delay:
            await asyncio.sleep(self.delay)
        step = self.steps.pop(0) if self.steps else self.then
        if step is None:
            raise AssertionError("the scripted model ran out of steps")
        if isinstance(step, ModelError):
            raise step
        if callable(step) and not isinstance(step, Turn):
            return step(messages)
        return step
