"""The one interface every backend implements, and the plain data that crosses it.

A :class:`VisionRequest` is complete and provider-neutral: the final instruction text, the
images (each either prepared bytes or a URL the provider should fetch) and the options.
A backend turns it into its wire format, makes the call and returns a :class:`VisionAnswer`,
or raises :class:`~vision_bridge.errors.VisionError` (a :class:`ProviderError` for a failed
provider call, which carries the HTTP status so the service can decide on the URL fallback).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from vision_bridge.cache import BackendIdentity
from vision_bridge.errors import ErrorCause, VisionError
from vision_bridge.prepare import ImageLimits, PreparedImage
from vision_bridge.prompts import OcrFormat
from vision_bridge.usage import TokenUsage

SDK_FLOORS = {"openai": "2.47", "anthropic": "1.0"}
"""The oldest SDK releases that accept an ``httpx2`` client (``http_client``), as pyproject declares
them; older ones raise TypeError. Checked in CI by ``.ci/check-sdk-floors``: one call of each format
at these versions against the loopback stub, and the sentence below just under them."""

Task = Literal["analyze", "ocr", "compare"]
Detail = Literal["auto", "high", "low"]

MAX_RESPONSE_BYTES = 16 * 1024 * 1024
MAX_ERROR_DETAIL_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ResponseLimits:
    max_body: int = MAX_RESPONSE_BYTES
    max_error_body: int = MAX_ERROR_DETAIL_BYTES


DEFAULT_RESPONSE_LIMITS = ResponseLimits()


class UnreadableResponse(Exception):
    """A provider's response refused before the SDK parses it; ``str()`` is the sentence to show.
    Raised inside the HTTP transport: the SDKs let it through unwrapped and do not retry it."""


class ResponseTooLarge(UnreadableResponse):
    def __init__(self, limit: int, declared: int | None = None, *, decoded: bool = False) -> None:
        if declared is not None:
            detail = f"declared {declared:,} bytes"
        elif decoded:
            detail = "decodes to more"  # Content-Encoding: the decoded bytes are counted
        else:
            detail = "sent more"
        super().__init__(f"the provider's response {detail}, over the limit of {limit:,} bytes")
        self.limit = limit


ERROR_DETAIL_CHARS = 2000
"""How much of a provider's error message reaches the caller (the transport reads at most 1 MiB)."""


@dataclass(frozen=True)
class ImagePart:
    """One image of a request: ``inline`` bytes, or a ``url`` for the provider to fetch.

    The service sends ``inline`` only (it downloads image URLs itself, under the guard); ``url``
    serves Python callers that build requests for a backend directly."""

    inline: PreparedImage | None = None
    url: str | None = None
    label: str | None = None  # "Image 1", ... when several images are compared

    def __post_init__(self) -> None:
        if (self.inline is None) == (self.url is None):
            raise ValueError("an ImagePart holds exactly one of inline or url")


@dataclass(frozen=True)
class VisionRequest:
    task: Task
    prompt: str
    images: tuple[ImagePart, ...]
    detail: Detail = "auto"
    ocr_format: OcrFormat = "plain"
    languages: tuple[str, ...] = ()

    @property
    def has_urls(self) -> bool:
        return any(part.url is not None for part in self.images)


AnswerSource = Literal["content", "reasoning", "ocr"]


@dataclass(frozen=True)
class VisionAnswer:
    text: str
    usage: TokenUsage
    answer_from: AnswerSource = "content"


class ProviderError(VisionError):
    """A provider call failed. ``status`` is the HTTP status when there was one."""

    def __init__(
        self, cause: ErrorCause, message: str, *, status: int | None = None, detail: str = ""
    ) -> None:
        super().__init__(cause, message)
        self.status = status
        self.detail = detail


class VisionBackend(Protocol):
    identity: BackendIdentity
    image_limits: ImageLimits
    tasks: frozenset[Task]

    async def answer(self, request: VisionRequest, *, timeout_s: float) -> VisionAnswer: ...

    def warm_up(self) -> None:
        """Import what the first call needs (blocking; the server runs it in a thread after start)."""

    async def aclose(self) -> None: ...


_JSON_MESSAGE = re.compile(r'^\s*\{.*?"message"\s*:\s*"((?:[^"\\]|\\.)*)', re.DOTALL)


def provider_message(body: object) -> str:
    """The human part of a provider's error body, in either provider's JSON shape or as raw text."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, Mapping) else error
        if isinstance(message, str):  # {"error": {"message": ...}} or {"error": "..."}
            return message
        top_message = body.get("message")
        if isinstance(top_message, str):
            return top_message
        return json.dumps(body, ensure_ascii=False)[: ERROR_DETAIL_CHARS * 2]
    if body is None:
        return ""
    text = str(body)
    # An error body cut at the byte cap is no longer valid JSON; its message usually survives.
    match = _JSON_MESSAGE.search(text[:4096])
    if match is not None:
        try:
            unescaped: str = json.loads(f'"{match.group(1)}"')  # a JSON string literal
            return unescaped
        except ValueError:
            return match.group(1)
    return text


def shorten_detail(text: str, limit: int = ERROR_DETAIL_CHARS) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (detail cut at {limit:,} characters)"


_STATUS_HINTS = {
    401: "the provider refused the API key: check VISION_API_KEY",
    403: "the provider refused access: check VISION_API_KEY and the model's permissions",
    404: "the endpoint or model was not found: check VISION_MODEL and VISION_API_BASE_URL "
    "(OpenAI format: the base ends with /v1; Anthropic format: the base has no /v1)",
    413: "the request was too large for the provider",
    429: "the provider is rate-limiting requests; try again later",
}


def status_error(provider: str, status: int, body: object) -> ProviderError:
    detail = provider_message(body)
    hint = _STATUS_HINTS.get(status, "")
    shown = shorten_detail(detail) if detail else "no detail given"
    parts = [f"{provider} answered HTTP {status}: {shown}"]
    if hint:
        parts.append(hint)
    return ProviderError(
        ErrorCause.API, ". ".join(parts), status=status, detail=detail[: ERROR_DETAIL_CHARS * 4]
    )


def not_a_completion(provider: str, answer: object) -> ProviderError:
    """The provider answered 2xx with something that is no completion: an HTML page (a proxy's
    login page, a base URL that names the provider's website), JSON of another shape, or a body
    cut short. The provider or the configured address is at fault, not the bridge."""
    if isinstance(answer, BaseException):
        what = f"a body that is not JSON ({type(answer).__name__})"
    elif isinstance(answer, str):
        start = " ".join(answer[:60].split())
        what = f"text, not JSON (it starts {start!r})" if start else "an empty body"
    else:
        what = "JSON that is not a completion"
    return ProviderError(
        ErrorCause.API,
        f"{provider} answered with {what}; check VISION_API_BASE_URL (the API's address, "
        "such as https://api.openai.com/v1 or https://api.anthropic.com), and any proxy between",
    )


def read_answer(
    provider: str, read: Callable[..., VisionAnswer], answer: object, *, max_tokens: int
) -> VisionAnswer:
    """``read(answer, max_tokens=...)``, a parsed answer that is no completion blamed on the
    provider (:func:`not_a_completion`), not on the bridge."""
    try:
        return read(answer, max_tokens=max_tokens)
    except (AttributeError, TypeError, KeyError, ValueError):
        raise not_a_completion(provider, answer) from None


def translate_sdk_error(provider: str, exc: BaseException, sdk: Any) -> ProviderError | None:
    """Map an ``openai``/``anthropic`` SDK exception (same shapes in both) to a ProviderError."""
    if isinstance(exc, sdk.APIStatusError):
        return status_error(provider, exc.status_code, exc.body)
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError(ErrorCause.TIMEOUT, f"{provider} did not answer in time")
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderError(ErrorCause.API, f"could not reach {provider}: the connection failed or was cut")
    if isinstance(exc, sdk.APIResponseValidationError | sdk.APIError):
        return ProviderError(ErrorCause.API, f"{provider} sent a response that could not be read")
    return None


_Client = TypeVar("_Client")


def sdk_rejects_client(sdk: str, installed: str) -> VisionError:
    """The one sentence for an SDK too old for the ``httpx2`` client it is given."""
    floor = SDK_FLOORS[sdk]
    return VisionError(
        ErrorCause.API,
        f"the installed {sdk} {installed} rejects vision-bridge's httpx2 HTTP client; vision-bridge needs "
        f"{sdk}>={floor} (pip install --upgrade '{sdk}>={floor}')",
    )


def sdk_client(sdk: str, make: Callable[[], _Client]) -> _Client:
    """``make()`` builds the SDK's client; an SDK that rejects the ``http_client`` it is handed
    (a TypeError naming it) becomes :func:`sdk_rejects_client`, not an unexplained TypeError."""
    try:
        return make()
    except TypeError as exc:
        if "http_client" not in str(exc):
            raise
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version(sdk)
        except PackageNotFoundError:
            installed = "(version unknown)"
        raise sdk_rejects_client(sdk, installed) from None
