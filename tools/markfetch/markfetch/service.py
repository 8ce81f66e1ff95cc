"""The one pipeline behind both faces: fetch (guarded, cached), decode, extract, cap, save.

:class:`Markfetch` owns a :class:`docab_mcpguard.GuardedClient`, so every hop of every fetch is checked
against the host policy (no loopback, private, link-local or metadata address unless the host is
listed in --allow-host / MARKFETCH_ALLOW_HOSTS), the body is capped on the stream and one deadline covers the
whole fetch. Every failure leaves here as a :class:`MarkfetchError` with one of the eight codes.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx2

from docab_mcpguard import (
    FetchError,
    FetchErrorKind,
    FetchLimits,
    FetchProgress,
    GuardedClient,
    PathDenied,
    PathPolicy,
    write_file_in,
)
from docab_mcpguard.access import path_remedy
from docab_mcpguard.http import Resolver, SystemResolver
from markfetch.cache import ResponseCache, cache_key
from markfetch.config import ACCESS, Settings
from markfetch.errors import ErrorCode, MarkfetchError
from markfetch.headers import decodable_encodings
from markfetch.sandbox import ExtractionPool, ExtractLimits, extract_here

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
MAX_REDIRECTS = 10

_KIND_TO_CODE = {
    FetchErrorKind.BAD_URL: ErrorCode.NETWORK_ERROR,
    FetchErrorKind.BLOCKED: ErrorCode.NETWORK_ERROR,
    FetchErrorKind.NETWORK: ErrorCode.NETWORK_ERROR,
    FetchErrorKind.TIMEOUT: ErrorCode.TIMEOUT,
    FetchErrorKind.TOO_LARGE: ErrorCode.TOO_LARGE,
    FetchErrorKind.HTTP_STATUS: ErrorCode.HTTP_ERROR,
    FetchErrorKind.TOO_MANY_REDIRECTS: ErrorCode.HTTP_ERROR,
    FetchErrorKind.REJECTED: ErrorCode.UNSUPPORTED_CONTENT_TYPE,
}


@dataclass(frozen=True)
class Response:
    url: str  # final URL, after redirects
    content_type: str  # the Content-Type header value, as sent
    body: bytes

    @property
    def mime_type(self) -> str:
        return self.content_type.split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for part in self.content_type.split(";")[1:]:
            key, _, value = part.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                return value.strip().strip("\"'")
        return None


def _check_html_type(url: str, _status: int, headers: httpx2.Headers) -> None:
    """Refuse non-HTML before downloading its body (a missing type is sniffed after download)."""
    mime = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if mime and mime not in HTML_TYPES:
        raise FetchError(FetchErrorKind.REJECTED, _unsupported_message(url, mime), url=url)


def _unsupported_message(url: str, mime: str) -> str:
    return f"{url} is {mime or 'of no declared type'}, not HTML; pass raw=true (CLI: --raw) to get the body as text"


def _looks_like_html(body: bytes) -> bool:
    head = body[:2048].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<body" in head or b"<head" in head


class Markfetch:
    """Fetch URLs as markdown (or raw text) under one set of :class:`Settings`.

    Use as an async context manager, or call :meth:`aclose`. ``resolver`` is injectable so tests
    can point host names anywhere; ``cache`` defaults to the settings' on-disk cache, if any.
    """

    def __init__(
        self, settings: Settings, *, resolver: Resolver | None = None, cache: ResponseCache | None = None
    ) -> None:
        self.settings = settings
        self.policy = settings.hosts
        headers = settings.chrome.headers(
            accept_language=settings.accept_language, encodings=decodable_encodings()
        )
        self.client = GuardedClient(
            self.policy,
            limits=FetchLimits(
                timeout_s=settings.timeout_ms / 1000,
                max_bytes=settings.max_bytes,
                max_redirects=MAX_REDIRECTS,
            ),
            headers=headers,
            resolver=resolver or SystemResolver(),
            proxy=settings.proxy,
            http2=False,
        )
        if cache is None and settings.cache_dir is not None and settings.cache_ttl_s > 0:
            cache = ResponseCache(
                settings.cache_dir, settings.cache_ttl_s, max_bytes=settings.cache_max_bytes
            )
        self.cache = cache
        self.extraction = ExtractionPool(
            ExtractLimits(
                workers=settings.extract_workers,
                timeout_ms=settings.extract_timeout_ms,
                memory_mb=settings.extract_memory_mb,
            )
        )

    def warm_up(self) -> None:
        """Start an extraction worker in the background, so that the first page finds it ready."""
        self.extraction.warm_up()

    async def __aenter__(self) -> Markfetch:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client and kill the extraction workers (a running extraction too)."""
        self.extraction.close()
        await self.client.aclose()

    # -- fetching ------------------------------------------------------------------------------
    async def fetch(
        self, url: str, *, raw: bool = False, on_progress: FetchProgress | None = None
    ) -> Response:
        """The response for ``url``, from the cache when fresh; raises MarkfetchError.
        ``on_progress`` hears the body's bytes as they arrive."""
        key = None
        if self.cache is not None:
            self._check_url(url)
            key = cache_key(
                url,
                user_agent=self.settings.user_agent,
                accept_language=self.settings.accept_language,
                allow_hosts=self.settings.allow_hosts,
            )
            hit = self.cache.get(key)
            if hit is not None:
                return Response(url=hit.url, content_type=hit.content_type, body=hit.body)
        try:
            fetched = await self.client.fetch(
                url, check_headers=None if raw else _check_html_type, on_progress=on_progress
            )
        except FetchError as exc:
            raise MarkfetchError(_KIND_TO_CODE.get(exc.kind, ErrorCode.NETWORK_ERROR), str(exc)) from None
        response = Response(
            url=fetched.url, content_type=fetched.headers.get("content-type", ""), body=fetched.content
        )
        if self.cache is not None and key is not None:
            self.cache.put(key, url=response.url, content_type=response.content_type, body=response.body)
        return response

    def _check_url(self, url: str) -> None:
        from docab_mcpguard import HostDenied

        try:
            self.policy.check_url(url)
        except HostDenied as exc:
            raise MarkfetchError(ErrorCode.NETWORK_ERROR, str(exc)) from None

    # -- the pipeline --------------------------------------------------------------------------
    async def document(self, url: str, *, raw: bool = False) -> str:
        """Markdown of ``url`` (or its body as text with ``raw``); never more than MARKFETCH_MAX_BYTES."""
        return (await self.fetch_document(url, raw=raw)).text

    async def fetch_document(
        self, url: str, *, raw: bool = False, progress: DocumentProgress | None = None
    ) -> Document:
        """:meth:`document` with what it came from: title, final URL, extraction method.
        ``progress`` hears each step (fetching with its bytes, extracting)."""
        # Two steps: fetching (its share grows with the body: of the declared length, else of the
        # byte cap) and extracting.
        on_bytes: FetchProgress | None = None
        if progress is not None:
            report, cap = progress, self.settings.max_bytes

            def on_bytes(received: int, length: int | None) -> None:
                report(min(0.99, received / (length or cap)), 2, f"received {received:,} bytes")

            report(0, 2, f"fetching {url}")
        response = await self.fetch(url, raw=raw, on_progress=on_bytes)
        if raw:
            from markfetch.charset import decode_text

            # Detecting a charset reads the whole body: off the event loop, as extraction is.
            text = await asyncio.to_thread(decode_text, response.body, response.charset)
            document = Document(text, "", response.url, "raw")
        else:
            if response.mime_type not in HTML_TYPES and not (
                not response.mime_type and _looks_like_html(response.body)
            ):
                raise MarkfetchError(
                    ErrorCode.UNSUPPORTED_CONTENT_TYPE, _unsupported_message(response.url, response.mime_type)
                )
            if progress is not None:
                progress(1, 2, "extracting the article")
            # Extraction is CPU work, and a hostile page can make it endless: in a worker process,
            # under MARKFETCH_EXTRACT_TIMEOUT_MS, killed if this call is cancelled.
            extracted = await self.extraction.extract(
                response.body, response.charset, response.url, self.settings.max_bytes
            )
            self._check_size(extracted.size)
            document = Document(extracted.text, extracted.title, response.url, extracted.method)
        size = len(document.text.encode("utf-8"))
        self._check_size(size)
        if progress is not None:
            progress(2, 2, f"{document.method}: {size:,} bytes of markdown")
        return document

    def _check_size(self, size: int) -> None:
        if size > self.settings.max_bytes:
            raise MarkfetchError(
                ErrorCode.TOO_LARGE,
                f"the document is {size:,} bytes, over MARKFETCH_MAX_BYTES ({self.settings.max_bytes:,}); "
                "raise the limit to get it whole",
            )


DocumentProgress = Callable[[float, float | None, str], None]
"""Told how a fetch is going: (done, total or None, a short message)."""


@dataclass(frozen=True)
class Document:
    """What markfetch returns, and where it came from.

    ``text``: the markdown (or the body as text with raw); ``title``: the article's title (empty
    when it has none, or raw); ``url``: the final URL, after redirects; ``method``: ``reader``
    (the reader view), ``full-body`` (the page's main region, when the reader view kept almost
    nothing) or ``raw``.
    """

    text: str
    title: str
    url: str
    method: str


def extract_document(body: bytes, header_charset: str | None, url: str) -> Document:
    """Decode and extract a fetched HTML body into the document markfetch returns."""
    text, title, method = extract_here(body, header_charset, url)
    return Document(text, title, url, method)


def html_to_document(body: bytes, header_charset: str | None, url: str) -> str:
    """Decode and extract a fetched HTML body into the markdown document markfetch returns."""
    return extract_document(body, header_charset, url).text


# -- saving --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SaveTarget:
    """Where a savePath write goes: a folder inside the write roots and a file name in it.

    ``folder`` is the folder as the caller wrote it; it is walked again, beneath the roots, at
    write time (a folder swapped for a link meanwhile cannot lead the write outside).
    ``path`` is the real path it resolved to when checked, for messages.
    """

    folder: str
    name: str
    path: Path


_SAVE_ERRORS = {
    errno.ENOENT: "its folder does not exist",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EISDIR: "it is a folder",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "the disk is full",
    errno.ENAMETOOLONG: "the name is too long",
    errno.ELOOP: "too many symbolic links on the way",
    errno.EEXIST: "it already exists; pass overwrite: true to replace it",
    errno.ENOTEMPTY: "it is a folder",
}


def _save_failed(shown: object, exc: OSError) -> MarkfetchError:
    reason = _SAVE_ERRORS.get(exc.errno or 0, f"error {errno.errorcode.get(exc.errno or 0, 'unknown')}")
    return MarkfetchError(ErrorCode.SAVE_FAILED, f"cannot write {shown}: {reason}")


def _forbidden(exc: PathDenied) -> MarkfetchError:
    text = str(exc)
    if ACCESS.paths.variable not in text:  # a policy built without its remedy (a library caller's)
        text += f"; {path_remedy(ACCESS)}"
    return MarkfetchError(ErrorCode.SAVE_FORBIDDEN, text)


def sandboxed_save_path(raw: str, policy: PathPolicy, *, overwrite: bool = False) -> SaveTarget:
    """Check a savePath before fetching: absolute, its folder inside the write roots and there.

    The folder is opened beneath the roots (links inside them are followed, ``link/..``
    included; none may lead outside). The file itself is never written through a link: a
    savePath that is a symbolic link is refused. Without ``overwrite``, an existing file of
    that name is refused now rather than after the fetch. Raises save_forbidden or save_failed.
    """
    if not raw.strip():
        raise MarkfetchError(ErrorCode.SAVE_FORBIDDEN, "savePath is empty; give an absolute file path")
    if "\x00" in raw:  # no file name holds one; the OS would raise ValueError, not OSError
        raise MarkfetchError(ErrorCode.SAVE_FORBIDDEN, "savePath contains a NUL character; give a file path")
    if not os.path.isabs(raw):
        raise MarkfetchError(
            ErrorCode.SAVE_FORBIDDEN,
            f"savePath must be an absolute path, not {raw[:200]!r} (allowed roots: {policy.describe()})",
        )
    folder, name = os.path.split(raw)
    if name in ("", ".", ".."):
        raise MarkfetchError(
            ErrorCode.SAVE_FAILED, f"cannot write {raw[:200]}: it names a folder, not a file"
        )
    try:
        with policy.open(folder) as opened:
            if not opened.is_dir:
                raise OSError(errno.ENOTDIR, "not a folder")
            mode = _mode_of(opened.fd, name)
            if stat.S_ISLNK(mode):
                policy.resolve(raw)  # a link leading outside is named as such
                raise PathDenied(f"{raw[:200]!r} is a symbolic link; give the path of the file itself")
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "a folder")
            if mode and not overwrite:
                raise FileExistsError(errno.EEXIST, "exists")
            return SaveTarget(folder, name, opened.path / name)
    except PathDenied as exc:
        raise _forbidden(exc) from None
    except OSError as exc:
        raise _save_failed(raw[:300], exc) from None


def _mode_of(folder_fd: int, name: str) -> int:
    """The type bits of ``name`` in the held folder, without following a link; 0 when absent."""
    try:
        return os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return 0


def save_in_sandbox(text: str, target: SaveTarget, policy: PathPolicy, *, overwrite: bool) -> int:
    """Write ``text`` to ``target``: its folder opened again beneath the roots, then a temporary
    file in that held folder renamed to the name (see :func:`docab_mcpguard.write_file_in`)."""
    try:
        with policy.open(target.folder) as opened:
            if not opened.is_dir:
                raise OSError(errno.ENOTDIR, "not a folder")
            return write_file_in(opened.fd, target.name, text.encode("utf-8"), replace=overwrite)
    except PathDenied as exc:
        raise _forbidden(exc) from None
    except OSError as exc:
        raise _save_failed(target.path, exc) from None


def save_document(text: str, path: Path, *, overwrite: bool = True) -> int:
    """The CLI's save (no sandbox): write ``text`` to ``path`` atomically; return the bytes written.

    A temporary file in the target folder, renamed into place: an existing file is replaced
    (with ``overwrite``), never left half-written.
    """
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        folder = os.open(path.parent, flags)
        try:
            return write_file_in(folder, path.name, text.encode("utf-8"), replace=overwrite)
        finally:
            os.close(folder)
    except OSError as exc:
        raise _save_failed(path, exc) from None
