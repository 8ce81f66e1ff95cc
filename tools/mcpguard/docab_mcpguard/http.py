"""A guarded HTTP(S) fetcher: host policy on every hop, address check at connect time, caps.

Redirects are followed here, not by httpx, so each hop's URL is checked against the
:class:`HostPolicy` before any connection is made. The address check lives in the network
backend: the host is resolved, every address is classified, and the socket is opened to the
checked address itself, so a DNS answer that changes between check and connect (rebinding)
cannot reach an internal address. With a proxy configured the proxy makes the connection, so
the target is resolved and checked before each hop instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import httpcore
import httpx

from docab_mcpguard.errors import FetchError, FetchErrorKind, HostDenied
from docab_mcpguard.hosts import HostPolicy, is_ip_literal

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class Resolver(Protocol):
    """Name resolution, injectable so tests can make any host resolve anywhere."""

    async def resolve(self, host: str, port: int) -> list[str]: ...


class SystemResolver:
    async def resolve(self, host: str, port: int) -> list[str]:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        seen: list[str] = []
        for _family, _type, _proto, _canon, sockaddr in infos:
            address = str(sockaddr[0])
            if address not in seen:
                seen.append(address)
        return seen


@dataclass(frozen=True)
class FetchLimits:
    """``timeout_s`` bounds the whole fetch (every hop, headers and body), not each read."""

    timeout_s: float = 30.0
    max_bytes: int = 10_000_000
    max_redirects: int = 5


@dataclass(frozen=True)
class Fetched:
    url: str  # final URL, after redirects
    status: int
    headers: httpx.Headers
    content: bytes
    redirects: tuple[str, ...] = ()  # URLs that answered with a redirect, in order

    @property
    def content_type(self) -> str:
        return self._content_type_header.split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for part in self._content_type_header.split(";")[1:]:
            key, _, value = part.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                return value.strip().strip("\"'")
        return None

    @property
    def _content_type_header(self) -> str:
        header: str = self.headers.get("content-type", "")  # httpx types header values as Any
        return header


HeaderCheck = Callable[[str, int, httpx.Headers], None]
"""Called with (url, status, headers) before the body is read; raise GuardError to refuse."""


async def _resolve_checked(policy: HostPolicy, resolver: Resolver, host: str, port: int) -> list[str]:
    if is_ip_literal(host):
        addresses = [host]
    else:
        try:
            addresses = await resolver.resolve(host, port)
        except OSError as exc:
            raise FetchError(FetchErrorKind.NETWORK, f"could not resolve host {host!r}") from exc
        if not addresses:
            raise FetchError(FetchErrorKind.NETWORK, f"host {host!r} has no addresses")
    # Every address must pass: otherwise an attacker's DNS could list a public address first
    # and an internal one second, and a retry would land inside.
    for address in addresses:
        policy.check_address(host, address)
    return addresses


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, policy: HostPolicy, resolver: Resolver) -> None:
        self._policy = policy
        self._resolver = resolver
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await _resolve_checked(self._policy, self._resolver, host, port)
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(  # pragma: no cover - never used
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _GuardedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, policy: HostPolicy, resolver: Resolver, *, http2: bool, verify: bool) -> None:
        super().__init__(http2=http2, verify=verify, trust_env=False)
        # httpx builds its pool without a way to pass a network backend; swap in one that
        # carries the same TLS settings and our connect-time check.
        ssl_context = self._pool._ssl_context
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            http1=True,
            http2=http2,
            network_backend=_GuardedBackend(policy, resolver),
        )


@dataclass
class GuardedClient:
    """Fetch URLs under a :class:`HostPolicy`. Use as an async context manager or call ``aclose``.

    ``headers`` are sent with every request; ``proxy`` (an http(s) or socks URL) is used for
    every request when given; environment proxies are ignored unless passed in explicitly.
    """

    policy: HostPolicy
    limits: FetchLimits = field(default_factory=FetchLimits)
    headers: Mapping[str, str] = field(default_factory=dict)
    resolver: Resolver = field(default_factory=SystemResolver)
    proxy: str | None = None
    http2: bool = False
    verify_tls: bool = True

    def __post_init__(self) -> None:
        if self.proxy:
            transport: httpx.AsyncBaseTransport = httpx.AsyncHTTPTransport(
                proxy=self.proxy, http2=self.http2, verify=self.verify_tls, trust_env=False
            )
        else:
            transport = _GuardedTransport(
                self.policy, self.resolver, http2=self.http2, verify=self.verify_tls
            )
        self._client = httpx.AsyncClient(
            transport=transport,
            headers=dict(self.headers),
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(self.limits.timeout_s),
        )

    async def __aenter__(self) -> GuardedClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def fetch(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        limits: FetchLimits | None = None,
        check_headers: HeaderCheck | None = None,
    ) -> Fetched:
        """GET ``url`` following redirects; raise FetchError (or HostDenied) on any failure.

        Non-2xx final statuses raise ``FetchError(HTTP_STATUS, status=...)``.
        """
        limits = limits or self.limits
        try:
            async with asyncio.timeout(limits.timeout_s):
                return await self._fetch(url, headers or {}, limits, check_headers)
        except TimeoutError as exc:
            raise FetchError(
                FetchErrorKind.TIMEOUT, f"fetching {url} took longer than {limits.timeout_s:g} s", url=url
            ) from exc
        except httpx.TimeoutException as exc:
            raise FetchError(
                FetchErrorKind.TIMEOUT, f"fetching {url} took longer than {limits.timeout_s:g} s", url=url
            ) from exc

    async def _fetch(
        self, url: str, headers: Mapping[str, str], limits: FetchLimits, check_headers: HeaderCheck | None
    ) -> Fetched:
        redirects: list[str] = []
        current = url
        while True:
            try:
                parsed = self.policy.check_url(current)
            except HostDenied as exc:
                prefix = f"redirect from {redirects[-1]} blocked: " if redirects else ""
                raise FetchError(FetchErrorKind.BLOCKED, prefix + str(exc), url=current) from exc
            if self.proxy:
                port = parsed.port or (443 if parsed.scheme == "https" else 80)
                try:
                    await _resolve_checked(self.policy, self.resolver, parsed.host, port)
                except HostDenied as exc:
                    raise FetchError(FetchErrorKind.BLOCKED, str(exc), url=current) from exc
            try:
                async with self._client.stream("GET", parsed, headers=dict(headers)) as response:
                    if response.status_code in REDIRECT_STATUSES and "location" in response.headers:
                        if len(redirects) >= limits.max_redirects:
                            raise FetchError(
                                FetchErrorKind.TOO_MANY_REDIRECTS,
                                f"more than {limits.max_redirects} redirects starting at {url}",
                                url=current,
                            )
                        redirects.append(str(response.url))
                        current = str(response.url.join(response.headers["location"]))
                        continue
                    final_url = str(response.url)
                    if not 200 <= response.status_code < 300:
                        raise FetchError(
                            FetchErrorKind.HTTP_STATUS,
                            f"{final_url} answered HTTP {response.status_code} {response.reason_phrase}".rstrip(),
                            url=final_url,
                            status=response.status_code,
                        )
                    if check_headers is not None:
                        check_headers(final_url, response.status_code, response.headers)
                    content = await _read_capped(response, limits.max_bytes, final_url)
                    return Fetched(
                        url=final_url,
                        status=response.status_code,
                        headers=response.headers,
                        content=content,
                        redirects=tuple(redirects),
                    )
            except HostDenied as exc:
                raise FetchError(FetchErrorKind.BLOCKED, str(exc), url=current) from exc
            except (httpx.TimeoutException, FetchError):
                raise
            except httpx.DecodingError as exc:
                raise FetchError(
                    FetchErrorKind.NETWORK,
                    f"{current} sent a body that could not be decompressed",
                    url=current,
                ) from exc
            except (httpx.HTTPError, OSError) as exc:
                raise FetchError(FetchErrorKind.NETWORK, _network_message(current, exc), url=current) from exc


async def _read_capped(response: httpx.Response, max_bytes: int, url: str) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None:
        with contextlib.suppress(ValueError):
            if int(declared) > max_bytes:
                raise FetchError(
                    FetchErrorKind.TOO_LARGE,
                    f"{url} declares {int(declared):,} bytes, over the limit of {max_bytes:,}",
                    url=url,
                )
    chunks: list[bytes] = []
    total = 0
    # Counted after decompression, so a small gzip bomb cannot expand past the cap in memory.
    async for chunk in response.aiter_bytes():
        total += len(chunk)
        if total > max_bytes:
            raise FetchError(
                FetchErrorKind.TOO_LARGE, f"{url} sent more than the limit of {max_bytes:,} bytes", url=url
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _network_message(url: str, exc: BaseException) -> str:
    if isinstance(exc, httpx.ConnectError):
        return f"could not connect to {httpx.URL(url).host or url}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"{url} broke the HTTP protocol or closed the connection early"
    if isinstance(exc, httpx.UnsupportedProtocol):
        return f"{url} uses an unsupported protocol"
    return f"network error while fetching {url}"
