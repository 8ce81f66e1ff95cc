"""``openai/<model>`` with ``api = "responses"``: the OpenAI Responses API (``POST /responses``).

The same neutral conversation as Chat Completions, in the Responses API's items:

- the system prompt is ``instructions``; user turns are ``message`` items of ``input_text`` and
  ``input_image`` parts;
- an assistant turn becomes its reasoning items, its text (an assistant ``message``) and one
  ``function_call`` item per tool call (``call_id``, ``name``, ``arguments`` as a JSON string);
- a tool result is a ``function_call_output`` item whose ``output`` holds the text and, unlike a
  Chat Completions tool message, the images themselves (``input_image`` parts), so no extra user
  message is needed; an error result starts with ``Tool error:``;
- requests are stateless (``store: false``: nothing is kept at OpenAI, and the whole history is
  sent each turn). A reasoning item comes back with its ``encrypted_content`` (asked for with
  ``include`` when ``reasoning_effort`` is set) and is sent back before the calls it led to, as
  reasoning models need across tool calls. It is kept in :class:`Reasoning` as ``field =
  "reasoning_item"``, ``text`` = its summary, ``signature`` = its id, ``redacted`` = the encrypted
  content; an item without encrypted content cannot be resent without ``store`` and is dropped;
- usage: ``input_tokens`` includes ``input_tokens_details.cached_tokens``, ``output_tokens``
  includes ``output_tokens_details.reasoning_tokens`` (:meth:`Usage.from_openai_responses`);
- ``stop_reason`` is the response's ``status``, or the reason it is ``incomplete``
  (``max_output_tokens``, ``content_filter``); a ``failed`` response is a malformed reply (retried).

With ``openai/azure/<deployment>`` the same requests go to Azure's ``/openai/responses``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from docab.messages import Block, Image, Message, Reasoning, Text, ToolCall, ToolSpec
from docab.models.openai_chat import parse_arguments
from docab.models.provider import ParsedReply, ProviderModel
from docab.models.retry import MalformedReply
from docab.usage import Usage

REASONING_FIELD = "reasoning_item"  # Reasoning.field of a Responses reasoning item
DEFAULT_DETAIL = "auto"  # the API requires a detail on input images


def _image_part(image: Image, detail: str) -> dict[str, Any]:
    data = base64.b64encode(image.data).decode("ascii")
    return {"type": "input_image", "image_url": f"data:{image.media_type};base64,{data}", "detail": detail}


def _input_parts(blocks: Sequence[Block], detail: str) -> list[dict[str, Any]]:
    return [
        {"type": "input_text", "text": b.text} if isinstance(b, Text) else _image_part(b, detail)
        for b in blocks
        if not isinstance(b, Text) or b.text
    ]


def _reasoning_items(reasoning: Sequence[Reasoning]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for item in reasoning:
        if item.field != REASONING_FIELD or not item.redacted:
            continue  # another provider's reasoning, or an item that only a stored response could resend
        entry: dict[str, Any] = {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": item.text}] if item.text else [],
            "encrypted_content": item.redacted,
        }
        if item.signature:
            entry["id"] = item.signature
        items.append(entry)
    return items


def _tool_output(message: Message, detail: str) -> str | list[dict[str, Any]]:
    images = [b for b in message.blocks if isinstance(b, Image)]
    text = message.text
    if message.is_error:
        text = f"Tool error: {text or '(no output)'}"
    if not images:
        return text or "(no output)"
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": text}] if text else []
    return parts + [_image_part(image, detail) for image in images]


def to_responses_input(
    messages: Sequence[Message], *, image_detail: str | None = None
) -> list[dict[str, Any]]:
    """The neutral conversation as the Responses API's ``input`` items."""
    detail = image_detail or DEFAULT_DETAIL
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "user":
            parts = _input_parts(message.blocks, detail) or [
                {"type": "input_text", "text": "(empty message)"}
            ]
            items.append({"type": "message", "role": "user", "content": parts})
        elif message.role == "assistant":
            items.extend(_reasoning_items(message.reasoning))
            if message.text:
                items.append({"type": "message", "role": "assistant", "content": message.text})
            items.extend(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": json.dumps(call.arguments),
                }
                for call in message.tool_calls
            )
        else:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": _tool_output(message, detail),
                }
            )
    return items


def to_responses_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    # strict: False: MCP tools' schemas are not written for strict mode (optional fields, no
    # additionalProperties: false), which would reject them.
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.input_schema,
            "strict": False,
        }
        for t in tools
    ]


def parse_responses_reply(raw: Mapping[str, Any]) -> ParsedReply:
    status = str(raw.get("status") or "")
    output = raw.get("output")
    error = raw.get("error")
    if status == "failed" or not isinstance(output, list):
        said = error.get("message", error) if isinstance(error, dict) else error
        detail = f" (the server said: {said})" if said else ""
        what = "the response failed" if status == "failed" else "the reply has no output list"
        raise MalformedReply(what + detail)
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[Reasoning] = []
    for index, item in enumerate(output):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            for part in item.get("content") or ():
                if isinstance(part, dict) and part.get("type") == "output_text":
                    texts.append(str(part.get("text") or ""))
                elif isinstance(part, dict) and part.get("type") == "refusal":
                    texts.append(str(part.get("refusal") or ""))
        elif kind == "function_call":
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise MalformedReply(f"output item {index} is a function call without a name")
            arguments, problem = parse_arguments(name, item.get("arguments"))
            call_id = item.get("call_id") or item.get("id") or f"call_{index}"
            calls.append(ToolCall(id=str(call_id), name=name, arguments=arguments, parse_error=problem))
        elif kind == "reasoning":
            summary = "\n\n".join(
                str(part.get("text") or "") for part in item.get("summary") or () if isinstance(part, dict)
            )
            reasoning.append(
                Reasoning(
                    text=summary,
                    signature=str(item.get("id") or ""),
                    redacted=str(item.get("encrypted_content") or ""),
                    field=REASONING_FIELD,
                )
            )
    details = raw.get("incomplete_details")
    reason = details.get("reason") if status == "incomplete" and isinstance(details, dict) else None
    return ParsedReply(
        text="".join(texts),
        tool_calls=tuple(calls),
        reasoning=tuple(reasoning),
        stop_reason=str(reason or status),
    )


class OpenAIResponsesModel(ProviderModel):
    """The Responses API: api.openai.com, Azure OpenAI, or a server that implements it."""

    def build_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], max_tokens: int
    ) -> dict[str, Any]:
        config = self.config
        request: dict[str, Any] = {
            "model": config.model_id,
            "input": to_responses_input(messages, image_detail=config.image_detail),
            "max_output_tokens": max_tokens,
            "store": False,
        }
        if system:
            request["instructions"] = system
        if tools:
            request["tools"] = to_responses_tools(tools)
        if config.temperature is not None:
            request["temperature"] = config.temperature
        if config.reasoning_effort is not None:
            request["reasoning"] = {"effort": config.reasoning_effort}
            request["include"] = ["reasoning.encrypted_content"]
        return request

    async def send(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return await self.post_wire("/responses", request)

    def parse(self, raw: Mapping[str, Any]) -> ParsedReply:
        return parse_responses_reply(raw)

    def usage(self, raw: Mapping[str, Any]) -> Usage:
        usage = raw.get("usage")
        return Usage.from_openai_responses(usage if isinstance(usage, Mapping) else None, model=self.name)
