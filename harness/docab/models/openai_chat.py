"""``openai/<model>``: OpenAI Chat Completions through the official SDK, for any compatible server.

With ``base_url`` the same client talks to vLLM, Ollama, llama.cpp, OpenRouter or DeepSeek;
``openai/azure/<deployment>`` goes to Azure OpenAI through ``AsyncAzureOpenAI``, which puts the
deployment into the path (``/openai/deployments/<deployment>/chat/completions?api-version=...``). The
neutral conversation becomes the wire format here and nowhere else:

- tool calls are ``function`` calls; arguments that are not a JSON object become a recoverable
  ``ToolCall.parse_error`` (the agent loop tells the model), never a crash;
- tool messages are text-only: a tool result's images are announced by a note in the tool message
  and sent in one user message right after the run of tool messages (a user message may not sit
  between the tool messages answering one assistant turn), always with a text part, since some
  compatible servers reject image-only messages;
- ``reasoning_content`` (or ``reasoning``) shown by a server is kept and echoed back on tool-call
  turns, which DeepSeek's thinking mode requires and other servers ignore.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from docab.messages import Block, Image, Message, Reasoning, Text, ToolCall, ToolSpec
from docab.models.config import ModelConfig
from docab.models.provider import ParsedReply, ProviderModel
from docab.models.retry import MalformedReply
from docab.usage import Usage

REASONING_FIELDS = ("reasoning_content", "reasoning")


def image_url_part(image: Image, detail: str | None = None) -> dict[str, Any]:
    url = f"data:{image.media_type};base64,{base64.b64encode(image.data).decode('ascii')}"
    image_url: dict[str, Any] = {"url": url}
    if detail:
        image_url["detail"] = detail
    return {"type": "image_url", "image_url": image_url}


def _user_content(blocks: Sequence[Block], detail: str | None) -> str | list[dict[str, Any]]:
    if all(isinstance(b, Text) for b in blocks):
        # Plain strings are the most widely accepted form (older llama.cpp and Ollama builds).
        return "\n\n".join(b.text for b in blocks if isinstance(b, Text))
    return [
        {"type": "text", "text": b.text} if isinstance(b, Text) else image_url_part(b, detail) for b in blocks
    ]


def _images_note(count: int) -> str:
    if count == 1:
        return "[this result includes an image; it follows in the next message]"
    return f"[this result includes {count} images; they follow in the next message]"


def _tool_content(message: Message) -> str:
    text = message.text
    images = sum(isinstance(b, Image) for b in message.blocks)
    parts = [text] if text else []
    if images:
        parts.append(_images_note(images))
    content = "\n".join(parts) if parts else "(no output)"
    return f"Tool error: {content}" if message.is_error else content


def to_openai_messages(
    system: str,
    messages: Sequence[Message],
    *,
    reasoning_echo: str = "tool_turns",
    image_detail: str | None = None,
) -> list[dict[str, Any]]:
    """The neutral conversation as Chat Completions ``messages``."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    tool_names: dict[str, str] = {}
    pending: list[tuple[str, tuple[Image, ...]]] = []  # images of the current run of tool messages

    def flush_images() -> None:
        if not pending:
            return
        parts: list[dict[str, Any]] = [{"type": "text", "text": "Images returned by the tool calls above:"}]
        for call_id, images in pending:
            tool = tool_names.get(call_id, "tool")
            count = "1 image" if len(images) == 1 else f"{len(images)} images"
            parts.append({"type": "text", "text": f"{count} from {tool} (call {call_id}):"})
            parts.extend(image_url_part(image, image_detail) for image in images)
        wire.append({"role": "user", "content": parts})
        pending.clear()

    for message in messages:
        if message.role != "tool":
            flush_images()
        if message.role == "user":
            wire.append({"role": "user", "content": _user_content(message.blocks, image_detail)})
        elif message.role == "assistant":
            # Always a string, "" beside tool calls: OpenAI allows null there, but llama-cpp-python's
            # server rejects it (HTTP 500, its request schema wants a string), and its templates fail
            # on a missing key; "" is accepted by every server tried.
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in message.tool_calls
                ]
                tool_names.update((call.id, call.name) for call in message.tool_calls)
            echo = reasoning_echo == "all" or (reasoning_echo == "tool_turns" and message.tool_calls)
            if echo:
                for item in message.reasoning:
                    if item.field in REASONING_FIELDS and item.text:
                        entry[item.field] = item.text
            wire.append(entry)
        else:
            wire.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id or "",
                    "content": _tool_content(message),
                }
            )
            images = tuple(b for b in message.blocks if isinstance(b, Image))
            if images:
                pending.append((message.tool_call_id or "", images))
    flush_images()
    return wire


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
        }
        for t in tools
    ]


def parse_arguments(name: str, raw: Any) -> tuple[dict[str, Any], str | None]:
    """A tool call's arguments as an object, or ``({}, why not)`` for the model to fix."""
    if isinstance(raw, dict):  # some compatible servers send an object, not a string
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None  # no-argument tools: several servers send "" or nothing
    if not isinstance(raw, str):
        return {}, f"The arguments for {name} must be a JSON object; got {type(raw).__name__}."
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        shown = raw if len(raw) <= 200 else raw[:200] + "…"
        return {}, (
            f"The arguments for {name} are not valid JSON ({exc.msg} at position {exc.pos}): {shown!r}. "
            "Call the tool again with a JSON object that matches its schema."
        )
    if not isinstance(value, dict):
        return {}, f"The arguments for {name} must be a JSON object, not {type(value).__name__}."
    return value, None


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # a few servers answer with content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def parse_openai_reply(raw: Mapping[str, Any]) -> ParsedReply:
    choices = raw.get("choices")
    if not isinstance(choices, list) or not choices:
        error = raw.get("error")
        detail = f" (the server said: {error.get('message', error) if isinstance(error, dict) else error})"
        raise MalformedReply("no choices in the reply" + (detail if error else ""))
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise MalformedReply("the first choice has no message")
    text = _message_text(message.get("content")) or (message.get("refusal") or "")
    reasoning: tuple[Reasoning, ...] = ()
    for name in REASONING_FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value:
            reasoning = (Reasoning(text=value, field=name),)
            break
    calls: list[ToolCall] = []
    for index, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") if isinstance(call, dict) else None
        tool = function.get("name") if isinstance(function, dict) else None
        if not isinstance(function, dict) or not isinstance(tool, str) or not tool:
            raise MalformedReply(f"tool call {index} has no function name")
        arguments, error = parse_arguments(tool, function.get("arguments"))
        # Some local servers omit ids; the result must still name the call it answers.
        call_id = call.get("id") or f"call_{index}"
        calls.append(ToolCall(id=str(call_id), name=tool, arguments=arguments, parse_error=error))
    return ParsedReply(
        text=text,
        tool_calls=tuple(calls),
        reasoning=reasoning,
        stop_reason=str(choice.get("finish_reason") or ""),
    )


class OpenAIChatModel(ProviderModel):
    """Chat Completions: api.openai.com, Azure OpenAI, or any compatible server."""

    def build_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], max_tokens: int
    ) -> dict[str, Any]:
        config = self.config
        request: dict[str, Any] = {
            "model": config.model_id,
            "messages": to_openai_messages(
                system, messages, reasoning_echo=config.reasoning_echo, image_detail=config.image_detail
            ),
        }
        if tools:  # several compatible servers reject an empty list
            request["tools"] = to_openai_tools(tools)
        request[max_tokens_param(config)] = max_tokens
        if config.temperature is not None:
            request["temperature"] = config.temperature
        if config.reasoning_effort is not None:
            request["reasoning_effort"] = config.reasoning_effort
        return request

    async def send(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return await self.post_wire("/chat/completions", request)

    def parse(self, raw: Mapping[str, Any]) -> ParsedReply:
        return parse_openai_reply(raw)

    def usage(self, raw: Mapping[str, Any]) -> Usage:
        usage = raw.get("usage")
        if not isinstance(usage, Mapping):
            return Usage.unreported(model=self.name)
        return Usage.from_openai(usage, model=self.name)


def max_tokens_param(config: ModelConfig) -> str:
    """OpenAI's own API and Azure OpenAI want ``max_completion_tokens`` (reasoning models reject
    ``max_tokens``); compatible servers universally accept ``max_tokens`` and not all know the newer name."""
    if config.max_tokens_param != "auto":
        return config.max_tokens_param
    return "max_tokens" if config.base_url and config.platform != "azure" else "max_completion_tokens"
