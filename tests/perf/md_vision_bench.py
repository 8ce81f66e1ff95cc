"""md-vision benchmark: generates its own data, drives the real server over MCP stdio and
in-process, and prints each figure against its target from issue 2.

    uv run python tests/perf/md_vision_bench.py                  # index and images
    uv run python tests/perf/md_vision_bench.py --only index --files 1000
    uv run python tests/perf/md_vision_bench.py --only images --repeat 5
    uv run python tests/perf/md_vision_bench.py --only parallel  # serial vs threads vs processes
    uv run python tests/perf/md_vision_bench.py --only parse     # CPU per 20 KB document

(a) index_md over a folder of 1,000 markdown files (~20 MB, 37 headings each), the whole index in
    one result: cold (first call on a fresh server), warm (nothing changed since the last call),
    with structured content (the default) and with --no-structured-output, and peak memory of the
    server. The client makes one call to a throwaway server first: its own first call in a
    process costs seconds that are not the server's, and is printed apart.
(b) read_md_with_images of a section with 10 busy 2000x1500 drawings: cold (fresh server),
    cached (the same read again), response size against the 5 MB budget, images delivered.
    The cached read is timed three ways: the server's own handling (the read function, and an
    in-process MCP client), and the stdio round trip, whose cost is mostly the MCP SDK's stdio
    *client* re-splitting its whole buffer for every pipe chunk; that client-side share is
    measured on its own and reported separately.
(c) --only parallel: a cold folder index in-process with one thread, with 2 and 4 threads, and
    with a 2-process pool (start-up included), to choose how to parallelise.
(d) parse_document on one generated 20 KB document: CPU per document, and the C share; and on a
    10 MB document (the default size limit) in a fresh process, with its peak memory.

Every figure is printed as wall time and CPU time (server process and its children) with the
machine's load average before and after, because the machine may be shared: on a busy machine
wall time exceeds CPU time. Nothing here asserts a time; the exit status is always 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
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


def _process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    tree = [pid]
    for each in tree:
        tree.extend(child for child, parent in parents.items() if parent == each)
    return tree


def _peak_rss_mb(pid: int) -> float:
    """Peak resident memory (VmHWM) of a process and its descendants, in MB."""
    total = 0
    for each in _process_tree(pid):
        try:
            with open(f"/proc/{each}/status") as handle:
                total += next((int(line.split()[1]) for line in handle if line.startswith("VmHWM:")), 0)
        except OSError:
            continue
    return total / 1024


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system, children included) of a process tree so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for each in _process_tree(pid):
        try:
            with open(f"/proc/{each}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(value) for value in fields[11:15]) / ticks  # utime stime cutime cstime
    return total


def _server_pid() -> int | None:
    """The md-vision process this benchmark started (a child of this process)."""
    mine, found = os.getpid(), None
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    cmdline = handle.read()
            except OSError:
                continue
            if parent == mine and (b"md-vision" in cmdline or b"md_vision" in cmdline):
                found = int(entry)
    return found


SERVER_COMMAND: list[str] = []  # --server: another build of md-vision to compare against


def _server_command() -> list[str]:
    if SERVER_COMMAND:
        return SERVER_COMMAND
    script = shutil.which("md-vision")
    return [script] if script else [sys.executable, "-m", "md_vision"]


async def _with_server(root: Path, extra: list[str], body):
    from mcp import Client, StdioServerParameters

    command = _server_command()
    params = StdioServerParameters(
        command=command[0], args=[*command[1:], "--allow-path", str(root), "--allow-domain", "none", *extra]
    )
    async with Client(params) as client:
        return await body(client)


def warm_client(workdir: Path) -> float:
    """One call to a throwaway server on a one-file folder, so that the MCP client's one-time setup
    in this process (its first call builds the output-schema validator: about 1.7 s here) is not
    timed as the fresh server's. Returns that first call's wall time."""
    tiny = workdir / "client-warm-up"
    tiny.mkdir(parents=True, exist_ok=True)
    (tiny / "one.md").write_text("# One\n\ntext\n", encoding="utf-8")

    async def body(client):
        with Timer() as timer:
            result = await client.call_tool("index_md", {"uri": str(tiny)})
        assert not result.is_error, result.content[0].text[:500]
        return timer.wall

    return asyncio.run(_with_server(tiny, [], body))


class Timer:
    """Wall time of a block, and CPU time of a process tree (this process when pid is None)."""

    def __init__(self, pid: int | None = None) -> None:
        self.pid = pid

    def _cpu(self) -> float:
        return _cpu_s(self.pid) if self.pid else time.process_time()

    def __enter__(self) -> Timer:
        self.cpu, self.wall = self._cpu(), time.perf_counter()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = self._cpu() - self.cpu


@dataclass
class Figure:
    name: str
    wall_s: float
    target_s: float | None = None  # None: shown for information, no target
    cpu_s: float | None = None
    note: str = ""

    def line(self) -> str:
        value = _seconds(self.wall_s)
        cpu = f"CPU {_seconds(self.cpu_s)}" if self.cpu_s is not None else ""
        if self.target_s is None:
            verdict, target = "", ""
        else:
            target = f"< {_seconds(self.target_s)}"
            verdict = "met" if self.wall_s < self.target_s else "NOT MET"
        return f"  {self.name:<44} {value:>9}  {cpu:<13} {target:<10} {verdict:<8} {self.note}".rstrip()


def _seconds(value: float | None) -> str:
    if value is None:
        return ""
    if value < 0.01:
        return f"{value * 1000:.2f} ms"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _load() -> str:
    if not hasattr(os, "getloadavg"):
        return "load n/a"
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


# --- (a) index ---------------------------------------------------------------------------------

# The whole index in one result (the response limit's worth of tokens), as this benchmark measured
# before results were paged: the first page alone is timed by tests/perf/md_vision_pages.py.
WHOLE_INDEX_TOKENS = 1_250_000


async def bench_index_stdio(
    root: Path, repeat: int, extra: tuple[str, ...] = ()
) -> tuple[list[Figure], dict]:
    label = ", text only" if "--no-structured-output" in extra else ""

    async def body(client):
        pid = _server_pid()
        with Timer(pid) as cold:
            first = await client.call_tool("index_md", {"uri": str(root), "max_tokens": WHOLE_INDEX_TOKENS})
        assert not first.is_error, first.content[0].text[:500]
        warm = []
        for _ in range(repeat):
            with Timer(pid) as again:
                result = await client.call_tool(
                    "index_md", {"uri": str(root), "max_tokens": WHOLE_INDEX_TOKENS}
                )
            assert result.content[0].text == first.content[0].text
            warm.append(again)
        best = min(warm, key=lambda timer: timer.wall)
        text = first.content[0].text
        info = {"files": text.count("<file "), "index_mb": len(text) / 1e6}
        peak = _peak_rss_mb(pid) if pid else -1
        figures = [
            Figure(f"index_md cold, over MCP stdio{label}", cold.wall, 2.0, cold.cpu),
            Figure(f"index_md unchanged folder, over MCP stdio{label}", best.wall, 0.3, best.cpu),
        ]
        return figures, {**info, "peak_mb": peak}

    return await _with_server(root, list(extra), body)


def bench_index_in_process(root: Path, repeat: int, workers: int | None = None) -> list[Figure]:
    """The same index through the service the server calls (no MCP framing)."""
    from md_vision import MdVision, Settings
    from md_vision.settings import Limits

    limits = Limits() if workers is None else Limits(index_workers=workers)

    async def go():
        async with MdVision(Settings.build(allow_paths=[root], limits=limits)) as vision:
            with Timer() as cold:
                await vision.index(str(root), max_tokens=WHOLE_INDEX_TOKENS)
            warm = []
            for _ in range(repeat):
                with Timer() as again:
                    await vision.index(str(root), max_tokens=WHOLE_INDEX_TOKENS)
                warm.append(again)
            return cold, min(warm, key=lambda timer: timer.wall)

    cold, warm = asyncio.run(go())
    return [
        Figure("index cold, in-process (server-side handling)", cold.wall, None, cold.cpu),
        Figure("index unchanged, in-process", warm.wall, None, warm.cpu),
    ]


# --- (c) how to parallelise a cold index --------------------------------------------------------


def bench_parallel(root: Path) -> list[Figure]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    from docab_mcpguard import PathPolicy
    from md_vision.folder import index_many, scan_folder
    from md_vision.parser import check_parser

    check_parser()
    policy = PathPolicy.from_dirs([root])
    with policy.open(root) as opened:
        paths = [file.path for file in scan_folder(opened, policy, 10_000).files]
    figures = []
    for label, make in [
        ("1 thread (serial)", None),
        ("2 threads", lambda: ThreadPoolExecutor(2)),
        ("4 threads", lambda: ThreadPoolExecutor(4)),
        (
            "2 processes, start-up included",
            lambda: ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver")),
        ),
    ]:
        with Timer() as timer:
            if make is None:
                index_many(paths, 10_000_000, None, policy=policy)
            else:
                with make() as pool:
                    index_many(paths, 10_000_000, pool, policy=policy)
        note = "CPU: this process only" if "process" in label else ""
        figures.append(
            Figure(f"cold index of {len(paths)} files, {label}", timer.wall, None, timer.cpu, note)
        )
    return figures


# --- (d) one document ---------------------------------------------------------------------------


def bench_parse(repeat: int) -> list[Figure]:
    """CPU per document of the parse behind both tools, on one generated 20 KB file (best of runs)."""
    from md_vision.document import parse_document

    text = make_markdown(random.Random(11), 11)
    steps = [("parse_document", parse_document)]
    try:
        from md_vision.parser import markdown_to_xml
    except ImportError:  # a build without the cmark binding (--server comparisons)
        pass
    else:
        steps.append(("  of which cmark-gfm to XML (C)", markdown_to_xml))
    figures = []
    for label, step in steps:
        step(text)
        runs = []
        for _ in range(max(5, repeat)):
            with Timer() as timer:
                for _ in range(20):
                    step(text)
            runs.append(timer)
        best = min(runs, key=lambda timer: timer.cpu)
        figures.append(
            Figure(f"{label}, {len(text) / 1000:.0f} KB document", best.wall / 20, None, best.cpu / 20)
        )
    return figures


_BIG_DOCUMENT = """
import random, resource, sys, time
sys.path.insert(0, {here!r})
from md_vision_bench import make_markdown
from md_vision.document import parse_document
text = "".join(make_markdown(random.Random(n), n) for n in range(500))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started, cpu = time.perf_counter(), time.process_time()
document = parse_document(text)
print(time.perf_counter() - started, time.process_time() - cpu, len(text),
      (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def bench_big_document() -> Figure:
    """One 10 MB document (the default --max-markdown-bytes), in a fresh process for its peak memory."""
    import subprocess

    code = _BIG_DOCUMENT.format(here=str(Path(__file__).resolve().parent))
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    wall, cpu, size, grown_mb = (float(value) for value in output.split())
    return Figure(
        f"parse_document ({size / 1e6:.0f} MB)",
        wall,
        None,
        cpu,
        f"peak memory +{grown_mb:.0f} MB over the text",
    )


# --- (b) images --------------------------------------------------------------------------------

_SECTION = {"section": "## Sheet set", "max_images": 10}


async def bench_images_stdio(root: Path, repeat: int) -> tuple[list[Figure], dict]:
    async def body(client):
        pid = _server_pid()
        args = {"uri": str(root / "drawings.md"), **_SECTION}
        with Timer(pid) as cold:
            first = await client.call_tool("read_md_with_images", args)
        cached = []
        for _ in range(repeat):
            with Timer(pid) as again:
                await client.call_tool("read_md_with_images", args)
            cached.append(again)
        best = min(cached, key=lambda timer: timer.wall)
        recorder.recording = True
        await client.call_tool("read_md_with_images", args)
        recorder.recording = False
        images = [block for block in first.content if block.type == "image"]
        labels = [b.text for b in first.content if b.type == "text" and b.text.startswith("Image:")]
        line = _response_line(first)
        figures = [
            Figure("read cold (fresh server), over MCP stdio", cold.wall, 1.0, cold.cpu),
            Figure("read cached, over MCP stdio (round trip)", best.wall, 0.05, best.cpu, "CPU: server only"),
        ]
        info = {
            "images": len(images),
            "response_mb": len(line) / 1e6,
            "label": labels[0] if labels else "",
            "chunks": recorder.sizes,
        }
        return figures, info

    with _ChunkRecorder() as recorder:
        return await _with_server(root, [], body)


def _response_line(result) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True))


def bench_images_in_process(root: Path, repeat: int) -> list[Figure]:
    """The server's own handling: the read function, and an in-process MCP client (no pipes)."""
    from mcp import Client

    from md_vision import MdVision, Settings
    from md_vision.server import build_server

    settings = Settings.build(allow_paths=[root])
    uri = str(root / "drawings.md")

    async def through_read():
        async with MdVision(settings) as vision:
            with Timer() as cold:
                await vision.read(uri, **_SECTION)
            cached = []
            for _ in range(repeat):
                with Timer() as again:
                    await vision.read(uri, **_SECTION)
                cached.append(again)
            return cold, min(cached, key=lambda timer: timer.wall)

    async def through_mcp():
        async with Client(build_server(settings)) as client:
            await client.call_tool("read_md_with_images", {"uri": uri, **_SECTION})
            cached = []
            for _ in range(repeat):
                with Timer() as again:
                    await client.call_tool("read_md_with_images", {"uri": uri, **_SECTION})
                cached.append(again)
            return min(cached, key=lambda timer: timer.wall)

    cold, cached = asyncio.run(through_read())
    mcp_cached = asyncio.run(through_mcp())
    return [
        Figure("read cold, in-process read function", cold.wall, None, cold.cpu),
        Figure("read cached, in-process read function", cached.wall, 0.05, cached.cpu),
        Figure(
            "read cached, in-process MCP client", mcp_cached.wall, 0.05, mcp_cached.cpu, "server + client"
        ),
    ]


class _ChunkRecorder:
    """Records the size of every chunk the SDK's stdio client reads from the server's stdout."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.recording = False

    def __enter__(self) -> _ChunkRecorder:
        from anyio.streams.text import TextReceiveStream

        self._original = original = TextReceiveStream.receive
        recorder = self

        async def receive(stream) -> str:
            chunk = await original(stream)
            if recorder.recording:
                recorder.sizes.append(len(chunk))
            return chunk

        TextReceiveStream.receive = receive  # measurement only: the client itself is unchanged
        return self

    def __exit__(self, *exc_info: object) -> None:
        from anyio.streams.text import TextReceiveStream

        TextReceiveStream.receive = self._original


def bench_stdio_client_split(sizes: list[int]) -> Figure:
    """What the SDK's stdio client spends re-assembling one response from these pipe chunks.

    mcp/client/stdio.py runs ``lines = (buffer + chunk).split("\\n")`` for every chunk it reads,
    so a single N-byte line costs O(N^2 / chunk) in the *client*. This replays that loop on chunks
    of the sizes the client really received for one cached read.
    """
    chunks = ["x" * size for size in sizes]
    with Timer() as timer:
        buffer = ""
        for chunk in chunks:
            lines = (buffer + chunk).split("\n")
            buffer = lines.pop()
    total = sum(sizes) / 1e6
    note = f"client side; {len(sizes)} chunks"
    return Figure(f"stdio client re-splitting its {total:.1f} MB buffer", timer.wall, None, timer.cpu, note)


# --- main --------------------------------------------------------------------------------------


def _print(title: str, figures: list[Figure]) -> None:
    print(title)
    print(f"  {'':<44} {'wall':>9}  {'CPU':<13} {'target':<10} {'verdict':<8}")
    for figure in figures:
        print(figure.line())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=["index", "images", "parallel", "parse"], help="run one benchmark")
    parser.add_argument("--files", type=int, default=1000, help="markdown files to generate [1000]")
    parser.add_argument(
        "--repeat", type=int, default=5, help="warm/cached repetitions; the best is shown [5]"
    )
    parser.add_argument(
        "--keep", type=Path, help="generate into this folder and keep it (reused when present)"
    )
    parser.add_argument(
        "--server",
        help="command that starts the server over stdio, e.g. another checkout's md-vision, to compare "
        "builds [md-vision on PATH]; the in-process figures always use the md_vision this Python imports",
    )
    args = parser.parse_args(argv)
    if args.server:
        SERVER_COMMAND[:] = shlex.split(args.server)

    import PIL

    print(
        f"machine: {os.cpu_count()} CPUs, {_load()} (1/5/15 min), Python {sys.version.split()[0]}, "
        f"Pillow {PIL.__version__}"
    )
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="md-vision-bench-"))
    try:
        corpus = workdir / "corpus"
        if args.only in (None, "index", "parallel") and not corpus.exists():
            with Timer() as timer:
                size = generate_folder(corpus, args.files)
            print(f"generated {args.files} files, {size / 1e6:.1f} MB in {timer.wall:.1f} s")
        if args.only in (None, "index"):
            setup = warm_client(workdir)
            print(
                f"the client's first call in this process (one-file folder, not counted below): {setup:.2f} s"
            )
            figures, info = asyncio.run(bench_index_stdio(corpus, args.repeat))
            # The whole index as structured content too (3.2 MB of JSON beside 1.6 MB of text): the
            # SDK's client validates it against the output schema, which dominates the round trip.
            plain, _ = asyncio.run(bench_index_stdio(corpus, args.repeat, ("--no-structured-output",)))
            figures += plain
            figures += bench_index_in_process(corpus, args.repeat)
            _print(
                f"(a) index_md, {info['files']} files, {info['index_mb']:.2f} MB of index  [{_load()}]",
                figures,
            )
            verdict = "met" if 0 < info["peak_mb"] < 300 else "NOT MET"
            print(
                f"  {'peak memory of the server':<44} {info['peak_mb']:>6.0f} MB {'':<13} {'< 300 MB':<10} {verdict}"
            )
        if args.only in (None, "parse"):
            _print(
                f"(d) one document, in-process  [{_load()}]",
                [*bench_parse(args.repeat), bench_big_document()],
            )
        if args.only == "parallel":
            _print(f"(c) parallel indexing, in-process  [{_load()}]", bench_parallel(corpus))
        if args.only in (None, "images"):
            images_root = workdir / "images"
            if not (images_root / "drawings.md").exists():
                size = generate_images_doc(images_root)
                print(f"generated 10 drawings of 2000x1500, {size / 1e6:.1f} MB of PNG")
            figures, info = asyncio.run(bench_images_stdio(images_root, args.repeat))
            figures += bench_images_in_process(images_root, args.repeat)
            figures.append(bench_stdio_client_split(info["chunks"]))
            _print(f"(b) read_md_with_images, 10 busy 2000x1500 drawings  [{_load()}]", figures)
            delivered = "met" if info["images"] == 10 and info["response_mb"] <= 5 else "NOT MET"
            print(
                f"  {'images delivered within the 5 MB budget':<44} {info['images']:>6}/10 "
                f"({info['response_mb']:.2f} MB response)  {delivered}"
            )
            print(f"  e.g. {info['label']}")
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
