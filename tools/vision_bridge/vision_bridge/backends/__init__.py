"""Vision backends behind one interface (:class:`~vision_bridge.backends.base.VisionBackend`).

- ``openai``: Chat Completions through the official ``openai`` SDK (any OpenAI-compatible server).
- ``anthropic``: Messages through the official ``anthropic`` SDK.
- ``tesseract``: offline OCR with the system's Tesseract; ``ocr_image`` only.

Each backend module imports its SDK when first used, so start-up pays for none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vision_bridge.backends.base import VisionBackend
    from vision_bridge.config import Settings


def create_backend(settings: Settings) -> VisionBackend:
    """The backend the settings ask for (Tesseract is checked at once: a missing program fails start-up)."""
    if settings.backend == "tesseract":
        from vision_bridge.backends.tesseract import TesseractBackend

        backend = TesseractBackend(
            command=settings.tesseract_cmd, memory_bytes=settings.decode_memory_bytes + (1024 << 20)
        )
        backend.check()
        return backend
    if settings.backend == "anthropic":
        from vision_bridge.backends.anthropic_messages import AnthropicMessagesBackend

        return AnthropicMessagesBackend(
            base_url=settings.base_url,
            api_key=settings.api_key,
            model=settings.model,
            max_tokens=settings.max_tokens,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
        )
    from vision_bridge.backends.openai_chat import OpenAIChatBackend

    return OpenAIChatBackend(
        base_url=settings.base_url,
        api_key=settings.api_key,
        model=settings.model,
        max_tokens=settings.max_tokens,
        timeout_s=settings.timeout_s,
        max_retries=settings.max_retries,
    )
