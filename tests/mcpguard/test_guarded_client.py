"""GuardedClient against a real loopback server: hops, addresses, caps, deadlines, proxies."""

from __future__ import annotations

import asyncio
import gzip

import pytest

from docab_mcpguard import FetchError, FetchErrorKind, FetchLimits, GuardedClient, HostDenied, HostPolicy
from tests.support.http_server import LocalServer, Reply


class FakeResolver:
    """Maps host names to addresses; anything else fails like a DNS miss."""

    def __init__(self, table: dict[str, list[str]]):
        self.table = table
        self.calls: list[str] = []

    async def resolve(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host not in self.table:
            raise OSError("no such host")
        return self.table[host]


def fetch(client: GuardedClient, url: str, **kwargs):
    async def go():
        async with client:
            return await client.fetch(url, **kwargs)

    return asyncio.run(go())


@pytest.fixture
def server():
    with LocalServer() as s:
        yield s


def local_client(server: LocalServer, **kwargs) -> GuardedClient:
    """A client for which the name `site.test` is the loopback server and is explicitly allowed."""
    policy = HostPolicy.build(allow_any=True, internal_hosts=["site.test"])
    resolver = FakeResolver({"site.test": ["127.0.0.1"]})
    return GuardedClient(policy, resolver=resolver, **kwargs)


def site(server: LocalServer, path: str) -> str:
    return f"http://site.test:{server.port}{path}"


def test_fetch_follows_allowed_redirects_and_reports_final_url(server: LocalServer) -> None:
    server.route("/start", Reply.redirect("/middle"))
    server.route("/middle", Reply.redirect(site(server, "/end"), status=301))
    server.route("/end", Reply(body="done", content_type="text/markdown; charset=latin-1"))
    result = fetch(local_client(server), site(server, "/start"))
    assert result.content == b"done"
    assert result.url == site(server, "/end")
    assert result.redirects == (site(server, "/start"), site(server, "/middle"))
    assert result.content_type == "text/markdown"
    assert result.charset == "latin-1"


def test_loopback_refused_without_exact_allowance(server: LocalServer) -> None:
    server.route("/x", Reply(body="secret"))
    client = GuardedClient(HostPolicy.build(allow_any=True))
    with pytest.raises(FetchError) as info:
        fetch(client, server.url("/x"))
    assert info.value.kind is FetchErrorKind.BLOCKED
    assert "loopback" in str(info.value)
    assert server.requests == []


@pytest.mark.parametrize(
    "target", ["http://127.0.0.1:{port}/secret", "http://169.254.169.254/latest/meta-data/"]
)
def test_redirect_from_allowed_host_to_internal_address_is_refused(server: LocalServer, target: str) -> None:
    server.route("/start", Reply.redirect(target.format(port=server.port)))
    server.route("/secret", Reply(body="secret"))
    with pytest.raises(FetchError) as info:
        fetch(local_client(server), site(server, "/start"))
    assert info.value.kind is FetchErrorKind.BLOCKED
    assert [r.path for r in server.requests] == ["/start"]


def test_redirect_to_host_outside_allow_list_is_refused(server: LocalServer) -> None:
    server.route("/start", Reply.redirect("http://elsewhere.test/x"))
    policy = HostPolicy.build(domains=["site.test"], internal_hosts=["site.test"])
    client = GuardedClient(policy, resolver=FakeResolver({"site.test": ["127.0.0.1"]}))
    with pytest.raises(FetchError, match=r"redirect from .* blocked: host 'elsewhere.test' is not allowed"):
        fetch(client, site(server, "/start"))


def test_one_host_that_never_answers_does_not_hold_every_connection(server: LocalServer) -> None:
    # Twelve fetches waiting on a slow route (the pool's default of 10 connections, all taken),
    # then one of a quick route: it is answered while all twelve still wait.
    server.route("/slow", Reply(body="slow", delay=2.0))
    server.route("/quick", Reply(body="quick"))

    async def go() -> bytes:
        async with local_client(server) as client:
            slow = [asyncio.create_task(client.fetch(site(server, "/slow"))) for _ in range(12)]
            await asyncio.sleep(0.3)
            quick = await client.fetch(site(server, "/quick"))
            assert not any(task.done() for task in slow)
            assert all(fetched.content == b"slow" for fetched in await asyncio.gather(*slow))
            return quick.content

    assert asyncio.run(go()) == b"quick"


def test_redirect_to_a_port_past_65535_is_refused_not_an_internal_error(server: LocalServer) -> None:
    server.route("/start", Reply.redirect("http://site.test:99999/x"))
    with pytest.raises(FetchError, match=r"redirect from .* blocked: .* port 99999, outside 1-65535") as info:
        fetch(local_client(server), site(server, "/start"))
    assert info.value.kind is FetchErrorKind.BLOCKED


def test_name_resolving_to_private_address_is_refused_before_connecting() -> None:
    resolver = FakeResolver({"public-looking.test": ["93.184.216.34", "10.0.0.7"]})
    client = GuardedClient(HostPolicy.build(allow_any=True), resolver=resolver)
    with pytest.raises(FetchError, match="private address"):
        fetch(client, "http://public-looking.test/")


def test_dns_failure_is_a_network_error() -> None:
    client = GuardedClient(HostPolicy.build(allow_any=True), resolver=FakeResolver({}))
    with pytest.raises(FetchError) as info:
        fetch(client, "http://nowhere.test/")
    assert info.value.kind is FetchErrorKind.NETWORK
    assert "could not resolve" in str(info.value)


def test_http_status_error_carries_status(server: LocalServer) -> None:
    server.route("/gone", Reply(status=404, body="nope"))
    with pytest.raises(FetchError) as info:
        fetch(local_client(server), site(server, "/gone"))
    assert info.value.kind is FetchErrorKind.HTTP_STATUS
    assert info.value.status == 404


def test_too_many_redirects(server: LocalServer) -> None:
    server.route("/loop", Reply.redirect("/loop"))
    with pytest.raises(FetchError) as info:
        fetch(local_client(server, limits=FetchLimits(max_redirects=3)), site(server, "/loop"))
    assert info.value.kind is FetchErrorKind.TOO_MANY_REDIRECTS
    assert len(server.requests) == 4


def test_byte_cap_at_its_edge(server: LocalServer) -> None:
    server.route("/exact", Reply(body=b"x" * 100))
    server.route("/over", Reply(body=b"x" * 101))
    limits = FetchLimits(max_bytes=100)
    assert len(fetch(local_client(server, limits=limits), site(server, "/exact")).content) == 100
    with pytest.raises(FetchError) as info:
        fetch(local_client(server, limits=limits), site(server, "/over"))
    assert info.value.kind is FetchErrorKind.TOO_LARGE


def test_byte_cap_enforced_on_chunked_stream_without_length(server: LocalServer) -> None:
    server.route("/stream", Reply(body=[b"x" * 60] * 5))
    with pytest.raises(FetchError) as info:
        fetch(local_client(server, limits=FetchLimits(max_bytes=200)), site(server, "/stream"))
    assert info.value.kind is FetchErrorKind.TOO_LARGE


def test_byte_cap_counts_decompressed_bytes(server: LocalServer) -> None:
    bomb = b"\0" * 1_000_000
    server.route("/bomb", Reply(body=bomb, gzip_body=True))
    assert len(gzip.compress(bomb)) < 10_000
    with pytest.raises(FetchError) as info:
        fetch(local_client(server, limits=FetchLimits(max_bytes=100_000)), site(server, "/bomb"))
    assert info.value.kind is FetchErrorKind.TOO_LARGE


def test_deadline_covers_headers(server: LocalServer) -> None:
    server.route("/slow", Reply(body="late", delay=1.0))
    with pytest.raises(FetchError) as info:
        fetch(local_client(server, limits=FetchLimits(timeout_s=0.3)), site(server, "/slow"))
    assert info.value.kind is FetchErrorKind.TIMEOUT


def test_deadline_covers_a_trickling_body(server: LocalServer) -> None:
    # Each chunk arrives well within a per-read timeout; only a whole-fetch deadline stops it.
    server.route("/trickle", Reply(body=[b"x"] * 20, chunk_delay=0.1))
    with pytest.raises(FetchError) as info:
        fetch(local_client(server, limits=FetchLimits(timeout_s=0.5)), site(server, "/trickle"))
    assert info.value.kind is FetchErrorKind.TIMEOUT


def test_header_check_can_refuse_before_body(server: LocalServer) -> None:
    server.route("/page", Reply(body="<html>", content_type="text/html"))

    def refuse_html(url: str, status: int, headers) -> None:
        if headers.get("content-type", "").startswith("text/html"):
            raise FetchError(FetchErrorKind.REJECTED, f"{url} is HTML")

    with pytest.raises(FetchError) as info:
        fetch(local_client(server), site(server, "/page"), check_headers=refuse_html)
    assert info.value.kind is FetchErrorKind.REJECTED


def test_connection_dropped_mid_body_is_network_error(server: LocalServer) -> None:
    server.route("/cut", Reply(body=b"y" * 1000, close_early=True))
    with pytest.raises(FetchError) as info:
        fetch(local_client(server), site(server, "/cut"))
    assert info.value.kind is FetchErrorKind.NETWORK


def test_proxy_mode_checks_target_before_each_hop(server: LocalServer) -> None:
    # The loopback server plays a forward proxy: it receives absolute-form request targets.
    server.route("/via-proxy", Reply(body="proxied"))
    resolver = FakeResolver({"public.test": ["93.184.216.34"], "internal.test": ["10.1.1.1"]})
    client = GuardedClient(HostPolicy.build(allow_any=True), resolver=resolver, proxy=server.base)
    assert fetch(client, "http://public.test/via-proxy").content == b"proxied"
    client = GuardedClient(HostPolicy.build(allow_any=True), resolver=resolver, proxy=server.base)
    with pytest.raises(FetchError, match="private address"):
        fetch(client, "http://internal.test/via-proxy")
    assert len(server.requests) == 1


def test_scheme_refused_before_any_io() -> None:
    client = GuardedClient(HostPolicy.build(allow_any=True), resolver=FakeResolver({}))
    with pytest.raises(FetchError) as info:
        fetch(client, "file:///etc/passwd")
    assert info.value.kind is FetchErrorKind.BLOCKED
    assert isinstance(info.value.__cause__, HostDenied)
