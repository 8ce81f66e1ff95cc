"""vision-bridge under attack: internal URLs, decompression bombs over stdio, a folder-swap race."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from mcp import Client

from tests.support.bombs import bomb
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, error_reply, openai_reply
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


def test_public_and_explicitly_allowed_urls_still_go_to_the_provider(
    llm_stub: LLMStub, tmp_path: Path
) -> None:
    llm_stub.push("openai", openai_reply("a cat"), openai_reply("a local cat"))
    settings = settings_for(llm_stub, tmp_path, VISION_ALLOW_HOSTS="127.0.0.1")

    async def both(service):
        return (
            await service.analyze("https://images.example.com/cat.png"),
            await service.analyze("http://127.0.0.1:9/cat.png"),
        )

    public, allowed = with_service(settings, both, loader=loader_for(settings))
    assert (public.text, allowed.text) == ("a cat", "a local cat")
    sent = {
        r.json()["messages"][0]["content"][0]["image_url"]["url"] for r in llm_stub.requests_for("openai")
    }
    assert sent == {"https://images.example.com/cat.png", "http://127.0.0.1:9/cat.png"}


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
