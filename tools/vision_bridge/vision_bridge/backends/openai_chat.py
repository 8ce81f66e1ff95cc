"""OpenAI Chat Completions through the official ``openai`` SDK (any OpenAI-compatible server).

Images travel as ``image_url`` parts (a data URL for inline images) with the request's detail
level: ``high`` for OCR, ``auto`` otherwise. The answer is ``message.content``; when that is null
or empty (or only whitespace), a reasoning model's ``reasoning_content`` (or ``reasoning``) is used.
Servers that reject ``max_tokens`` in favour of ``max_completion_tokens`` (OpenAI's reasoning
models) get the request again with the other name, once, and keep it from then on.
"""

from __future__ import annotations

import asyncio
from typing import Any

from vision_bridge.backends.base import (
    DEFAULT_RESPONSE_LIMITS,
    ImagePart,
    ProviderError,
    ResponseLimits,
    Task,
    VisionAnswer,
    VisionRequest,
    not_a_completion,
    read_answer,
    sdk_client,
    translate_sdk_error,
)
from vision_bridge.cache import BackendIdentity
from vision_bridge.errors import ErrorCause
from vision_bridge.prepare import ImageLimits
from vision_bridge.usage import TokenUsage

OPENAI_IMAGE_LIMITS = ImageLimits(
    accepted_mimes=frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"}),
    # 20 MB per image, counted on the base64 data URL: 3/4 of that in file bytes.
    max_bytes=20 * 1024 * 1024 * 3 // 4,
)


def image_part(part: ImagePart, detail: str) -> dict[str, Any]:
    url = part.url if part.url is not None else part.inline.data_url()  # type: ignore[union-attr]
    return {"type": "image_url", "image_url": {"url": url, "detail": detail}}


def build_messages(request: VisionRequest) -> list[dict[str, Any]]:
    """One user message: each image (after its label, when labelled), then the instruction."""
    content: list[dict[str, Any]] = []
    for part in request.images:
        if part.label:
            content.append({"type": "text", "text": f"{part.label}:"})
        content.append(image_part(part, request.detail))
    content.append({"type": "text", "text": request.prompt})
    return [{"role": "user", "content": content}]


def _reasoning_text(message: Any) -> str:
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def read_completion(completion: Any, *, max_tokens: int) -> VisionAnswer:
    """Pick the answer out of a ChatCompletion; empty answers are errors that say why."""
    usage = TokenUsage.from_openai(completion.usage.model_dump() if completion.usage is not None else None)
    choices = completion.choices or []
    if not choices:
        raise ProviderError(ErrorCause.API, "the model returned no choices")
    choice = choices[0]
    message = choice.message
    content = message.content if isinstance(message.content, str) else ""
    if content.strip():
        return VisionAnswer(content.strip(), usage, "content")
    reasoning = _reasoning_text(message)
    if reasoning:
        return VisionAnswer(reasoning, usage, "reasoning")
    refusal = getattr(message, "refusal", None)
    if isinstance(refusal, str) and refusal.strip():
        raise ProviderError(ErrorCause.API, f"the model refused: {refusal.strip()}")
    if choice.finish_reason == "length":
        raise ProviderError(
            ErrorCause.API,
            f"the model used up VISION_MAX_TOKENS ({max_tokens}) before answering; raise it",
        )
    raise ProviderError(ErrorCause.API, "the model returned an empty answer")


def _asks_for_max_completion_tokens(error: ProviderError) -> bool:
    text = (error.detail or error.message).lower()
    return (
        error.status == 400
        and "max_completion_tokens" in text
        and "max_tokens" in text.replace("max_completion_tokens", "")
    )


class OpenAIChatBackend:
    tasks: frozenset[Task] = frozenset({"analyze", "ocr", "compare"})

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        max_tokens: int,
        timeout_s: float,
        max_retries: int,
        image_limits: ImageLimits = OPENAI_IMAGE_LIMITS,
        response_limits: ResponseLimits = DEFAULT_RESPONSE_LIMITS,
    ) -> None:
        self.identity = BackendIdentity("openai", model, base_url, max_tokens)
        self.image_limits = image_limits
        self._settings = (base_url, api_key, timeout_s, max_retries, response_limits)
        self._client: Any = None
        self._token_param = "max_tokens"
        self._lock = asyncio.Lock()

    async def _sdk(self) -> Any:
        async with self._lock:
            if self._client is None:
                import openai  # lazily: ~0.5 s of imports the server need not pay at start

                from vision_bridge.backends.transport import capped_http_client

                base_url, api_key, timeout_s, max_retries, limits = self._settings
                self._client = sdk_client(
                    "openai",
                    lambda: openai.AsyncOpenAI(
                        base_url=base_url,
                        api_key=api_key,
                        timeout=timeout_s,
                        max_retries=max_retries,
                        http_client=capped_http_client(
                            base_url, timeout_s, limits, sdk_error=openai.OpenAIError
                        ),
                    ),
                )
            return self._client

    async def answer(self, request: VisionRequest, *, timeout_s: float) -> VisionAnswer:
        import openai

        client = await self._sdk()
        messages = build_messages(request)
        for attempt in range(2):
            kwargs: dict[str, Any] = {
                "model": self.identity.model,
                "messages": messages,
                self._token_param: self.identity.max_tokens,
            }
            try:
                completion = await client.chat.completions.create(**kwargs, timeout=timeout_s)
            except openai.OpenAIError as exc:
                error = translate_sdk_error("the OpenAI-format provider", exc, openai)
                if error is None:
                    raise
                if (
                    attempt == 0
                    and self._token_param == "max_tokens"
                    and _asks_for_max_completion_tokens(error)
                ):
                    self._token_param = "max_completion_tokens"
                    continue
                raise error from None
            except ValueError as exc:  # a 2xx body the SDK could not parse as JSON (cut short, not JSON)
                raise not_a_completion("the OpenAI-format provider", exc) from None
            return read_answer(
                "the OpenAI-format provider", read_completion, completion, max_tokens=self.identity.max_tokens
            )
        raise AssertionError("unreachable")

    def warm_up(self) -> None:
        """Import the SDK ahead of the first call (run in a thread once the server is up)."""
        import openai  # noqa: F401
        import PIL.Image  # noqa: F401

        import vision_bridge.backends.transport  # noqa: F401

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()
