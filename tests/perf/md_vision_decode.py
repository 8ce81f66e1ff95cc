"""What one hostile read costs md-vision's server: a section that references many images, each a
few kilobytes on disk and within the 50 MP pixel cap, but hundreds of megabytes once decoded (a
7071 x 7071 one-colour RGBA WebP is 2 KB and decodes to 200 MB, peaking near 750 MB in
prepare_image). Read through a real MCP stdio client, with an ordinary read and an index asked for
while it runs, in a fresh server per scenario. Prints the server's peak resident memory (VmHWM),
each call's time and the start of the hostile read's answer.

Scenarios: ``local`` (relative paths to distinct files), ``data`` (distinct ``data:`` URIs),
``remote`` (the document and its images from a local HTTP server, ``--allow-domain 127.0.0.1``).

    uv run python -m tests.perf.md_vision_decode [--count 50] [--side 7071] [--scenario local ...]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import tempfile
import time
from pathlib import Path

from mcp import Client

from tests.md_vision.test_mcp import _stdio
from tests.support.http_server import LocalServer, Reply
from tests.support.stdio_process import peak_rss_mb, pid_of, tracked


def hostile_webp(side: int) -> bytes:
    """One colour, RGBA, lossless: about 2 KB for 50 million pixels."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGBA", (side, side), (200, 30, 30, 128)).save(buffer, "WEBP", lossless=True)
    return buffer.getvalue()


def variants(data: bytes, count: int) -> list[bytes]:
    """``count`` different files of the same image (bytes after the RIFF container are ignored by
    the decoder, but make each image a different one to md-vision's cache)."""
    return [data + b"%06d" % number for number in range(count)]


def small_png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (0, 200, 0)).save(buffer, "PNG")
    return buffer.getvalue()


def hostile_document(references: list[str]) -> str:
    lines = [f"![pic {number}]({target})" for number, target in enumerate(references)]
    return "# Hostile\n\n## Gallery\n\n" + "\n\n".join(lines) + "\n\n## After\n\nfine\n"


async def _timed(client: Client, tool: str, arguments: dict[str, object]) -> tuple[str, float]:
    started = time.monotonic()
    result = await client.call_tool(tool, arguments)
    text = "\n".join(block.text for block in result.content if block.type == "text")
    images = sum(1 for block in result.content if block.type == "image")
    return f"{images} image(s); " + text.replace("\n", " "), time.monotonic() - started


async def _session(
    args: list[str], pidfile: Path, folder: Path, hostile_uri: str, count: int
) -> dict[str, object]:
    params = tracked(_stdio(*args), pidfile)
    async with Client(params) as client:
        # First calls: imports done, the image lane and the forkserver started.
        await _timed(client, "read_md_with_images", {"uri": str(folder / "normal.md")})
        pid = pid_of(pidfile)
        before = peak_rss_mb(pid)

        async def later(tool: str, arguments: dict[str, object]) -> tuple[str, float]:
            await asyncio.sleep(0.5)
            return await _timed(client, tool, arguments)

        (hostile, hostile_s), (normal, normal_s), (index, index_s) = await asyncio.gather(
            _timed(
                client, "read_md_with_images", {"uri": hostile_uri, "section": "Gallery", "max_images": count}
            ),
            later("read_md_with_images", {"uri": str(folder / "other.md")}),
            later("index_md", {"uri": str(folder / "normal.md")}),
        )
        return {
            "rss_before_mb": before,
            "peak_mb": peak_rss_mb(pid),
            "hostile_s": hostile_s,
            "normal_read_s": normal_s,
            "index_s": index_s,
            "hostile": hostile[:300],
            "normal_ok": normal.startswith("1 image"),
            "index_ok": "Normal" in index,
        }


def run(scenario: str, count: int, side: int, extra: list[str]) -> dict[str, object]:
    image = hostile_webp(side)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name).resolve()
        (folder / "imgs").mkdir()
        (folder / "imgs" / "ok.png").write_bytes(small_png())
        (folder / "imgs" / "ok2.png").write_bytes(small_png() + b"2")
        (folder / "normal.md").write_text("# Normal\n\n![ok](imgs/ok.png)\n")
        (folder / "other.md").write_text("# Other\n\n![ok](imgs/ok2.png)\n")  # not in the cache yet
        files = variants(image, count)
        server: LocalServer | None = None
        args = ["--allow-path", str(folder), "--allow-domain", "none", *extra]
        if scenario == "local":
            for number, data in enumerate(files):
                (folder / "imgs" / f"h{number}.webp").write_bytes(data)
            (folder / "hostile.md").write_text(hostile_document([f"imgs/h{n}.webp" for n in range(count)]))
            uri = str(folder / "hostile.md")
        elif scenario == "data":
            uris = ["data:image/webp;base64," + base64.b64encode(data).decode() for data in files]
            (folder / "hostile.md").write_text(hostile_document(uris))
            uri = str(folder / "hostile.md")
        else:
            server = LocalServer().start()
            for number, data in enumerate(files):
                server.route(f"/h{number}.webp", Reply(body=data, content_type="image/webp"))
            document = hostile_document([f"h{n}.webp" for n in range(count)])
            server.route("/hostile.md", Reply(body=document, content_type="text/markdown"))
            args = ["--allow-path", str(folder), "--allow-domain", "127.0.0.1", *extra]
            uri = server.url("/hostile.md")
        try:
            return asyncio.run(_session(args, folder / "pid", folder, uri, count))
        finally:
            if server is not None:
                server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--count", type=int, default=50, help="images in the section (max_images, at most 50)"
    )
    parser.add_argument("--side", type=int, default=7071, help="side of each square image, in pixels")
    parser.add_argument("--scenario", action="append", choices=["local", "data", "remote"])
    parser.add_argument("server_args", nargs="*", help="more md-vision flags (after --)")
    options = parser.parse_args()
    for scenario in options.scenario or ["local", "data", "remote"]:
        row = run(scenario, options.count, options.side, options.server_args)
        print(
            f"{scenario:6s} {options.count} x {options.side}^2 RGBA WebP: server {row['rss_before_mb']:.0f} -> "
            f"peak {row['peak_mb']:.0f} MB resident; hostile read {row['hostile_s']:.1f} s; during it, a read "
            f"with one small image {row['normal_read_s']:.2f} s (ok={row['normal_ok']}), index_md "
            f"{row['index_s']:.2f} s (ok={row['index_ok']})"
        )
        print(f"       answer: {row['hostile']}")


if __name__ == "__main__":
    main()
