"""The eight error codes of markfetch, shared by the MCP tool and the CLI.

Every failure a user or a model can see is a :class:`MarkfetchError`; ``str(error)`` is the
``[code] message`` line that the MCP tool returns with ``isError`` and the CLI prints on stderr.
The codes are a public contract (scripts match on them): add none, rename none.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    NETWORK_ERROR = "network_error"  # DNS, TCP, TLS, refused addresses, broken responses
    HTTP_ERROR = "http_error"  # the final response was not 2xx
    TIMEOUT = "timeout"  # the fetch (MARKFETCH_TIMEOUT_MS) or the extraction (MARKFETCH_EXTRACT_TIMEOUT_MS) took too long
    UNSUPPORTED_CONTENT_TYPE = "unsupported_content_type"  # not HTML (and raw was not asked for)
    EXTRACTION_FAILED = "extraction_failed"  # neither the reader view nor the whole body had text
    TOO_LARGE = "too_large"  # the body or the markdown is over MARKFETCH_MAX_BYTES
    SAVE_FAILED = "save_failed"  # the file could not be written
    SAVE_FORBIDDEN = "save_forbidden"  # savePath is outside the allowed write roots (MCP only)


class MarkfetchError(Exception):
    """A failure with one of the eight codes and a message safe to show to a person or a model."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"[{self.code.value}] {self.message}"


class ConfigError(Exception):
    """A bad environment value found at start-up; the message names the variable and the fix."""
