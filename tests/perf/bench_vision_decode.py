"""What decoding costs vision-bridge's server: four large images prepared for a provider in the
server's process (the way before vision_bridge.isolation) or in decode children (now).

Each way runs in a fresh interpreter, so that its peak resident memory is its own. The images:
``--count`` PNGs of ``--side`` x ``--side`` RGBA pixels, which the Anthropic format (8,000 pixels
at most a side) takes only downscaled, so each must be decoded.

    uv run python -m tests.perf.bench_vision_decode [--side 9000] [--count 4]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def _images(side: int, count: int) -> list[object]:
    from PIL import Image

    from vision_bridge.inputs import ImageBytes

    buffer = io.BytesIO()
    Image.new("RGBA", (side, side), (200, 30, 30, 255)).save(buffer, "PNG")
    return [ImageBytes(buffer.getvalue(), f"{n}.png") for n in range(count)]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _measure(way: str, side: int, count: int) -> None:
    from vision_bridge.backends.anthropic_messages import ANTHROPIC_IMAGE_LIMITS
    from vision_bridge.inputs import ImageBytes
    from vision_bridge.isolation import IsolatedDecoder
    from vision_bridge.prepare import PreparedImage, prepare_image

    images = [image for image in _images(side, count) if isinstance(image, ImageBytes)]
    before = _peak_mb()
    started = time.monotonic()
    prepared: list[PreparedImage]
    if way == "in-process":
        with ThreadPoolExecutor(count) as pool:
            prepared = list(pool.map(lambda image: prepare_image(image, ANTHROPIC_IMAGE_LIMITS), images))
    else:

        async def go() -> list[PreparedImage]:
            decoder = IsolatedDecoder()
            return await asyncio.gather(
                *(decoder.prepare(image, ANTHROPIC_IMAGE_LIMITS, timeout_s=600) for image in images)
            )

        prepared = asyncio.run(go())
    seconds = time.monotonic() - started
    sides = sorted({(p.width, p.height) for p in prepared})
    print(
        f"| {way} | {count} x {side}x{side} -> {sides} | {before:,.0f} | {_peak_mb():,.0f} | {seconds:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--side", type=int, default=9000, help="each image's side in pixels (default 9000)")
    parser.add_argument("--count", type=int, default=4, help="images prepared at once (default 4)")
    parser.add_argument("--way", choices=("in-process", "isolated"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.way:
        _measure(args.way, args.side, args.count)
        return
    print("| decoded | images | server MB before | server peak MB | seconds |")
    print("|---|---|---:|---:|---:|")
    for way in ("in-process", "isolated"):
        command = [sys.executable, "-m", "tests.perf.bench_vision_decode", "--way", way]
        subprocess.run([*command, "--side", str(args.side), "--count", str(args.count)], check=True)


if __name__ == "__main__":
    main()
