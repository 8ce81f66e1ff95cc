"""Errors raised by the guard. Their messages are written for the person or model that sees them."""

from __future__ import annotations

from enum import StrEnum


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
