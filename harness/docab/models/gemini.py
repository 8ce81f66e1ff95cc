"""``google/<model>``: Google's Gemini API through the official ``google-genai`` SDK.

``client.aio.models.generate_content`` sends ``POST /v1beta/models/<model>:generateContent`` with the
key in ``x-goog-api-key``; ``base_url`` points the same client at a proxy or a local stand-in. The
neutral conversation becomes Gemini's ``contents`` here and nowhere else:

- the system prompt is ``system_instruction``; the assistant's role is ``model``;
- tools are ``function_declarations`` whose schema goes as ``parameters_json_schema`` (JSON Schema
  as MCP tools write it, not Gemini's OpenAPI subset); automatic function calling is off;
- a tool call is a ``function_call`` part (``name``, ``args``; ``id`` where the server gives one,
  else the harness names it ``gemini_call_<response id>_<n>`` and sends no id back); a tool result is a
  ``function_response`` part (``{"output": text}``, or ``{"error": text}``) in a user turn, and
  the results of one assistant turn share that turn, with the images they returned after them as
  ``inline_data`` parts, announced by a text part (not every Gemini model takes images inside a
  function response);
- a part's ``thought_signature`` (Gemini 2.5 and later sign their function calls and require the
  signature back) is kept as :class:`Reasoning` (``field`` ``gemini_signature:<call id>`` or
  ``gemini_signature:text``) and returned on the same part; thought summaries (``thought: true``)
  are kept as reasoning text and not sent back.

The reply is read in its wire form (camelCase JSON, as ``Turn.raw`` keeps it). Usage follows
:meth:`Usage.from_gemini`. The SDK's own retries stay off (its default); docab's loop retries.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from docab.messages import Image, Message, Reasoning, Text, ToolCall, ToolSpec
from docab.models.causes import Failure, credential_failure, provider_message, shorten, transport_cause
from docab.models.config import ModelConfig
from docab.models.provider import PREFLIGHT_TIMEOUT_S, ParsedReply, Probe, ProviderModel
from docab.models.retry import MalformedReply, status_failure, unreadable_failure
from docab.usage import Usage

GEMINI_URL = "https://generativelanguage.googleapis.com"
SYNTHETIC_ID = "gemini_call_"  # ids the harness gave calls that came without one
SIGNATURE_FIELD = "gemini_signature:"
THOUGHT_FIELD = "gemini_thought"
# What the response carries besides the reply (headers, SDK bookkeeping): not part of the record.
_NOT_WIRE = {"sdk_http_response", "automatic_function_calling_history", "parsed"}


def _signature_part(reasoning: Sequence[Reasoning], key: str) -> dict[str, Any]:
    for item in reasoning:
        if item.field == SIGNATURE_FIELD + key and item.signature:
            return {"thought_signature": item.signature}  # base64, as the wire carries it
    return {}


def _inline(image: Image) -> dict[str, Any]:
    return {
        "inline_data": {"mime_type": image.media_type, "data": base64.b64encode(image.data).decode("ascii")}
    }


def _images_note(images: Sequence[tuple[str, str, int]]) -> str:
    said = ", ".join(f"{count} from {tool} (call {call_id})" for call_id, tool, count in images)
    return f"Images returned by the tool calls above: {said}."


def to_gemini_contents(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The neutral conversation as Gemini ``contents``: the SDK's field names (snake_case), plain
    JSON (bytes in base64, as on the wire), so a request hashes for the response cache."""
    wire: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    pending: list[tuple[str, tuple[Image, ...]]] = []  # images of the current run of tool results

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if wire and wire[-1]["role"] == role:
            wire[-1]["parts"].extend(parts)
        else:
            wire.append({"role": role, "parts": parts})

    def flush_images() -> None:
        if not pending:
            return
        note = [(call_id, names.get(call_id, "tool"), len(images)) for call_id, images in pending]
        parts: list[dict[str, Any]] = [{"text": _images_note(note)}]
        for _, images in pending:
            parts.extend(_inline(i) for i in images)
        add("user", parts)
        pending.clear()

    for message in messages:
        if message.role != "tool":
            flush_images()
        if message.role == "user":
            parts: list[dict[str, Any]] = []
            for block in message.blocks:
                if isinstance(block, Text):
                    if block.text:
                        parts.append({"text": block.text})
                else:
                    parts.append(_inline(block))
            add("user", parts or [{"text": "(empty message)"}])
        elif message.role == "assistant":
            parts = []
            if message.text:
                parts.append({"text": message.text, **_signature_part(message.reasoning, "text")})
            for call in message.tool_calls:
                names[call.id] = call.name
                function_call: dict[str, Any] = {"name": call.name, "args": call.arguments}
                if not call.id.startswith(SYNTHETIC_ID):
                    function_call["id"] = call.id
                parts.append({"function_call": function_call, **_signature_part(message.reasoning, call.id)})
            add("model", parts or [{"text": "(no reply)"}])
        else:
            call_id = message.tool_call_id or ""
            text = message.text or "(no output)"
            response: dict[str, Any] = {"name": names.get(call_id, "tool"), "response": {}}
            response["response"]["error" if message.is_error else "output"] = text
            if call_id and not call_id.startswith(SYNTHETIC_ID):
                response["id"] = call_id
            add("user", [{"function_response": response}])
            images = tuple(b for b in message.blocks if isinstance(b, Image))
            if images:
                pending.append((call_id, images))
    flush_images()
    return wire


def to_gemini_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    declarations = [
        {"name": t.name, "description": t.description, "parameters_json_schema": t.input_schema}
        for t in tools
    ]
    return [{"function_declarations": declarations}]


def parse_gemini_reply(raw: Mapping[str, Any]) -> ParsedReply:
    """A ``generateContent`` response (wire JSON) as text, tool calls and reasoning."""
    candidates = raw.get("candidates")
    if not isinstance(candidates, list) or not candidates:
        feedback = raw.get("promptFeedback")
        blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if blocked:  # the prompt was refused: an answer with no text, not a broken reply
            return ParsedReply(text="", tool_calls=(), reasoning=(), stop_reason=f"blocked:{blocked}")
        raise MalformedReply("no candidates in the reply")
    candidate = candidates[0]
    if not isinstance(candidate, dict):
        raise MalformedReply("the first candidate is not an object")
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    stop_reason = str(candidate.get("finishReason") or "")
    if not isinstance(parts, list):
        if content is None or isinstance(content, dict):  # e.g. MAX_TOKENS or SAFETY with no parts
            return ParsedReply(text="", tool_calls=(), reasoning=(), stop_reason=stop_reason)
        raise MalformedReply("the first candidate's content has no parts list")
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[Reasoning] = []
    # Ids for calls sent without one, unique across the conversation: the reply's own id, then the index.
    response_id = raw.get("responseId")
    reply_id = f"{response_id}_" if isinstance(response_id, str) and response_id else ""
    for part in parts:
        if not isinstance(part, dict):
            raise MalformedReply("a content part is not an object")
        signature = part.get("thoughtSignature")
        if part.get("thought") is True:
            reasoning.append(Reasoning(text=str(part.get("text") or ""), field=THOUGHT_FIELD))
            continue
        call = part.get("functionCall")
        if isinstance(call, dict):
            name = call.get("name")
            if not isinstance(name, str) or not name:
                raise MalformedReply(f"function call {len(calls)} has no name")
            call_id = str(call.get("id") or f"{SYNTHETIC_ID}{reply_id}{len(calls)}")
            arguments = call.get("args")
            error = None
            if arguments is None:
                arguments = {}
            elif not isinstance(arguments, dict):
                error = f"The arguments for {name} must be a JSON object; got {type(arguments).__name__}."
                arguments = {}
            calls.append(ToolCall(id=call_id, name=name, arguments=arguments, parse_error=error))
            key = call_id
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
            key = "text"
        else:
            continue
        if isinstance(signature, str) and signature:
            reasoning.append(Reasoning(signature=signature, field=SIGNATURE_FIELD + key))
    return ParsedReply(
        text="".join(texts), tool_calls=tuple(calls), reasoning=tuple(reasoning), stop_reason=stop_reason
    )


class GeminiModel(ProviderModel):
    """The Gemini API (``generateContent``) through ``google.genai.Client``."""

    @property
    def url(self) -> str:
        return (self.config.base_url or GEMINI_URL).rstrip("/")

    def build_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], max_tokens: int
    ) -> dict[str, Any]:
        config = self.config
        generation: dict[str, Any] = {
            "max_output_tokens": max_tokens,
            "automatic_function_calling": {"disable": True},
            "http_options": {"timeout": int(config.timeout * 1000)},
        }
        if system:
            generation["system_instruction"] = system
        if tools:
            generation["tools"] = to_gemini_tools(tools)
        if config.temperature is not None:
            generation["temperature"] = config.temperature
        if config.thinking_budget is not None:
            generation["thinking_config"] = {"thinking_budget": config.thinking_budget}
            # maxOutputTokens covers thinking too: add the budget so every arm keeps the same answer room.
            generation["max_output_tokens"] = max_tokens + config.thinking_budget
        if config.extra_body:
            generation["http_options"]["extra_body"] = dict(config.extra_body)
        return {"model": config.model_id, "contents": to_gemini_contents(messages), "config": generation}

    async def send(self, request: Mapping[str, Any]) -> dict[str, Any]:
        from google.genai import types

        # Typed, not dicts: the SDK copies a dict's nested keys to the wire as written (snake_case).
        response = await self._client.aio.models.generate_content(
            model=request["model"],
            # From JSON, so the SDK reads the base64 of images and signatures back into bytes.
            contents=[
                types.Content.model_validate_json(json.dumps(content)) for content in request["contents"]
            ],
            config=types.GenerateContentConfig.model_validate(request["config"]),
        )
        data = response.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=_NOT_WIRE)
        if not isinstance(data, dict):  # pragma: no cover - a pydantic model dumps to a dict
            raise MalformedReply("the reply is not a JSON object")
        return data

    def parse(self, raw: Mapping[str, Any]) -> ParsedReply:
        return parse_gemini_reply(raw)

    def usage(self, raw: Mapping[str, Any]) -> Usage:
        usage = raw.get("usageMetadata")
        if not isinstance(usage, Mapping):
            return Usage.unreported(model=self.name)
        return Usage.from_gemini(usage, model=self.name)

    async def aclose(self) -> None:
        await self._client.aio.aclose()

    def _classify(self, exc: BaseException, timeout_s: float | None = None) -> Failure:
        unresolved = credential_failure(exc, hint=self.access.hint)
        if unresolved is not None:
            return unresolved
        return classify_gemini_error(
            exc,
            now=self._clock.now(),
            timeout_s=self.config.timeout if timeout_s is None else timeout_s,
            credentials=self.access.hint,
        )

    async def probe(self, *, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> Probe:
        """``GET /v1beta/models`` (no tokens); the same verdicts as the other routes' probes."""
        timeout = min(timeout_s, self.config.timeout)
        try:
            pager = await self._client.aio.models.list(
                config={"page_size": 1000, "http_options": {"timeout": int(timeout * 1000)}}
            )
        except Exception as exc:
            return self._failed_probe(exc, timeout)
        listed = tuple(
            str(model.name).removeprefix("models/") for model in getattr(pager, "page", ()) if model.name
        )
        return Probe(listed=listed)


def classify_gemini_error(
    exc: BaseException, *, now: float, timeout_s: float | None = None, credentials: str | None = None
) -> Failure:
    """A ``google.genai`` failure as a Failure: an HTTP error (``errors.APIError``, with the
    status and the API's own message), a reply docab's client could not read (over
    :data:`~docab.models.replies.MAX_REPLY_BYTES`: ``malformed``, not retried), or the transport's
    (aiohttp's or httpx's) exception, which the SDK lets through unwrapped: refused, DNS, TLS,
    timeout, reset."""
    from google.genai import errors

    if isinstance(exc, MalformedReply):
        return Failure("malformed", f"the reply cannot be read: {exc}", retryable=True)
    if isinstance(exc, errors.APIError):
        status = int(exc.code or 0)
        headers = getattr(getattr(exc, "response", None), "headers", None)
        detail = shorten(str(exc.message)) if exc.message else provider_message(exc)
        if status:
            return status_failure(status, detail, headers=headers, now=now, credentials=credentials)
        return Failure("api", f"API error: {detail}", retryable=False)
    if isinstance(exc, json.JSONDecodeError):
        return Failure("malformed", "the reply cannot be read (it is not JSON)", retryable=True)
    unreadable = unreadable_failure(exc)  # over the size cap, or a broken content coding
    if unreadable is not None:
        return unreadable
    cause = transport_cause(exc, timeout_s=timeout_s)
    if cause is not None:
        kind = "timeout" if cause.kind == "timeout" else "connection"
        return Failure(kind, cause.text, retryable=True)
    if _is_transport_error(exc):
        return Failure("connection", f"the connection failed: {shorten(str(exc))}", retryable=True)
    raise exc  # a bug in our code, not a provider failure: let it surface


def _is_transport_error(exc: BaseException) -> bool:
    module = type(exc).__module__.split(".")[0]
    return module in ("aiohttp", "httpx", "httpx2", "httpcore") or isinstance(exc, OSError)


def build_gemini_model(
    config: ModelConfig, *, env: Mapping[str, str], role: str = "agent", **runtime: Any
) -> GeminiModel:
    """``google/<model>``: the Gemini API at ``base_url`` or Google's host."""
    from docab.models.clients import gemini_client

    setup = gemini_client(config, env, role=role)
    return GeminiModel(config, sdk=setup.sdk, client=setup.client, access=setup.access, role=role, **runtime)
