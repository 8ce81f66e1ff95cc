"""The two operations the server offers, as plain async methods: :meth:`MdVision.read` and
:meth:`MdVision.index`. The MCP face only converts their results; tests and other programs can
call them in-process.

Results are typed (:class:`ReadResult`, :class:`IndexResult`, in :mod:`md_vision.results`); every
failure the caller can act on raises :class:`ToolFailure` with a message fit to show.

This module only assembles the rooms that do the work: :mod:`md_vision.loading` (where markdown
comes from, parsing, the allowed folders), :mod:`md_vision.reading` (sections with their images),
:mod:`md_vision.indexing` (files, URLs and folders, in pages) and :mod:`md_vision.pool` (the
folder parsers' worker processes).
"""

from __future__ import annotations

from docab_mcpguard import GuardedClient, PathPolicy, Resolver
from md_vision.indexing import Indexer
from md_vision.loading import Loader
from md_vision.pool import ParserPool
from md_vision.reading import Reader
from md_vision.results import (
    Block,
    ImageBlock,
    IndexResult,
    Progress,
    ReadResult,
    TextBlock,
    TextRole,
    ToolFailure,
)
from md_vision.settings import Settings

__all__ = [
    "Block",
    "ImageBlock",
    "IndexResult",
    "MdVision",
    "Progress",
    "ReadResult",
    "TextBlock",
    "TextRole",
    "ToolFailure",
]


class MdVision:
    """Read and index markdown under a :class:`Settings` sandbox. Use ``async with`` or ``aclose``.

    The methods' signatures are the public API; what they do is documented once, on the rooms'
    methods they call."""

    def __init__(
        self,
        settings: Settings,
        *,
        resolver: Resolver | None = None,
        client: GuardedClient | None = None,
    ) -> None:
        self._loader = Loader(settings, resolver=resolver, client=client)
        self._pool = ParserPool(settings.limits.index_workers)
        self._reader = Reader(self._loader)
        self._indexer = Indexer(self._loader, self._pool)

    @property
    def settings(self) -> Settings:
        """The settings in force (the allowed folders change with :meth:`use_paths`)."""
        return self._loader.settings

    async def __aenter__(self) -> MdVision:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._loader.aclose()
        self.close_parsers(wait=False)

    def close_parsers(self, *, wait: bool) -> None:
        """Stop the folder parsers for good; ``wait``: until their processes have exited (a
        process still starting when the server exits would print a traceback)."""
        self._pool.close(wait=wait)

    def expect_warm_up(self) -> None:
        """Say that :meth:`warm_up` is about to run (see :meth:`ParserPool.expect_warm_up`)."""
        self._pool.expect_warm_up()

    def warm_up(self) -> None:
        """Start the folder parsers (the server calls this on a thread of its own at start-up)."""
        self._pool.warm_up()

    def use_paths(self, paths: PathPolicy) -> None:
        """Allow these folders from now on (the client's MCP roots, which may change)."""
        self._loader.use_paths(paths, on_change=self._indexer.paths_changed)

    def result_tokens(self, max_tokens: int | None) -> int:
        """The token budget of one result: the call's ``max_tokens`` or the server's default,
        within what the response byte limit allows."""
        return self._loader.result_tokens(max_tokens)

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
        """The read behind ``read_md_with_images``: :meth:`md_vision.reading.Reader.read`."""
        return await self._reader.read(
            uri, section, line_range, max_images, max_tokens=max_tokens, raw_data_uris=raw_data_uris
        )

    async def index(
        self,
        uri: str,
        cursor: str | None = None,
        max_tokens: int | None = None,
        *,
        progress: Progress | None = None,
    ) -> IndexResult:
        """The index behind ``index_md``: :meth:`md_vision.indexing.Indexer.index`."""
        return await self._indexer.index(uri, cursor, max_tokens, progress=progress)
