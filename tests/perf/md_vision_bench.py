"""md-vision benchmark: generates its own data, drives the real server over MCP stdio, prints
figures against the targets of issue 2.

    uv run python tests/perf/md_vision_bench.py            # both benchmarks
    uv run python tests/perf/md_vision_bench.py --only index --files 1000
    uv run python tests/perf/md_vision_bench.py --only images --repeat 5

(a) index_md over a folder of 1,000 markdown files (~20 MB, 37 headings each): cold (first call
    on a fresh server), warm (nothing changed since the last call), and peak memory of the
    server and its worker processes.
(b) read_md_with_images of a section with 10 busy 2000x1500 drawings: cold (fresh server),
    cached (same read again), response size against the 5 MB budget, images delivered.

Timings are wall-clock on whatever machine runs this; the script prints the CPU count and load
so a noisy run can be recognised. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

WORDS = [
    "widget",
    "frame",
    "sensor",
    "latency",
    "buffer",
    "cache",
    "kernel",
    "thread",
    "socket",
    "render",
    "module",
    "driver",
    "signal",
    "vector",
    "matrix",
    "tensor",
    "packet",
    "schema",
    "column",
    "index",
    "shard",
    "replica",
    "quorum",
    "lease",
    "token",
    "window",
]


def _prose(rng: random.Random, words: int, width: int = 78) -> str:
    lines, line = [], []
    length = 0
    for _ in range(words):
        word = rng.choice(WORDS)
        if rng.random() < 0.04:
            word = f"*{word}*"
        elif rng.random() < 0.03:
            word = f"`{word}`"
        if length + len(word) + 1 > width and line:
            lines.append(" ".join(line))
            line, length = [], 0
        line.append(word)
        length += len(word) + 1
    if line:
        lines.append(" ".join(line))
    return "\n".join(lines) + "\n"


def make_markdown(rng: random.Random, number: int, target_chars: int = 20_000) -> str:
    """One document: frontmatter, 1 title + 36 section headings, lists, tables, fences, images."""
    parts = [f"---\ntitle: Document {number}\nowner: team-{number % 7}\n---\n\n# Document {number}\n\n"]
    parts.append(_prose(rng, 60))
    per_section = max(10, target_chars // (36 * 2 * 8))  # two prose blocks of ~8 chars a word
    for section in range(36):
        level = 2 if section % 4 == 0 else 3
        parts.append(f"\n{'#' * level} Section {section}: {rng.choice(WORDS)} {rng.choice(WORDS)}\n\n")
        parts.append(_prose(rng, per_section))
        kind = section % 6
        if kind == 0:
            parts.append(
                f"\n- first {rng.choice(WORDS)}\n- second item\n  - nested ![fig](img/fig{section}.png)\n"
            )
        elif kind == 1:
            parts.append("\n| name | value |\n|------|-------|\n| alpha | 1 |\n| beta | 2 |\n")
        elif kind == 2:
            parts.append("\n```python\n# a comment, not a heading\nprint('hello')\n```\n")
        elif kind == 3:
            parts.append(f"\n> A quoted remark about the {rng.choice(WORDS)}.\n")
        parts.append("\n" + _prose(rng, per_section))
    text = "".join(parts)
    while len(text) < target_chars:
        text += "\n" + _prose(rng, 40)
    return text


def generate_folder(root: Path, files: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    total = 0
    for number in range(files):
        folder = root / f"part{number // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        text = make_markdown(rng, number)
        (folder / f"doc{number:04d}.md").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def busy_drawing(seed: int, size: tuple[int, int] = (2000, 1500)):
    """A technical-drawing-like PNG: grid, thousands of coloured strokes, labels; compresses poorly."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    width, height = size
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    for x in range(0, width, 25):
        draw.line((x, 0, x, height), fill=(215, 225, 240))
    for y in range(0, height, 25):
        draw.line((0, y, width, y), fill=(215, 225, 240))
    for _ in range(2500):
        x, y = rng.randrange(width), rng.randrange(height)
        colour = (rng.randrange(200), rng.randrange(200), rng.randrange(200))
        draw.line(
            (x, y, x + rng.randint(-250, 250), y + rng.randint(-250, 250)),
            fill=colour,
            width=rng.randint(1, 3),
        )
    for _ in range(600):
        draw.text(
            (rng.randrange(width), rng.randrange(height)),
            f"R{rng.randrange(999)} {rng.choice(WORDS)}",
            fill=(0, 0, 0),
        )
    return image


def generate_images_doc(root: Path, count: int = 10) -> int:
    (root / "img").mkdir(parents=True, exist_ok=True)
    total = 0
    lines = ["# Drawings\n", "\nIntro.\n", "\n## Sheet set\n"]
    for number in range(count):
        path = root / "img" / f"sheet{number}.png"
        busy_drawing(number).save(path, "PNG", compress_level=6)
        total += path.stat().st_size
        lines.append(f"\nSheet {number}:\n\n![sheet {number}](img/sheet{number}.png)\n")
    lines.append("\n## After\n\nDone.\n")
    (root / "drawings.md").write_text("".join(lines), encoding="utf-8")
    return total


def _tree_rss_kb(pid: int) -> int:
    """Resident memory of a process and its children (Linux /proc), in kB."""
    total = 0
    pids = [pid]
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as handle:
                        fields = handle.read().rsplit(")", 1)[1].split()
                    if int(fields[1]) in pids and int(entry) not in pids:
                        pids.append(int(entry))
                except OSError:
                    continue
        # second pass catches grandchildren (the forkserver's workers)
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as handle:
                        fields = handle.read().rsplit(")", 1)[1].split()
                    if int(fields[1]) in pids and int(entry) not in pids:
                        pids.append(int(entry))
                except OSError:
                    continue
        for each in pids:
            try:
                with open(f"/proc/{each}/status") as handle:
                    for line in handle:
                        if line.startswith("VmHWM:"):  # peak resident set size
                            total += int(line.split()[1])
            except OSError:
                continue
    except OSError:
        return -1
    return total


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used by a process and its children so far (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = {pid}
    for _round in range(2):  # children, then grandchildren (the forkserver's workers)
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) in pids:
                pids.add(int(entry))
    for each in pids:
        try:
            with open(f"/proc/{each}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime, stime, cutime, cstime: fields 14-17 of stat, 12-15 after the command name
        total += sum(int(value) for value in fields[11:15]) / ticks
    return total


def _server_pid() -> int | None:
    """The md-vision process started by this benchmark (the newest child of this process)."""
    mine = os.getpid()
    found = None
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    cmdline = handle.read()
            except OSError:
                continue
            if int(fields[1]) == mine and b"md-vision" in cmdline:
                found = int(entry)
    return found


def _server_command() -> list[str]:
    script = shutil.which("md-vision")
    if script:
        return [script]
    return [sys.executable, "-m", "md_vision"]


async def _with_server(root: Path, extra: list[str], body):
    from mcp import Client, StdioServerParameters

    command = _server_command()
    params = StdioServerParameters(
        command=command[0], args=[*command[1:], "--allow-path", str(root), "--allow-domain", "none", *extra]
    )
    async with Client(params) as client:
        return await body(client)


def _response_bytes(result) -> int:
    return len(json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True)).encode())


def _verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER"


async def bench_index(root: Path, repeat: int) -> dict:
    async def body(client):
        pid = _server_pid()
        cpu_before = _tree_cpu_s(pid) if pid else 0.0
        started = time.perf_counter()
        first = await client.call_tool("index_md", {"uri": str(root)})
        cold = time.perf_counter() - started
        cold_cpu = (_tree_cpu_s(pid) - cpu_before) if pid else -1.0
        assert not first.is_error, first.content[0].text[:500]
        warm = []
        for _ in range(repeat):
            started = time.perf_counter()
            again = await client.call_tool("index_md", {"uri": str(root)})
            warm.append(time.perf_counter() - started)
            assert again.content[0].text == first.content[0].text
        text = first.content[0].text
        return {
            "cold_s": cold,
            "cold_cpu_s": cold_cpu,
            "warm_s": min(warm),
            "peak_rss_mb": (_tree_rss_kb(pid) / 1024) if pid else -1,
            "files": text.count("<file "),
            "rows": text.count("\n") - 6 * text.count("<file "),
            "index_chars": len(text),
        }

    return await _with_server(root, [], body)


async def bench_images(root: Path, repeat: int) -> dict:
    async def body(client):
        args = {"uri": str(root / "drawings.md"), "section": "## Sheet set", "max_images": 10}
        started = time.perf_counter()
        first = await client.call_tool("read_md_with_images", args)
        cold = time.perf_counter() - started
        cached = []
        for _ in range(repeat):
            started = time.perf_counter()
            await client.call_tool("read_md_with_images", args)
            cached.append(time.perf_counter() - started)
        images = [block for block in first.content if block.type == "image"]
        notes = [
            block.text for block in first.content if block.type == "text" and block.text.startswith("Image:")
        ]
        return {
            "cold_s": cold,
            "cached_s": min(cached),
            "images": len(images),
            "response_mb": _response_bytes(first) / 1_000_000,
            "example_label": notes[0] if notes else "",
        }

    return await _with_server(root, [], body)


def bench_images_in_process(root: Path, repeat: int) -> dict:
    """The same read through the library (no MCP framing): where the time goes without JSON."""
    from md_vision import MdVision, Settings

    async def go():
        async with MdVision(Settings.build(allow_paths=[root])) as vision:
            started = time.perf_counter()
            await vision.read(str(root / "drawings.md"), section="## Sheet set")
            cold = time.perf_counter() - started
            cached = []
            for _ in range(repeat):
                started = time.perf_counter()
                await vision.read(str(root / "drawings.md"), section="## Sheet set")
                cached.append(time.perf_counter() - started)
            return {"cold_s": cold, "cached_s": min(cached)}

    return asyncio.run(go())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=["index", "images"], help="run one benchmark")
    parser.add_argument("--files", type=int, default=1000, help="markdown files to generate [1000]")
    parser.add_argument(
        "--repeat", type=int, default=3, help="warm/cached repetitions; the best is shown [3]"
    )
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it")
    args = parser.parse_args(argv)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.2f}, Python {sys.version.split()[0]}")
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="md-vision-bench-"))
    try:
        if args.only in (None, "index"):
            corpus = workdir / "corpus"
            if not corpus.exists():
                started = time.perf_counter()
                size = generate_folder(corpus, args.files)
                print(
                    f"generated {args.files} files, {size / 1e6:.1f} MB in {time.perf_counter() - started:.1f} s"
                )
            result = asyncio.run(bench_index(corpus, args.repeat))
            print(
                f"(a) index_md, {result['files']} files, {result['index_chars'] / 1e6:.2f} MB of index\n"
                f"    cold  {result['cold_s']:.2f} s   (target < 2 s)    {_verdict(result['cold_s'], 2)}"
                f"   [CPU used by server + workers: {result['cold_cpu_s']:.2f} s]\n"
                f"    warm  {result['warm_s']:.3f} s  (target < 0.3 s)  {_verdict(result['warm_s'], 0.3)}\n"
                f"    peak memory, server + workers  {result['peak_rss_mb']:.0f} MB  (target < 300 MB)  "
                f"{_verdict(result['peak_rss_mb'], 300)}"
            )
        if args.only in (None, "images"):
            images_root = workdir / "images"
            if not (images_root / "drawings.md").exists():
                size = generate_images_doc(images_root)
                print(f"generated 10 drawings of 2000x1500, {size / 1e6:.1f} MB of PNG")
            result = asyncio.run(bench_images(images_root, args.repeat))
            local = bench_images_in_process(images_root, args.repeat)
            print(
                f"(b) read_md_with_images, 10 busy 2000x1500 drawings\n"
                f"    images delivered  {result['images']}/10, response {result['response_mb']:.2f} MB "
                f"(budget 5 MB)  {_verdict(result['response_mb'], 5) if result['images'] == 10 else 'MISSING'}\n"
                f"    cold    {result['cold_s']:.2f} s   (target < 1 s)     {_verdict(result['cold_s'], 1)}\n"
                f"    cached  {result['cached_s'] * 1000:.0f} ms  over MCP stdio (target < 50 ms)  "
                f"{_verdict(result['cached_s'], 0.05)}\n"
                f"    in-process: cold {local['cold_s']:.2f} s, cached {local['cached_s'] * 1000:.1f} ms\n"
                f"    e.g. {result['example_label']}"
            )
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
