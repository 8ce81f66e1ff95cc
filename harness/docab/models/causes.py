"""The real cause of a failed request, in a few words: what a user needs to fix it.

The SDKs wrap the transport's exceptions (aiohttp's or httpx's) in their own, and their own words
mislead: the aiohttp transport reports a refused connection as "Request timed out.", the httpx one
as "Connection error.". The cause is further down the exception chain (``__cause__`` /
``__context__``): a ``ConnectionRefusedError``, a ``socket.gaierror``, an ``ssl.SSLError``, a
``TimeoutError``. :func:`transport_cause` walks the chain and names it; :func:`provider_message`
reads the message a provider put in an HTTP error body. Pure functions over exceptions: no I/O.
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from docab.models.redirects import RedirectRefused


@dataclass(frozen=True)
class Failure:
    """A classified failed attempt (the retry loop, :mod:`docab.models.retry`, acts on it)."""

    kind: str  # as ModelError.kind
    message: str
    retryable: bool
    status: int | None = None
    retry_after_s: float | None = None


CauseKind = Literal["refused", "dns", "tls", "timeout", "reset", "connection", "redirect"]

REFUSED = "connection refused (is the server running, on that port?)"
MAX_CHAIN = 12  # exception chains are short; a cycle or a pathological chain stops here
MAX_MESSAGE = 300


@dataclass(frozen=True)
class TransportCause:
    """Why a request got no HTTP answer: ``kind`` for code, ``text`` for people."""

    kind: CauseKind
    text: str


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < MAX_CHAIN:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def transport_cause(exc: BaseException, *, timeout_s: float | None = None) -> TransportCause | None:
    """The cause in the chain of ``exc`` that names what went wrong on the way to the server; None
    when the chain holds none (the SDK's own wording is then all there is). A specific cause
    (refused, DNS, TLS, reset) wins over a timeout anywhere in the chain: the aiohttp transport
    wraps a refused connection in a ``ConnectTimeout``."""
    chain = list(exception_chain(exc))
    for cause in chain:
        found = _specific_cause(cause)
        if found is not None:
            return found
    for cause in chain:  # an OS error by number (aiohttp's ClientConnectorError is one, with errno)
        if isinstance(cause, OSError) and not isinstance(cause, TimeoutError) and cause.errno is not None:
            if cause.errno == errno.ECONNREFUSED:
                return TransportCause("refused", REFUSED)
            return TransportCause("connection", cause.strerror or str(cause))  # unreachable network...
    for cause in chain:
        if isinstance(cause, TimeoutError) or type(cause).__name__ in _TIMEOUT_NAMES:
            within = f" within {timeout_s:g} s" if timeout_s is not None else " within the time limit"
            return TransportCause("timeout", f"no answer{within}")
    return None


def _specific_cause(cause: BaseException) -> TransportCause | None:
    if isinstance(cause, RedirectRefused):
        return TransportCause("redirect", str(cause))
    if isinstance(cause, ConnectionRefusedError):
        return TransportCause("refused", REFUSED)
    if isinstance(cause, socket.gaierror):
        reason = cause.strerror or str(cause)
        return TransportCause("dns", f"the host name could not be resolved (DNS: {reason})")
    if isinstance(cause, ssl.SSLCertVerificationError):
        reason = getattr(cause, "verify_message", None) or str(cause)
        return TransportCause("tls", f"TLS certificate not accepted: {reason}")
    if isinstance(cause, ssl.SSLError):
        reason = str(cause)  # "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)"
        hint = " (is the server plain http, not https?)" if "WRONG_VERSION_NUMBER" in reason else ""
        return TransportCause("tls", f"TLS handshake failed: {reason}{hint}")
    if isinstance(cause, ConnectionResetError | BrokenPipeError):
        return TransportCause("reset", "the server closed the connection mid-request")
    if type(cause).__name__ == "ServerDisconnectedError":  # aiohttp: the peer hung up
        return TransportCause("reset", "the server closed the connection without answering")
    if type(cause).__name__ == "ClientPayloadError":  # aiohttp: the body ended before its length
        inner = cause.__cause__ or cause.__context__
        detail = shorten(str(getattr(inner, "message", "") or inner or cause), 160)
        return TransportCause("reset", f"the server cut the reply short: {detail}")
    if type(cause).__name__ == "TooManyRedirects":  # httpx: a redirect loop
        return TransportCause(
            "redirect",
            "the endpoint keeps redirecting (a redirect loop, more than 20 redirects): "
            "set base_url to the API's own address",
        )
    return None


# Transport timeouts that are not TimeoutError subclasses in every version (aiohttp's socket read
# timeout, httpx's pool/read/connect timeouts).
_TIMEOUT_NAMES = frozenset(
    {"SocketTimeoutError", "ServerTimeoutError", "ConnectionTimeoutError", "ReadTimeout", "ConnectTimeout"}
)


def provider_message(exc: BaseException) -> str:
    """The message an HTTP error response carried: ``error.message`` of the provider's JSON error
    (OpenAI's and Anthropic's shapes, and the common variants), else the start of the body."""
    body: Any = getattr(exc, "body", None)
    for _ in range(3):  # {"error": {"message": ...}}, {"error": "..."}, {"message": ...}, {"detail": ...}
        if isinstance(body, dict) and "error" in body:
            body = body["error"]
            continue
        break
    if isinstance(body, dict):
        for key in ("message", "detail", "msg"):
            value = body.get(key)
            if isinstance(value, str) and value.strip():
                return shorten(value)
    if isinstance(body, str) and body.strip():
        return shorten(body)
    response = getattr(exc, "response", None)
    text = getattr(response, "text", None)
    if isinstance(text, str) and text.strip():
        return shorten(text)
    return shorten(str(exc))


def shorten(text: str, limit: int = MAX_MESSAGE) -> str:
    """One line of at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# Raised while a request is signed or its token fetched, before anything is sent: boto3/botocore
# (SigV4 for Bedrock), google-auth (Vertex), and the anthropic SDK's own wording of the same.
_CREDENTIAL_MODULES = ("botocore.exceptions", "boto3.exceptions", "google.auth.exceptions")
_CREDENTIAL_WORDS = (
    "could not resolve aws credentials",
    "could not resolve api token",
    "missing required dependency",
)


def credential_failure(exc: BaseException, *, hint: str) -> Failure | None:
    """A Failure (kind ``auth``, not retried, no HTTP status) when ``exc`` says the request's
    credentials could not be obtained (no AWS credentials, an unknown profile, expired SSO, no
    Google credentials, a failed token refresh); None for anything else. ``hint`` says what to check."""
    for cause in exception_chain(exc):
        module = type(cause).__module__
        text = str(cause)
        if module.startswith(_CREDENTIAL_MODULES) or (
            (
                isinstance(cause, RuntimeError | ImportError)
                or type(cause).__name__ == "MissingDependencyError"
            )
            and any(words in text.lower() for words in _CREDENTIAL_WORDS)
        ):
            return Failure(
                "auth",
                f"the credentials could not be obtained ({shorten(text or type(cause).__name__)}); check {hint}",
                retryable=False,
            )
    return None
