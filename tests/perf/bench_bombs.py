"""Decompression bombs against the three servers over stdio: time per bomb and peak memory.

    uv run python -m tests.perf.bench_bombs            # 1 GiB of zeros in every coding and stack

Each server runs as its console script under a real MCP client, on a loopback site serving the
bombs (built at start, as the tests build them). For each: the time of each bomb call, what the
server answered, and its peak resident memory (VmHWM) after warm-up calls and after all bombs.
Linux only (reads /proc). The tests assert the limits (2 s, 300 MB); this prints the figures.

Then the hostile SVGs of issue 26 (tests/md_vision/test_svg_hostile.py) against md-vision, each
in a markdown file as a file and as a data: URI: the time of each read, its note, the server's
peak resident memory, and the largest resident size of its SVG render children seen (sampled
every 10 ms).
Then hostile markdown against md-vision (issue 26 item 3), each on a fresh server so that each
peak is its own: ``index_md`` of images in one paragraph, of reference definitions and their uses,
of 10 MB of setext and of empty ATX headings, of one list item holding 10 MB of headings and of
one 10 MB paragraph of images, of a list nested 80 deep on every line (with a definition: two
passes); the time of the first and of a second call (the
cache), the answer, and the server's peak memory. ``--only markdown`` runs just these.

Last, a 300 MB JSON-RPC line to each server over raw pipes (issue 26 item 7; ``--only message``):
the time to its error, the error, whether the next request is answered, and the peak memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

from tests.support.bombs import bomb
from tests.support.http_server import LocalServer, Reply
from tests.support.llm_stub import LLMStub, error_reply, openai_reply
from tests.support.stdio_process import HELLO, INITIALIZED, peak_rss_mb, pid_of, tracked

BOMBS = ["gzip", "deflate", "br", "zstd", ("gzip", "gzip"), ("br", "zstd"), ("zstd", "deflate")]
BIN = Path(sys.executable).parent
PNG = bytes.fromhex(  # a 1x1 PNG
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a2f7cb5f0000000049454e44ae426082"
)


def _name(codings: str | tuple[str, ...]) -> str:
    return codings if isinstance(codings, str) else ", ".join(codings)


async def _run(params: StdioServerParameters, pidfile: Path, tool: str, warm: list[dict], calls: list[dict]):
    rows = []
    async with Client(tracked(params, pidfile)) as client:
        for arguments in warm:  # first calls: what the server loads lazily, and one ordinary fetch
            await client.call_tool(tool, arguments)
        baseline = peak_rss_mb(pid_of(pidfile))
        for arguments in calls:
            started = time.monotonic()
            result = await client.call_tool(tool, arguments)
            text = " ".join(block.text for block in result.content if block.type == "text")
            rows.append((time.monotonic() - started, text))
        return baseline, peak_rss_mb(pid_of(pidfile)), rows


MARKDOWN_BOMBS: list[tuple[str, str]] = [
    ("880 KB: 80,000 images, one paragraph", "# Images\n\n" + "![](x.png)\n" * 80_000),
    (
        "40,000 reference definitions + uses",
        "# Refs\n\n"
        + "".join(f"[r{i}]: x{i}.png\n" for i in range(40_000))
        + "\n"
        + "".join(f"![a][r{i}]\n" for i in range(40_000)),
    ),
    ("10 MB: 2,000,000 setext headings", "ab\n=\n" * 2_000_000),
    ("10 MB: 2,500,000 empty ATX headings", "###\n" * 2_500_000),
    ("10 MB: one list item, 1,600,000 headings", "- x\n" + "  # h\n" * 1_600_000),
    ("10 MB: 900,000 images, one paragraph", "# Images\n\n" + "![](x.png)\n" * 900_000),
    ("10 MB: lists nested 80 deep, each line", "[a]: /u\n\n" + ("- " * 80 + "x\n") * 61_700),
]


async def _markdown_case(params: StdioServerParameters, pidfile: Path, uri: str):
    async with Client(tracked(params, pidfile)) as client:
        await client.call_tool("index_md", {"uri": uri.replace("bomb.md", "warm.md")})
        baseline = peak_rss_mb(pid_of(pidfile))
        times, texts = [], []
        for _ in range(2):
            started = time.monotonic()
            result = await client.call_tool("index_md", {"uri": uri})
            times.append(time.monotonic() - started)
            texts.append(" ".join(block.text for block in result.content if block.type == "text"))
        alive = bool((await client.list_tools()).tools)
        return baseline, peak_rss_mb(pid_of(pidfile)), times, texts[0], alive


def markdown_bombs() -> None:
    print(f"{'md-vision index_md':40} {'first s':>8} {'second s':>8} {'peak MB':>8}  answer")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "warm.md").write_text("# Warm\n")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": scratch}
        for number, (name, text) in enumerate(MARKDOWN_BOMBS):
            (root / "bomb.md").write_text(text)
            params = StdioServerParameters(
                command=str(BIN / "md-vision"),
                args=["--allow-path", scratch, "--allow-host", "none", "--workers", "1"],
                env=env,
            )
            baseline, peak, times, text_shown, alive = asyncio.run(
                _markdown_case(params, root / f"md{number}.pid", str(root / "bomb.md"))
            )
            answer = " ".join(text_shown.split())[:60]
            print(
                f"{name:40} {times[0]:8.2f} {times[1]:8.2f} {peak:8.0f}  {answer}"
                f"{'' if alive else '  (server gone)'} [baseline {baseline:.0f} MB]"
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only", choices=["decompression", "svg", "markdown", "message"], help="run one part"
    )
    only = parser.parse_args(argv).only
    if only in (None, "decompression"):
        decompression_bombs()
    if only in (None, "svg"):
        svg_bombs()
    if only in (None, "markdown"):
        markdown_bombs()
    if only in (None, "message"):
        message_bombs()


def _rpc_answer(stdout, request_id: int) -> dict:
    while True:
        line = stdout.readline()
        if not line:
            return {"error": {"message": "(the server closed its output)"}}
        message = json.loads(line)
        if message.get("id") == request_id:
            return message


def message_bombs(megabytes: int = 300) -> None:
    print(f"\n{'server':14} {'line':>8} {'seconds':>8} {'peak MB':>8}  next request / error")
    with tempfile.TemporaryDirectory() as scratch:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": scratch}
        commands = {
            "md-vision": [
                str(BIN / "md-vision"),
                "--allow-path",
                scratch,
                "--allow-host",
                "none",
                "--workers",
                "1",
            ],
            "markfetch": [str(BIN / "markfetch"), "--allow-path", scratch],
            "vision-bridge": [str(BIN / "vision-bridge")],
        }
        extra = {
            "vision-bridge": {
                "VISION_API_BASE_URL": "http://127.0.0.1:9/v1",
                "VISION_API_KEY": "k",
                "VISION_MODEL": "m",
                "VISION_ALLOWED_PATHS": scratch,
                "VISION_LOG_LEVEL": "WARNING",
            }
        }
        chunk = b"x" * 1_000_000
        for name, command in commands.items():
            process = subprocess.Popen(
                command,
                env={**env, **extra.get(name, {})},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            process.stdin.write(HELLO.encode())
            process.stdin.flush()
            _rpc_answer(process.stdout, 1)
            process.stdin.write(json.dumps(INITIALIZED).encode() + b"\n")
            started = time.monotonic()
            process.stdin.write(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"pad": "')
            for _ in range(megabytes):
                process.stdin.write(chunk)
            process.stdin.write(b'"}}\n')
            process.stdin.flush()
            refused = _rpc_answer(process.stdout, 2)
            seconds = time.monotonic() - started
            process.stdin.write(b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}\n')
            process.stdin.flush()
            answered = "result" in _rpc_answer(process.stdout, 3)
            peak = peak_rss_mb(process.pid)
            process.stdin.close()
            process.wait(timeout=30)
            error = refused.get("error", {}).get("message", "(no error)")
            print(
                f"{name:14} {megabytes:6} MB {seconds:8.2f} {peak:8.0f}  "
                f"{'answered' if answered else 'NOT answered'} / {error[:70]}"
            )


def decompression_bombs() -> None:
    with tempfile.TemporaryDirectory() as scratch, LocalServer() as site, LLMStub() as stub:
        root = Path(scratch)
        (root / "local.md").write_text("# Local\n")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": scratch}
        for number, codings in enumerate(BOMBS):
            body, header = bomb(codings if isinstance(codings, str) else tuple(codings))
            encoded = {"Content-Encoding": header}
            site.route(f"/b{number}.html", Reply(body=body, headers=encoded, content_type="text/html"))
            site.route(f"/b{number}.md", Reply(body=body, headers=encoded, content_type="text/markdown"))
            stub.server.route(f"/b{number}.png", Reply(body=body, headers=encoded, content_type="image/png"))
        site.route(
            "/page.html",
            Reply(
                body="<html><body><article><h1>Hi</h1><p>text</p></article></body></html>",
                content_type="text/html",
            ),
        )

        def fetch_error(protocol: str, request) -> Reply:
            # The provider cannot fetch URLs (it says so): the bridge downloads the image itself.
            url = request.json()["messages"][0]["content"][0]["image_url"]["url"]
            return (
                error_reply("openai", 400, f"Error while downloading {url}.")
                if url.startswith("http")
                else openai_reply("ok")
            )

        stub.responder = fetch_error
        (root / "local.png").write_bytes(PNG)
        stub.server.route("/fine.png", Reply(body=PNG, content_type="image/png"))
        site.route("/fine.md", Reply(body="# Fine\n", content_type="text/markdown"))
        servers = {
            "markfetch": (
                StdioServerParameters(
                    command=str(BIN / "markfetch"),
                    args=[],
                    env={**env, "MARKFETCH_ALLOW_HOSTS": "127.0.0.1", "MARKFETCH_TIMEOUT_MS": "30000"},
                ),
                "fetch_markdown",
                [{"url": site.url("/page.html")}],
                [{"url": site.url(f"/b{n}.html")} for n in range(len(BOMBS))],
            ),
            "md-vision": (
                StdioServerParameters(
                    command=str(BIN / "md-vision"),
                    args=["--allow-path", scratch, "--allow-domain", "127.0.0.1", "--fetch-timeout", "30"],
                    env=env,
                ),
                "index_md",
                [{"uri": str(root / "local.md")}, {"uri": site.url("/fine.md")}],
                [{"uri": site.url(f"/b{n}.md")} for n in range(len(BOMBS))],
            ),
            "vision-bridge": (
                StdioServerParameters(
                    command=str(BIN / "vision-bridge"),
                    args=[],
                    env={
                        **env,
                        "VISION_API_BASE_URL": stub.openai_base_url,
                        "VISION_API_KEY": "k",
                        "VISION_MODEL": "m",
                        "VISION_ALLOW_HOSTS": "127.0.0.1",
                        "VISION_ALLOWED_PATHS": scratch,
                        "VISION_CACHE_TTL": "0",
                        "VISION_TIMEOUT": "30",
                        "VISION_LOG_LEVEL": "WARNING",
                    },
                ),
                "analyze_image",
                [{"image": str(root / "local.png")}, {"image": stub.server.url("/fine.png")}],
                [{"image": stub.server.url(f"/b{n}.png")} for n in range(len(BOMBS))],
            ),
        }
        print(f"{'server':14} {'bomb (1 GiB of zeros)':22} {'seconds':>8}  answer")
        for name, (params, tool, warm, calls) in servers.items():
            baseline, peak, rows = asyncio.run(_run(params, root / f"{name}.pid", tool, warm, calls))
            for codings, (seconds, text) in zip(BOMBS, rows, strict=True):
                print(f"{name:14} {_name(codings):22} {seconds:8.3f}  {text[:70]}")
            print(
                f"{name:14} peak resident memory: {baseline:.0f} MB after the warm-up calls, {peak:.0f} MB after the bombs\n"
            )


def _descendants(pid: int) -> list[int]:
    from tests.md_vision.test_hardening import _descendants as found

    return found(pid)


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _sample(server: int, resident: set[int], stop: threading.Event, peaks: list[float]) -> None:
    """The largest resident size of the server's new children (SVG renders) until ``stop``."""
    while not stop.is_set():
        for pid in _descendants(server):
            if pid not in resident:
                peaks[0] = max(peaks[0], _rss_mb(pid))
        time.sleep(0.01)


async def _svg_run(params: StdioServerParameters, pidfile: Path, documents: list[tuple[str, Path]]):
    rows = []
    async with Client(tracked(params, pidfile)) as client:
        server = pid_of(pidfile)
        await client.call_tool("index_md", {"uri": str(documents[0][1])})
        for label, document in documents:
            resident = set(_descendants(server))  # the forkserver and the resource tracker
            stop, peaks = threading.Event(), [0.0]
            sampler = threading.Thread(target=_sample, args=(server, resident, stop, peaks), daemon=True)
            sampler.start()
            started = time.monotonic()
            result = await client.call_tool(
                "read_md_with_images", {"uri": str(document), "max_tokens": 10_000_000}
            )
            seconds = time.monotonic() - started
            stop.set()
            sampler.join()
            peak_child = peaks[0]
            await client.list_tools()  # still answering
            notes = [block.text for block in result.content if block.type == "text"]
            note = next(
                (line for text in notes for line in text.splitlines() if "image not shown" in line), ""
            )
            shown = "rendered" if any(block.type == "image" for block in result.content) else note
            rows.append((label, seconds, peak_child, peak_rss_mb(server), shown))
        return rows


def svg_bombs() -> None:
    """The hostile SVGs against md-vision: time, note and memory of each."""
    import base64

    from tests.md_vision.test_svg_hostile import HEAD, REFUSED, RENDERED

    cases = {name: svg for name, (svg, _expected) in {**REFUSED, **RENDERED}.items()}
    cases["ordinary"] = HEAD + '<rect width="400" height="300" fill="#00f"/><text y="40">Label</text></svg>'
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        documents: list[tuple[str, Path]] = []
        for name, svg in cases.items():
            (root / f"{name}.svg").write_text(svg)
            (root / f"{name}-file.md").write_text(f"# {name}\n\n![{name}]({name}.svg)\n")
            documents.append((f"{name} ({len(svg):,} B) file", root / f"{name}-file.md"))
            uri = "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()
            if len(uri) < 4_000_000:  # a read's text holds at most 5 MB
                (root / f"{name}-data.md").write_text(f"# {name}\n\n![{name}]({uri})\n")
                documents.append((f"{name} data: URI", root / f"{name}-data.md"))
        params = StdioServerParameters(
            command=str(BIN / "md-vision"),
            args=["--allow-path", scratch, "--allow-domain", "none", "--workers", "1"],
            env={"PATH": os.environ.get("PATH", ""), "HOME": scratch},
        )
        documents.sort(key=lambda document: "data: URI" in document[0])  # files first
        rows = asyncio.run(_svg_run(params, root / "svg.pid", documents))
    print("server MB: md-vision's peak resident memory so far; child MB: its render child's largest")
    print(f"{'hostile SVG (md-vision)':34} {'seconds':>8} {'child MB':>9} {'server MB':>10}  answer")
    for label, seconds, child, server, shown in rows:
        print(f"{label:34} {seconds:8.3f} {child:9.0f} {server:10.0f}  {shown[:80]}")


if __name__ == "__main__":
    main()
