"""A guarded HTTP(S) fetcher: host policy on every hop, address check at connect time, caps.

Built on ``httpx2`` (the HTTP stack of the MCP, OpenAI and Anthropic SDKs) through its public
transport API: the connection pool is ``httpcore2``'s, given a network backend of our own.

Redirects are followed here, not by httpx2, so each hop's URL is checked against the
:class:`HostPolicy` before any connection is made. The address check lives in the network
backend: the host is resolved, every address is classified, and the socket is opened to the
checked address itself, so a DNS answer that changes between check and connect (rebinding)
cannot reach an internal address. With a proxy configured the proxy makes the connection, so
the target is resolved and checked before each hop instead.

The body is read undecoded and decoded here by :class:`~docab_mcpguard.decoding.BodyDecoder`
in steps of at most 64 KiB, each counted against the byte cap, with the event loop given back
between steps: a decompression bomb ends at the cap, within the deadline, without stalling the
other calls a server is serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import httpcore2
import httpx2

from docab_mcpguard.decoding import SUPPORTED_CODINGS, BodyDecoder, UndecodableBody
from docab_mcpguard.errors import FetchError, FetchErrorKind, HostDenied
from docab_mcpguard.hosts import HostPolicy, is_ip_literal

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ACCEPT_ENCODING = ", ".join(SUPPORTED_CODINGS)


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
    """``timeout_s`` bounds the whole fetch (every hop, headers and body), not each read.

    ``max_bytes`` caps the body after decoding (and the bytes on the wire).
    """

    timeout_s: float = 30.0
    max_bytes: int = 10_000_000
    max_redirects: int = 5


@dataclass(frozen=True)
class Fetched:
    url: str  # final URL, after redirects
    status: int
    headers: httpx2.Headers
    content: bytes  # decoded
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
        return self.headers.get("content-type", "")


HeaderCheck = Callable[[str, int, httpx2.Headers], None]
FetchProgress = Callable[[int, int | None], None]
"""Told as a body arrives: bytes received so far (decoded), and the length the server declared
(None when it declared none, or a coded one that says nothing of the decoded size)."""
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


async def check_target(url: str, *, policy: HostPolicy, resolver: Resolver) -> None:
    """Raise the FetchError a fetch of ``url`` would raise before connecting, or return.

    The URL is checked against the host policy, the host resolved and every address
    classified, exactly as :meth:`GuardedClient.fetch` does for its first hop. For callers that
    hand a URL to someone else to fetch (an API provider): only what the guard would fetch
    itself may pass. (The other party resolves the name again: a name whose DNS answer
    changes in between, rebinding, is beyond any check made here.)
    """
    try:
        parsed = policy.check_url(url)
    except HostDenied as exc:
        raise FetchError(FetchErrorKind.BLOCKED, str(exc), url=url) from exc
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        await _resolve_checked(policy, resolver, parsed.host, port)
    except HostDenied as exc:
        raise FetchError(FetchErrorKind.BLOCKED, str(exc), url=url) from exc


class _GuardedBackend(httpcore2.AsyncNetworkBackend):
    def __init__(self, policy: HostPolicy, resolver: Resolver) -> None:
        self._policy = policy
        self._resolver = resolver
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await _resolve_checked(self._policy, self._resolver, host, port)
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(  # pragma: no cover - never used
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


# httpcore2's exceptions as httpx2 names them (most specific first), for the transport below.
_CORE_ERRORS: tuple[tuple[type[Exception], type[httpx2.HTTPError]], ...] = (
    (httpcore2.ConnectTimeout, httpx2.ConnectTimeout),
    (httpcore2.ReadTimeout, httpx2.ReadTimeout),
    (httpcore2.WriteTimeout, httpx2.WriteTimeout),
    (httpcore2.PoolTimeout, httpx2.PoolTimeout),
    (httpcore2.TimeoutException, httpx2.TimeoutException),
    (httpcore2.ConnectError, httpx2.ConnectError),
    (httpcore2.ReadError, httpx2.ReadError),
    (httpcore2.WriteError, httpx2.WriteError),
    (httpcore2.NetworkError, httpx2.NetworkError),
    (httpcore2.UnsupportedProtocol, httpx2.UnsupportedProtocol),
    (httpcore2.RemoteProtocolError, httpx2.RemoteProtocolError),
    (httpcore2.LocalProtocolError, httpx2.LocalProtocolError),
    (httpcore2.ProtocolError, httpx2.ProtocolError),
)


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for core, mapped in _CORE_ERRORS:
            if isinstance(exc, core):
                raise mapped(str(exc)) from exc
        raise


class _CoreStream(httpx2.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


# Connections open at once, over all hosts. The pool's default (10) let one host that never
# answers hold them all: a document with ten images there made every other fetch of the server
# wait for a free connection, up to its whole timeout. A read inlines at most 50 images.
MAX_CONNECTIONS = 100


class _GuardedTransport(httpx2.AsyncBaseTransport):
    """httpx2's transport contract over an httpcore2 pool whose every connection is checked."""

    def __init__(self, policy: HostPolicy, resolver: Resolver, *, http2: bool, verify: bool) -> None:
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(verify=verify, trust_env=False),
            max_connections=MAX_CONNECTIONS,
            http1=True,
            http2=http2,
            network_backend=_GuardedBackend(policy, resolver),
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        assert isinstance(request.stream, httpx2.AsyncByteStream)
        core_request = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            response = await self._pool.handle_async_request(core_request)
        stream = response.stream
        assert isinstance(stream, AsyncIterable)
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_CoreStream(stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


@dataclass
class GuardedClient:
    """Fetch URLs under a :class:`HostPolicy`. Use as an async context manager or call ``aclose``.

    ``headers`` are sent with every request (``Accept-Encoding`` defaults to the codings this
    client decodes); ``proxy`` (an http(s) or socks URL) is used for every request when given;
    environment proxies are ignored unless passed in explicitly.
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
            transport: httpx2.AsyncBaseTransport = httpx2.AsyncHTTPTransport(
                proxy=self.proxy,
                http2=self.http2,
                verify=self.verify_tls,
                trust_env=False,
                limits=httpx2.Limits(max_connections=MAX_CONNECTIONS),
            )
        else:
            transport = _GuardedTransport(
                self.policy, self.resolver, http2=self.http2, verify=self.verify_tls
            )
        headers = {"Accept-Encoding": ACCEPT_ENCODING, **dict(self.headers)}
        self._client = httpx2.AsyncClient(
            transport=transport,
            headers=headers,
            follow_redirects=False,
            trust_env=False,
            timeout=httpx2.Timeout(self.limits.timeout_s),
        )

    async def __aenter__(self) -> GuardedClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def check_target(self, url: str) -> None:
        """Would :meth:`fetch` connect to ``url``'s first hop? See :func:`check_target`."""
        await check_target(url, policy=self.policy, resolver=self.resolver)

    async def fetch(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        limits: FetchLimits | None = None,
        check_headers: HeaderCheck | None = None,
        on_progress: FetchProgress | None = None,
    ) -> Fetched:
        """GET ``url`` following redirects; raise FetchError (or HostDenied) on any failure.

        Non-2xx final statuses raise ``FetchError(HTTP_STATUS, status=...)``. ``on_progress``
        hears the body's bytes as they arrive (decoded so far, and the declared length or None).
        """
        limits = limits or self.limits
        try:
            async with asyncio.timeout(limits.timeout_s):
                return await self._fetch(url, headers or {}, limits, check_headers, on_progress)
        except (TimeoutError, httpx2.TimeoutException) as exc:
            raise FetchError(
                FetchErrorKind.TIMEOUT, f"fetching {url} took longer than {limits.timeout_s:g} s", url=url
            ) from exc

    async def _fetch(
        self,
        url: str,
        headers: Mapping[str, str],
        limits: FetchLimits,
        check_headers: HeaderCheck | None,
        on_progress: FetchProgress | None = None,
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
                        current = _redirect_target(response)
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
                    content = await _read_capped(response, limits.max_bytes, final_url, on_progress)
                    return Fetched(
                        url=final_url,
                        status=response.status_code,
                        headers=response.headers,
                        content=content,
                        redirects=tuple(redirects),
                    )
            except HostDenied as exc:
                raise FetchError(FetchErrorKind.BLOCKED, str(exc), url=current) from exc
            except (httpx2.TimeoutException, FetchError):
                raise
            except UndecodableBody as exc:
                raise FetchError(
                    FetchErrorKind.NETWORK,
                    f"{current} sent a body that could not be decoded: {exc}",
                    url=current,
                ) from exc
            except (httpx2.HTTPError, httpx2.InvalidURL, OSError) as exc:
                raise FetchError(FetchErrorKind.NETWORK, _network_message(current, exc), url=current) from exc


def _redirect_target(response: httpx2.Response) -> str:
    """The absolute URL a redirect points to; a Location that is no URL at all is refused here."""
    location = response.headers["location"]
    try:
        return str(response.url.join(location))
    except (httpx2.InvalidURL, ValueError, TypeError) as exc:
        shown = location if len(location) <= 100 else location[:97] + "..."
        raise FetchError(
            FetchErrorKind.BLOCKED,
            f"redirect from {response.url} blocked: {shown!r} is not a valid http(s) URL",
            url=str(response.url),
        ) from exc


async def _read_capped(
    response: httpx2.Response, max_bytes: int, url: str, on_progress: FetchProgress | None = None
) -> bytes:
    declared = response.headers.get("content-length")
    length: int | None = None
    if declared is not None:
        with contextlib.suppress(ValueError):
            length = int(declared) if not response.headers.get("content-encoding") else None
            if int(declared) > max_bytes:
                raise FetchError(
                    FetchErrorKind.TOO_LARGE,
                    f"{url} declares {int(declared):,} bytes, over the limit of {max_bytes:,}",
                    url=url,
                )
    decoder = BodyDecoder(response.headers.get("content-encoding", ""))
    chunks: list[bytes] = []
    total = wire = 0

    def too_large() -> FetchError:
        return FetchError(
            FetchErrorKind.TOO_LARGE, f"{url} sent more than the limit of {max_bytes:,} bytes", url=url
        )

    async for raw in response.aiter_raw():
        wire += len(raw)
        if wire > max_bytes:
            raise too_large()
        decoder.feed(raw)
        # Counted after decoding, one bounded piece at a time: a bomb stops at the cap, and the
        # event loop serves other calls between pieces.
        while piece := decoder.pull():
            total += len(piece)
            if total > max_bytes:
                raise too_large()
            chunks.append(piece)
            if on_progress is not None:
                on_progress(total, length)
            await asyncio.sleep(0)
    decoder.finish()
    return b"".join(chunks)


def _network_message(url: str, exc: BaseException) -> str:
    if isinstance(exc, httpx2.ConnectError):
        try:
            host = httpx2.URL(url).host or url
        except httpx2.InvalidURL:
            host = url
        return f"could not connect to {host}"
    if isinstance(exc, httpx2.RemoteProtocolError):
        return f"{url} broke the HTTP protocol or closed the connection early"
    if isinstance(exc, httpx2.UnsupportedProtocol):
        return f"{url} uses an unsupported protocol"
    if isinstance(exc, httpx2.InvalidURL):
        return f"{url} is not a valid URL"
    return f"network error while fetching {url}"
