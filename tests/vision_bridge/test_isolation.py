"""Decoding in a child process: an image that is costly to decode costs its child, never the server.

Before: every conversion or downscale decoded in the server, on a thread VISION_TIMEOUT could not
stop, with no memory budget (1.2 to 2.7 GB per image within the pixel cap, four at once in a
compare)."""

from __future__ import annotations

import asyncio
import io
import os
import random
import sys
import threading
import time
from pathlib import Path

import pytest
from mcp import Client
from PIL import Image

from tests.support.llm_stub import LLMStub, anthropic_reply
from tests.support.stdio_process import can_track, peak_rss_mb, pid_of, tracked
from tests.vision_bridge.conftest import noise_png, png_bytes, settings_for
from tests.vision_bridge.test_server import stdio_params
from vision_bridge.backends.openai_chat import OPENAI_IMAGE_LIMITS
from vision_bridge.errors import ConfigError, ErrorCause, VisionError
from vision_bridge.inputs import ImageBytes
from vision_bridge.isolation import IN_SERVER_CHECK_BYTES, DecodeLimits, IsolatedDecoder, prepare_isolated
from vision_bridge.prepare import ImageLimits, sent_as_is

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process names from /proc")


def tiff(size: tuple[int, int], mode: str = "RGBA") -> bytes:
    """A TIFF (which no provider takes: it must be decoded) that is small on disk and large in
    memory: ``size`` of one colour, deflated."""
    buffer = io.BytesIO()
    Image.new(mode, size, (200, 30, 30, 255) if mode == "RGBA" else "white").save(
        buffer, "TIFF", compression="tiff_adobe_deflate"
    )
    return buffer.getvalue()


BIG = ImageBytes(tiff((8000, 8000)), "big.tiff")  # 256 MB as RGBA pixels, a few hundred KB as a file


def decode_children() -> list[int]:
    """The ids of the decode children alive now (they name themselves vision-decode)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as comm:
                    if comm.read().strip() == "vision-decode":
                        found.append(int(entry))
            except OSError:
                continue
    return found


def wait_until(condition: object, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return True
        time.sleep(0.02)
    return False


def test_an_image_over_the_decode_memory_cap_is_an_input_error_that_names_the_setting() -> None:
    decoder = IsolatedDecoder(DecodeLimits(memory_bytes=64 << 20))
    with pytest.raises(VisionError) as failure:
        asyncio.run(decoder.prepare(BIG, OPENAI_IMAGE_LIMITS, timeout_s=60))
    assert failure.value.cause is ErrorCause.INPUT
    assert failure.value.message == (
        "big.tiff needs more than the 64 MB this server lets one image take to decode "
        "(VISION_DECODE_MEMORY_MB); send it smaller"
    )


def test_the_same_image_is_converted_within_the_default_cap() -> None:
    prepared = asyncio.run(IsolatedDecoder().prepare(BIG, OPENAI_IMAGE_LIMITS, timeout_s=120))
    assert (prepared.mime, prepared.width, prepared.height) == ("image/png", 8000, 8000)
    assert prepared.note == "converted from TIFF to PNG"
    assert Image.open(io.BytesIO(prepared.data)).getpixel((7999, 7999)) == (200, 30, 30, 255)


def test_an_image_that_fits_is_checked_here_and_starts_no_decoder() -> None:
    # With no time left, a decode would fail at once: an image sent as it came needs none.
    data = png_bytes((40, 30))
    prepared = asyncio.run(
        IsolatedDecoder().prepare(ImageBytes(data, "a.png"), OPENAI_IMAGE_LIMITS, timeout_s=0)
    )
    assert prepared.data == data


@linux_only
def test_a_decode_past_the_calls_time_is_killed_and_reported_as_a_timeout() -> None:
    with pytest.raises(VisionError) as failure:
        prepare_isolated(BIG, OPENAI_IMAGE_LIMITS, DecodeLimits(), timeout_s=0.05)
    assert failure.value.cause is ErrorCause.TIMEOUT
    assert failure.value.message == "decoding big.tiff took longer than the 0.05 s left of VISION_TIMEOUT"
    assert decode_children() == []


@linux_only
def test_a_cancelled_call_kills_its_decode() -> None:
    slow = ImageBytes(tiff((9000, 9000)), "slow.tiff")
    shrink = ImageLimits(accepted_mimes=frozenset({"image/png"}), max_side=9000)

    async def go() -> tuple[bool, bool]:
        task = asyncio.create_task(IsolatedDecoder().prepare(slow, shrink, timeout_s=120))
        started = await asyncio.to_thread(wait_until, lambda: bool(decode_children()))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gone = await asyncio.to_thread(wait_until, lambda: not decode_children(), 5.0)
        return started, gone

    started, gone = asyncio.run(go())
    assert started, "no decode child was seen"
    assert gone, "the decode child outlived its cancelled call"


@linux_only
def test_decodes_run_at_most_workers_at_once() -> None:
    most = 0
    watching = threading.Event()

    def watch() -> None:
        nonlocal most
        while not watching.is_set():
            most = max(most, len(decode_children()))
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    images = [ImageBytes(tiff((3000, 3000)), f"{n}.tiff") for n in range(4)]
    decoder = IsolatedDecoder(DecodeLimits(workers=1))

    async def go() -> list[int]:
        done = await asyncio.gather(*(decoder.prepare(i, OPENAI_IMAGE_LIMITS, timeout_s=120) for i in images))
        return [p.width for p in done]

    try:
        widths = asyncio.run(go())
    finally:
        watching.set()
        watcher.join()
    assert widths == [3000] * 4
    assert most == 1


def test_a_malformed_answer_from_a_decoder_is_an_input_error() -> None:
    from vision_bridge.isolation import _read_answer

    for answer in (b"", b"\x00", b"\x00\x00\x00\x00\x05[1,2]", b"\x00\x00\x00\x00\x02{}", b"\x09junk"):
        with pytest.raises(VisionError, match=r"^x\.png could not be decoded$"):
            _read_answer(answer, ImageBytes(b"", "x.png"), DecodeLimits())


@pytest.mark.parametrize(
    ("value", "problem"),
    [("lots", "VISION_DECODE_MEMORY_MB='lots' is not a whole number"), ("63", "must be at least 64")],
)
def test_a_bad_decode_memory_setting_stops_the_start(tmp_path: Path, value: str, problem: str) -> None:
    endpoint = "http://127.0.0.1:9/v1"
    with pytest.raises(ConfigError, match=problem):
        settings_for(None, tmp_path, VISION_API_BASE_URL=endpoint, VISION_DECODE_MEMORY_MB=value)
    settings = settings_for(None, tmp_path, VISION_API_BASE_URL=endpoint, VISION_DECODE_MEMORY_MB="64")
    assert settings.decode_memory_bytes == 64 << 20  # the smallest cap allowed


@pytest.mark.skipif(not can_track(), reason="reads the server's peak memory from /proc (Linux)")
def test_over_stdio_a_costly_image_costs_its_child_and_the_server_keeps_serving(
    llm_stub: LLMStub, tmp_path: Path
) -> None:
    # Anthropic takes sides up to 8,000 pixels: this PNG is decoded to be downscaled (324 MB as RGBA).
    big_png = io.BytesIO()
    Image.new("RGBA", (9000, 9000), (200, 30, 30, 255)).save(big_png, "PNG")
    (tmp_path / "big.png").write_bytes(big_png.getvalue())
    (tmp_path / "small.png").write_bytes(png_bytes((16, 16), "green"))
    llm_stub.responder = lambda protocol, request: anthropic_reply("a picture")
    pidfile = tmp_path / "pid"
    env = {
        "VISION_API_FORMAT": "anthropic",
        "VISION_API_BASE_URL": llm_stub.anthropic_base_url,
        "VISION_API_KEY": "k",
        "VISION_MODEL": "m",
        "VISION_ALLOWED_PATHS": str(tmp_path),
        "VISION_CACHE_TTL": "0",
        "VISION_DECODE_MEMORY_MB": "128",
        "VISION_LOG_LEVEL": "WARNING",
        "HOME": str(tmp_path),
    }

    async def go() -> tuple[list[str], float]:
        async with Client(tracked(stdio_params(env), pidfile)) as client:
            big = str(tmp_path / "big.png")
            small = str(tmp_path / "small.png")
            texts = []
            for arguments in ({"images": [big, small, big, big]}, {"images": [small, small]}):
                result = await client.call_tool("compare_images", arguments)
                texts.append(result.content[0].text)
            return texts, peak_rss_mb(pid_of(pidfile))

    (refused, answered), peak_mb = asyncio.run(go())
    assert refused == (
        "[vision_error] input: big.png needs more than the 128 MB this server lets one image take to "
        "decode (VISION_DECODE_MEMORY_MB); send it smaller"
    )
    assert answered == "a picture"
    # Three 324 MB decodes in the server would have taken it far past this.
    assert peak_mb < 300, f"the server peaked at {peak_mb:.0f} MB resident"


def test_a_large_file_that_fits_is_checked_in_a_child_and_sent_as_it_came() -> None:
    # Checking costs time and memory with a file's bytes (a 20 MB JPEG of empty markers: 9 s and
    # 729 MB in the server): past 256 KB the check runs in a child, under the caps and deadline.
    data = noise_png((400, 400))  # about 480 KB, a PNG OpenAI takes as it is
    assert len(data) > IN_SERVER_CHECK_BYTES
    image = ImageBytes(data, "noise.png")
    prepared = asyncio.run(IsolatedDecoder().prepare(image, OPENAI_IMAGE_LIMITS, timeout_s=60))
    assert prepared.data is data
    assert (prepared.mime, prepared.width, prepared.height, prepared.note) == ("image/png", 400, 400, "")
    with pytest.raises(VisionError) as failure:  # no time left: the child is never asked
        asyncio.run(IsolatedDecoder().prepare(image, OPENAI_IMAGE_LIMITS, timeout_s=0))
    assert failure.value.cause is ErrorCause.TIMEOUT


def test_every_damaged_animated_gif_is_an_image_or_an_input_error() -> None:
    # Counting the frames of a damaged animated GIF raised IndexError or struct.error in the
    # server: "api: unexpected internal failure", blamed on the provider (found by a fuzzer).
    picture = Image.linear_gradient("L").resize((40, 30)).convert("RGB")
    buffer = io.BytesIO()
    frames = [picture.convert("P"), picture.rotate(90).convert("P")]
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:], comment=b"hi")
    whole = buffer.getvalue()
    rng = random.Random(8)
    for _ in range(3000):
        data = bytearray(whole)
        kind = rng.randrange(4)
        if kind == 0:
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == 1:
            del data[rng.randrange(8, len(data)) :]
        elif kind == 2:
            at = rng.randrange(len(data))
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        else:
            at, source = rng.randrange(len(data)), rng.randrange(len(data))
            data[at : at + 4] = data[source : source + 4]
        try:
            sent_as_is(ImageBytes(bytes(data), "damaged.gif"), OPENAI_IMAGE_LIMITS)
        except VisionError as error:
            assert error.cause is ErrorCause.INPUT, error.message


def test_the_in_server_check_ends_at_256_kb_exactly() -> None:
    # With no time left a child fails at once, so the outcome says where the file was checked.
    small = png_bytes((40, 30))
    at_limit = small + b"\0" * (IN_SERVER_CHECK_BYTES - len(small))  # bytes after IEND are ignored
    decoder = IsolatedDecoder()
    prepared = asyncio.run(decoder.prepare(ImageBytes(at_limit, "a.png"), OPENAI_IMAGE_LIMITS, timeout_s=0))
    assert prepared.data is at_limit
    with pytest.raises(VisionError) as failure:
        asyncio.run(decoder.prepare(ImageBytes(at_limit + b"\0", "b.png"), OPENAI_IMAGE_LIMITS, timeout_s=0))
    assert failure.value.cause is ErrorCause.TIMEOUT
