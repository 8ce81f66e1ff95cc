"""vision-bridge speed: what the bridge adds over a direct SDK call, and what a cached call costs.

Run:  uv run python -m tests.perf.bench_vision_bridge [--rounds 200] [--json out.json]

Everything talks to the loopback model stub (tests/support/llm_stub.py), which answers at once,
so the figures are the bridge's own cost, not a model's. Per format (OpenAI, Anthropic):

- direct:  the official SDK's async client, one call with the image already base64-encoded
           (the least a caller must do without the bridge);
- bridge:  ``VisionService.analyze(path)`` with the cache off: read the file, hash it, check and
           prepare the image, the same SDK call, usage report;
- bridge via MCP: the same through an in-process MCP client (JSON-RPC framing both ways);
- cached:  a repeated call answered from the on-disk cache (service, and via MCP).

Direct and bridge rounds are interleaved so that machine noise hits both alike. Targets (from
issue 4): a cached call under 20 ms; the bridge under 30 ms over a direct SDK call.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.support.llm_stub import LLMStub

CACHED_TARGET_MS = 20.0
OVERHEAD_TARGET_MS = 30.0


def screenshot_png() -> bytes:
    """A 1280x800 screenshot-like PNG (flat areas, text, a gradient): about 150 kB."""
    from PIL import Image, ImageDraw, ImageFont

    picture = Image.new("RGB", (1280, 800), (245, 246, 248))
    draw = ImageDraw.Draw(picture)
    for x in range(0, 1280, 4):
        draw.line([(x, 0), (x, 90)], fill=(30 + x // 10, 90, 160))
    font = ImageFont.load_default(size=22)
    for row in range(24):
        draw.text(
            (40, 120 + row * 27),
            f"Row {row:02d}  revenue {row * 1234.5:,.2f}  status OK  item-{row * 7}",
            font=font,
            fill=(20, 20, 20),
        )
    buffer = io.BytesIO()
    picture.save(buffer, "PNG")
    return buffer.getvalue()


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p90_ms": ordered[int(0.9 * (len(ordered) - 1))] * 1000,
        "min_ms": ordered[0] * 1000,
    }


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


def settings_env(stub: LLMStub, fmt: str, folder: Path, *, cache: bool) -> dict[str, str]:
    return {
        "VISION_API_FORMAT": fmt,
        "VISION_API_BASE_URL": stub.openai_base_url if fmt == "openai" else stub.anthropic_base_url,
        "VISION_API_KEY": "bench",
        "VISION_MODEL": "bench-model",
        "VISION_MAX_RETRIES": "0",
        "VISION_CACHE_TTL": "3600" if cache else "0",
        "VISION_CACHE_DIR": str(folder / f"cache-{fmt}"),
        "VISION_ALLOWED_PATHS": str(folder),
    }


async def bench_format(fmt: str, stub: LLMStub, folder: Path, image: Path, rounds: int) -> dict[str, Any]:
    from mcp import Client

    from vision_bridge.config import load_settings
    from vision_bridge.server import build_server
    from vision_bridge.service import create_service

    data_url_b64 = base64.b64encode(image.read_bytes()).decode()
    if fmt == "openai":
        import openai

        sdk = openai.AsyncOpenAI(base_url=stub.openai_base_url, api_key="bench", max_retries=0)
        messages = [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:image/png;base64,{data_url_b64}", "detail": "auto"},
                    },
                    {"type": "text", "text": "Describe this image in detail."},
                ],
            }
        ]

        async def direct() -> Any:
            return await sdk.chat.completions.create(model="bench-model", messages=messages, max_tokens=4096)
    else:
        import anthropic

        sdk = anthropic.AsyncAnthropic(base_url=stub.anthropic_base_url, api_key="bench", max_retries=0)
        messages = [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": data_url_b64},
                    },
                    {"type": "text", "text": "Describe this image in detail."},
                ],
            }
        ]

        async def direct() -> Any:
            return await sdk.messages.create(model="bench-model", max_tokens=4096, messages=messages)

    uncached = create_service(load_settings(settings_env(stub, fmt, folder, cache=False)))
    cached = create_service(load_settings(settings_env(stub, fmt, folder, cache=True)))
    mcp_uncached = Client(
        build_server(create_service(load_settings(settings_env(stub, fmt, folder, cache=False))))
    )
    mcp_cached = Client(
        build_server(create_service(load_settings(settings_env(stub, fmt, folder, cache=True))))
    )
    path = str(image)

    async def bridge() -> Any:
        outcome = await uncached.analyze(path)
        assert not outcome.is_error, outcome.text
        return outcome

    async def bridge_cached() -> Any:
        outcome = await cached.analyze(path)
        assert outcome.usage.from_cache, outcome.text
        return outcome

    samples: dict[str, list[float]] = {k: [] for k in ("direct", "bridge", "mcp", "cached", "mcp_cached")}
    async with mcp_uncached as client, mcp_cached as cached_client:

        async def via_mcp() -> Any:
            result = await client.call_tool("analyze_image", {"image": path})
            assert not result.is_error
            return result

        async def via_mcp_cached() -> Any:
            result = await cached_client.call_tool("analyze_image", {"image": path})
            assert result.meta["io.github.docab/usage"]["from_cache"]
            return result

        # Warm up: imports, connection pools, the cache entries.
        await cached.analyze(path)
        await cached_client.call_tool("analyze_image", {"image": path})
        for fn in (direct, bridge, via_mcp, bridge_cached, via_mcp_cached):
            for _ in range(5):
                await fn()
        for _ in range(rounds):
            samples["direct"].append(await timed(direct))
            samples["bridge"].append(await timed(bridge))
            samples["mcp"].append(await timed(via_mcp))
            samples["cached"].append(await timed(bridge_cached))
            samples["mcp_cached"].append(await timed(via_mcp_cached))
    await uncached.aclose()
    await cached.aclose()
    await sdk.close()

    result = {name: stats(values) for name, values in samples.items()}
    direct_ms = result["direct"]["median_ms"]
    result["bridge_overhead_ms"] = result["bridge"]["median_ms"] - direct_ms
    result["mcp_overhead_ms"] = result["mcp"]["median_ms"] - direct_ms
    result["bridge_ratio"] = result["bridge"]["median_ms"] / direct_ms
    return result


def stdio_startup(stub: LLMStub, folder: Path, runs: int = 3) -> dict[str, float]:
    """Seconds from spawning ``vision-bridge`` to the answer of ``tools/list`` (a host's wait)."""
    from mcp import Client, StdioServerParameters

    script = Path(sys.executable).with_name("vision-bridge")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "VISION_LOG_LEVEL": "WARNING",
        **settings_env(stub, "openai", folder, cache=False),
    }

    async def once() -> float:
        start = time.perf_counter()
        async with Client(StdioServerParameters(command=str(script), args=[], env=env)) as client:
            await client.list_tools()
            return time.perf_counter() - start

    times = [asyncio.run(once()) for _ in range(runs)]
    return {"median_s": statistics.median(times), "min_s": min(times)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rounds", type=int, default=200, help="timed calls per path and format (default 200)"
    )
    parser.add_argument("--formats", default="openai,anthropic", help="comma-separated: openai, anthropic")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--no-startup", action="store_true", help="skip the stdio start-up measurement")
    args = parser.parse_args(argv)

    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "rounds": args.rounds,
    }
    with LLMStub() as stub, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        image = folder / "screenshot.png"
        image.write_bytes(screenshot_png())
        results["image"] = f"1280x800 PNG, {image.stat().st_size:,} bytes"
        for fmt in [f.strip() for f in args.formats.split(",") if f.strip()]:
            results[fmt] = asyncio.run(bench_format(fmt, stub, folder, image, args.rounds))
        if not args.no_startup:
            results["stdio_startup"] = stdio_startup(stub, folder)

    print(f"vision-bridge benchmark: {results['machine']}; load average {results['load_average']}")
    print(f"image: {results['image']}; {args.rounds} rounds per path, medians (p90) in ms\n")
    header = f"{'format':<10} {'direct SDK':>14} {'bridge':>14} {'via MCP':>14} {'cached':>12} {'cached MCP':>12} {'overhead':>9} {'MCP ovh':>9}"
    print(header)
    print("-" * len(header))
    ok = True
    for fmt in ("openai", "anthropic"):
        if fmt not in results:
            continue
        r = results[fmt]

        def cell(name: str, width: int, r: dict[str, Any] = r) -> str:
            return f"{r[name]['median_ms']:.1f} ({r[name]['p90_ms']:.1f})".rjust(width)

        print(
            f"{fmt:<10} {cell('direct', 14)} {cell('bridge', 14)} {cell('mcp', 14)} {cell('cached', 12)} "
            f"{cell('mcp_cached', 12)} {r['bridge_overhead_ms']:>+8.1f} {r['mcp_overhead_ms']:>+8.1f}"
        )
        ok &= r["cached"]["median_ms"] < CACHED_TARGET_MS and r["mcp_cached"]["median_ms"] < CACHED_TARGET_MS
        ok &= r["bridge_overhead_ms"] < OVERHEAD_TARGET_MS and r["mcp_overhead_ms"] < OVERHEAD_TARGET_MS
    if "stdio_startup" in results:
        s = results["stdio_startup"]
        print(f"\nstdio start-up to tools/list: median {s['median_s']:.2f} s (min {s['min_s']:.2f} s)")
    print(
        f"\ntargets: cached < {CACHED_TARGET_MS:g} ms, overhead over the direct SDK call < {OVERHEAD_TARGET_MS:g} ms: "
        + ("met" if ok else "NOT met")
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
