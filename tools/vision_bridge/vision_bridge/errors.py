"""The one error type of vision-bridge, typed by cause.

Every failure a user or a model can meet is a :class:`VisionError` whose message is a complete,
actionable sentence (no traceback, no raw OS text). The MCP face renders it as
``[vision_error] <cause>: <message>`` in an ``isError`` result and repeats the cause in ``_meta``.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCause(StrEnum):
    INPUT = "input"  # the caller can fix it: bad path, hostile URL, not an image, ...
    API = "api"  # the vision provider (or the OCR engine) failed or refused
    TIMEOUT = "timeout"  # VISION_TIMEOUT ran out
    UNSUPPORTED = "unsupported"  # the configured backend cannot do this (analyze without a model)


class VisionError(Exception):
    def __init__(self, cause: ErrorCause, message: str) -> None:
        super().__init__(message)
        self.cause = cause
        self.message = message

    def render(self) -> str:
        return f"[vision_error] {self.cause.value}: {self.message}"


class DecodeMemoryError(VisionError):
    """An image needs more memory to decode than this process may take: an input error (the
    caller can send it smaller), told apart so that a decoding child can name its cap."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCause.INPUT, message)


class UndecodableImageError(VisionError):
    """A decoder failed on an image (not a readable image, corrupt or truncated): an input error
    that a decoding child under a memory cap checks again, since some decoders tell a failed
    allocation so (:func:`vision_bridge.prepare.failure_under_cap`)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCause.INPUT, message)


def input_error(message: str) -> VisionError:
    return VisionError(ErrorCause.INPUT, message)


def api_error(message: str) -> VisionError:
    return VisionError(ErrorCause.API, message)


class ConfigError(Exception):
    """A start-up problem: the message lists every bad setting and how to fix it."""
