"""Test doubles for the model layer: a clock that never waits, small real images, a recording model."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Sequence

from docab.messages import Image, Message, ToolSpec, Turn
from docab.usage import Usage

EPOCH = 1_700_000_000.0


class FakeClock:
    """Monotonic and wall time advance only when something sleeps; sleeps are recorded."""

    def __init__(self, now: float = EPOCH) -> None:
        self.elapsed = 0.0
        self.wall = now
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.elapsed

    def now(self) -> float:
        return self.wall + self.elapsed

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.elapsed += seconds
        await asyncio.sleep(0)


def png(width: int = 3, height: int = 2, name: str = "") -> Image:
    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.new("RGB", (width, height), (200, 10, 10)).save(buffer, format="PNG")
    return Image(data=buffer.getvalue(), media_type="image/png", name=name)


class RecordingModel:
    """A Model that answers from a script and remembers what it was asked."""

    name = "fake/recording"
    supports_images = True
    is_baseline = False

    def __init__(self, replies: Sequence[str] = ("ok",)) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[str, list[Message], list[ToolSpec], int]] = []

    async def generate(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_output_tokens: int
    ) -> Turn:
        self.calls.append((system, list(messages), list(tools), max_output_tokens))
        text = self.replies.pop(0) if self.replies else "ok"
        return Turn(
            text=text, tool_calls=(), usage=Usage(input_uncached=7, output=3, model=self.name), latency_s=0.0
        )


def generate_once(model, system: str, messages, tools=(), *, max_output_tokens: int = 64) -> Turn:
    """One call in its own event loop, closing the model's HTTP client in that same loop."""

    async def once() -> Turn:
        try:
            return await model.generate(system, messages, tools, max_output_tokens=max_output_tokens)
        finally:
            await model.aclose()

    return asyncio.run(once())
