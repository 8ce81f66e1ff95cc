"""md-vision: the first page of a large folder's index (issue 18), over MCP stdio.

    uv run python -m tests.perf.md_vision_pages                      # 10,000 and 1,000 files
    uv run python -m tests.perf.md_vision_pages --files 10000 --keep /tmp/mdv-pages

Generates folders of markdown files (frontmatter, a title and 36 section headings each, as the
main benchmark's, about --chars characters per file), starts the real server over stdio and times:

- the first index_md page of the folder, right after the server starts (its parser processes
  are still starting in the background) and once they are up, each on a fresh server, so nothing
  is cached: wall time against the 1 s target, and CPU time of the server and its workers (the
  client has made one call to a throwaway server first: its own first call in a process costs
  seconds that are not the server's, and is printed apart);
- the second page (cursor from the first);
- the first page through the service in-process, on a fresh service (the server's own handling);
- the characters and estimated tokens of the first result, against the ~100,000 characters a
  model client takes (the 25,000-token default), and whether it says how to get the rest.

Every figure is printed with the load average: on a shared machine, wall time exceeds CPU time.
Nothing here asserts a time; the exit status is always 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

from tests.perf.md_vision_bench import (
    Figure,
    Timer,
    _load,
    _print,
    _server_pid,
    _with_server,
    make_markdown,
    warm_client,
)

META_KEY = "io.github.docab/md-vision"


def generate(root: Path, files: int, chars: int, seed: int = 11) -> int:
    """``files`` documents in folders of 100; returns their total size in bytes."""
    rng = random.Random(seed)
    total = 0
    for number in range(files):
        folder = root / f"part{number // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        text = make_markdown(rng, number, target_chars=chars)
        (folder / f"doc{number:05d}.md").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


async def first_pages(root: Path, *, settle_s: float) -> tuple[list[Figure], dict[str, object]]:
    async def body(client):
        pid = _server_pid()
        if settle_s:
            await asyncio.sleep(settle_s)  # let the parser processes finish starting
        with Timer(pid) as first_timer:
            first = await client.call_tool("index_md", {"uri": str(root)})
        assert not first.is_error, first.content[0].text[:500]
        cursor = first.meta[META_KEY]["next_cursor"]
        with Timer(pid) as second_timer:
            second = await client.call_tool("index_md", {"uri": str(root), "cursor": cursor})
        assert not second.is_error, second.content[0].text[:500]
        text = first.content[0].text
        when = f"after {settle_s:g} s" if settle_s else "right after start"
        figures = [
            Figure(f"first page, fresh server, {when}", first_timer.wall, 1.0, first_timer.cpu),
            Figure("second page (its cursor)", second_timer.wall, None, second_timer.cpu),
        ]
        info: dict[str, object] = {
            "chars": len(text),
            "tokens": len(text) // 4,
            "says_next": bool(cursor) and f'cursor="{cursor}"' in text,
            "files_shown": text.count("\n") - 8,
        }
        return figures, info

    return await _with_server(root, [], body)


def first_page_in_process(root: Path) -> Figure:
    """The server's own handling of the first page (no MCP, no process start), on a fresh service:
    nothing cached, files parsed on this thread."""
    from md_vision import MdVision, Settings
    from md_vision.settings import Limits

    async def go() -> Timer:
        async with MdVision(Settings.build(allow_paths=[root], limits=Limits(index_workers=1))) as vision:
            with Timer() as timer:
                await vision.index(str(root))
            return timer

    timer = asyncio.run(go())
    return Figure("first page, in-process, nothing cached", timer.wall, 1.0, timer.cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--files", type=int, nargs="+", default=[10_000, 1_000], help="folder sizes [10000 1000]"
    )
    parser.add_argument("--chars", type=int, default=8_000, help="characters per generated file [8000]")
    parser.add_argument(
        "--keep", type=Path, help="generate into this folder and keep it (reused when present)"
    )
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} CPUs, {_load()} (1/5/15 min), Python {sys.version.split()[0]}")
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="md-vision-pages-"))
    try:
        setup = warm_client(workdir)
        print(f"the client's first call in this process (one-file folder, not counted below): {setup:.2f} s")
        for files in args.files:
            root = workdir / f"folder-{files}"
            if not root.exists():
                with Timer() as timer:
                    size = generate(root, files, args.chars)
                print(f"generated {files:,} files, {size / 1e6:.1f} MB in {timer.wall:.1f} s")
            figures, info = asyncio.run(first_pages(root, settle_s=0))
            settled, _ = asyncio.run(first_pages(root, settle_s=3))
            own = first_page_in_process(root)
            _print(f"index_md on a folder of {files:,} files  [{_load()}]", [*figures, settled[0], own])
            fits = "met" if int(str(info["chars"])) <= 100_000 and info["says_next"] else "NOT MET"
            print(
                f"  {'first result':<44} {info['chars']:>9,} characters (~{info['tokens']:,} tokens), "
                f"says how to get the rest: {info['says_next']}   target <= ~100,000 characters: {fits}"
            )
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
