"""The harness's one neutral conversation format: messages, their blocks, tool calls and results,
and a model's turn.

Everything inside the harness (agent loop, tools, baseline policy, transcripts) speaks these types;
they are converted to a provider's wire format only at the provider edge (``docab.models``). With
:mod:`docab.usage` this is the harness's ground floor: it imports nothing of docab but the usage
record, and every layer above may import it (``[tool.importlinter]`` in pyproject.toml).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from docab.usage import Usage


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Image:
    data: bytes
    media_type: str  # image/png, image/jpeg, image/gif, image/webp
    name: str = ""  # where it came from (e.g. "pages/page-0003.png"), for text-only placeholders

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


Block = Text | Image


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for.

    ``parse_error`` is set when the model's arguments were unusable (not JSON, or not a JSON object);
    ``arguments`` is then empty. The agent loop answers such a call with ``ToolResult.error(parse_error)``
    instead of running the tool, so the model can correct itself: a recoverable turn, not a failure.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    parse_error: str | None = None


@dataclass(frozen=True)
class Reasoning:
    """Reasoning a model showed, kept so that it can go back to providers that require it.

    Anthropic: a ``thinking`` block (``text`` and ``signature``) or a ``redacted_thinking`` block
    (``redacted`` holds its opaque data); both must be returned unchanged with tool results.
    OpenAI-compatible servers (DeepSeek, vLLM, OpenRouter): ``text`` from the message field named
    ``field`` (``reasoning_content`` or ``reasoning``); DeepSeek requires it back on tool-call turns.
    """

    text: str = ""
    signature: str = ""
    redacted: str = ""
    field: str = ""


@dataclass(frozen=True)
class ToolSpec:
    """What a model is told about a tool: the same for filesystem tools and MCP tools."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns. ``meta`` carries side information (e.g. sidecar usage), never shown to the model."""

    blocks: tuple[Block, ...]
    is_error: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    truncated: bool = False  # the shared output budget cut this result

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(blocks=(Text(message),), is_error=True)

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks if isinstance(b, Text))

    @property
    def images(self) -> tuple[Image, ...]:
        return tuple(b for b in self.blocks if isinstance(b, Image))


Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class Message:
    """One conversation entry.

    user: ``blocks``. assistant: ``blocks`` (text), ``tool_calls`` and any ``reasoning`` the model
    showed (build it with ``Turn.message()`` so the reasoning is kept). tool: the result of one call,
    ``tool_call_id`` naming it, ``blocks`` its content and ``is_error`` its status.
    """

    role: Role
    blocks: tuple[Block, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    reasoning: tuple[Reasoning, ...] = ()

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", blocks=(Text(text),))

    @classmethod
    def assistant(
        cls, text: str = "", tool_calls: tuple[ToolCall, ...] = (), reasoning: tuple[Reasoning, ...] = ()
    ) -> Message:
        return cls(
            role="assistant", blocks=(Text(text),) if text else (), tool_calls=tool_calls, reasoning=reasoning
        )

    @classmethod
    def tool(cls, call_id: str, result: ToolResult) -> Message:
        return cls(role="tool", blocks=result.blocks, tool_call_id=call_id, is_error=result.is_error)

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks if isinstance(b, Text))


@dataclass(frozen=True)
class Turn:
    """One model call's outcome.

    ``latency_s`` covers the whole call including retries and their back-off (not the time spent
    queued for a provider concurrency slot); ``retries`` counts the attempts after the first;
    ``stop_reason`` is the provider's own value (``stop``/``length``/``tool_calls``,
    ``end_turn``/``max_tokens``/``tool_use``); ``reasoning`` is what the model showed of its thinking;
    ``raw`` is the provider's response as plain JSON data.
    """

    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    latency_s: float
    retries: int = 0
    stop_reason: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    reasoning: tuple[Reasoning, ...] = ()

    def message(self) -> Message:
        """The assistant message to append to the conversation (keeps reasoning providers need back)."""
        return Message.assistant(self.text, self.tool_calls, self.reasoning)
