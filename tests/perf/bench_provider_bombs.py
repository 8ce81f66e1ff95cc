"""A provider answering with a decompression bomb: vision-bridge's time per call and peak memory.

    uv run python -m tests.perf.bench_provider_bombs      # 1 GiB of zeros, each coding, both formats

vision-bridge runs as its console script under a real MCP client, its provider the loopback stub
answering each ``analyze_image`` with 1 GiB of zeros in a content coding (built at start, as the
tests build them), in the OpenAI and the Anthropic format. Printed: the seconds of each call, the
answer, and the server's peak resident memory (VmHWM) after warm-up and after the bombs. Linux
only (reads /proc). The test (tests/vision_bridge/test_hardening.py) asserts the answer and the
memory bound; this prints the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters
from PIL import Image

from tests.support.bombs import bomb
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, anthropic_reply, openai_reply
from tests.support.stdio_process import peak_rss_mb, pid_of, tracked

BOMBS: list[str | tuple[str, ...]] = ["gzip", "deflate", "br", "zstd", ("gzip", "gzip"), ("br", "zstd")]
BIN = Path(sys.executable).parent


def _header(codings: str | tuple[str, ...]) -> str:
    return codings if isinstance(codings, str) else ", ".join(codings)


async def _run(params: StdioServerParameters, pidfile: Path, image: str) -> tuple[float, float, list]:
    rows = []
    async with Client(tracked(params, pidfile)) as client:
        await client.call_tool("analyze_image", {"image": image})  # the SDK and Pillow load
        baseline = peak_rss_mb(pid_of(pidfile))
        for codings in BOMBS:
            started = time.monotonic()
            result = await client.call_tool(
                "analyze_image", {"image": image, "prompt": f"bomb:{_header(codings)}"}
            )
            text = " ".join(block.text for block in result.content if block.type == "text")
            rows.append((time.monotonic() - started, text))
        return baseline, peak_rss_mb(pid_of(pidfile)), rows


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)
    replies = {}
    for codings in BOMBS:
        body, header = bomb(codings if isinstance(codings, str) else tuple(codings))
        replies[header] = Reply(
            body=body, headers={"Content-Encoding": header}, content_type="application/json"
        )

    def responder(protocol: str, request: Request) -> Reply:
        text = json.dumps(request.json())
        for header, reply in replies.items():
            if f'bomb:{header}"' in text:
                return reply
        return openai_reply("ok") if protocol == "openai" else anthropic_reply("ok")

    with tempfile.TemporaryDirectory() as scratch, LLMStub(responder) as stub:  # type: ignore[arg-type]
        image = str(Path(scratch) / "local.png")
        Image.new("RGB", (32, 24), "red").save(image)
        print(f"{'format':10} {'bomb (1 GiB of zeros)':22} {'seconds':>8}  answer")
        for fmt in ("openai", "anthropic"):
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": scratch,
                "VISION_API_FORMAT": fmt,
                "VISION_API_BASE_URL": stub.openai_base_url if fmt == "openai" else stub.anthropic_base_url,
                "VISION_API_KEY": "k",
                "VISION_MODEL": "m",
                "VISION_ALLOWED_PATHS": scratch,
                "VISION_CACHE_TTL": "0",
                "VISION_TIMEOUT": "60",
                "VISION_LOG_LEVEL": "WARNING",
            }
            params = StdioServerParameters(command=str(BIN / "vision-bridge"), args=[], env=env)
            baseline, peak, rows = asyncio.run(_run(params, Path(scratch) / f"{fmt}.pid", image))
            for codings, (seconds, text) in zip(BOMBS, rows, strict=True):
                print(f"{fmt:10} {_header(codings):22} {seconds:8.3f}  {text[:90]}")
            print(
                f"{fmt:10} peak resident memory: {baseline:.0f} MB after warm-up, {peak:.0f} MB after the bombs\n"
            )


if __name__ == "__main__":
    main()
