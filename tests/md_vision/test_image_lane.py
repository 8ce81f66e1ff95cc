"""Images are prepared on a lane of their own, once per image, and a refusal is remembered.

Before: a document referencing one slow SVG ten times rendered it ten times at once on the
server's shared threads (50 s at the 10 s --svg-seconds limit), and meanwhile an index of an
unrelated file waited; every repeat of the read cost the same again.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from md_vision.loading import Loader
from md_vision.reading import Reader
from md_vision.results import ImageBlock, TextBlock
from tests.md_vision.conftest import png_bytes, settings_for


class CountingLoader(Loader):
    """A loader that counts the preparations sent to the image lane."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.image_jobs = 0

    async def run_image(self, function: Callable[..., Any], *args: Any) -> Any:
        self.image_jobs += 1
        return await super().run_image(function, *args)


def _placeholders(result: Any) -> list[str]:
    return [b.text for b in result.blocks if isinstance(b, TextBlock) and b.role == "placeholder"]


def test_one_image_referenced_many_times_is_prepared_once(tmp_path: Path) -> None:
    (tmp_path / "pic.png").write_bytes(png_bytes())
    (tmp_path / "doc.md").write_text("# Doc\n\n" + "".join(f"![p{i}](pic.png)\n\n" for i in range(6)))

    async def go() -> tuple[int, int]:
        loader = CountingLoader(settings_for(tmp_path))
        try:
            result = await Reader(loader).read("doc.md")
            assert sum(isinstance(b, ImageBlock) for b in result.blocks) == 6
            first = loader.image_jobs
            await Reader(loader).read("doc.md")  # a new reader: its own cache
            return first, loader.image_jobs
        finally:
            await loader.aclose()

    assert asyncio.run(go()) == (1, 2)


def test_an_image_that_cannot_be_prepared_costs_once_until_it_changes(tmp_path: Path) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(png_bytes()[:60])  # a header, then nothing: cannot be decoded
    (tmp_path / "doc.md").write_text("# Doc\n\n" + "![a](broken.png)\n\n![b](broken.png)\n")

    async def go() -> list[int]:
        loader = CountingLoader(settings_for(tmp_path))
        reader = Reader(loader)
        jobs = []
        try:
            for step in range(3):
                if step == 2:  # the file changes: it is tried again
                    os.utime(broken, ns=(1, 1))
                result = await reader.read("doc.md")
                assert len(_placeholders(result)) == 2 and "could not be decoded" in _placeholders(result)[1]
                jobs.append(loader.image_jobs)
        finally:
            await loader.aclose()
        return jobs

    assert asyncio.run(go()) == [1, 1, 2]


def test_an_index_and_a_plain_read_never_wait_behind_the_image_lane(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text("# Doc\n\ntext\n")
    release = threading.Event()

    async def go() -> tuple[str, str]:
        loader = Loader(settings_for(tmp_path))
        try:
            # Both image threads busy (as with two slow renders); they end when the test says so.
            blocked = [asyncio.ensure_future(loader.run_image(release.wait)) for _ in range(2)]
            await asyncio.sleep(0)
            parsed = await loader.run(lambda: "parsed while images were busy")
            text = (await Reader(loader).read("doc.md")).source_text
            assert not any(task.done() for task in blocked)
            release.set()
            await asyncio.gather(*blocked)
            return parsed, text
        finally:
            release.set()
            await loader.aclose()

    assert asyncio.run(go()) == ("parsed while images were busy", "# Doc\n\ntext\n")


def test_a_parse_waiting_on_the_large_lane_is_not_charged_for_the_wait(tmp_path: Path) -> None:
    from md_vision.loading import LARGE_DOCUMENT_CHARS

    # Parses in about 0.1 s; it waits 1.5 s behind a parse ahead of it, with --parse-seconds 1.
    # Before, the wait counted: it was refused as too slow, and the refusal was remembered.
    text = "text line of a document\n" * (LARGE_DOCUMENT_CHARS // 24 + 1)
    release = threading.Event()

    async def go() -> int:
        loader = Loader(settings_for(tmp_path, parse_timeout_s=1.0))
        try:
            busy = loader._large.submit(release.wait)  # the lane's one worker, taken
            queued = asyncio.ensure_future(loader.parse(text, "big.md", key=("big.md", 1)))
            await asyncio.sleep(1.5)
            release.set()
            document = await queued
            busy.result()
            return document.line_count
        finally:
            release.set()
            await loader.aclose()

    assert asyncio.run(go()) == len(text.splitlines())


# -- SharedWork: one computation per key for every caller that asks meanwhile ----------------------


def test_callers_of_one_key_share_its_result_or_its_exception() -> None:
    from md_vision.cache import SharedWork

    async def go() -> tuple[list[str], int]:
        work: SharedWork[str] = SharedWork()
        calls = 0

        async def compute() -> str:
            nonlocal calls
            calls += 1
            await asyncio.sleep(0.01)
            return "value"

        results = await asyncio.gather(*(work.run("k", compute) for _ in range(5)))

        async def fail() -> str:
            await asyncio.sleep(0.01)
            raise ValueError("bad image")

        failures = await asyncio.gather(*(work.run("other", fail) for _ in range(3)), return_exceptions=True)
        assert [str(f) for f in failures] == ["bad image"] * 3
        return list(results), calls

    assert asyncio.run(go()) == (["value"] * 5, 1)


def test_a_cancelled_owner_hands_the_work_to_a_waiter_and_a_cancelled_waiter_changes_nothing() -> None:
    from md_vision.cache import SharedWork

    async def go() -> tuple[str, str, int]:
        work: SharedWork[str] = SharedWork()
        started = 0

        async def compute() -> str:
            nonlocal started
            started += 1
            await asyncio.sleep(0.05)
            return f"run {started}"

        owner = asyncio.create_task(work.run("k", compute))
        await asyncio.sleep(0)
        waiter = asyncio.create_task(work.run("k", compute))
        await asyncio.sleep(0.01)
        owner.cancel()
        taken_over = await waiter  # computed again, by the waiter

        owner2 = asyncio.create_task(work.run("j", compute))
        await asyncio.sleep(0)
        waiter2 = asyncio.create_task(work.run("j", compute))
        await asyncio.sleep(0.01)
        waiter2.cancel()
        return taken_over, await owner2, started

    assert asyncio.run(go()) == ("run 2", "run 3", 3)


class ParseCountingLoader(Loader):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.parses = 0

    async def parse(self, *args: Any, **kwargs: Any) -> Any:
        self.parses += 1
        return await super().parse(*args, **kwargs)


def test_sections_of_one_document_asked_for_at_once_parse_it_once(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text("".join(f"# Part {i}\n\n" + "text\n" * 50 for i in range(8)))

    async def go() -> tuple[list[str], int]:
        loader = ParseCountingLoader(settings_for(tmp_path))
        try:
            reader = Reader(loader)
            results = await asyncio.gather(*(reader.read("doc.md", section=f"Part {i}") for i in range(8)))
            return [r.heading or "" for r in results], loader.parses
        finally:
            await loader.aclose()

    headings, parses = asyncio.run(go())
    assert headings == [f"# Part {i}" for i in range(8)] and parses == 1


def test_a_remote_document_is_fetched_every_time_but_the_same_text_is_parsed_once(tmp_path: Path) -> None:
    from md_vision.indexing import Indexer
    from md_vision.pool import ParserPool
    from tests.support.http_server import LocalServer, Reply

    text = "".join(f"# Part {i}\n\n" + "text\n" * 50 for i in range(8))

    async def go(url: str, changed: Callable[[], None]) -> tuple[list[str], int, str]:
        loader = ParseCountingLoader(settings_for(tmp_path, domains=("127.0.0.1",)))
        try:
            reader = Reader(loader)
            results = await asyncio.gather(*(reader.read(url, section=f"Part {i}") for i in range(8)))
            await Indexer(loader, ParserPool(0)).index(url)  # the same text again: from the cache
            changed()
            after = await reader.read(url, section="Part 0")  # fetched again: the new text
            return [r.heading or "" for r in results], loader.parses, after.source_text
        finally:
            await loader.aclose()

    with LocalServer() as server:
        server.route("/doc.md", Reply(body=text, content_type="text/markdown"))

        def change() -> None:
            server.route("/doc.md", Reply(body="# Part 0\n\nnew\n", content_type="text/markdown"))

        headings, parses, after = asyncio.run(go(server.url("/doc.md"), change))
        assert len(server.requests) == 10  # fetched on every call: a remote document may change
    assert headings == [f"# Part {i}" for i in range(8)]
    assert parses == 2 and after == "# Part 0\n\nnew\n"
