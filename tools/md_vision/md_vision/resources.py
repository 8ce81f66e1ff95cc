"""The allowed markdown files as MCP resources: ``file://`` URIs, listed lazily, in pages.

A page walks only as far as it needs (:func:`md_vision.folder.iter_markdown_files` resumes after
the last file of the previous page), so listing the first page of a large tree costs about one
page of files. The cursor is opaque to the client: the allowed folder it is in, the last file's
path in it, and a fingerprint of the allowed folders (a cursor from before the client's roots
changed is refused with advice to list again). Reading a resource goes through the same sandbox
as the tools: opened beneath the allowed folders, markdown files only, within the size limit.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from docab_mcpguard import PathDenied, PathPolicy
from md_vision.folder import iter_markdown_files
from md_vision.settings import Settings
from md_vision.sources import MARKDOWN_SUFFIXES, SourceError, read_local_markdown

PAGE_SIZE = 100  # resources per resources/list page


class ResourceFailure(Exception):
    """A resources request that cannot be served; ``str()`` says why and what to do."""


@dataclass(frozen=True)
class MarkdownResource:
    path: Path  # real path
    name: str  # path relative to its allowed folder
    size: int

    @property
    def uri(self) -> str:
        return self.path.as_uri()


@dataclass(frozen=True)
class ResourcePage:
    resources: tuple[MarkdownResource, ...]
    next_cursor: str | None


def _fingerprint(paths: PathPolicy) -> str:
    return hashlib.sha256("\0".join(paths.roots).encode()).hexdigest()[:12]


def encode_cursor(paths: PathPolicy, root: int, after: str) -> str:
    data = json.dumps({"k": _fingerprint(paths), "r": root, "a": after}, separators=(",", ":"))
    return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")


def decode_cursor(paths: PathPolicy, cursor: str) -> tuple[int, str]:
    """(allowed folder index, last path given) of a cursor; raises ResourceFailure."""
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        root, after, key = data["r"], data["a"], data["k"]
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise ResourceFailure(
            "this cursor is not one resources/list gave; list again without a cursor"
        ) from None
    if not isinstance(root, int) or not isinstance(after, str) or key != _fingerprint(paths):
        raise ResourceFailure(
            "the allowed folders changed since this cursor was given; list again without a cursor"
        )
    return root, after


def list_page(settings: Settings, cursor: str | None, page_size: int = PAGE_SIZE) -> ResourcePage:
    """One page of the markdown files under the allowed folders, in order; the cursor only when
    more files follow (the walk looks one file past the page to know)."""
    paths = settings.paths
    root_index, after = decode_cursor(paths, cursor) if cursor else (0, "")
    found: list[tuple[int, MarkdownResource]] = []
    for index in range(root_index, len(paths.roots)):
        resume = tuple(after.split("/")) if index == root_index and after else ()
        try:
            opened = paths.open(paths.roots[index])
        except (OSError, PathDenied):
            continue
        with opened, contextlib.closing(iter_markdown_files(opened, paths, resume)) as files:
            for relative, file in files:
                found.append((index, MarkdownResource(file.path, relative, file.size)))
                if len(found) > page_size:
                    last_index, last = found[page_size - 1]
                    return ResourcePage(
                        tuple(item for _i, item in found[:page_size]),
                        encode_cursor(paths, last_index, last.name),
                    )
    return ResourcePage(tuple(item for _i, item in found), None)


def path_of(uri: str) -> str:
    """The local path a ``file://`` URI names; raises ResourceFailure for anything else."""
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        raise ResourceFailure(f"{uri[:200]!r} is not a file:// URI of this machine")
    return url2pathname(unquote(parts.path))


def read_resource(settings: Settings, uri: str) -> tuple[Path, str]:
    """The real path and text of the markdown file ``uri`` names, read beneath the allowed folders."""
    path = path_of(uri)
    if not path.lower().endswith(MARKDOWN_SUFFIXES):
        raise ResourceFailure(f"{path} is not a markdown file (.md, .markdown); only those are resources")
    try:
        opened = settings.paths.open(path)
    except PathDenied as exc:
        raise ResourceFailure(settings.hide_roots(str(exc))) from None
    except FileNotFoundError:
        raise ResourceFailure(f"{path} does not exist") from None
    except OSError:
        raise ResourceFailure(f"{path} cannot be read") from None
    with opened:
        if opened.is_dir:
            raise ResourceFailure(f"{path} is a folder, not a markdown file")
        try:
            text = read_local_markdown(opened, settings.limits.max_markdown_bytes, os.fspath(path))
        except SourceError as exc:
            raise ResourceFailure(str(exc)) from None
        return opened.path, text
