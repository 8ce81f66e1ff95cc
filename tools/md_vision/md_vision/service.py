"""The two operations the server offers, as plain async methods: :meth:`MdVision.read` and
:meth:`MdVision.index`. The MCP face only converts their results; tests and other programs can
call them in-process.

Results are typed (:class:`ReadResult`, :class:`IndexResult`); every failure the caller can act
on raises :class:`ToolFailure` with a message fit to show.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import hashlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal, TypeVar, TypeVarTuple

from docab_mcpguard import FetchLimits, GuardedClient, Opened, Resolver, SystemResolver
from md_vision.cache import SizedLRU
from md_vision.document import Document, ImageRef, parse_document
from md_vision.folder import POOL_THRESHOLD, FoundFile, index_many, parser_pool, scan_folder, warm_up
from md_vision.imaging import ImageRejected, PreparedImage, prepare_image
from md_vision.index import FileIndex, FileProblem, format_file_index, format_problem, index_document
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

TextRole = Literal["source", "label", "placeholder", "note"]
_BLOCK_OVERHEAD = 120  # JSON framing per content block, counted against the response budget
_MIN_IMAGE_SHARE = 12_000
USER_AGENT = "md-vision/0.1 (docab; read-only markdown reader)"  # below this many encoded bytes per image, images are not attempted


class ToolFailure(Exception):
    """The request cannot be served; ``str()`` says why and what to do instead."""


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    role: TextRole = "source"  # source: the file's own text; label: "Image: …"; note: about the read


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

    @property
    def source_text(self) -> str:
        """The selected source, byte for byte: the concatenation of the ``source`` blocks."""
        return "".join(
            block.text for block in self.blocks if isinstance(block, TextBlock) and block.role == "source"
        )


@dataclass(frozen=True)
class IndexResult:
    entries: tuple[FileIndex | FileProblem, ...]
    notes: tuple[str, ...] = ()
    text: str = ""


_Indexed = tuple[FileIndex | FileProblem, str]  # an index entry and its text in the index_md format


def _indexed(entry: FileIndex | FileProblem) -> _Indexed:
    return entry, format_file_index(entry) if isinstance(entry, FileIndex) else format_problem(entry)


@dataclass
class _Slot:
    image: ImageRef
    block_index: int
    budget: int = 0  # raw bytes
    outcome: list[Block] = field(default_factory=list)


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
        self._images: SizedLRU[PreparedImage] = SizedLRU(160_000_000, _size_of_prepared)
        self._threads = ThreadPoolExecutor(
            max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="md-vision"
        )
        self._parsers: Executor | None = None  # for large folders: made by warm_up() or on first use
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

    async def _run(self, function: Callable[[*_Args], _T], *args: *_Args) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._threads, function, *args)

    async def _load(self, uri: str) -> tuple[LoadedMarkdown, Document]:
        uri = check_uri(uri)
        if is_url(uri):
            loaded = await fetch_markdown(self._http(), self.settings, uri)
            return loaded, await self._run(parse_document, loaded.text)
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

        def load_and_parse() -> Document:
            with opened:  # the worker thread owns the descriptor from here on
                text = read_local_markdown(opened, self.settings.limits.max_markdown_bytes, uri)
            return parse_document(text)

        document = await self._run(load_and_parse)
        self._documents.put(location.key, document)
        return LoadedMarkdown(location, document.text), document

    # --- read -------------------------------------------------------------------------------

    async def read(
        self,
        uri: str,
        section: str | None = None,
        line_range: tuple[int, int] | list[int] | None = None,
        max_images: int = 10,
    ) -> ReadResult:
        """The read behind ``read_md_with_images``; raises :class:`ToolFailure`."""
        if not 0 <= max_images <= 50:
            raise ToolFailure("max_images must be between 0 and 50")
        if line_range is not None and len(line_range) != 2:
            raise ToolFailure("line_range must be two integers: [start, end] (1-based, inclusive)")
        try:
            loaded, document = await self._load(uri)
            selection = select(document, section=section, line_range=line_range, name=loaded.location.display)
        except (SourceError, SelectionError) as exc:
            raise ToolFailure(str(exc)) from exc
        return await self._read_selection(loaded, document, selection, max_images)

    async def _read_selection(
        self, loaded: LoadedMarkdown, document: Document, selection: Selection, max_images: int
    ) -> ReadResult:
        limits = self.settings.limits
        images = document.images_between(selection.first, selection.last)
        inlined, skipped = images[:max_images], images[max_images:]
        notes = list(selection.notes)
        if skipped:
            notes.append(
                f"{len(skipped)} more image(s) in this range were not inlined (max_images={max_images}); they "
                "remain as markdown in the text. Raise max_images (up to 50) or read a smaller section."
            )
        text = document.lines(selection.first, selection.last)
        text_bytes = len(text.encode("utf-8", errors="surrogatepass")) + sum(
            len(note) + _BLOCK_OVERHEAD for note in notes
        )
        if text_bytes > limits.max_response_bytes:
            raise ToolFailure(
                f"the selected text is {text_bytes:,} bytes, over the response limit of "
                f"{limits.max_response_bytes:,} bytes. Call index_md on this uri and read one section "
                "(or a line_range) at a time."
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
        if notes:
            out.append(TextBlock("Note: " + " ".join(notes), role="note"))
        filled = {slot.block_index: slot.outcome for slot in slots}
        failed = 0
        for index, block in enumerate(blocks):
            if index in filled:
                outcome = filled[index]
                failed += sum(1 for b in outcome if isinstance(b, TextBlock) and b.role == "placeholder")
                out.extend(outcome)
            elif isinstance(block, TextBlock) and block.text:
                out.append(block)
        if not any(isinstance(block, TextBlock) and block.role == "source" for block in out):
            out.append(TextBlock("", role="source"))
        return ReadResult(
            source=loaded.location.display,
            first_line=selection.first,
            last_line=selection.last,
            heading=selection.heading.label if selection.heading else None,
            blocks=tuple(out),
            notes=tuple(notes),
            images_inlined=len(inlined) - failed,
            images_skipped=len(skipped),
            images_failed=failed,
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
                return cached, real

            def load_and_prepare() -> PreparedImage:
                with opened:  # the worker thread owns the descriptor from here on
                    data = read_image_file(opened, limits.max_image_bytes)
                return prepare_image(
                    data,
                    name=real,
                    max_side=limits.max_image_side,
                    max_pixels=limits.max_image_pixels,
                    byte_budget=budget,
                )

            prepared = await self._run(load_and_prepare)
            self._images.put(key, prepared)
            return prepared, real
        if isinstance(target, RemoteImage):
            final_url, data = await fetch_image(self._http(), self.settings, target)
            shown = final_url
        else:
            assert isinstance(target, DataImage)
            data, shown = target.data, ""
        key = ("bytes", hashlib.sha256(data).hexdigest(), budget, limits.max_image_side)
        cached = self._images.get(key)
        if cached is None:
            cached = await self._run(
                lambda: prepare_image(
                    data,
                    name=shown or name,
                    max_side=limits.max_image_side,
                    max_pixels=limits.max_image_pixels,
                    byte_budget=budget,
                )
            )
            self._images.put(key, cached)
        return cached, shown

    # --- index ------------------------------------------------------------------------------

    async def index(self, uri: str) -> IndexResult:
        """The index behind ``index_md``: a file, a folder or a URL; raises :class:`ToolFailure`."""
        try:
            uri = check_uri(uri)
            if is_url(uri):
                loaded = await fetch_markdown(self._http(), self.settings, uri)
                document = await self._run(parse_document, loaded.text)
                entry = index_document(document, loaded.location.display)
                return self._finish_index([_indexed(entry)], [])
            opened = open_local(self.settings, uri)
            if opened.is_dir:
                return await self._index_folder_cancellably(opened, uri)
            location = LocalFile(opened.path, opened.info.st_size, opened.info.st_mtime_ns)
            cached = self._indexes.get(location.key)
            if cached is None:
                _, document = await self._load_opened(opened, uri)
                cached = _indexed(index_document(document, str(location.path)))
                self._indexes.put(location.key, cached)
            else:
                opened.close()
            return self._finish_index([cached], [])
        except SourceError as exc:
            raise ToolFailure(str(exc)) from exc

    async def _index_folder_cancellably(self, root: Opened, shown: str) -> IndexResult:
        """Index a folder on a worker thread; if the request is cancelled, the walk and the
        workers stop (at most the chunks already handed to them are finished)."""
        cancelled = threading.Event()
        try:
            return await self._run(self._index_folder, root, shown, cancelled)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def _index_folder(self, root: Opened, shown: str, cancelled: threading.Event) -> IndexResult:
        with root:  # this thread owns the folder's descriptor
            return self._index_opened_folder(root, shown, cancelled)

    def _index_opened_folder(self, root: Opened, shown: str, cancelled: threading.Event) -> IndexResult:
        limits = self.settings.limits
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

        entries: list[_Indexed | None] = [None] * len(scan.files)
        missing: list[tuple[int, FoundFile]] = []
        for position, file in enumerate(scan.files):
            if file.problem is not None:
                problem = FileProblem(str(file.path), file.problem)
                entries[position] = (problem, format_problem(problem))
                continue
            cached = self._indexes.get(file.key)
            if cached is not None:
                entries[position] = cached
            else:
                missing.append((position, file))
        if missing:
            pool = self._parser_pool() if len(missing) >= POOL_THRESHOLD else None
            fresh = index_many(
                [file.path for _, file in missing],
                limits.max_markdown_bytes,
                pool,
                policy=self.settings.paths,
                on_broken=lambda: self._discard_parsers(pool),
                cancelled=cancelled,
            )
            for (position, file), entry in zip(missing, fresh, strict=True):
                entries[position] = indexed = _indexed(entry)
                if isinstance(entry, FileIndex):
                    self._indexes.put(file.key, indexed)
        return self._finish_index([entry for entry in entries if entry is not None], notes)

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

    def warm_up(self) -> None:
        """Start the folder parsers (the server calls this on a thread of its own at start-up)."""
        pool = self._parser_pool()
        if pool is not None:
            warm_up(pool)

    def _finish_index(self, entries: list[_Indexed], notes: list[str]) -> IndexResult:
        budget = self.settings.limits.max_response_bytes
        parts: list[str] = []
        used = sum(len(note) + 8 for note in notes)
        kept = 0
        for _entry, text in entries:
            if used + len(text) + 2 > budget and kept:
                notes.append(
                    f"The index was cut after {kept} of {len(entries)} files to stay within the "
                    f"{budget:,}-byte response limit. Index a subfolder to see the rest."
                )
                break
            parts.append(text)
            used += len(text) + 2
            kept += 1
        body = "\n\n".join(parts)
        if notes:
            body = "\n".join(f"Note: {note}" for note in notes) + "\n\n" + body
        return IndexResult(tuple(entry for entry, _text in entries[:kept]), tuple(notes), body)
