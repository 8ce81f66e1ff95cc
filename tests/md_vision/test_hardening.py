"""md-vision under attack: a folder-swap race, decompression bombs over stdio, cancelling a large
index through a real client, and quiet shutdowns."""

from __future__ import annotations

import asyncio
import io
import os
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from PIL import Image

from md_vision.service import ImageBlock, MdVision, ToolFailure
from tests.md_vision.conftest import png_bytes, settings_for
from tests.md_vision.test_mcp import _command, _stdio
from tests.support.bombs import bomb
from tests.support.http_server import LocalServer, Reply
from tests.support.stdio_process import can_track, peak_rss_mb, pid_of, stops_quietly, tracked
from tests.support.swapper import FolderSwapper

SECRET = "SECRET-OUTSIDE"


def _race(tmp_path: Path, count: int) -> None:
    """``count`` reads, folder indexes and image reads of root/sub while sub keeps turning into
    a link to a folder outside the allowed path that holds files of the same names."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "a.md").write_text("# Inside\n\nkept in\n")
    (root / "sub" / "pic.png").write_bytes(png_bytes(colour=(0, 200, 0)))
    (root / "doc.md").write_text("# Doc\n\n![pic](sub/pic.png)\n")
    (outside / "a.md").write_text(f"# {SECRET}\n\n{SECRET}\n")
    (outside / "pic.png").write_bytes(png_bytes(colour=(200, 0, 0)))
    settings = settings_for(root, index_workers=1)
    calls = ("read", "index", "image")

    async def go() -> dict[str, int]:
        outcomes = {"inside": 0, "refused": 0}
        async with MdVision(settings) as vision:
            for number in range(count):
                kind = calls[number % 3]
                try:
                    if kind == "read":
                        text = (await vision.read("sub/a.md")).source_text
                    elif kind == "index":
                        text = (await vision.index("sub")).text
                    else:
                        result = await vision.read("doc.md")
                        images = [block for block in result.blocks if isinstance(block, ImageBlock)]
                        text = result.source_text
                        for image in images:
                            pixel = Image.open(io.BytesIO(image.data)).convert("RGB").getpixel((5, 5))
                            assert pixel == (0, 200, 0), "an image from outside the allowed path was read"
                        if not images:
                            outcomes["refused"] += 1
                            continue
                except ToolFailure:
                    outcomes["refused"] += 1
                    continue
                assert SECRET not in text, "text from outside the allowed path was returned"
                outcomes["inside"] += 1
        return outcomes

    with FolderSwapper(root / "sub", outside) as swapper:
        outcomes = asyncio.run(go())
    assert outcomes["inside"] > 0 and outcomes["refused"] > 0 and swapper.swaps > 10, (
        outcomes,
        swapper.swaps,
    )


def test_a_folder_swapped_for_a_link_never_yields_outside_bytes(tmp_path: Path) -> None:
    _race(tmp_path, 2100)  # 700 each of reads, folder indexes and image reads


# -- bombs --------------------------------------------------------------------------------------

BOMBS = ["gzip", "deflate", "br", "zstd", ("gzip", "gzip"), ("br", "zstd"), ("zstd", "deflate")]


@pytest.mark.skipif(not can_track(), reason="reads the server's peak memory from /proc (Linux)")
def test_bombs_as_documents_and_as_images_end_at_the_cap_and_the_server_keeps_serving(tmp_path: Path) -> None:
    (tmp_path / "local.md").write_text("# Local\n\n## Still here\n")
    pidfile = tmp_path / "pid"
    with LocalServer() as server:
        for number, codings in enumerate(BOMBS):
            body, header = bomb(codings if isinstance(codings, str) else tuple(codings))
            encoded = {"Content-Encoding": header}
            server.route(f"/bomb{number}.md", Reply(body=body, headers=encoded, content_type="text/markdown"))
            server.route(f"/bomb{number}.png", Reply(body=body, headers=encoded, content_type="image/png"))
            server.route(
                f"/doc{number}.md",
                Reply(body=f"# Doc\n\n![b](bomb{number}.png)\n", content_type="text/markdown"),
            )
        # A 30 s budget: only the byte caps (10 MB of markdown, 20 MB per image) end a bomb quickly.
        params = tracked(
            _stdio("--allow-path", str(tmp_path), "--allow-domain", "127.0.0.1", "--fetch-timeout", "30"),
            pidfile,
        )

        async def timed(client: Client, tool: str, uri: str) -> tuple[str, float]:
            started = time.monotonic()
            result = await client.call_tool(tool, {"uri": uri})
            text = "\n".join(block.text for block in result.content if block.type == "text")
            return text, time.monotonic() - started

        async def go() -> tuple[list[tuple[str, float, str, float, str]], float]:
            rows = []
            async with Client(params) as client:
                await timed(client, "index_md", str(tmp_path / "local.md"))  # first call: imports done
                for number in range(len(BOMBS)):
                    (document, document_s), (image, image_s), (other, _) = await asyncio.gather(
                        timed(client, "index_md", server.url(f"/bomb{number}.md")),
                        timed(client, "read_md_with_images", server.url(f"/doc{number}.md")),
                        timed(client, "index_md", str(tmp_path / "local.md")),
                    )
                    rows.append((document, document_s, image, image_s, other))
                return rows, peak_rss_mb(pid_of(pidfile))

        rows, peak_mb = asyncio.run(go())
    for (document, document_s, image, image_s, other), codings in zip(rows, BOMBS, strict=True):
        assert document.endswith("sent more than the limit of 10,000,000 bytes."), (codings, document)
        assert "[image not shown: bomb" in image and "sent more than the limit of 20,000,000 bytes]" in image
        assert document_s < 2.0 and image_s < 2.0, (codings, document_s, image_s)
        assert "## Still here" in other, codings  # the concurrent call on the same server
    assert peak_mb < 300, f"the server peaked at {peak_mb:.0f} MB resident"


# -- cancellation and shutdown -------------------------------------------------------------------


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not can_track(), reason="reads the workers' CPU time from /proc (Linux)")
def test_a_cancelled_folder_index_stops_its_workers(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    # Paragraphs, not headings: each file's index entry stays one row, so the whole folder's index
    # fits one result when the call asks for a large max_tokens, and every file must be parsed.
    body = "".join(
        f"Part {n}: some text with `code`, *emphasis* and a [link](x{n}.md).\n\n" for n in range(120)
    )
    (folder / "doc00000.md").write_text(f"# Doc\n\n{body}")
    # 12,000 hard links: each path is indexed (about 20 s of CPU), yet no data is written.
    for number in range(1, 12_000):
        os.link(folder / "doc00000.md", folder / f"doc{number:05d}.md")
    pidfile = tmp_path / "pid"
    params = tracked(
        _stdio(
            "--allow-path", str(tmp_path), "--allow-domain", "none", "--max-files", "20000", "--workers", "2"
        ),
        pidfile,
    )

    async def go() -> tuple[float, float, str]:
        async with Client(params) as client:
            await client.call_tool("index_md", {"uri": str(tmp_path / "many" / "doc00000.md")})
            server = pid_of(pidfile)
            before = _cpu_seconds(_descendants(server))
            finished = False

            async def index_the_folder() -> None:
                nonlocal finished
                await client.call_tool("index_md", {"uri": str(folder), "max_tokens": 1_000_000})
                finished = True

            async with anyio.create_task_group() as group:
                group.start_soon(index_the_folder)
                # Cancel once the workers are well into it (abandoning the call sends
                # notifications/cancelled); on a busy machine that takes longer.
                with anyio.move_on_after(30):
                    while _cpu_seconds(_descendants(server)) - before < 0.5 and not finished:
                        await anyio.sleep(0.05)
                group.cancel_scope.cancel()
            assert not finished, "the index finished before it could be cancelled"
            workers = _descendants(server)
            busy = _cpu_seconds(workers) - before
            # The cancel reaches the server and the chunks already handed out finish: wait until
            # the workers' CPU time stops growing (at most 3 s; busy workers never get there).
            settled = busy
            for _ in range(15):
                await anyio.sleep(0.2)
                now = _cpu_seconds(workers)
                if now - settled < 0.02:
                    break
                settled = now
            await anyio.sleep(1.0)
            idle = _cpu_seconds(workers) - settled
            after = await client.call_tool("index_md", {"uri": str(tmp_path / "many" / "doc00001.md")})
            return busy, idle, after.content[0].text

    busy, idle, after = asyncio.run(go())
    assert busy >= 0.5, f"the workers did not get going ({busy:.2f} s of CPU)"
    assert idle < 0.15, f"the workers kept working after the cancel ({idle:.2f} s of CPU in 1 s)"
    assert "# Doc\t1\t" in after  # and the server still answers


@pytest.mark.parametrize("how", ["eof soon after start", "ctrl-c", "sigterm"])
def test_md_vision_stops_quietly(tmp_path: Path, how: str) -> None:
    (tmp_path / "a.md").write_text("# A\n")
    assert stops_quietly([*_command(), "--allow-path", str(tmp_path), "--allow-domain", "none"], how)
