"""A local model endpoint speaking the OpenAI Chat Completions, OpenAI Responses and Anthropic
Messages wire formats, at the paths of each route that speaks them:

| protocol | paths |
|---|---|
| ``openai`` (Chat Completions) | ``/v1/chat/completions``; Azure: ``/openai/deployments/<deployment>/chat/completions`` |
| ``responses`` | ``/v1/responses``; Azure: ``/openai/responses`` |
| ``anthropic`` (Messages) | ``/v1/messages``; Bedrock: ``/model/<model id>/invoke``; Vertex: ``/v1/projects/<p>/locations/<r>/publishers/anthropic/models/<model>:rawPredict`` |

Model lists answer at ``/v1/models``, ``/models`` and Azure's ``/openai/models``. Tests drive it
through the real ``openai`` and ``anthropic`` SDKs (their platform clients too):

    with LLMStub() as stub:
        stub.push("openai", openai_reply(text="Paris"))
        client = openai.OpenAI(base_url=stub.openai_base_url, api_key="test")
        ...
        assert stub.requests_for("openai")[0].json()["model"] == "gpt-test"

Replies are served from a per-protocol FIFO queue; when a queue is empty, ``responder`` (a
callable ``(protocol, Request) -> Reply``) answers, and without one a short default text reply.
``GET /v1/models`` lists ``models`` in the shape of the provider that asks (Anthropic's SDK sends
``anthropic-version``), or answers ``models_reply`` when one is set.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from tests.support.http_server import LocalServer, Reply, Request

Protocol = Literal["openai", "anthropic", "responses"]
Responder = Callable[[Protocol, Request], Reply]

_ids = itertools.count(1)


def openai_reply(
    text: str | None = "stub answer",
    *,
    tool_calls: Sequence[tuple[str, str, str]] = (),
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    cached_tokens: int | None = None,
    reasoning_tokens: int | None = None,
    reasoning_content: str | None = None,
    model: str = "stub-model",
    finish_reason: str | None = None,
    delay: float = 0.0,
) -> Reply:
    """A Chat Completions response. ``tool_calls`` are (id, function name, JSON arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    if tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for call_id, name, args in tool_calls
        ]
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    if reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    body = {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": usage,
    }
    return Reply.json(body, delay=delay)


def anthropic_reply(
    text: str | None = "stub answer",
    *,
    tool_uses: Sequence[tuple[str, str, dict[str, Any]]] = (),
    thinking: str | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read_input_tokens: int | None = None,
    cache_creation_input_tokens: int | None = None,
    model: str = "stub-model",
    stop_reason: str | None = None,
    delay: float = 0.0,
) -> Reply:
    """A Messages response. ``tool_uses`` are (id, tool name, input object)."""
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": "sig"})
    if text is not None:
        content.append({"type": "text", "text": text})
    for tool_id, name, arguments in tool_uses:
        content.append({"type": "tool_use", "id": tool_id, "name": name, "input": arguments})
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if cache_read_input_tokens is not None:
        usage["cache_read_input_tokens"] = cache_read_input_tokens
    if cache_creation_input_tokens is not None:
        usage["cache_creation_input_tokens"] = cache_creation_input_tokens
    body = {
        "id": f"msg_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if tool_uses else "end_turn"),
        "stop_sequence": None,
        "usage": usage,
    }
    return Reply.json(body, delay=delay)


def error_reply(
    protocol: Protocol,
    status: int,
    message: str = "stub error",
    *,
    retry_after: float | None = None,
    delay: float = 0.0,
) -> Reply:
    """An error in the provider's own JSON error shape, optionally with Retry-After."""
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    if protocol == "openai":
        body: dict[str, Any] = {
            "error": {"message": message, "type": "stub_error", "code": None, "param": None}
        }
    else:
        body = {"type": "error", "error": {"type": "api_error", "message": message}}
    return Reply.json(body, status=status, headers=headers, delay=delay)


def models_list_reply(protocol: Protocol, models: Sequence[str]) -> Reply:
    """A model-list response (``GET /v1/models``) in the provider's own shape."""
    if protocol == "openai":
        data = [{"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "stub"} for m in models]
        return Reply.json({"object": "list", "data": data})
    entries = [
        {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"} for m in models
    ]
    return Reply.json(
        {
            "data": entries,
            "has_more": False,
            "first_id": models[0] if models else None,
            "last_id": models[-1] if models else None,
        }
    )


def responses_reply(
    text: str | None = "stub answer",
    *,
    function_calls: Sequence[tuple[str, str, str]] = (),
    reasoning: tuple[str, str, str | None] | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
    reasoning_tokens: int = 0,
    status: str = "completed",
    incomplete_reason: str | None = None,
    model: str = "stub-model",
    delay: float = 0.0,
) -> Reply:
    """A Responses API response. ``function_calls`` are (call id, function name, JSON arguments);
    ``reasoning`` is (item id, summary text, encrypted content or None), output before the rest."""
    output: list[dict[str, Any]] = []
    if reasoning is not None:
        item_id, summary, encrypted = reasoning
        item: dict[str, Any] = {
            "id": item_id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": summary}] if summary else [],
        }
        if encrypted is not None:
            item["encrypted_content"] = encrypted
        output.append(item)
    if text is not None:
        output.append(
            {
                "id": f"msg_{next(_ids)}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for call_id, name, arguments in function_calls:
        output.append(
            {
                "id": f"fc_{next(_ids)}",
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
        )
    body = {
        "id": f"resp_{next(_ids)}",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": model,
        "status": status,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "error": None,
        "output": output,
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {
                "cached_tokens": cached_tokens,
                "cache_write_tokens": cache_write_tokens,
            },
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": input_tokens + output_tokens,
        },
    }
    return Reply.json(body, delay=delay)


def _default_responder(protocol: Protocol, request: Request) -> Reply:
    if protocol == "responses":
        return responses_reply()
    return openai_reply() if protocol == "openai" else anthropic_reply()


# The routes whose path holds a name (a deployment, a model id), by the protocol they speak.
PATTERNS: tuple[tuple[re.Pattern[str], Protocol], ...] = (
    (re.compile(r"/openai/deployments/[^/]+/chat/completions"), "openai"),  # Azure OpenAI
    (re.compile(r"/model/[^/]+/invoke"), "anthropic"),  # Amazon Bedrock
    (
        re.compile(r"(/v1)?/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/[^/]+:rawPredict"),
        "anthropic",
    ),
)
EXACT: dict[str, Protocol] = {
    "/v1/chat/completions": "openai",
    "/chat/completions": "openai",
    "/v1/messages": "anthropic",
    "/v1/responses": "responses",
    "/responses": "responses",
    "/openai/responses": "responses",  # Azure OpenAI
}


def protocol_of(path: str) -> Protocol | None:
    """Which protocol a request path speaks (None for model lists and unknown paths)."""
    if path in EXACT:
        return EXACT[path]
    return next((protocol for pattern, protocol in PATTERNS if pattern.fullmatch(path)), None)


class LLMStub:
    """Both providers' endpoints on one loopback server."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        models: Sequence[str] = ("stub-model",),
        port: int = 0,
    ) -> None:
        self.responder = responder or _default_responder
        self.models = tuple(models)
        self.models_reply: Reply | None = None  # set to answer GET /v1/models with something else
        self._queues: dict[Protocol, deque[Reply]] = {
            "openai": deque(),
            "anthropic": deque(),
            "responses": deque(),
        }
        self._lock = threading.Lock()
        self.server = LocalServer(
            {
                "/v1/models": self._list_models,
                "/models": self._list_models,
                "/openai/models": self._list_models,
            },
            default=self._route,
            port=port,
        )

    @property
    def openai_base_url(self) -> str:
        return self.server.base + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.server.base

    @property
    def requests(self) -> list[Request]:
        return self.server.requests

    @property
    def base(self) -> str:
        """The server's root: Azure endpoints, Bedrock and Vertex base URLs are built on it."""
        return self.server.base

    def requests_for(self, protocol: Protocol) -> list[Request]:
        return [r for r in self.server.requests if protocol_of(r.path) == protocol]

    def push(self, protocol: Protocol, *replies: Reply) -> None:
        with self._lock:
            self._queues[protocol].extend(replies)

    def extend(self, protocol: Protocol, replies: Iterable[Reply]) -> None:
        self.push(protocol, *replies)

    def pending(self, protocol: Protocol) -> int:
        return len(self._queues[protocol])

    def model_list_requests(self) -> list[Request]:
        return [r for r in self.server.requests if r.path.endswith("/models")]

    def _list_models(self, request: Request) -> Reply:
        if self.models_reply is not None:
            return self.models_reply
        protocol: Protocol = "anthropic" if "anthropic-version" in request.headers else "openai"
        return models_list_reply(protocol, self.models)

    def _route(self, request: Request) -> Reply:
        protocol = protocol_of(request.path)
        if protocol is None or request.method != "POST":
            return Reply(status=404, body=b"not found")
        return self._answer(protocol, request)

    def _answer(self, protocol: Protocol, request: Request) -> Reply:
        with self._lock:
            queue = self._queues[protocol]
            reply = queue.popleft() if queue else None
        return reply if reply is not None else self.responder(protocol, request)

    def start(self) -> LLMStub:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> LLMStub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
