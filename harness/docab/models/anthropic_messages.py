"""``anthropic/<model>``: the Anthropic Messages API through the official SDK.

Wire-format rules applied here and nowhere else:

- a tool result is a ``tool_result`` block in a user turn, and its images stay inside it as
  ``image`` blocks (the API accepts them there, unlike OpenAI tool messages);
- consecutive tool results (one assistant turn calling several tools) and any user text after them
  merge into one user turn, results first, as the API requires;
- ``thinking`` and ``redacted_thinking`` blocks come back unchanged before the assistant's text and
  tool calls (required when extended thinking is combined with tools);
- with ``prompt_cache`` on, cache breakpoints sit on the tool definitions, the system prompt and the
  newest message, so each turn reads the previous turn's prefix from the cache;
- the API rejects empty text blocks, so none is sent;
- no sampling parameters: API version 2026-10-21 (sent by the SDK 2.x) rejects ``temperature``,
  ``top_p`` and ``top_k`` (the config refuses a temperature for ``anthropic/`` models).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from docab.messages import Block, Image, Message, Reasoning, Text, ToolCall, ToolSpec
from docab.models.config import ModelConfig
from docab.models.provider import ParsedReply, ProviderModel
from docab.models.retry import MalformedReply
from docab.usage import Usage

CACHE_BREAKPOINT = {"type": "ephemeral"}


def _content_blocks(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, Text):
            if block.text:
                wire.append({"type": "text", "text": block.text})
        elif isinstance(block, Image):
            data = base64.b64encode(block.data).decode("ascii")
            wire.append(
                {"type": "image", "source": {"type": "base64", "media_type": block.media_type, "data": data}}
            )
    return wire


def _reasoning_blocks(reasoning: Sequence[Reasoning]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for item in reasoning:
        if item.field:  # another provider's reasoning (a message field, a Responses item): not ours
            continue
        if item.redacted:
            wire.append({"type": "redacted_thinking", "data": item.redacted})
        elif item.signature:  # unsigned reasoning (from another provider) cannot be sent back
            wire.append({"type": "thinking", "thinking": item.text, "signature": item.signature})
    return wire


def to_anthropic_messages(messages: Sequence[Message], *, cache: bool = False) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})

    for message in messages:
        if message.role == "user":
            add("user", _content_blocks(message.blocks) or [{"type": "text", "text": "(empty message)"}])
        elif message.role == "assistant":
            blocks = _reasoning_blocks(message.reasoning) + _content_blocks(message.blocks)
            blocks += [
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                for call in message.tool_calls
            ]
            add("assistant", blocks or [{"type": "text", "text": "(no reply)"}])
        else:
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": _content_blocks(message.blocks) or [{"type": "text", "text": "(no output)"}],
            }
            if message.is_error:
                result["is_error"] = True
            add("user", [result])
    if cache and wire:
        last = wire[-1]["content"][-1]
        if last["type"] not in ("thinking", "redacted_thinking"):  # these take no cache_control
            last["cache_control"] = dict(CACHE_BREAKPOINT)
    return wire


def to_anthropic_tools(tools: Sequence[ToolSpec], *, cache: bool = False) -> list[dict[str, Any]]:
    wire = [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools]
    if cache and wire:
        wire[-1]["cache_control"] = dict(CACHE_BREAKPOINT)
    return wire


def to_anthropic_system(system: str, *, cache: bool = False) -> str | list[dict[str, Any]]:
    if not cache:
        return system
    return [{"type": "text", "text": system, "cache_control": dict(CACHE_BREAKPOINT)}]


def parse_anthropic_reply(raw: Mapping[str, Any]) -> ParsedReply:
    content = raw.get("content")
    if not isinstance(content, list):
        raise MalformedReply("the reply has no content list")
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[Reasoning] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            name = block.get("name")
            call_id = block.get("id")
            if not name or not call_id:
                raise MalformedReply("a tool_use block lacks its name or id")
            arguments = block.get("input")
            error = None
            if not isinstance(arguments, dict):
                error = f"The input for {name} must be a JSON object; got {type(arguments).__name__}."
                arguments = {}
            calls.append(ToolCall(id=str(call_id), name=str(name), arguments=arguments, parse_error=error))
        elif kind == "thinking":
            reasoning.append(
                Reasoning(text=str(block.get("thinking") or ""), signature=str(block.get("signature") or ""))
            )
        elif kind == "redacted_thinking":
            reasoning.append(Reasoning(redacted=str(block.get("data") or "")))
    return ParsedReply(
        text="".join(texts),
        tool_calls=tuple(calls),
        reasoning=tuple(reasoning),
        stop_reason=str(raw.get("stop_reason") or ""),
    )


# The Messages API version Amazon Bedrock and Vertex AI take in the body (not the header): the SDK
# 2.x would send its own newest one, which Bedrock rejects for some models.
PLATFORM_VERSIONS = {"bedrock": "bedrock-2023-05-31", "vertex": "vertex-2023-10-16"}


class AnthropicMessagesModel(ProviderModel):
    """The Messages API: Anthropic's own, or Claude on Amazon Bedrock or Vertex AI. The platform
    clients of the SDK move the model into the path (``/model/<id>/invoke``,
    ``.../publishers/anthropic/models/<model>:rawPredict``) and sign or authorise the request;
    the body is the same."""

    models_path = "/v1/models"  # the client's base URL has no /v1: paths carry it

    def build_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], max_tokens: int
    ) -> dict[str, Any]:
        config = self.config
        cache = config.prompt_cache
        request: dict[str, Any] = {
            "model": config.model_id,
            "messages": to_anthropic_messages(messages, cache=cache),
            "max_tokens": max_tokens,
        }
        if system:
            request["system"] = to_anthropic_system(system, cache=cache)
        if tools:
            request["tools"] = to_anthropic_tools(tools, cache=cache)
        if config.thinking_budget is not None:
            request["thinking"] = {"type": "enabled", "budget_tokens": config.thinking_budget}
            # max_tokens covers thinking too: add the budget so every arm keeps the same answer room.
            request["max_tokens"] = max_tokens + config.thinking_budget
        if config.platform in PLATFORM_VERSIONS:
            request["anthropic_version"] = PLATFORM_VERSIONS[config.platform]
        return request

    async def send(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return await self.post_wire("/v1/messages", request)

    def parse(self, raw: Mapping[str, Any]) -> ParsedReply:
        return parse_anthropic_reply(raw)

    def usage(self, raw: Mapping[str, Any]) -> Usage:
        usage = raw.get("usage")
        if not isinstance(usage, Mapping):
            return Usage.unreported(model=self.name)
        return Usage.from_anthropic(usage, model=self.name)


def build_anthropic_model(
    config: ModelConfig, *, env: Mapping[str, str], role: str = "agent", **runtime: Any
) -> AnthropicMessagesModel:
    """``anthropic/<model>``, ``anthropic/bedrock/<model id>`` or ``anthropic/vertex/<model>``."""
    from docab.models.clients import anthropic_client

    setup = anthropic_client(config, env, role=role)
    return AnthropicMessagesModel(
        config, sdk=setup.sdk, client=setup.client, access=setup.access, role=role, **runtime
    )
