"""The harness's one neutral conversation format.

Everything inside the harness (agent loop, tools, baseline policy, transcripts) speaks these types;
they are converted to a provider's wire format only at the provider edge (``harness.models``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Image:
    data: bytes
    media_type: str  # image/png, image/jpeg, image/gif, image/webp

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


Block = Text | Image


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


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

    user: ``blocks``. assistant: ``blocks`` (text) and ``tool_calls``. tool: the result of one call,
    ``tool_call_id`` naming it, ``blocks`` its content and ``is_error`` its status.
    """

    role: Role
    blocks: tuple[Block, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", blocks=(Text(text),))

    @classmethod
    def assistant(cls, text: str = "", tool_calls: tuple[ToolCall, ...] = ()) -> Message:
        return cls(role="assistant", blocks=(Text(text),) if text else (), tool_calls=tool_calls)

    @classmethod
    def tool(cls, call_id: str, result: ToolResult) -> Message:
        return cls(role="tool", blocks=result.blocks, tool_call_id=call_id, is_error=result.is_error)

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks if isinstance(b, Text))
