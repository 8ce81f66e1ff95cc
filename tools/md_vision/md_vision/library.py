"""Synchronous helpers for programs that index or read markdown without an MCP host."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable

from docab_mcpguard import PathPolicy
from md_vision.folder import index_many, index_one, scan_folder
from md_vision.index import FileIndex, FileProblem, index_text
from md_vision.service import MdVision, ReadResult
from md_vision.settings import Limits, Settings


def index_markdown_text(text: str, path: str | None = None) -> FileIndex:
    """Index markdown held in memory."""
    return index_text(text, path)


def index_markdown_file(
    path: str | os.PathLike[str], *, max_bytes: int = Limits.max_markdown_bytes
) -> FileIndex:
    """Index one local file; raises ``ValueError`` with a readable message when it cannot be read."""
    real = os.path.realpath(path)
    policy = PathPolicy.from_dirs([os.path.dirname(real)], what="folder")
    entry = index_one(real, max_bytes, policy)
    if isinstance(entry, FileProblem):
        raise ValueError(entry.reason)
    return entry


def index_markdown_folder(
    path: str | os.PathLike[str],
    *,
    max_files: int = Limits.max_folder_files,
    max_bytes: int = Limits.max_markdown_bytes,
) -> list[FileIndex | FileProblem]:
    """Index every markdown file under ``path`` in sorted order (same rules as the server's
    folder index); files that cannot be read come back as :class:`FileProblem`."""
    policy = PathPolicy.from_dirs([path], what="folder")
    with policy.open(policy.roots[0]) as root:
        scan = scan_folder(root, policy, max_files)
    readable = [file.path for file in scan.files if file.problem is None]
    indexed = iter(index_many(readable, max_bytes, None, policy=policy))
    return [
        next(indexed) if file.problem is None else FileProblem(str(file.path), file.problem)
        for file in scan.files
    ]


def read_markdown(
    uri: str,
    *,
    allow_paths: Iterable[str | os.PathLike[str]],
    allow_domains: Iterable[str] = ("none",),
    section: str | None = None,
    line_range: tuple[int, int] | list[int] | None = None,
    max_images: int = 10,
    limits: Limits | None = None,
) -> ReadResult:
    """The server's read, called in-process; raises :class:`md_vision.ToolFailure`."""
    settings = Settings.build(allow_paths=allow_paths, allow_domains=allow_domains, limits=limits)

    async def go() -> ReadResult:
        async with MdVision(settings) as vision:
            return await vision.read(uri, section=section, line_range=line_range, max_images=max_images)

    return asyncio.run(go())
