"""Anthropic Messages through the official ``anthropic`` SDK.

Images travel as ``image`` blocks with a ``base64`` source (inline) or a ``url`` source. The
answer is the text blocks joined; when they are empty, the thinking blocks are used, the same
fallback the OpenAI backend makes to ``reasoning_content``. The key goes out both as the SDK's
bearer token and as ``x-api-key``, so Anthropic-compatible proxies that expect either accept it.
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

ANTHROPIC_IMAGE_LIMITS = ImageLimits(
    accepted_mimes=frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"}),
    # 5 MB per image, counted on the base64 string: 3/4 of that in file bytes.
    max_bytes=5 * 1024 * 1024 * 3 // 4,
    max_side=8000,
)


def image_block(part: ImagePart) -> dict[str, Any]:
    if part.url is not None:
        source: dict[str, Any] = {"type": "url", "url": part.url}
    else:
        inline = part.inline
        assert inline is not None
        source = {"type": "base64", "media_type": inline.mime, "data": inline.base64()}
    return {"type": "image", "source": source}


def build_messages(request: VisionRequest) -> list[dict[str, Any]]:
    """One user message: each image (after its label, when labelled), then the instruction."""
    content: list[dict[str, Any]] = []
    for part in request.images:
        if part.label:
            content.append({"type": "text", "text": f"{part.label}:"})
        content.append(image_block(part))
    content.append({"type": "text", "text": request.prompt})
    return [{"role": "user", "content": content}]


def read_message(message: Any, *, max_tokens: int) -> VisionAnswer:
    usage = TokenUsage.from_anthropic(message.usage.model_dump() if message.usage is not None else None)
    blocks = message.content or []
    text = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", "") == "text").strip()
    if text:
        return VisionAnswer(text, usage, "content")
    thinking = "\n".join(
        (getattr(b, "thinking", "") or "").strip() for b in blocks if getattr(b, "type", "") == "thinking"
    ).strip()
    if thinking:
        return VisionAnswer(thinking, usage, "reasoning")
    if message.stop_reason == "refusal":
        raise ProviderError(ErrorCause.API, "the model refused to answer")
    if message.stop_reason == "max_tokens":
        raise ProviderError(
            ErrorCause.API, f"the model used up VISION_MAX_TOKENS ({max_tokens}) before answering; raise it"
        )
    raise ProviderError(ErrorCause.API, "the model returned an empty answer")


class AnthropicMessagesBackend:
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
        image_limits: ImageLimits = ANTHROPIC_IMAGE_LIMITS,
        response_limits: ResponseLimits = DEFAULT_RESPONSE_LIMITS,
    ) -> None:
        self.identity = BackendIdentity("anthropic", model, base_url, max_tokens)
        self.image_limits = image_limits
        self._settings = (base_url, api_key, timeout_s, max_retries, response_limits)
        self._client: Any = None
        self._lock = asyncio.Lock()

    async def _sdk(self) -> Any:
        async with self._lock:
            if self._client is None:
                import anthropic  # lazily: the server starts without it

                from vision_bridge.backends.transport import capped_http_client

                base_url, api_key, timeout_s, max_retries, limits = self._settings
                self._client = sdk_client(
                    "anthropic",
                    lambda: anthropic.AsyncAnthropic(
                        base_url=base_url,
                        api_key=api_key,
                        timeout=timeout_s,
                        max_retries=max_retries,
                        default_headers={"x-api-key": api_key},
                        http_client=capped_http_client(
                            base_url, timeout_s, limits, sdk_error=anthropic.AnthropicError
                        ),
                    ),
                )
            return self._client

    async def answer(self, request: VisionRequest, *, timeout_s: float) -> VisionAnswer:
        import anthropic

        client = await self._sdk()
        try:
            message = await client.messages.create(
                model=self.identity.model,
                max_tokens=self.identity.max_tokens,
                messages=build_messages(request),
                timeout=timeout_s,
            )
        except anthropic.AnthropicError as exc:
            error = translate_sdk_error("the Anthropic-format provider", exc, anthropic)
            if error is None:
                raise
            raise error from None
        except ValueError as exc:  # a 2xx body the SDK could not parse as JSON (cut short, not JSON)
            raise not_a_completion("the Anthropic-format provider", exc) from None
        return read_answer(
            "the Anthropic-format provider", read_message, message, max_tokens=self.identity.max_tokens
        )

    def warm_up(self) -> None:
        """Import the SDK ahead of the first call (run in a thread once the server is up)."""
        import anthropic  # noqa: F401
        import PIL.Image  # noqa: F401

        import vision_bridge.backends.transport  # noqa: F401

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()
