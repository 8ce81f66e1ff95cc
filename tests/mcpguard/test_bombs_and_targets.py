"""GuardedClient against decompression bombs, odd redirects, and URL checks for third parties."""

from __future__ import annotations

import asyncio

import pytest

from docab_mcpguard import FetchError, FetchErrorKind, FetchLimits, GuardedClient, HostPolicy
from tests.mcpguard.test_guarded_client import FakeResolver, fetch, local_client, site
from tests.support.bombs import bomb
from tests.support.http_server import LocalServer, Reply

STACKS = ["gzip", "deflate", "br", "zstd", ("gzip", "gzip"), ("br", "zstd"), ("zstd", "deflate")]


@pytest.fixture
def server():
    with LocalServer() as s:
        yield s


def serve_bomb(server: LocalServer, codings, path: str = "/bomb") -> str:
    body, header = bomb(codings if isinstance(codings, str) else tuple(codings))
    server.route(path, Reply(body=body, headers={"Content-Encoding": header}, content_type="text/html"))
    return site(server, path)


@pytest.mark.parametrize("codings", STACKS, ids=str)
def test_a_gigabyte_bomb_ends_at_the_cap(server: LocalServer, codings) -> None:
    url = serve_bomb(server, codings)
    client = local_client(server, limits=FetchLimits(max_bytes=5_000_000, timeout_s=30))
    with pytest.raises(FetchError) as info:
        fetch(client, url)
    assert info.value.kind is FetchErrorKind.TOO_LARGE
    assert "5,000,000 bytes" in str(info.value)


def test_three_stacked_codings_are_refused(server: LocalServer) -> None:
    body, header = bomb(("gzip", "gzip", "gzip"), 1 << 20)
    server.route("/three", Reply(body=body, headers={"Content-Encoding": header}))
    with pytest.raises(FetchError, match="encoded 3 times") as info:
        fetch(local_client(server), site(server, "/three"))
    assert info.value.kind is FetchErrorKind.NETWORK


def test_the_event_loop_keeps_running_while_a_bomb_is_decoded(server: LocalServer) -> None:
    # The cap is set high so that decoding takes a while: another task must get turns meanwhile
    # (before, each received chunk was decoded whole inside one step of the loop).
    url = serve_bomb(server, "br")
    client = local_client(server, limits=FetchLimits(max_bytes=100_000_000, timeout_s=30))

    async def go() -> tuple[int, FetchError]:
        turns = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal turns
            while not done.is_set():
                turns += 1
                await asyncio.sleep(0)

        async def bombed() -> FetchError:
            try:
                async with client:
                    await client.fetch(url)
            except FetchError as exc:
                return exc
            finally:
                done.set()
            raise AssertionError("the bomb was accepted")

        _, error = await asyncio.gather(ticker(), bombed())
        return turns, error

    turns, error = asyncio.run(go())
    assert error.kind is FetchErrorKind.TOO_LARGE
    assert turns > 500  # 100 MB in pieces of 64 KiB: one turn per piece at least


def test_the_body_is_decoded_here_not_by_the_http_library(server: LocalServer) -> None:
    body, header = bomb(("zstd", "gzip"), 1 << 20)
    server.route("/ok", Reply(body=body, headers={"Content-Encoding": header}))
    assert fetch(local_client(server), site(server, "/ok")).content == bytes(1 << 20)
    assert server.requests[0].headers["accept-encoding"] == "gzip, deflate, br, zstd"


def test_a_truncated_compressed_body_is_an_error(server: LocalServer) -> None:
    body, header = bomb("gzip", 1 << 20)
    server.route("/cut", Reply(body=[body[: len(body) // 2]], headers={"Content-Encoding": header}))
    with pytest.raises(FetchError, match="gzip data ends early") as info:
        fetch(local_client(server), site(server, "/cut"))
    assert info.value.kind is FetchErrorKind.NETWORK


@pytest.mark.parametrize(
    "location", ["data:text/html,<script>alert(1)</script>", "data:,", "javascript:alert(1)", "http://[::1"]
)
def test_a_redirect_to_a_non_http_url_is_a_clear_refusal(server: LocalServer, location: str) -> None:
    server.route("/start", Reply.redirect(location))
    with pytest.raises(FetchError) as info:
        fetch(local_client(server), site(server, "/start"))
    assert info.value.kind is FetchErrorKind.BLOCKED
    assert str(info.value).startswith(f"redirect from {site(server, '/start')} blocked: ")


def test_check_target_refuses_what_fetch_would_refuse_with_the_same_message(server: LocalServer) -> None:
    resolver = FakeResolver({"public.test": ["93.184.216.34"], "rebind.test": ["93.184.216.34", "10.0.0.1"]})
    client = GuardedClient(HostPolicy.build(allow_any=True), resolver=resolver)

    async def check(url: str) -> FetchError | None:
        try:
            await client.check_target(url)
        except FetchError as exc:
            return exc
        return None

    async def both(url: str) -> tuple[FetchError | None, FetchError | None]:
        checked = await check(url)
        try:
            await client.fetch(url)
        except FetchError as exc:
            return checked, exc
        return checked, None

    assert asyncio.run(check("https://public.test/cat.png")) is None
    for url in (
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.1:9/x.png",
        "http://[::1]/x.png",
        "http://rebind.test/x.png",
        "http://user:pw@public.test/x.png",
        "ftp://public.test/x.png",
    ):
        checked, fetched = asyncio.run(both(url))
        assert checked is not None and fetched is not None, url
        assert checked.kind is FetchErrorKind.BLOCKED and str(checked) == str(fetched)
    assert resolver.calls.count("rebind.test") == 2  # resolved by the check, and again by the fetch
