"""Errors raised by the guard. Their messages are written for the person or model that sees them."""

from __future__ import annotations

from enum import StrEnum

MAX_SHOWN_CHARS = 300  # of a path, URI or name a caller gave, repeated in a message


def clipped(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` as a message repeats it: whole up to ``limit`` characters, else cut with "…" (a
    caller that sent a megabyte does not get it back)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class GuardError(Exception):
    """Base class: ``str(error)`` is a complete, actionable sentence with no traceback or OS noise."""


class PathDenied(GuardError):
    """A local path is outside the allowed roots, or cannot be used."""


class HostDenied(GuardError):
    """A URL's scheme or host is not allowed, or the host resolves to an internal address."""


class FetchErrorKind(StrEnum):
    BAD_URL = "bad_url"
    BLOCKED = "blocked"
    TIMEOUT = "timeout"
    TOO_LARGE = "too_large"
    NETWORK = "network"
    HTTP_STATUS = "http_status"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    REJECTED = "rejected"  # the caller's header check refused the response


class FetchError(GuardError):
    """A fetch failed. ``kind`` lets each tool map the failure to its own error codes."""

    def __init__(self, kind: FetchErrorKind, message: str, *, url: str = "", status: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.url = url
        self.status = status
