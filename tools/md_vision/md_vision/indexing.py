"""The index behind ``index_md``: of a file, a URL or a folder, whole when it fits the token budget,
else in pages (a folder's overview, then each file's full index; one file's by heading rows),
with cursors; index entries cached while the allowed folders stay the same."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from pathlib import Path

from docab_mcpguard import Opened
from md_vision.cache import SizedLRU
from md_vision.folder import FoundFile, index_many, scan_folder
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
    structure_note,
    top_rows,
)
from md_vision.loading import Loader
from md_vision.paging import (
    CursorError,
    IndexCursor,
    char_budget,
    decode_cursor,
    items_that_fit,
    listing_fingerprint,
    uri_key,
)
from md_vision.pool import ParserPool
from md_vision.results import IndexResult, Progress, ToolFailure
from md_vision.settings import Settings
from md_vision.sources import (
    LocalFile,
    SourceError,
    check_uri,
    fetch_markdown,
    is_url,
    open_local,
)


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


class Indexer:
    """Indexes files, URLs and folders; documents come from ``loader``, large folders are parsed
    by ``pool``."""

    def __init__(self, loader: Loader, pool: ParserPool) -> None:
        self._loader = loader
        self._pool = pool
        self._indexes: SizedLRU[_Indexed] = SizedLRU(50_000)

    def paths_changed(self, settings: Settings) -> None:
        """The allowed folders became ``settings``' (called under the loader's ``paths_lock``)."""
        if settings.relative_paths:
            # Cached index entries show their paths relative to the first folder then allowed:
            # kept, they would name files from the old folder (or in full, where the new first
            # folder should hide where they live).
            self._indexes.clear()

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
        tokens = self._loader.result_tokens(max_tokens)
        try:
            position = decode_cursor(cursor) if cursor else None
        except CursorError as exc:
            raise ToolFailure(str(exc)) from None
        try:
            uri = check_uri(uri)
            if is_url(uri):
                loaded = await fetch_markdown(self._loader.http(), self._loader.settings, uri)
                document = await self._loader.parse_fetched(loaded.text, loaded.location.display)
                entry = _indexed(index_document(document, loaded.location.display))
                return self._file_page(entry, uri, position, tokens)
            opened = open_local(self._loader.settings, uri)
            if opened.is_dir:
                return await self._index_folder_cancellably(opened, uri, position, tokens, progress)
            location = LocalFile(opened.path, opened.info.st_size, opened.info.st_mtime_ns)
            cached = self._indexes.get(location.key)
            if cached is None:
                settings, generation = self._loader.paths_snapshot()
                _, document = await self._loader.load_opened(opened, uri)
                cached = _indexed(index_document(document, settings.show(location.path)))
                self.cache_index(location.key, cached, generation)
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
        cut_short = structure_note(entry) if isinstance(entry, FileIndex) else None
        if position is None and len(text) <= budget:
            if cut_short is None:
                return IndexResult((entry,), (), text)
            return IndexResult((entry,), (cut_short,), f"Note: {cut_short}\n\n{text}")
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
        notes = (note,) if cut_short is None else (note, cut_short)
        shown = "".join(f"Note: {text}\n\n" for text in notes)
        return IndexResult((entry,), notes, f"{shown}{body}", following, (entry.rows[start:end],))

    async def _index_folder_cancellably(
        self, root: Opened, shown: str, position: IndexCursor | None, tokens: int, progress: Progress | None
    ) -> IndexResult:
        """Index a folder on a worker thread; if the request is cancelled, the walk and the
        workers stop (at most the chunks already handed to them are finished)."""
        cancelled = threading.Event()
        try:
            return await self._loader.run(
                self._index_folder, root, shown, position, tokens, cancelled, progress
            )
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
            limits = self._loader.settings.limits
            if progress is not None:
                progress(0, None, f"looking for markdown files under {shown}")
            scan = scan_folder(
                root, self._loader.settings.paths, limits.max_folder_files, cancelled=cancelled
            )
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
        settings, generation = self._loader.paths_snapshot()
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
            pool = self._pool.for_files(len(missing))
            fresh = index_many(
                [file.path for _, file in missing],
                limits.max_markdown_bytes,
                pool,
                policy=settings.paths,
                on_broken=lambda: self._pool.discard(pool),
                cancelled=cancelled,
            )
            for (position, file), entry in zip(missing, fresh, strict=True):
                if entry.path is not None:
                    entry = replace(entry, path=settings.show(entry.path))
                entries[position] = indexed = _indexed(entry)
                if isinstance(entry, FileIndex):
                    self.cache_index(file.key, indexed, generation)
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

    def cache_index(self, key: Hashable, indexed: _Indexed, generation: int) -> None:
        """Cache an index entry made under ``generation``, unless the allowed folders changed since."""
        with self._loader.paths_lock:
            if self._loader.is_current(generation):
                self._indexes.put(key, indexed)
