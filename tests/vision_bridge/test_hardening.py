"""vision-bridge under attack: internal URLs, decompression bombs over stdio, a folder-swap race."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from pathlib import Path

import pytest
from mcp import Client

from tests.support.bombs import bomb
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, anthropic_reply, error_reply, openai_reply
from tests.support.stdio_process import can_track, peak_rss_mb, pid_of, stops_quietly, tracked
from tests.support.swapper import FolderSwapper
from tests.vision_bridge.conftest import NameTable, loader_for, png_bytes, settings_for, with_service
from tests.vision_bridge.test_server import SCRIPT, stdio_params
from vision_bridge.inputs import ImageBytes, ImageLoader

PNG = png_bytes((16, 16), "green")


@pytest.mark.parametrize(
    ("url", "refusal"),
    [
        ("http://169.254.169.254/latest/meta-data/iam/x.png", "refusing to connect to 169.254.169.254"),
        ("http://127.0.0.1:9/x.png", "refusing to connect to 127.0.0.1"),
        ("http://[::1]:9/x.png", "refusing to connect to ::1"),
        ("http://intranet.test/x.png", "refusing to connect to intranet.test (10.0.0.5)"),
        ("http://split.test/x.png", "refusing to connect to split.test (192.168.1.9)"),
        ("http://nowhere.test/x.png", "could not resolve host 'nowhere.test'"),
    ],
)
def test_an_internal_url_never_reaches_the_provider(
    llm_stub: LLMStub, tmp_path: Path, url: str, refusal: str
) -> None:
    settings = settings_for(llm_stub, tmp_path)
    loader = loader_for(settings, intranet_test=["10.0.0.5"], split_test=["93.184.216.34", "192.168.1.9"])
    outcome = with_service(settings, lambda s: s.analyze(url, "what is it?"), loader=loader)
    assert outcome.is_error
    assert outcome.text.startswith(f"[vision_error] input: could not download the image: {refusal}")
    assert llm_stub.requests_for("openai") == []  # the provider was never handed the URL

    # The same sentence as when the download itself is refused (the offline backend downloads).
    offline = settings_for(None, tmp_path, VISION_BACKEND="tesseract")
    loader = loader_for(offline, intranet_test=["10.0.0.5"], split_test=["93.184.216.34", "192.168.1.9"])

    async def download() -> str:
        try:
            await loader.download([url], timeout_s=5)
        except Exception as exc:
            return f"[vision_error] input: {exc}"
        raise AssertionError("the download was allowed")

    assert asyncio.run(download()) == outcome.text


def test_explicitly_allowed_urls_are_downloaded_and_their_bytes_go_to_the_provider(
    llm_stub: LLMStub, tmp_path: Path
) -> None:
    # Until issue 26 an allowed URL went to the provider as a URL; now the bridge downloads it
    # (every hop checked) and the provider gets the bytes. (A public host cannot be served here:
    # images.test stands for one through an explicit allowance, as 127.0.0.1 does.)
    llm_stub.server.route("/cat.png", Reply(body=PNG, content_type="image/png"))
    llm_stub.push("openai", openai_reply("a cat"))
    settings = settings_for(llm_stub, tmp_path, VISION_ALLOW_HOSTS="images.test,127.0.0.1")
    port = llm_stub.server.port

    async def both(service):
        return (
            await service.analyze(f"http://images.test:{port}/cat.png"),
            await service.analyze(f"http://127.0.0.1:{port}/cat.png"),
        )

    named, allowed = with_service(settings, both, loader=loader_for(settings, images_test=["127.0.0.1"]))
    # The same bytes behind both URLs: the cache, keyed by content, answers the second.
    assert (named.text, allowed.text) == ("a cat", "a cat")
    assert (named.usage.from_cache, allowed.usage.from_cache) == (False, True)
    sent = [
        r.json()["messages"][0]["content"][0]["image_url"]["url"] for r in llm_stub.requests_for("openai")
    ]
    assert sent == ["data:image/png;base64," + base64.b64encode(PNG).decode()]


def _read_race(tmp_path: Path, count: int) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "a.png").write_bytes(PNG)
    secret = png_bytes((16, 16), "red")
    (outside / "a.png").write_bytes(secret)
    loader = ImageLoader(allowed_paths=(str(root.resolve()),), resolver=NameTable({}))

    async def go() -> tuple[int, int]:
        inside = refused = 0
        for _ in range(count):
            try:
                image = await loader.load("sub/a.png")
            except Exception:  # refused, or missing for an instant: never outside bytes
                refused += 1
                continue
            assert isinstance(image, ImageBytes)
            assert image.data != secret, "an image from outside the allowed paths was read"
            assert image.data == PNG
            inside += 1
        return inside, refused

    with FolderSwapper(root / "sub", outside) as swapper:
        inside, refused = asyncio.run(go())
    assert inside > 0 and refused > 0 and swapper.swaps > 10, (inside, refused, swapper.swaps)


def test_a_folder_swapped_for_a_link_never_yields_an_outside_image(tmp_path: Path) -> None:
    _read_race(tmp_path, 2000)  # well under a second: the full count in the default suite


BOMBS = ["gzip", "deflate", "br", "zstd", ("gzip", "gzip"), ("br", "zstd"), ("zstd", "deflate")]


@pytest.mark.skipif(not can_track(), reason="reads the server's peak memory from /proc (Linux)")
def test_bombs_behind_image_urls_end_at_the_cap_quickly_and_the_server_keeps_serving(
    llm_stub: LLMStub, tmp_path: Path
) -> None:
    # The provider cannot fetch URLs (it says so), so the bridge downloads each image itself.
    def responder(protocol: str, request: Request) -> Reply:
        image = request.json()["messages"][0]["content"][0]["image_url"]["url"]
        if image.startswith("http"):
            return error_reply("openai", 400, f"Error while downloading {image}.")
        return openai_reply("a picture")

    llm_stub.responder = responder
    for number, codings in enumerate(BOMBS):
        body, header = bomb(codings if isinstance(codings, str) else tuple(codings))
        llm_stub.server.route(
            f"/bomb{number}.png",
            Reply(body=body, headers={"Content-Encoding": header}, content_type="image/png"),
        )
    (tmp_path / "local.png").write_bytes(PNG)
    llm_stub.server.route("/fine.png", Reply(body=PNG, content_type="image/png"))
    pidfile = tmp_path / "pid"
    env = {
        "VISION_API_BASE_URL": llm_stub.openai_base_url,
        "VISION_API_KEY": "k",
        "VISION_MODEL": "m",
        "VISION_ALLOW_HOSTS": "127.0.0.1",
        "VISION_ALLOWED_PATHS": str(tmp_path),
        "VISION_CACHE_TTL": "0",
        "VISION_TIMEOUT": "30",  # only the 20 MB cap can end a bomb quickly
        "VISION_LOG_LEVEL": "WARNING",
        "HOME": str(tmp_path),
    }

    async def timed(client: Client, image: str) -> tuple[str, float]:
        started = time.monotonic()
        result = await client.call_tool("analyze_image", {"image": image})
        return result.content[0].text, time.monotonic() - started

    async def go() -> tuple[list[tuple[str, float, str]], float]:
        rows = []
        async with Client(tracked(stdio_params(env), pidfile)) as client:
            # First calls: the SDKs finish loading, and one URL is downloaded (the path a bomb takes).
            await timed(client, str(tmp_path / "local.png"))
            await timed(client, llm_stub.server.url("/fine.png"))
            for number in range(len(BOMBS)):
                (text, seconds), (other, _) = await asyncio.gather(
                    timed(client, llm_stub.server.url(f"/bomb{number}.png")),
                    timed(client, str(tmp_path / "local.png")),
                )
                rows.append((text, seconds, other))
            return rows, peak_rss_mb(pid_of(pidfile))

    rows, peak_mb = asyncio.run(go())
    for (text, seconds, other), codings in zip(rows, BOMBS, strict=True):
        assert text.startswith("[vision_error] input: could not download the image: "), (codings, text)
        assert text.endswith("sent more than the limit of 20,971,520 bytes"), (codings, text)
        assert seconds < 2.0, (codings, seconds)
        assert other == "a picture", codings  # the concurrent call on the same server
    assert peak_mb < 300, f"the server peaked at {peak_mb:.0f} MB resident"


def test_the_server_stops_quietly_on_ctrl_c(tmp_path: Path) -> None:
    # The mechanism is shared (docab_mcpguard.run_until_stopped); md-vision's tests take every way.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "VISION_BACKEND": "tesseract"}
    env["VISION_LOG_LEVEL"] = "WARNING"  # its one INFO line at start is not what this looks for
    assert stops_quietly([str(SCRIPT)], "ctrl-c", env=env)


# Second hops a first, allowed hop (127.0.0.1, the stub) redirects to: metadata, loopback under
# other spellings and addresses, private and unspecified addresses. Each must be refused by the
# bridge's own download, and the provider must never see the URL (issue 26 item 3: it did).
SECOND_HOPS = [
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/role.png",
    "http://[::ffff:169.254.169.254]/latest/meta-data/x.png",
    "http://100.100.100.200/latest/meta-data/x.png",
    "http://localhost:{port}/img.png",
    "http://127.0.0.2:{port}/img.png",
    "http://[::1]:{port}/img.png",
    "http://[::ffff:127.0.0.1]:{port}/img.png",
    "http://0x7f000002:{port}/img.png",
    "http://2130706434:{port}/img.png",
    "http://0:{port}/img.png",
    "http://0.0.0.0:{port}/img.png",
    "http://10.0.0.5/img.png",
    "http://172.16.0.1/img.png",
    "http://192.168.1.9/img.png",
    "http://[fd00::1]/img.png",
    "http://[fe80::1]/img.png",
    "http://100.64.0.1/img.png",
]


def test_every_redirect_hop_is_checked_through_a_real_stdio_client(llm_stub: LLMStub, tmp_path: Path) -> None:
    from urllib.parse import quote

    def hop(request: Request) -> Reply:
        status = int(request.query.get("status", ["302"])[0])
        return Reply.redirect(request.query["to"][0], status=status)

    llm_stub.server.route("/hop", hop)
    llm_stub.server.route("/img.png", Reply(body=PNG, content_type="image/png"))
    port = llm_stub.server.port
    llm_stub.push("openai", openai_reply("a picture"))
    env = {
        "VISION_API_BASE_URL": llm_stub.openai_base_url,
        "VISION_API_KEY": "k",
        "VISION_MODEL": "m",
        "VISION_ALLOW_HOSTS": "127.0.0.1",  # the first hop (the stub) only
        "VISION_ALLOWED_PATHS": str(tmp_path),
        "VISION_CACHE_TTL": "0",
        "VISION_MAX_RETRIES": "0",
        "VISION_LOG_LEVEL": "WARNING",
        "HOME": str(tmp_path),
    }

    def first_hop(target: str, status: int) -> str:
        return llm_stub.server.url(f"/hop?status={status}&to={quote(target, safe='')}")

    urls = [
        first_hop(target.format(port=port), status)
        for status in (301, 302, 303, 307, 308)
        for target in SECOND_HOPS
    ]
    # A third hop: the stub redirects to itself (allowed), then to the metadata address.
    urls.append(first_hop(first_hop(SECOND_HOPS[0], 302), 307))

    async def go() -> tuple[list[str], str]:
        async with Client(stdio_params(env)) as client:
            refused = []
            for url in urls:
                result = await client.call_tool("analyze_image", {"image": url})
                assert result.is_error, url
                refused.append(result.content[0].text)
            # The control: a redirect to the allowed host is followed, and its bytes are sent.
            fine = await client.call_tool(
                "analyze_image", {"image": first_hop(llm_stub.server.url("/img.png"), 302)}
            )
            return refused, fine.content[0].text

    refused, fine = asyncio.run(go())
    for url, text in zip(urls, refused, strict=True):
        assert text.startswith("[vision_error] input: could not download the image: "), (url, text)
        assert "refusing to connect to" in text or "blocked" in text, (url, text)
    assert fine == "a picture"
    (asked,) = llm_stub.requests_for("openai")  # only the control reached the provider, as bytes
    sent = asked.json()["messages"][0]["content"][0]["image_url"]["url"]
    assert sent == "data:image/png;base64," + base64.b64encode(PNG).decode()
    # No refused hop was connected to: the only image served went to the control.
    assert [r.path for r in llm_stub.requests if r.method == "GET" and r.path == "/img.png"] == ["/img.png"]


PROVIDER_BOMBS = ["gzip", "br", "zstd", ("gzip", "deflate")]


@pytest.mark.skipif(not can_track(), reason="reads the server's peak memory from /proc (Linux)")
@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_provider_answering_a_decompression_bomb_is_refused_at_the_decoded_cap(
    llm_stub: LLMStub, tmp_path: Path, fmt: str
) -> None:
    # Issue 26 item 7: a provider answering 1 GiB of gzip drove the server to 3.0 GB; the cap
    # counted wire bytes. Now the decoded bytes are counted, in bounded steps.
    bombs = {}
    for codings in PROVIDER_BOMBS:
        body, header = bomb(codings if isinstance(codings, str) else tuple(codings))
        bombs[header] = Reply(
            body=body, headers={"Content-Encoding": header}, content_type="application/json"
        )
    fine = openai_reply("a picture") if fmt == "openai" else anthropic_reply("a picture")

    def responder(protocol: str, request: Request) -> Reply:
        text = json.dumps(request.json())
        for header, reply in bombs.items():
            if f"bomb:{header}" in text:
                return reply
        return fine

    llm_stub.responder = responder  # type: ignore[assignment]
    (tmp_path / "local.png").write_bytes(PNG)
    pidfile = tmp_path / "pid"
    env = {
        "VISION_API_FORMAT": fmt,
        "VISION_API_BASE_URL": llm_stub.openai_base_url if fmt == "openai" else llm_stub.anthropic_base_url,
        "VISION_API_KEY": "k",
        "VISION_MODEL": "m",
        "VISION_ALLOWED_PATHS": str(tmp_path),
        "VISION_CACHE_TTL": "0",
        "VISION_MAX_RETRIES": "2",  # a refused response is not retried all the same
        "VISION_TIMEOUT": "60",  # only the 16 MB cap can end a bomb
        "VISION_LOG_LEVEL": "WARNING",
        "HOME": str(tmp_path),
    }
    image = str(tmp_path / "local.png")

    async def go() -> tuple[list[tuple[str, int, str]], float]:
        rows = []
        async with Client(tracked(stdio_params(env), pidfile)) as client:
            await client.call_tool("analyze_image", {"image": image})  # the SDK loads
            for header in bombs:
                bombed, other = await asyncio.gather(
                    client.call_tool("analyze_image", {"image": image, "prompt": f"bomb:{header}"}),
                    client.call_tool("analyze_image", {"image": image}),
                )
                calls = bombed.meta["io.github.docab/usage"]["calls"]
                rows.append((bombed.content[0].text, calls, other.content[0].text))
            return rows, peak_rss_mb(pid_of(pidfile))

    rows, peak_mb = asyncio.run(go())
    for (text, calls, other), header in zip(rows, bombs, strict=True):
        assert text == (
            "[vision_error] api: the provider's response decodes to more, over the limit of 16,777,216 bytes"
        ), (header, text)
        assert calls == 1, header  # refused, not retried
        assert other == "a picture", header  # the concurrent call on the same server
    assert peak_mb < 300, f"the server peaked at {peak_mb:.0f} MB resident"
