"""The HTTP layer under both SDKs: response byte caps and a count of the requests a call made.

Both official SDKs read a whole response into memory. :class:`CappedTransport` sits below them
(an ``httpx2`` transport passed in through ``http_client``) and

- decodes the body itself with mcpguard's :class:`~docab_mcpguard.BodyDecoder`, the decoder the
  guarded fetcher uses for pages and images: gzip, deflate, br and zstd undone in steps of at most
  64 KiB, each counted against the cap, the event loop given back between steps. The SDK gets
  the decoded body without its ``Content-Encoding``, so nothing decodes it again unbounded;
- refuses a successful response over ``max_body`` bytes (declared, on the wire, or decoded) by
  raising :class:`ResponseTooLarge`, which the SDKs let through unwrapped and do not retry: a
  provider answering 1 GiB of gzip is refused at the cap, its memory never held;
- cuts an error response after ``max_error_body`` decoded bytes, so a provider's multi-megabyte
  error page still yields an error with its first megabyte as detail;
- raises its refusals as a subclass of the SDK's own base error when given one (``sdk_error``):
  an SDK wraps a foreign exception raised while it reads the body as a connection error, and
  retries it; its own errors it lets through, unretried;
- follows a redirect only within the provider's origin (scheme, host, port of the base URL): a
  request to another host would carry the API key (Anthropic's ``x-api-key`` survives a
  cross-origin hop in httpx2) and the user's images, so it is refused before it is sent;
- counts every request, SDK retries included, into the current tool call's
  :class:`~vision_bridge.metering.CallMeter`, which is how ``calls`` in the usage report is known.

Servers are asked not to compress (``Accept-Encoding: identity``); one that compresses anyway is
decoded here, within the same caps.
"""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator, Callable
from typing import cast
from urllib.parse import urlsplit

import httpx2

from docab_mcpguard.decoding import BodyDecoder, UndecodableBody
from vision_bridge.backends.base import (
    DEFAULT_RESPONSE_LIMITS,
    ResponseLimits,
    ResponseTooLarge,
    UnreadableResponse,
)
from vision_bridge.metering import CallMeter, count_request

Refusal = Callable[[UnreadableResponse], Exception]


def _as_is(exc: UnreadableResponse) -> Exception:
    return exc


_REFUSAL_CLASSES: dict[type[Exception], type[UnreadableResponse]] = {}


def _sdk_refusal_class(sdk_error: type[Exception]) -> type[UnreadableResponse]:
    """An :class:`UnreadableResponse` that is also the SDK's own error (see the module's doc)."""
    if sdk_error not in _REFUSAL_CLASSES:
        made = type("UnreadableResponse", (UnreadableResponse, sdk_error), {})
        _REFUSAL_CLASSES[sdk_error] = cast(type[UnreadableResponse], made)
    return _REFUSAL_CLASSES[sdk_error]


def sdk_refusal(sdk_error: type[Exception] | None) -> Refusal:
    """How refusals are raised under an SDK whose errors derive from ``sdk_error``."""
    if sdk_error is None:
        return _as_is
    refused = _sdk_refusal_class(sdk_error)
    return lambda exc: refused(str(exc))


class _CappedStream(httpx2.AsyncByteStream):
    """The decoded body, ``cap`` bytes at most (decoded and on the wire): past it, refused or cut."""

    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        cap: int,
        *,
        decoder: BodyDecoder,
        truncate: bool,
        meter: CallMeter | None,
        refusal: Refusal = _as_is,
    ):
        self._refusal = refusal
        self._inner = inner
        self._cap = cap
        self._decoder = decoder
        self._truncate = truncate
        self._meter = meter

    def _over(self, coded: bool) -> Exception:
        return self._refusal(ResponseTooLarge(self._cap, decoded=coded))

    def _undecodable(self, exc: UndecodableBody) -> Exception:
        return self._refusal(UnreadableResponse(f"the provider's response could not be decoded: {exc}"))

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = wire = 0
        coded = bool(self._decoder.codings)
        async for raw in self._inner:
            wire += len(raw)
            if wire > self._cap and not self._truncate:
                raise self._over(False)
            try:
                self._decoder.feed(raw)
                # One bounded piece at a time: a bomb stops at the cap, and the event loop serves
                # other calls between pieces.
                while piece := self._decoder.pull():
                    if total + len(piece) > self._cap:
                        if not self._truncate:
                            raise self._over(coded)
                        yield piece[: self._cap - total]
                        if self._meter is not None:
                            self._meter.error_body_truncated = True
                        return
                    total += len(piece)
                    yield piece
                    if coded:
                        await asyncio.sleep(0)
            except UndecodableBody as exc:
                if self._truncate:  # an error body: what was decoded is the detail
                    return
                raise self._undecodable(exc) from None
        try:
            self._decoder.finish()
        except UndecodableBody as exc:
            if not self._truncate:
                raise self._undecodable(exc) from None

    async def aclose(self) -> None:
        await self._inner.aclose()


MAX_PROVIDER_REDIRECTS = 5  # hops of one request; an API answers in place, or moves once or twice
_HOPS = "vision_bridge.redirect_hops"


class CappedTransport(httpx2.AsyncBaseTransport):
    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        limits: ResponseLimits = DEFAULT_RESPONSE_LIMITS,
        *,
        sdk_error: type[Exception] | None = None,
        origin: str | None = None,
    ) -> None:
        self._inner = inner
        self.limits = limits
        self._refusal = sdk_refusal(sdk_error)
        self._origin = None if origin is None else _origin(httpx2.URL(origin))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._origin is not None and _origin(request.url) != self._origin:
            # A redirect to another host: the request carries the API key (Anthropic's x-api-key
            # survives a cross-origin hop in httpx2) and the user's images. Not sent.
            scheme, host, port = _origin(request.url)
            raise self._refusal(
                UnreadableResponse(
                    f"the provider redirected to {scheme}://{host}:{port}, not the configured "
                    "VISION_API_BASE_URL's host; not followed (the request holds the API key and "
                    "the images): set VISION_API_BASE_URL to the address it redirects to if you trust it"
                )
            )
        meter = count_request()
        request.headers["Accept-Encoding"] = "identity"
        response = await self._inner.handle_async_request(request)
        if response.has_redirect_location:
            # httpx2 hands each hop the first request's extensions dict: the hops of one request.
            hops = int(request.extensions.get(_HOPS, 0)) + 1
            request.extensions[_HOPS] = hops
            if hops > MAX_PROVIDER_REDIRECTS:
                # httpx2's own limit (20) raises an error the SDKs wrap and retry: a provider
                # redirecting to itself got the key and the images 60-90 times for one call.
                await response.aclose()
                raise self._refusal(
                    UnreadableResponse(
                        f"the provider redirected more than {MAX_PROVIDER_REDIRECTS} times (a redirect "
                        "loop?); not followed further: check VISION_API_BASE_URL"
                    )
                )
        is_error = response.status_code >= 400
        cap = self.limits.max_error_body if is_error else self.limits.max_body
        declared = _declared_length(response)
        if not is_error and declared is not None and declared > cap:
            await response.aclose()
            raise self._refusal(ResponseTooLarge(cap, declared))
        try:
            decoder = BodyDecoder(response.headers.get("content-encoding", ""))
        except UndecodableBody as exc:  # more stacked codings than any real server sends
            await response.aclose()
            raise self._refusal(
                UnreadableResponse(f"the provider's response could not be decoded: {exc}")
            ) from None
        headers = response.headers
        if decoder.codings:
            # The SDK gets the decoded body: no coding left for httpx2 to undo (unbounded), and no
            # length that described the coded one.
            headers = httpx2.Headers(
                [
                    (k, v)
                    for k, v in headers.multi_items()
                    if k.lower() not in ("content-encoding", "content-length")
                ]
            )
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            status_code=response.status_code,
            headers=headers,
            stream=_CappedStream(
                response.stream, cap, decoder=decoder, truncate=is_error, meter=meter, refusal=self._refusal
            ),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    """Scheme, host and port (the scheme's default when none is written): what a redirect may not
    change. A move from https to http on the same host is another origin too."""
    default = {"https": 443, "http": 80}.get(url.scheme)
    return url.scheme, url.host.lower(), url.port or default


def _declared_length(response: httpx2.Response) -> int | None:
    try:
        return int(response.headers["content-length"])
    except (KeyError, ValueError):
        return None


def environment_proxy(url: str) -> str | None:
    """The proxy the environment (``HTTPS_PROXY``, ``NO_PROXY``, ...) names for ``url``, if any.

    A client given its own transport ignores environment proxies, so they are looked up here to
    keep working for users behind a corporate proxy.
    """
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    if not proxies or not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return proxies.get(parts.scheme) or proxies.get("all")


def capped_http_client(
    base_url: str,
    timeout_s: float,
    limits: ResponseLimits = DEFAULT_RESPONSE_LIMITS,
    *,
    sdk_error: type[Exception] | None = None,
) -> httpx2.AsyncClient:
    """An ``httpx2`` client for the SDKs: capped, decoded responses, the SDK's own timeout per
    phase; ``sdk_error``: the SDK's base error, which refusals also derive from."""
    inner = httpx2.AsyncHTTPTransport(retries=0, proxy=environment_proxy(base_url))
    return httpx2.AsyncClient(
        # Redirects are followed within the provider's origin only (see CappedTransport).
        transport=CappedTransport(inner, limits, sdk_error=sdk_error, origin=base_url),
        timeout=httpx2.Timeout(timeout_s),
        follow_redirects=True,
    )
