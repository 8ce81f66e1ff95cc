"""The two operations the server offers, as plain async methods: :meth:`MdVision.read` and
:meth:`MdVision.index`. The MCP face only converts their results; tests and other programs can
call them in-process.

Results are typed (:class:`ReadResult`, :class:`IndexResult`); every failure the caller can act
on raises :class:`ToolFailure` with a message fit to show.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import functools
import gc
import hashlib
import os
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, TypeVar, TypeVarTuple

from docab_mcpguard import FetchLimits, GuardedClient, Opened, PathPolicy, Resolver, SystemResolver
from md_vision.cache import SizedLRU
from md_vision.datauri import MIN_ELIDED_CHARS, elide, placeholder, shown_chars
from md_vision.document import Document, ImageRef, ParseStopped, parse_document
from md_vision.errors import ImageRejected
from md_vision.folder import POOL_THRESHOLD, FoundFile, index_many, parser_pool, scan_folder, warm_up
from md_vision.imaging import PreparedImage, SvgRenderer, prepare_image
from md_vision.index import (
    OVERVIEW_HEADINGS,
    FileIndex,
    FileProblem,
    IndexRow,
    format_file_index,
    format_folders,
    format_overview,
    format_overview_row,
    format_problem,
    format_row,
    index_document,
    top_rows,
)
from md_vision.paging import (
    CHARS_PER_TOKEN,
    MIN_RESULT_TOKENS,
    CursorError,
    IndexCursor,
    char_budget,
    decode_cursor,
    items_that_fit,
    listing_fingerprint,
    uri_key,
)
from md_vision.sandbox import RenderLimits, render_isolated
from md_vision.selection import Selection, SelectionError, select
from md_vision.settings import Settings
from md_vision.sources import (
    MAX_SHOWN_REFERENCE,
    DataImage,
    ImageRefused,
    ImageTarget,
    LoadedMarkdown,
    LocalFile,
    LocalImage,
    RemoteFile,
    RemoteImage,
    SourceError,
    check_uri,
    fetch_image,
    fetch_markdown,
    is_url,
    open_image,
    open_local,
    read_image_file,
    read_local_markdown,
    resolve_image,
)

_T = TypeVar("_T")
_Args = TypeVarTuple("_Args")

TextRole = Literal["source", "label", "placeholder", "note", "data-uri"]
_BLOCK_OVERHEAD = 120  # JSON framing per content block, counted against the response budget
_MIN_IMAGE_SHARE = 12_000
USER_AGENT = "md-vision/0.1 (docab; read-only markdown reader)"  # below this many encoded bytes per image, images are not attempted


class ToolFailure(Exception):
    """The request cannot be served; ``str()`` says why and what to do instead."""


@dataclass(frozen=True, slots=True)
class TextBlock:
    """A text block of a read. ``role``: ``source``, the file's own text; ``data-uri``, a placeholder
    for the data URI ``original`` (see :mod:`md_vision.datauri`); ``label``, "Image: …" before an
    image; ``placeholder``, an image that could not be shown; ``note``, about the read."""

    text: str
    role: TextRole = "source"
    original: str = ""  # the elided data URI, for role "data-uri"


@dataclass(frozen=True, slots=True)
class ImageBlock:
    data: bytes
    mime_type: str
    source: str  # resolved path or URL ("" for data: URIs)
    description: str  # e.g. "2000x1500 PNG sent as 1568x1176 JPEG"

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")


Block = TextBlock | ImageBlock


@dataclass(frozen=True)
class ReadResult:
    source: str  # path or final URL
    first_line: int
    last_line: int
    heading: str | None
    blocks: tuple[Block, ...]
    notes: tuple[str, ...] = ()
    images_inlined: int = 0
    images_skipped: int = 0  # beyond max_images, left as markdown
    images_failed: int = 0  # placeholders
    next_line_range: tuple[int, int] | None = None  # the rest of the selection, when this page is not all

    @property
    def source_text(self) -> str:
        """The source shown, byte for byte: the ``source`` blocks, with the elided data URIs back in
        place of their placeholders."""
        return "".join(
            block.text if block.role == "source" else block.original
            for block in self.blocks
            if isinstance(block, TextBlock) and block.role in ("source", "data-uri")
        )


@dataclass(frozen=True)
class IndexResult:
    """An index, or one page of it. ``entries``: the files it shows; ``text``: the ``index_md`` text;
    ``next_cursor``: what to pass back for the next page (None on a whole index or the last page);
    ``rows``: for each entry, the heading rows this page shows (empty: all of them); an overview
    page shows each file's first top-level headings (as many as its text lists)."""

    entries: tuple[FileIndex | FileProblem, ...]
    notes: tuple[str, ...] = ()
    text: str = ""
    next_cursor: str | None = None
    rows: tuple[tuple[IndexRow, ...], ...] = ()

    def shown_rows(self) -> list[tuple[IndexRow, ...]]:
        """The heading rows shown of each entry, in order."""
        if self.rows:
            return list(self.rows)
        return [entry.rows if isinstance(entry, FileIndex) else () for entry in self.entries]


Progress = Callable[[float, float | None, str], None]
"""Told how far a long operation is: (done, total or None, a short message); any thread."""


@dataclass
class _Ticker:
    """Counts the files of a folder index as they are indexed, and reports it."""

    report: Progress | None
    total: int | None
    done: int = 0

    def add(self, files: int) -> None:
        self.done += files
        if self.report is not None:
            of = f" of {self.total:,}" if self.total is not None else ""
            self.report(self.done, self.total, f"indexed {self.done:,}{of} markdown files")


@dataclass(frozen=True)
class _FolderPages:
    """What every page of one folder's index needs."""

    root: Path
    shown: str
    files: list[FoundFile]
    cancelled: threading.Event  # set when the call was cancelled: parsing stops
    key: str
    listing: str
    tokens: int
    notes: list[str]
    ticker: _Ticker = field(default_factory=lambda: _Ticker(None, None))


# A folder's overview page lists at most this many files, so that it parses few and comes fast
# (the first page of a 10,000-file folder: tests/perf/md_vision_pages.py).
OVERVIEW_PAGE_FILES = 200
LARGE_DOCUMENT_CHARS = 1_000_000  # parsed on their own lane (see MdVision._parse)
_PARSE_BATCH = 64  # files parsed at a time while a page fills
_INDEX_NOTES_RESERVE = 1_500  # characters of an index page kept for its notes
_EMPTY_ENTRY_CHARS = 72  # `<file path="" lines=N chars=M>`, an empty tsv block and `</file>`
_FOREIGN_CURSOR = (
    "this cursor belongs to another index_md call (another uri, or pages that have ended); pass the uri "
    "it came with, or call index_md without a cursor to start from the first page"
)


def _next_page(cursor: str | None) -> str:
    if cursor is None:
        return "This is the last page."
    return f'Next page: call index_md again with the same uri and cursor="{cursor}".'


def _rows_that_fit(entry: FileIndex, start: int, budget: int) -> int:
    """End (exclusive) of the heading rows from ``start`` that fit ``budget`` with their file's tag."""
    frame = len(format_file_index(entry, start, start))
    return start + items_that_fit((len(format_row(row)) for row in entry.rows[start:]), budget - frame)


def _relative(root: Path, file: FoundFile, prefix: str = "") -> str:
    """The file's path in the folder (by prefix: ``relpath`` cost a tenth of a second on 10,000
    files); ``prefix``: the root with a trailing separator, when the caller has it."""
    path, prefix = str(file.path), prefix or os.path.join(str(root), "")
    relative = path[len(prefix) :] if path.startswith(prefix) else os.path.relpath(path, root)
    return relative.replace(os.sep, "/") if os.sep != "/" else relative


def _subfolder_counts(root: Path, files: list[FoundFile]) -> list[tuple[str, int]]:
    """(first folder of each file's path in the folder, how many files) in sorted order; files at
    the top count under ``.``."""
    counts: dict[str, int] = {}
    prefix = os.path.join(str(root), "")
    for file in files:
        relative = _relative(root, file, prefix)
        name = relative.split("/", 1)[0] + "/" if "/" in relative else "."
        counts[name] = counts.get(name, 0) + 1
    return sorted(counts.items())


_Indexed = tuple[FileIndex | FileProblem, str]  # an index entry and its text in the index_md format


def _indexed(entry: FileIndex | FileProblem) -> _Indexed:
    return entry, format_file_index(entry) if isinstance(entry, FileIndex) else format_problem(entry)


@dataclass
class _Slot:
    image: ImageRef
    block_index: int
    budget: int = 0  # raw bytes
    outcome: list[Block] = field(default_factory=list)


_NOTES_RESERVE = 1_200  # characters of a page's budget kept for its notes
_LABEL_CHARS = 100  # an image label's words around its path, and the block's framing


def _elide_data_uris(
    text: str, following: list[_Slot], shown_before: int, skipped_targets: set[str]
) -> list[Block]:
    """``text`` (a source block) with its long data URIs as placeholders naming the image block
    that carries each: one of ``following`` (the images placed after this block's last line),
    numbered after the ``shown_before`` images already in the result."""
    unused = list(following)

    def describe(uri: str) -> str:
        number = shown_before
        for slot in unused:
            carried = any(isinstance(block, ImageBlock) for block in slot.outcome)
            if slot.image.target == uri:
                unused.remove(slot)
                if carried:
                    return placeholder(uri, number + 1)
                return placeholder(uri, None, "the image could not be shown; the line after says why")
            number += carried
        if uri in skipped_targets:
            return placeholder(uri, None, "beyond max_images; raise max_images to see the image")
        return placeholder(uri, None, "not an image shown here")

    return [
        TextBlock(piece.text) if piece.original is None else TextBlock(piece.text, "data-uri", piece.original)
        for piece in elide(text, describe)
    ]


def _text_chars(blocks: list[Block]) -> int:
    return sum(len(block.text) for block in blocks if isinstance(block, TextBlock))


def _source_bytes(blocks: list[Block]) -> int:
    """Bytes of source a read carries: its text, and the data URIs its placeholders stand for."""
    return sum(
        len((block.original or block.text).encode("utf-8", "surrogatepass"))
        for block in blocks
        if isinstance(block, TextBlock)
    )


def _cut_text(blocks: list[Block], budget: int, raw_budget: int) -> list[Block]:
    """The blocks with their text cut after ``budget`` characters (images kept); an elided data URI
    that would take the result over ``raw_budget`` bytes is not carried (its placeholder stays)."""
    out: list[Block] = []
    used = raw = 0
    for block in blocks:
        if isinstance(block, ImageBlock):
            out.append(block)
            continue
        room = budget - used
        if room <= 0:
            continue
        if len(block.text) > room:
            if block.role == "data-uri":
                continue  # a placeholder is never cut in two
            block = replace(block, text=block.text[:room])
        size = len((block.original or block.text).encode("utf-8", "surrogatepass"))
        if block.original and raw + size > raw_budget:
            block = replace(block, original="")
            size = len(block.text)
        out.append(block)
        used += len(block.text)
        raw += size
    return out


def _size_of_prepared(prepared: PreparedImage) -> int:
    return len(prepared.data) + 256


def _size_of_document(document: Document) -> int:
    return len(document.text) * 2 + 64 * (
        len(document.line_starts) + len(document.images) + len(document.headings)
    )


class MdVision:
    """Read and index markdown under a :class:`Settings` sandbox. Use ``async with`` or ``aclose``."""

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
        self._indexes: SizedLRU[_Indexed] = SizedLRU(50_000)
        # Index entries carry display paths made under one set of allowed folders. use_paths bumps
        # the generation under this lock, and an entry made under an older one is not cached: an
        # index in flight on a worker thread when the client's roots change cannot refill the cache
        # with paths shown relative to the old folder.
        self._index_lock = threading.Lock()
        self._paths_generation = 0
        self._images: SizedLRU[PreparedImage] = SizedLRU(160_000_000, _size_of_prepared)
        self._render_limits = RenderLimits(
            settings.limits.svg_render_s, settings.limits.svg_memory_mb * 1_000_000
        )
        self._threads = ThreadPoolExecutor(
            max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="md-vision"
        )
        # Documents of LARGE_DOCUMENT_CHARS or more are parsed here, one at a time: hostile or
        # huge documents queue behind each other, never in front of an ordinary read.
        self._too_slow: SizedLRU[str] = SizedLRU(1_000)  # refusals of files that ran out of time
        self._large = ThreadPoolExecutor(max_workers=1, thread_name_prefix="md-vision-large")
        self._parsers: Executor | None = None  # for large folders: made by warm_up() or on first use
        self._warming: Future[None] | None = None  # set by expect_warm_up(): done once a worker answered
        self._parsers_lock = threading.Lock()
        self._closed = False  # close_parsers() was called: no new pool

    async def __aenter__(self) -> MdVision:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _http(self) -> GuardedClient:
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

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        self._threads.shutdown(wait=False, cancel_futures=True)
        self._large.shutdown(wait=False, cancel_futures=True)
        self.close_parsers(wait=False)

    def close_parsers(self, *, wait: bool) -> None:
        """Stop the folder parsers for good; ``wait``: until their processes have exited (a
        process still starting when the server exits would print a traceback)."""
        with self._parsers_lock:
            self._closed = True
            pool, self._parsers = self._parsers, None
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=True)
            # Its queues' semaphores are released when they are collected: now, not at an exit
            # that may skip it (a signal ends the server with os._exit, and the resource tracker
            # would then warn about "leaked semaphores").
            del pool
            gc.collect()

    # --- loading ----------------------------------------------------------------------------

    def _shown(self, location: LocalFile | RemoteFile) -> str:
        """Where a markdown source is, as results name it (see ``Settings.show``)."""
        return self.settings.show(location.path) if isinstance(location, LocalFile) else location.display

    async def _run(self, function: Callable[[*_Args], _T], *args: *_Args) -> _T:
        # In the caller's context: a log record written on the worker reaches the call's client.
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(
            self._threads, functools.partial(context.run, function, *args)
        )

    def use_paths(self, paths: PathPolicy) -> None:
        """Allow these folders from now on (the client's MCP roots, which may change)."""
        with self._index_lock:
            if paths == self.settings.paths:
                return
            self.settings = self.settings.with_paths(paths)
            self._paths_generation += 1
            if self.settings.relative_paths:
                # Cached index entries show their paths relative to the first folder then allowed:
                # kept, they would name files from the old folder (or in full, where the new first
                # folder should hide where they live).
                self._indexes.clear()

    def _paths_snapshot(self) -> tuple[Settings, int]:
        """The settings and their generation, read together (see ``_index_lock``)."""
        with self._index_lock:
            return self.settings, self._paths_generation

    def _cache_index(self, key: Hashable, indexed: _Indexed, generation: int) -> None:
        """Cache an index entry made under ``generation``, unless the allowed folders changed since."""
        with self._index_lock:
            if generation == self._paths_generation:
                self._indexes.put(key, indexed)

    async def _parse(self, text: str, shown: str, key: Hashable | None = None) -> Document:
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
        deadline = time.monotonic() + limit

        def stop() -> bool:
            return cancelled.is_set() or time.monotonic() > deadline

        context = contextvars.copy_context()
        executor = self._large if len(text) >= LARGE_DOCUMENT_CHARS else self._threads
        try:
            return await asyncio.get_running_loop().run_in_executor(
                executor, functools.partial(context.run, parse_document, text, stop)
            )
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

    async def _load(self, uri: str) -> tuple[LoadedMarkdown, Document]:
        uri = check_uri(uri)
        if is_url(uri):
            loaded = await fetch_markdown(self._http(), self.settings, uri)
            return loaded, await self._parse(loaded.text, loaded.location.display)
        opened = open_local(self.settings, uri)
        if opened.is_dir:
            opened.close()
            raise SourceError(
                f"{uri} is a folder: read_md_with_images needs a markdown file (index_md accepts folders)"
            )
        return await self._load_opened(opened, uri)

    async def _load_opened(self, opened: Opened, uri: str) -> tuple[LoadedMarkdown, Document]:
        """The document of an opened local file (read through its descriptor, which this closes)."""
        location = LocalFile(opened.path, opened.info.st_size, opened.info.st_mtime_ns)
        cached = self._documents.get(location.key)
        if cached is not None:
            opened.close()
            return LoadedMarkdown(location, cached.text), cached

        def load() -> str:
            with opened:  # the worker thread owns the descriptor from here on
                return read_local_markdown(opened, self.settings.limits.max_markdown_bytes, uri)

        document = await self._parse(await self._run(load), self._shown(location), location.key)
        self._documents.put(location.key, document)
        return LoadedMarkdown(location, document.text), document

    # --- read -------------------------------------------------------------------------------

    def result_tokens(self, max_tokens: int | None) -> int:
        """The token budget of one result: the call's ``max_tokens`` or the server's default,
        within what the response byte limit allows."""
        limits = self.settings.limits
        tokens = limits.max_result_tokens if max_tokens is None else max_tokens
        if tokens < MIN_RESULT_TOKENS:
            raise ToolFailure(f"max_tokens must be at least {MIN_RESULT_TOKENS:,}, got {tokens:,}")
        return min(tokens, limits.max_response_bytes // CHARS_PER_TOKEN)

    async def read(
        self,
        uri: str,
        section: str | None = None,
        line_range: tuple[int, int] | list[int] | None = None,
        max_images: int = 10,
        *,
        max_tokens: int | None = None,
        raw_data_uris: bool | None = None,
    ) -> ReadResult:
        """The read behind ``read_md_with_images``; raises :class:`ToolFailure`.

        The text stays within ``max_tokens`` (default: ``--max-result-tokens``): a longer selection
        is read up to a line end and ``next_line_range`` names the rest. Long ``data:`` URIs are
        placeholders in the text unless ``raw_data_uris`` (default: the server's
        ``--raw-data-uris``; :mod:`md_vision.datauri`).
        """
        if not 0 <= max_images <= 50:
            raise ToolFailure("max_images must be between 0 and 50")
        if line_range is not None and len(line_range) != 2:
            raise ToolFailure("line_range must be two integers: [start, end] (1-based, inclusive)")
        tokens = self.result_tokens(max_tokens)
        try:
            loaded, document = await self._load(uri)
            selection = select(
                document, section=section, line_range=line_range, name=self._shown(loaded.location)
            )
        except (SourceError, SelectionError) as exc:
            raise ToolFailure(str(exc)) from exc
        raw = self.settings.raw_data_uris if raw_data_uris is None else raw_data_uris
        return await self._read_selection(
            loaded, document, selection, max_images, tokens=tokens, raw_data_uris=raw
        )

    def _page_end(
        self, document: Document, selection: Selection, budget: int, raw_budget: int, raw_data_uris: bool
    ) -> int:
        """Last line of the page that starts the selection: as many whole lines as fit both the
        token budget (``budget`` characters, data URIs counted as their placeholders, each image
        with its label) and the response limit (``raw_budget`` bytes of source), at least one."""
        first, last = selection.first, selection.last
        whole = document.char_count_of(first, last)
        if whole <= budget and whole * 4 <= raw_budget:
            return last  # the common case: the whole selection fits, nothing to measure
        starts = document.line_starts
        image_lines: dict[int, int] = {}
        for image in document.images_between(first, last):
            label = min(len(image.target), MAX_SHOWN_REFERENCE) + _LABEL_CHARS
            image_lines[image.line] = image_lines.get(image.line, 0) + label
        fitting = shown = raw = 0
        for line in range(first, last + 1):
            size = starts[line] - starts[line - 1]
            text = document.lines(line, line) if size >= MIN_ELIDED_CHARS else ""
            shown += (size if raw_data_uris or not text else shown_chars(text)) + image_lines.get(line, 0)
            raw += len(text.encode("utf-8", "surrogatepass")) if text else size * 4
            if shown > budget or raw > raw_budget:
                break
            fitting += 1
        return first + max(1, fitting) - 1

    async def _read_selection(
        self,
        loaded: LoadedMarkdown,
        document: Document,
        whole: Selection,
        max_images: int,
        *,
        tokens: int,
        raw_data_uris: bool,
    ) -> ReadResult:
        limits = self.settings.limits
        notes = list(whole.notes)
        budget = char_budget(tokens) - _NOTES_RESERVE
        raw_budget = limits.max_response_bytes - _NOTES_RESERVE
        end = self._page_end(document, whole, budget, raw_budget, raw_data_uris)
        selection = replace(whole, last=end)
        next_range = (end + 1, whole.last) if end < whole.last else None
        images = document.images_between(selection.first, selection.last)
        inlined, skipped = images[:max_images], images[max_images:]
        if skipped:
            notes.append(
                f"{len(skipped)} more image(s) in this range were not inlined (max_images={max_images}); they "
                "remain as markdown in the text. Raise max_images (up to 50) or read a smaller section."
            )
        if next_range is not None:
            notes.append(
                f"This result holds lines {selection.first}-{end} of the {whole.first}-{whole.last} requested, "
                f"to stay within {tokens:,} tokens (max_tokens). Read the rest with line_range="
                f"[{next_range[0]}, {next_range[1]}] (same uri)."
            )
        text = document.lines(selection.first, selection.last)
        # The source travels whole (data URIs in _meta, see md_vision.datauri); a single line over
        # the response limit is cut below to the budget.
        text_bytes = min(len(text.encode("utf-8", errors="surrogatepass")), raw_budget) + sum(
            len(note) + _BLOCK_OVERHEAD for note in notes
        )

        # Split the source after each line that ends an inlined image; images follow their line.
        blocks: list[Block] = []
        slots: list[_Slot] = []
        cursor = selection.first
        for image in inlined:
            if image.line >= cursor:
                blocks.append(TextBlock(document.lines(cursor, image.line)))
                cursor = image.line + 1
            slots.append(_Slot(image, len(blocks)))
            blocks.append(TextBlock(""))  # replaced below
        if cursor <= selection.last:
            blocks.append(TextBlock(document.lines(cursor, selection.last)))

        if slots:
            label_bytes = sum(
                min(len(slot.image.target), MAX_SHOWN_REFERENCE) + 2 * _BLOCK_OVERHEAD for slot in slots
            )
            left = limits.max_response_bytes - text_bytes - label_bytes - _BLOCK_OVERHEAD * len(blocks)
            share = left // len(slots)
            for slot in slots:
                slot.budget = max(0, share) * 3 // 4  # base64 grows 4/3
            await asyncio.gather(*(self._fill(slot, loaded.location, share) for slot in slots))

        out: list[Block] = []
        filled = {slot.block_index: slot for slot in slots}
        failed = 0
        shown_images = 0
        skipped_targets = {image.target for image in skipped}
        for index, block in enumerate(blocks):
            if index in filled:
                outcome = filled[index].outcome
                failed += sum(1 for b in outcome if isinstance(b, TextBlock) and b.role == "placeholder")
                shown_images += sum(1 for b in outcome if isinstance(b, ImageBlock))
                out.extend(outcome)
            elif isinstance(block, TextBlock) and block.text:
                if raw_data_uris:
                    out.append(block)
                    continue
                following: list[_Slot] = []
                for after in range(index + 1, len(blocks)):
                    if after not in filled:
                        break
                    following.append(filled[after])
                out.extend(_elide_data_uris(block.text, following, shown_images, skipped_targets))
        if selection.first == selection.last and (
            _text_chars(out) > budget or _source_bytes(out) > raw_budget
        ):
            notes.append(
                f"Line {selection.first} is longer than one result allows ({tokens:,} tokens, "
                f"{limits.max_response_bytes:,} bytes): it is cut after about {budget:,} characters. "
                "Pass a larger max_tokens to read more of it."
            )
            out = _cut_text(out, budget, raw_budget)
        if notes:
            out.insert(0, TextBlock("Note: " + " ".join(notes), role="note"))
        if not any(isinstance(block, TextBlock) and block.role == "source" for block in out):
            out.append(TextBlock("", role="source"))
        return ReadResult(
            source=self._shown(loaded.location),
            first_line=selection.first,
            last_line=selection.last,
            heading=selection.heading.label if selection.heading else None,
            blocks=tuple(out),
            notes=tuple(notes),
            images_inlined=len(inlined) - failed,
            images_skipped=len(skipped),
            images_failed=failed,
            next_line_range=next_range,
        )

    async def _fill(self, slot: _Slot, base: LocalFile | RemoteFile, share: int) -> None:
        image = slot.image
        shown_ref = image.target if len(image.target) <= 80 else image.target[:77] + "..."
        if share < _MIN_IMAGE_SHARE:
            slot.outcome = [
                TextBlock(
                    f"[image not shown: {shown_ref} — the response budget is used up by the text; read a smaller section]",
                    role="placeholder",
                )
            ]
            return
        try:
            target = resolve_image(image.target, base, self.settings)
            prepared, shown = await self._prepare(target, slot.budget, image.target)
        except (ImageRefused, ImageRejected) as exc:
            slot.outcome = [TextBlock(f"[image not shown: {shown_ref} — {exc}]", role="placeholder")]
            return
        except Exception:  # a bug here must not cost the whole read
            slot.outcome = [
                TextBlock(f"[image not shown: {shown_ref} — unexpected error]", role="placeholder")
            ]
            return
        description = prepared.describe()
        if prepared.reduced:
            budget_mb = self.settings.limits.max_response_bytes / 1_000_000
            description += f" to fit the {budget_mb:g} MB response budget"
        outcome: list[Block] = []
        if shown and len(shown) <= MAX_SHOWN_REFERENCE:
            outcome.append(TextBlock(f"Image: {shown} ({description})", role="label"))
        elif prepared.reduced:
            outcome.append(TextBlock(f"Image ({description})", role="label"))
        outcome.append(ImageBlock(prepared.data, prepared.mime_type, shown, description))
        slot.outcome = outcome

    async def _prepare_cancellably(self, prepare: Callable[[SvgRenderer], PreparedImage]) -> PreparedImage:
        """Run ``prepare`` on a worker thread with an SVG renderer (a child process, see
        :mod:`md_vision.sandbox`) that is killed when this call is cancelled, instead of running
        on to its deadline."""
        cancelled = threading.Event()
        renderer = functools.partial(render_isolated, limits=self._render_limits, cancelled=cancelled)
        try:
            return await self._run(prepare, renderer)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def _prepare(self, target: ImageTarget, budget: int, name: str) -> tuple[PreparedImage, str]:
        limits = self.settings.limits
        if isinstance(target, LocalImage):
            opened = open_image(target, self.settings)
            real = str(opened.path)
            key: tuple[str | int, ...] = (
                "file",
                real,
                opened.info.st_size,
                opened.info.st_mtime_ns,
                budget,
                limits.max_image_side,
            )
            cached = self._images.get(key)
            if cached is not None:
                opened.close()
                return cached, self.settings.show(opened.path)

            def load_and_prepare(renderer: SvgRenderer) -> PreparedImage:
                with opened:  # the worker thread owns the descriptor from here on
                    data = read_image_file(opened, limits.max_image_bytes)
                return prepare_image(
                    data,
                    name=real,
                    max_side=limits.max_image_side,
                    max_pixels=limits.max_image_pixels,
                    byte_budget=budget,
                    svg_renderer=renderer,
                )

            prepared = await self._prepare_cancellably(load_and_prepare)
            self._images.put(key, prepared)
            return prepared, self.settings.show(opened.path)
        if isinstance(target, RemoteImage):
            final_url, data = await fetch_image(self._http(), self.settings, target)
            shown = final_url
        else:
            assert isinstance(target, DataImage)
            data, shown = target.data, ""
        key = ("bytes", hashlib.sha256(data).hexdigest(), budget, limits.max_image_side)
        cached = self._images.get(key)
        if cached is None:
            cached = await self._prepare_cancellably(
                lambda renderer: prepare_image(
                    data,
                    name=shown or name,
                    max_side=limits.max_image_side,
                    max_pixels=limits.max_image_pixels,
                    byte_budget=budget,
                    svg_renderer=renderer,
                )
            )
            self._images.put(key, cached)
        return cached, shown

    # --- index ------------------------------------------------------------------------------

    async def index(
        self,
        uri: str,
        cursor: str | None = None,
        max_tokens: int | None = None,
        *,
        progress: Progress | None = None,
    ) -> IndexResult:
        """The index behind ``index_md``: a file, a folder or a URL; raises :class:`ToolFailure`.

        An index that fits ``max_tokens`` (default ``--max-result-tokens``) is returned whole, in the
        reference's format. A larger one comes in pages (``next_cursor`` names the next): a folder's
        starts with an overview (each file with its top-level headings), then each file's full
        index; one file's index is split by heading rows. ``progress`` hears how a folder's
        files are coming along.
        """
        tokens = self.result_tokens(max_tokens)
        try:
            position = decode_cursor(cursor) if cursor else None
        except CursorError as exc:
            raise ToolFailure(str(exc)) from None
        try:
            uri = check_uri(uri)
            if is_url(uri):
                loaded = await fetch_markdown(self._http(), self.settings, uri)
                document = await self._parse(loaded.text, loaded.location.display)
                entry = _indexed(index_document(document, loaded.location.display))
                return self._file_page(entry, uri, position, tokens)
            opened = open_local(self.settings, uri)
            if opened.is_dir:
                return await self._index_folder_cancellably(opened, uri, position, tokens, progress)
            location = LocalFile(opened.path, opened.info.st_size, opened.info.st_mtime_ns)
            cached = self._indexes.get(location.key)
            if cached is None:
                settings, generation = self._paths_snapshot()
                _, document = await self._load_opened(opened, uri)
                cached = _indexed(index_document(document, settings.show(location.path)))
                self._cache_index(location.key, cached, generation)
            else:
                opened.close()
            return self._file_page(cached, str(location.path), position, tokens)
        except SourceError as exc:
            raise ToolFailure(str(exc)) from exc

    def _file_page(
        self, indexed: _Indexed, resolved: str, position: IndexCursor | None, tokens: int
    ) -> IndexResult:
        """One file's index: whole when it fits the budget, else the page of heading rows that
        ``position`` names."""
        entry, text = indexed
        budget = char_budget(tokens)
        key = uri_key(resolved)
        if position is None and len(text) <= budget:
            return IndexResult((entry,), (), text)
        if position is not None and (
            position.uri_key != key or position.listing or position.part != "detail"
        ):
            raise ToolFailure(_FOREIGN_CURSOR)
        if isinstance(entry, FileProblem):  # a folder's entry; one line, shown whole
            return IndexResult((entry,), (), text)
        start = position.row if position is not None else 0
        if start >= len(entry.rows):
            raise ToolFailure(_FOREIGN_CURSOR)
        end = _rows_that_fit(entry, start, budget - _INDEX_NOTES_RESERVE)
        following = IndexCursor(key, "", "detail", 0, end).encode() if end < len(entry.rows) else None
        note = (
            f"The index of {entry.path} has {len(entry.rows):,} headings, more than one result holds "
            f"({tokens:,} tokens, max_tokens): this page lists headings {start + 1}-{end}. "
            + _next_page(following)
        )
        body = format_file_index(entry, start, end)
        return IndexResult((entry,), (note,), f"Note: {note}\n\n{body}", following, (entry.rows[start:end],))

    async def _index_folder_cancellably(
        self, root: Opened, shown: str, position: IndexCursor | None, tokens: int, progress: Progress | None
    ) -> IndexResult:
        """Index a folder on a worker thread; if the request is cancelled, the walk and the
        workers stop (at most the chunks already handed to them are finished)."""
        cancelled = threading.Event()
        try:
            return await self._run(self._index_folder, root, shown, position, tokens, cancelled, progress)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def _index_folder(
        self,
        root: Opened,
        shown: str,
        position: IndexCursor | None,
        tokens: int,
        cancelled: threading.Event,
        progress: Progress | None,
    ) -> IndexResult:
        with root:  # this thread owns the folder's descriptor
            return self._index_opened_folder(root, shown, position, tokens, cancelled, progress)

    def _index_opened_folder(
        self,
        root: Opened,
        shown: str,
        position: IndexCursor | None,
        tokens: int,
        cancelled: threading.Event,
        progress: Progress | None = None,
    ) -> IndexResult:
        limits = self.settings.limits
        if progress is not None:
            progress(0, None, f"looking for markdown files under {shown}")
        scan = scan_folder(root, self.settings.paths, limits.max_folder_files, cancelled=cancelled)
        notes: list[str] = []
        if scan.found == 0:
            raise SourceError(
                f"no markdown files (.md, .markdown) under {shown} (hidden folders, node_modules and "
                ".gitignore'd paths are skipped)"
            )
        if scan.found > len(scan.files):
            notes.append(
                f"{shown} holds {scan.found} markdown files; only the first {len(scan.files)} in sorted order are "
                f"indexed (limit --max-files {limits.max_folder_files}). Index a subfolder to see the rest."
            )
        if scan.walk_truncated:
            notes.append("The folder is very large; the scan stopped early. Index a subfolder instead.")
        if scan.outside:
            notes.append(
                f"{scan.outside} file(s) were skipped because they are symlinks leading outside the allowed paths."
            )
        files = scan.files
        folder = _FolderPages(
            root=root.path,
            shown=shown,
            files=files,
            cancelled=cancelled,
            key=uri_key(str(root.path)),
            listing=listing_fingerprint(str(file.path) for file in files),
            tokens=tokens,
            notes=notes,
            ticker=_Ticker(progress, len(files) if position is None else None),
        )
        budget = char_budget(tokens) - sum(len(note) + 8 for note in notes)
        if position is None:
            whole = self._entries_within(files, budget, cancelled, folder.ticker)
            if whole is not None:
                body = "\n\n".join(text for _entry, text in whole)
                if notes:
                    body = "\n".join(f"Note: {note}" for note in notes) + "\n\n" + body
                return IndexResult(tuple(entry for entry, _text in whole), tuple(notes), body)
            return self._overview_page(folder, 0)
        if position.uri_key != folder.key:
            raise ToolFailure(_FOREIGN_CURSOR)
        if position.listing != folder.listing:
            raise ToolFailure(
                f"files were added to or removed from {shown} since this cursor was given, so its pages "
                "would no longer line up; call index_md without a cursor to start again"
            )
        if position.file >= len(files):
            raise ToolFailure(_FOREIGN_CURSOR)
        if position.part == "overview":
            return self._overview_page(folder, position.file)
        return self._detail_page(folder, position.file, position.row)

    def _entries(self, files: list[FoundFile], cancelled: threading.Event | None = None) -> list[_Indexed]:
        """The index entries of ``files``, in order: cached ones as they are, the others parsed (by
        the worker processes when there are many)."""
        settings, generation = self._paths_snapshot()
        limits = settings.limits
        entries: list[_Indexed | None] = [None] * len(files)
        missing: list[tuple[int, FoundFile]] = []
        for position, file in enumerate(files):
            if file.problem is not None:
                problem = FileProblem(settings.show(file.path), file.problem)
                entries[position] = (problem, format_problem(problem))
                continue
            cached = self._indexes.get(file.key)
            if cached is not None:
                entries[position] = cached
            else:
                missing.append((position, file))
        if missing:
            pool = self._pool_for(len(missing))
            fresh = index_many(
                [file.path for _, file in missing],
                limits.max_markdown_bytes,
                pool,
                policy=settings.paths,
                on_broken=lambda: self._discard_parsers(pool),
                cancelled=cancelled,
            )
            for (position, file), entry in zip(missing, fresh, strict=True):
                if entry.path is not None:
                    entry = replace(entry, path=settings.show(entry.path))
                entries[position] = indexed = _indexed(entry)
                if isinstance(entry, FileIndex):
                    self._cache_index(file.key, indexed, generation)
        return [entry for entry in entries if entry is not None]

    def _entries_within(
        self,
        files: list[FoundFile],
        budget: int,
        cancelled: threading.Event | None = None,
        ticker: _Ticker | None = None,
    ) -> list[_Indexed] | None:
        """Every file's entry when together they fit ``budget`` characters, else None. A folder
        whose entries cannot fit even with no headings is not parsed at all; otherwise parsing stops
        at the first batch that goes over, so the cost is bounded by the budget."""
        floor = sum(len(str(file.path)) + _EMPTY_ENTRY_CHARS for file in files)
        if floor > budget:
            return None
        entries: list[_Indexed] = []
        used = -2
        for start in range(0, len(files), _PARSE_BATCH):
            batch = self._entries(files[start : start + _PARSE_BATCH], cancelled)
            if ticker is not None:
                ticker.add(len(batch))
            used += sum(len(text) + 2 for _entry, text in batch)
            if used > budget:
                return None
            entries.extend(batch)
        return entries

    def _overview_page(self, folder: _FolderPages, first: int) -> IndexResult:
        """Files ``first``... with their top-level headings, as many as fit a page (and at most
        OVERVIEW_PAGE_FILES, so a page parses few files and comes fast)."""
        files = folder.files
        notes = list(folder.notes) if first == 0 else []
        folders = ""
        if first == 0:
            counts = _subfolder_counts(folder.root, files)
            if len(counts) > 1:
                folders = format_folders(folder.shown, counts) + "\n\n"
        room = (
            char_budget(folder.tokens) - _INDEX_NOTES_RESERVE - len(folders) - sum(len(n) + 8 for n in notes)
        )
        rows: list[str] = []
        shown_entries: list[FileIndex | FileProblem] = []
        used = 0
        position = first
        while position < len(files) and len(rows) < OVERVIEW_PAGE_FILES:
            batch = files[position : min(len(files), position + _PARSE_BATCH, first + OVERVIEW_PAGE_FILES)]
            full = False
            entries = self._entries(batch, folder.cancelled)
            folder.ticker.add(len(entries))
            for file, (entry, _text) in zip(batch, entries, strict=True):
                row = format_overview_row(_relative(folder.root, file), entry)
                if rows and used + len(row) > room:
                    full = True
                    break
                rows.append(row)
                shown_entries.append(entry)
                used += len(row)
            position = first + len(rows)
            if full:
                break
        end = first + len(rows)
        if end < len(files):
            following: str = IndexCursor(folder.key, folder.listing, "overview", end).encode()
        else:
            following = IndexCursor(folder.key, folder.listing, "detail", 0).encode()
        if first == 0:
            notes.append(
                f"{folder.shown} holds {len(files):,} markdown files; their index is more than one result "
                f"holds ({folder.tokens:,} tokens, max_tokens), so it comes in pages: first an overview "
                "(each file with its top-level headings), then each file's full index. This page: overview "
                f"of files {first + 1}-{end}. " + _next_page(following) + " To go straight to one file or "
                "subfolder, call index_md on it; read a section with read_md_with_images."
            )
        else:
            notes.append(
                f"Overview of {folder.shown}, files {first + 1}-{end} of {len(files):,}"
                + ("" if end < len(files) else " (the last; the full index of each file follows)")
                + ". "
                + _next_page(following)
            )
        body = folders + format_overview(folder.shown, len(files), first, rows)
        return IndexResult(
            tuple(shown_entries),
            tuple(notes),
            "\n".join(f"Note: {note}" for note in notes) + "\n\n" + body,
            following,
            tuple(
                top_rows(entry)[:OVERVIEW_HEADINGS] if isinstance(entry, FileIndex) else ()
                for entry in shown_entries
            ),
        )

    def _detail_page(self, folder: _FolderPages, first: int, row: int) -> IndexResult:
        """The full index of files ``first``... (from heading ``row`` of the first) as fits a page; a
        file larger than a page is split by heading rows."""
        files = folder.files
        room = char_budget(folder.tokens) - _INDEX_NOTES_RESERVE
        parts: list[str] = []
        shown_entries: list[FileIndex | FileProblem] = []
        shown_rows: list[tuple[IndexRow, ...]] = []
        used = 0
        position, next_row = first, row
        done = False
        while position < len(files) and not done:
            batch = files[position : position + _PARSE_BATCH]
            entries = self._entries(batch, folder.cancelled)
            folder.ticker.add(len(entries))
            for entry, text in entries:
                if next_row == 0 and used + len(text) + 2 <= room:
                    parts.append(text)
                    shown_entries.append(entry)
                    shown_rows.append(entry.rows if isinstance(entry, FileIndex) else ())
                    used += len(text) + 2
                    position += 1
                    continue
                if parts:  # the next file starts the next page
                    done = True
                    break
                if isinstance(entry, FileProblem):  # one line: shown whole, whatever the budget
                    parts.append(text)
                    shown_entries.append(entry)
                    shown_rows.append(())
                    position += 1
                    done = True
                    break
                end = _rows_that_fit(entry, next_row, room)
                parts.append(format_file_index(entry, next_row, end))
                shown_entries.append(entry)
                shown_rows.append(entry.rows[next_row:end])
                if end < len(entry.rows):
                    next_row = end
                else:
                    position, next_row = position + 1, 0
                done = True
                break
        following = (
            IndexCursor(folder.key, folder.listing, "detail", position, next_row).encode()
            if position < len(files)
            else None
        )
        last_file = position if next_row == 0 else position + 1
        note = (
            f"Full index of {folder.shown}, files {first + 1}-{last_file} of {len(files):,}"
            + (f" (from heading {row + 1} of file {first + 1})" if row else "")
            + ". "
            + _next_page(following)
        )
        body = "\n\n".join(parts)
        return IndexResult(
            tuple(shown_entries), (note,), f"Note: {note}\n\n{body}", following, tuple(shown_rows)
        )

    def _pool_for(self, files: int) -> Executor | None:
        """The worker processes for parsing ``files`` files, or None to parse them here: when they
        are few, or while the workers the server started at start-up are still starting (a page of
        an index parses at most a few hundred files, quicker here than waiting for them)."""
        if files < POOL_THRESHOLD:
            return None
        if self._warming is not None and not self._warming.done():
            return None
        return self._parser_pool()

    def _parser_pool(self) -> Executor | None:
        workers = self.settings.limits.index_workers
        if workers <= 1:
            return None
        with self._parsers_lock:  # warm_up() runs on its own thread; two pools would leak one
            if self._closed:
                return None
            if self._parsers is None:
                self._parsers = parser_pool(workers)
            return self._parsers

    def _discard_parsers(self, broken: Executor | None) -> None:
        """Drop a pool whose worker died, so that the next large folder gets a new one."""
        with self._parsers_lock:
            if broken is not None and self._parsers is broken:
                self._parsers = None
        if broken is not None:
            broken.shutdown(wait=False, cancel_futures=True)

    def expect_warm_up(self) -> None:
        """Say that warm_up() is about to run: until a worker answers, a large folder's page is
        parsed here instead of waiting for the workers. The server calls this before it starts
        warm_up()'s thread, so that a call arriving first cannot pick the pool while it starts
        (starting it blocks until the forkserver has imported the parser: seconds on a busy
        machine, against a few hundred milliseconds to parse a page here)."""
        with self._parsers_lock:
            if self._warming is None:
                self._warming = Future()

    def warm_up(self) -> None:
        """Start the folder parsers (the server calls this on a thread of its own at start-up)."""
        self.expect_warm_up()
        warming = self._warming
        assert warming is not None

        def settle(_: object = None) -> None:
            if not warming.done():
                warming.set_result(None)

        pool = self._parser_pool()
        if pool is None:
            settle()
            return
        try:
            warm_up(pool)
            pool.submit(int).add_done_callback(settle)  # a worker answered (or the pool broke)
        except RuntimeError:  # the server began to stop (close_parsers) while the pool started
            settle()
