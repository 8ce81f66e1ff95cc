"""The HTTP layer under both SDKs: response byte caps and a count of the requests a call made.

Both official SDKs read a whole response into memory. :class:`CappedTransport` sits below them
(an ``httpx2`` transport passed in through ``http_client``) and

- refuses a successful response over ``max_body`` bytes (declared or streamed) by raising
  :class:`ResponseTooLarge`, which the SDKs let through unwrapped and do not retry;
- cuts an error response after ``max_error_body`` bytes, so a provider's multi-megabyte error
  page still yields an error with its first megabyte as detail;
- counts every request, SDK retries included, into the current tool call's
  :class:`~vision_bridge.metering.CallMeter`, which is how ``calls`` in the usage report is known.

Servers are asked not to compress (``Accept-Encoding: identity``), so the bytes counted here are
the bytes the SDK parses.
"""

from __future__ import annotations

import urllib.request
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httpx2

from vision_bridge.backends.base import DEFAULT_RESPONSE_LIMITS, ResponseLimits, ResponseTooLarge
from vision_bridge.metering import CallMeter, count_request


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, cap: int, *, truncate: bool, meter: CallMeter | None):
        self._inner = inner
        self._cap = cap
        self._truncate = truncate
        self._meter = meter

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        async for chunk in self._inner:
            if total + len(chunk) > self._cap:
                if not self._truncate:
                    raise ResponseTooLarge(self._cap)
                yield chunk[: self._cap - total]
                if self._meter is not None:
                    self._meter.error_body_truncated = True
                return
            total += len(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class CappedTransport(httpx2.AsyncBaseTransport):
    def __init__(
        self, inner: httpx2.AsyncBaseTransport, limits: ResponseLimits = DEFAULT_RESPONSE_LIMITS
    ) -> None:
        self._inner = inner
        self.limits = limits

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        meter = count_request()
        request.headers["Accept-Encoding"] = "identity"
        response = await self._inner.handle_async_request(request)
        is_error = response.status_code >= 400
        cap = self.limits.max_error_body if is_error else self.limits.max_body
        declared = _declared_length(response)
        if not is_error and declared is not None and declared > cap:
            await response.aclose()
            raise ResponseTooLarge(cap, declared)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream, cap, truncate=is_error, meter=meter),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


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
    base_url: str, timeout_s: float, limits: ResponseLimits = DEFAULT_RESPONSE_LIMITS
) -> httpx2.AsyncClient:
    """An ``httpx2`` client for the SDKs: capped responses, the SDK's own timeout per phase."""
    inner = httpx2.AsyncHTTPTransport(retries=0, proxy=environment_proxy(base_url))
    return httpx2.AsyncClient(
        transport=CappedTransport(inner, limits), timeout=httpx2.Timeout(timeout_s), follow_redirects=True
    )
