"""Where markdown comes from and how it is parsed, for both operations: the allowed folders and
hosts (:class:`~md_vision.settings.Settings`, which the client's roots may change), local files and
URLs loaded within their limits, parsed on worker threads within ``--parse-seconds`` and cached
by file identity, and the token budget of one result."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import hashlib
import math
import os
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar, TypeVarTuple

from docab_mcpguard import FetchLimits, GuardedClient, Opened, PathPolicy, Resolver, SystemResolver
from md_vision.cache import SharedWork, SizedLRU
from md_vision.document import Document, ParseStopped, parse_document
from md_vision.paging import (
    CHARS_PER_TOKEN,
    MIN_RESULT_TOKENS,
)
from md_vision.results import ToolFailure
from md_vision.settings import Settings
from md_vision.sources import (
    Handover,
    LoadedMarkdown,
    LocalFile,
    RemoteFile,
    SourceError,
    check_uri,
    fetch_markdown,
    is_url,
    open_local,
    read_local_markdown,
)

_T = TypeVar("_T")
_Args = TypeVarTuple("_Args")

USER_AGENT = "md-vision/0.1 (docab; read-only markdown reader)"
LARGE_DOCUMENT_CHARS = 1_000_000  # parsed on their own lane (see Loader.parse)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()


def _size_of_document(document: Document) -> int:
    # The text (up to 2 bytes a character), 8 bytes a line start, ~150 bytes a heading or image.
    return (
        len(document.text) * 2
        + 8 * len(document.line_starts)
        + 150 * (len(document.images) + len(document.headings))
    )


class Loader:
    """Loads and parses markdown under the current settings; owns the threads that do it."""

    def __init__(
        self,
        settings: Settings,
        *,
        resolver: Resolver | None = None,
        client: GuardedClient | None = None,
    ) -> None:
        self.settings = settings
        self._given_client = client
        self._resolver = resolver or SystemResolver()
        self._client: GuardedClient | None = client
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._documents: SizedLRU[Document] = SizedLRU(96_000_000, _size_of_document)
        # Index entries carry display paths made under one set of allowed folders. use_paths bumps
        # the generation under this lock, and an entry made under an older one is not cached: an
        # index in flight on a worker thread when the client's roots change cannot refill the cache
        # with paths shown relative to the old folder.
        self.paths_lock = threading.Lock()
        self._paths_generation = 0
        self._threads = ThreadPoolExecutor(
            max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="md-vision"
        )
        # Documents of LARGE_DOCUMENT_CHARS or more are parsed here, one at a time: hostile or
        # huge documents queue behind each other, never in front of an ordinary read.
        self._too_slow: SizedLRU[str] = SizedLRU(1_000)  # refusals of files that ran out of time
        self._large = ThreadPoolExecutor(max_workers=1, thread_name_prefix="md-vision-large")
        self._parsing: SharedWork[Document] = SharedWork()
        # Images are decoded and SVGs rendered on a lane of their own: a hostile image holds it up
        # to its limits (--svg-seconds a render), and an index or a read without images never
        # waits behind it.
        self._images = ThreadPoolExecutor(max_workers=2, thread_name_prefix="md-vision-images")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        for lane in (self._threads, self._large, self._images):
            lane.shutdown(wait=False, cancel_futures=True)

    def is_current(self, generation: int) -> bool:
        """Are the allowed folders still those of ``generation``? Ask under ``paths_lock``."""
        return generation == self._paths_generation

    def http(self) -> GuardedClient:
        """The fetcher for the running event loop (connections cannot cross loops)."""
        if self._given_client is not None:
            return self._given_client
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            limits = self.settings.limits
            self._client = GuardedClient(
                self.settings.hosts,
                limits=FetchLimits(limits.fetch_timeout_s, limits.max_markdown_bytes, limits.max_redirects),
                headers={"User-Agent": USER_AGENT, "Accept": "text/markdown, text/plain;q=0.9, */*;q=0.5"},
                resolver=self._resolver,
            )
            self._client_loop = loop
        return self._client

    def shown(self, location: LocalFile | RemoteFile) -> str:
        """Where a markdown source is, as results name it (see ``Settings.show``)."""
        return self.settings.show(location.path) if isinstance(location, LocalFile) else location.display

    async def run(self, function: Callable[[*_Args], _T], *args: *_Args) -> _T:
        """``function(*args)`` on a worker thread."""
        return await _run_on(self._threads, function, *args)

    async def run_image(self, function: Callable[[*_Args], _T], *args: *_Args) -> _T:
        """``function(*args)`` on the image lane (see ``_images``)."""
        return await _run_on(self._images, function, *args)

    def use_paths(self, paths: PathPolicy, on_change: Callable[[Settings], None] | None = None) -> None:
        """Allow these folders from now on (the client's MCP roots, which may change);
        ``on_change`` is told the new settings under the same lock, before any index made under
        them can be cached (see ``paths_lock``)."""
        with self.paths_lock:
            if paths == self.settings.paths:
                return
            self.settings = self.settings.with_paths(paths)
            self._paths_generation += 1
            if on_change is not None:
                on_change(self.settings)

    def paths_snapshot(self) -> tuple[Settings, int]:
        """The settings and their generation, read together (see ``paths_lock``)."""
        with self.paths_lock:
            return self.settings, self._paths_generation

    async def parse(self, text: str, shown: str, key: Hashable | None = None) -> Document:
        """Parse on a worker thread (a large document on its own lane), within ``--parse-seconds``;
        a cancelled call stops the parse too (:func:`parse_document`'s ``stop``). A local file
        (``key``: its path, size and time) that ran out of time is not parsed again until it
        changes: the refusal is remembered."""
        limit = self.settings.limits.parse_timeout_s
        if key is not None:
            refused = self._too_slow.get((key, limit))
            if refused is not None:
                raise SourceError(refused)
        cancelled = threading.Event()
        # The time counts from when the parse starts, not from when it was queued: a document
        # waiting behind others on the large lane has not been slow, and must not be refused
        # (and the refusal remembered) for their time.
        deadline = [math.inf]

        def stop() -> bool:
            return cancelled.is_set() or time.monotonic() > deadline[0]

        def parse() -> Document:
            deadline[0] = time.monotonic() + limit
            return parse_document(text, stop)

        executor = self._large if len(text) >= LARGE_DOCUMENT_CHARS else self._threads
        try:
            return await _run_on(executor, parse)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        except ParseStopped:
            message = (
                f"{shown} took longer than {limit:g} s to parse ({len(text):,} characters), so it was "
                "given up; read a smaller file, or start md-vision with a larger --parse-seconds"
            )
            if key is not None and not cancelled.is_set():
                self._too_slow.put((key, limit), message)
            raise SourceError(message) from None

    async def load(self, uri: str) -> tuple[LoadedMarkdown, Document]:
        uri = check_uri(uri)
        if is_url(uri):
            loaded = await fetch_markdown(self.http(), self.settings, uri)
            return loaded, await self.parse_fetched(loaded.text, loaded.location.display)
        opened = open_local(self.settings, uri)
        if opened.is_dir:
            opened.close()
            raise SourceError(
                f"{uri} is a folder: read_md_with_images needs a markdown file (index_md accepts folders)"
            )
        return await self.load_opened(opened, uri)

    async def parse_fetched(self, text: str, shown: str) -> Document:
        """The document of a fetched text: a remote document is fetched afresh on every call (it
        may change), but the same text is parsed once, for every caller asking for it at once and
        while it stays in the cache (keyed by its digest)."""
        key = ("fetched", await self.run(_digest, text))
        cached = self._documents.get(key)
        if cached is not None:
            return cached

        async def parse() -> Document:
            document = await self.parse(text, shown)
            self._documents.put(key, document)
            return document

        return await self._parsing.run(key, parse)

    async def load_opened(self, opened: Opened, uri: str) -> tuple[LoadedMarkdown, Document]:
        """The document of an opened local file (read through its descriptor, which this closes)."""
        location = LocalFile(opened.path, opened.info.st_size, opened.info.st_mtime_ns)
        cached = self._documents.get(location.key)
        if cached is not None:
            opened.close()
            return LoadedMarkdown(location, cached.text), cached

        handover = Handover(opened)

        def load() -> str:
            taken = handover.take()
            if taken is None:
                raise SourceError(f"{uri}: the read was cancelled before the file was opened")
            with taken:  # the worker thread owns the descriptor from here on
                return read_local_markdown(taken, self.settings.limits.max_markdown_bytes, uri)

        async def load_and_parse() -> Document:
            document = await self.parse(await self.run(load), self.shown(location), location.key)
            self._documents.put(location.key, document)
            return document

        try:
            # Sections of one document asked for at once: one read and parse for all of them.
            document = await self._parsing.run(location.key, load_and_parse)
        finally:
            handover.release()  # a caller that shared another's parse never handed its file over
        return LoadedMarkdown(location, document.text), document

    def result_tokens(self, max_tokens: int | None) -> int:
        """The token budget of one result: the call's ``max_tokens`` or the server's default,
        within what the response byte limit allows."""
        limits = self.settings.limits
        tokens = limits.max_result_tokens if max_tokens is None else max_tokens
        if tokens < MIN_RESULT_TOKENS:
            raise ToolFailure(f"max_tokens must be at least {MIN_RESULT_TOKENS:,}, got {tokens:,}")
        return min(tokens, limits.max_response_bytes // CHARS_PER_TOKEN)


async def _run_on(executor: ThreadPoolExecutor, function: Callable[[*_Args], _T], *args: *_Args) -> _T:
    # In the caller's context: a log record written on the worker reaches the call's client.
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(
        executor, functools.partial(context.run, function, *args)
    )
