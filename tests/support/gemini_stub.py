"""A loopback Gemini API: ``POST /v1beta/models/<model>:generateContent`` and ``GET /v1beta/models``,
in Gemini's wire format (camelCase JSON), for tests that drive the real ``google-genai`` SDK:

    with GeminiStub() as stub:
        stub.push(gemini_reply(text="Paris"))
        client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=stub.base))
        ...
        assert stub.generate_requests()[0].json()["contents"][0]["role"] == "user"

Replies come from a FIFO queue; when it is empty, ``responder`` (``(Request) -> Reply``) answers,
and without one a short text reply.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from tests.support.http_server import LocalServer, Reply, Request

GENERATE = re.compile(r"/v1beta/models/(?P<model>[^/:]+):generateContent")
GeminiResponder = Callable[[Request], Reply]
_ids = itertools.count(1)


# Values that are the caller's data, not API fields: their keys are never renamed.
OPAQUE = {"parametersJsonSchema", "parameters", "args", "response", "responseJsonSchema"}


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def proto_json(value: Any) -> Any:
    """A request body with its field names as the API reads them: Google's JSON parser takes a
    field by its proto name (``mime_type``) or its JSON name (``mimeType``), and the SDK sends some
    nested fields by the first; here both become the JSON name (user data inside left alone)."""
    if isinstance(value, list):
        return [proto_json(item) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = _camel(key)
        out[name] = item if name in OPAQUE else proto_json(item)
    return out


def gemini_reply(
    text: str | None = "stub answer",
    *,
    function_calls: Sequence[tuple[str, dict[str, Any]]] = (),
    call_ids: Sequence[str] | None = None,
    thought_signature: str | None = None,
    thought: str | None = None,
    prompt_tokens: int = 10,
    candidates_tokens: int = 5,
    cached_tokens: int | None = None,
    thoughts_tokens: int | None = None,
    tool_use_prompt_tokens: int | None = None,
    finish_reason: str = "STOP",
    model: str = "gemini-stub",
    delay: float = 0.0,
) -> Reply:
    """A ``generateContent`` response. ``function_calls`` are (name, args); the signature goes on
    the first function call (or on the text when there is none), as Gemini puts it."""
    parts: list[dict[str, Any]] = []
    if thought is not None:
        parts.append({"text": thought, "thought": True})
    if text is not None:
        parts.append({"text": text})
    for index, (name, args) in enumerate(function_calls):
        call: dict[str, Any] = {"name": name, "args": args}
        if call_ids is not None:
            call["id"] = call_ids[index]
        parts.append({"functionCall": call})
    if thought_signature is not None:
        target = next((p for p in parts if "functionCall" in p), None) or next(
            p for p in parts if "text" in p and not p.get("thought")
        )
        target["thoughtSignature"] = thought_signature
    usage: dict[str, Any] = {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": candidates_tokens,
        "totalTokenCount": prompt_tokens + candidates_tokens + (thoughts_tokens or 0),
    }
    if cached_tokens is not None:
        usage["cachedContentTokenCount"] = cached_tokens
    if thoughts_tokens is not None:
        usage["thoughtsTokenCount"] = thoughts_tokens
    if tool_use_prompt_tokens is not None:
        usage["toolUsePromptTokenCount"] = tool_use_prompt_tokens
    body = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": finish_reason, "index": 0}
        ],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": f"stub-{next(_ids)}",
    }
    return Reply.json(body, delay=delay)


def gemini_error(status: int, message: str = "stub error", *, retry_after: float | None = None) -> Reply:
    """An error in Google's JSON shape (``{"error": {"code", "message", "status"}}``)."""
    names = {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    body = {"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}}
    return Reply.json(body, status=status, headers=headers)


class GeminiStub:
    def __init__(self, responder: GeminiResponder | None = None, *, models: Sequence[str] = ("gemini-stub",)):
        self.responder = responder or (lambda request: gemini_reply())
        self.models = tuple(models)
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.server = LocalServer({"/v1beta/models": self._list_models}, default=self._route)

    @property
    def base(self) -> str:
        return self.server.base

    @property
    def requests(self) -> list[Request]:
        return self.server.requests

    def generate_requests(self) -> list[Request]:
        return [r for r in self.server.requests if GENERATE.fullmatch(r.path)]

    def bodies(self) -> list[Any]:
        """The ``generateContent`` bodies as the API reads them (:func:`proto_json`)."""
        return [proto_json(r.json()) for r in self.generate_requests()]

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _list_models(self, request: Request) -> Reply:
        entries = [
            {"name": f"models/{m}", "displayName": m, "supportedGenerationMethods": ["generateContent"]}
            for m in self.models
        ]
        return Reply.json({"models": entries})

    def _route(self, request: Request) -> Reply:
        if request.method != "POST" or not GENERATE.fullmatch(request.path):
            return Reply.json({"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}, 404)
        with self._lock:
            reply = self._queue.popleft() if self._queue else None
        return reply if reply is not None else self.responder(request)

    def start(self) -> GeminiStub:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> GeminiStub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
