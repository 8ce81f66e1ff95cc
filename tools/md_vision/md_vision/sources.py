"""Where markdown and images come from: allowed local paths, allowed hosts, ``data:`` URIs.

Every local path is opened through :meth:`docab_mcpguard.PathPolicy.open` (walked beneath the
allowed directories by descriptor, so no link swapped in meanwhile can lead outside; relative
paths against the first allowed directory) and read, stat'ed and listed through that descriptor.
Every URL goes through :class:`docab_mcpguard.GuardedClient` (host policy on every redirect hop,
internal addresses refused unless that exact host is allowed, one deadline, and a byte cap on
the decoded body per fetch). Failures raise :class:`SourceError` whose message is safe to
show and says what to do.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import stat
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from docab_mcpguard import (
    FetchError,
    FetchErrorKind,
    FetchLimits,
    GuardedClient,
    HostDenied,
    Opened,
    PathDenied,
)
from docab_mcpguard.access import urls_disabled
from docab_mcpguard.charsets import web_codec
from md_vision.settings import ACCESS, Settings

MARKDOWN_SUFFIXES = (".md", ".markdown")
_HTML_START = re.compile(
    rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html[\s>]|head[\s>]|body[\s>])", re.I | re.S
)
_LEADING_COMMENTS = re.compile(rb"^\s*(?:<!--.*?-->\s*)*", re.S)
_NOT_MARKDOWN_TYPES = ("image/", "audio/", "video/", "font/", "application/pdf", "application/zip")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
MAX_SHOWN_REFERENCE = 512


class SourceError(Exception):
    """A markdown source could not be used; ``str()`` is the message for the caller."""


@dataclass(frozen=True, slots=True)
class LocalFile:
    path: Path  # real path
    size: int
    mtime_ns: int

    @property
    def key(self) -> tuple[str, str, int, int]:
        return ("file", str(self.path), self.size, self.mtime_ns)

    @property
    def display(self) -> str:
        return str(self.path)


@dataclass(frozen=True, slots=True)
class RemoteFile:
    url: str  # final URL after redirects; relative references resolve against it

    @property
    def display(self) -> str:
        return self.url


Location = LocalFile | RemoteFile


@dataclass(frozen=True)
class LoadedMarkdown:
    location: Location
    text: str


# --- URIs ----------------------------------------------------------------------------------


def is_url(uri: str) -> bool:
    return uri.strip().lower().startswith(("http://", "https://"))


# Longer than any local path (Linux's PATH_MAX is 4,096) and than most web servers take in a URL;
# a longer uri is refused before any message repeats it.
MAX_URI_CHARS = 8_192


def check_uri(uri: str) -> str:
    """Refuse schemes other than http(s) and plain paths, with a message that says why."""
    uri = uri.strip()
    if not uri:
        raise SourceError("uri is empty: pass a markdown file path, a folder, or an http(s) URL")
    if len(uri) > MAX_URI_CHARS:
        raise SourceError(
            f"uri is {len(uri):,} characters long, more than any path or URL this server reads "
            f"({MAX_URI_CHARS:,}): pass a markdown file path, a folder, or an http(s) URL"
        )
    scheme = _SCHEME.match(uri)
    if scheme and len(scheme.group(1)) > 1:  # one letter is a Windows drive
        name = scheme.group(1).lower()
        if name == "file":
            raise SourceError(
                "file:// URIs are not accepted: pass the plain path instead (e.g. /docs/guide.md, or a "
                "path relative to the first allowed directory)"
            )
        if name not in ("http", "https"):
            raise SourceError(f"{name}: URIs are not supported: pass a local path or an http(s) URL")
    return uri


# --- text ------------------------------------------------------------------------------------


def decode_markdown(data: bytes, charset: str | None = None) -> str:
    """UTF-8 (BOM dropped), else the declared charset, else Windows-1252 (then Latin-1).

    Guessing among legacy code pages from short texts goes wrong too often (Baltic for French);
    Windows-1252 is what non-UTF-8 markdown almost always is.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    # The declared charset only as a browser would read it: a server naming "undefined", "idna"
    # (both raise on any input) or "punycode" (quadratic time) is naming no encoding.
    for encoding in ("utf-8", web_codec(charset), "cp1252"):
        if not encoding:
            continue
        try:
            return data.decode(encoding).removeprefix("\ufeff")  # a UTF-16 byte-order mark
        except (LookupError, UnicodeError):
            continue
    return data.decode("latin-1")


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


def looks_like_html_page(data: bytes, content_type: str) -> bool:
    """An HTML document, not markdown that happens to start with an HTML comment."""
    head = data[:8192].lstrip(b"\xef\xbb\xbf")
    if _HTML_START.match(head):
        return True
    if content_type in ("text/html", "application/xhtml+xml"):
        rest = _LEADING_COMMENTS.sub(b"", head, count=1)
        return rest.startswith(b"<")
    return False


# --- local files -----------------------------------------------------------------------------


def open_local(settings: Settings, raw: str) -> Opened:
    """Open a file or folder beneath the allowed paths (race-free: see docab_mcpguard.beneath).

    The caller owns the returned descriptor and closes it.
    """
    try:
        return settings.paths.open(raw)
    except PathDenied as exc:
        raise SourceError(settings.hide_roots(str(exc))) from exc
    except FileNotFoundError as exc:
        raise SourceError(
            f"{raw} does not exist; check the path (index_md on a folder lists its markdown files)"
        ) from exc
    except PermissionError as exc:
        raise SourceError(f"{raw} cannot be read (permission denied)") from exc
    except OSError as exc:
        raise SourceError(f"{raw} cannot be read") from exc


def read_local_markdown(opened: Opened, max_bytes: int, shown: str) -> str:
    """The text of an opened markdown file, read through its descriptor."""
    info = opened.info
    if not stat.S_ISREG(info.st_mode):
        raise SourceError(f"{shown} is not a regular file")
    if info.st_size > max_bytes:
        raise SourceError(
            f"{shown} is {info.st_size:,} bytes, over the markdown size limit of {max_bytes:,} "
            "(raise it with --max-markdown-bytes)"
        )
    try:
        data = opened.read(max_bytes + 1)
    except PermissionError as exc:
        raise SourceError(f"{shown} cannot be read (permission denied)") from exc
    except OSError as exc:
        raise SourceError(f"{shown} cannot be read") from exc
    if len(data) > max_bytes:
        raise SourceError(
            f"{shown} grew past the markdown size limit of {max_bytes:,} bytes while being read"
        )
    if looks_binary(data):
        raise SourceError(f"{shown} looks like a binary file, not markdown")
    return decode_markdown(data)


# --- remote markdown -------------------------------------------------------------------------


def _fetch_message(exc: FetchError) -> str:
    hint = {
        FetchErrorKind.TOO_LARGE: "",
        FetchErrorKind.TIMEOUT: " Try again, or raise --fetch-timeout.",
    }.get(exc.kind, "")
    return f"{str(exc).rstrip('.')}.{hint}"


async def fetch_markdown(client: GuardedClient, settings: Settings, url: str) -> LoadedMarkdown:
    limits = settings.limits
    if not settings.hosts.allows_urls:
        raise SourceError(urls_disabled(ACCESS))

    def refuse_binary(final_url: str, status: int, headers: Mapping[str, str]) -> None:
        kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind.startswith(_NOT_MARKDOWN_TYPES):
            raise FetchError(
                FetchErrorKind.REJECTED, f"{final_url} is {kind}, not markdown", url=final_url, status=status
            )

    try:
        fetched = await client.fetch(
            url,
            limits=FetchLimits(limits.fetch_timeout_s, limits.max_markdown_bytes, limits.max_redirects),
            check_headers=refuse_binary,
        )
    except FetchError as exc:
        raise SourceError(_fetch_message(exc)) from exc
    except HostDenied as exc:
        raise SourceError(f"{str(exc).rstrip('.')}.") from exc
    if looks_like_html_page(fetched.content, fetched.content_type):
        raise SourceError(
            f"{fetched.url} returned an HTML page, not markdown. Pass the URL of the raw markdown file "
            "(for GitHub, the raw.githubusercontent.com address)."
        )
    if looks_binary(fetched.content):
        raise SourceError(f"{fetched.url} returned binary data, not markdown")
    return LoadedMarkdown(RemoteFile(fetched.url), decode_markdown(fetched.content, fetched.charset))


# --- images ----------------------------------------------------------------------------------


class ImageRefused(Exception):
    """An image reference cannot be followed; ``str()`` is the placeholder's reason."""


@dataclass(frozen=True, slots=True)
class LocalImage:
    path: str  # absolute, as referenced (not yet resolved): opened beneath the allowed paths

    @property
    def shown(self) -> str:
        return self.path


@dataclass(frozen=True, slots=True)
class RemoteImage:
    url: str

    @property
    def shown(self) -> str:
        return self.url


@dataclass(frozen=True, slots=True)
class DataImage:
    data: bytes
    mime_type: str

    @property
    def shown(self) -> str:
        return ""  # data: URIs get no label


ImageTarget = LocalImage | RemoteImage | DataImage


def _decode_data_uri(target: str, max_bytes: int) -> DataImage:
    header, _, payload = target.partition(",")
    if not _:
        raise ImageRefused("malformed data: URI")
    mime = header[5:].split(";", 1)[0].strip().lower() or "text/plain"
    if not mime.startswith("image/"):
        raise ImageRefused(f"data: URI is {mime}, not an image")
    if len(payload) > max_bytes * 4 // 3 + 4:
        raise ImageRefused(f"embedded image is over the {max_bytes:,} byte limit")
    try:
        if ";base64" in header.lower():
            data = base64.b64decode(re.sub(r"\s+", "", payload), validate=True)
        else:
            data = unquote(payload).encode("latin-1", errors="replace")
    except (binascii.Error, ValueError) as exc:
        raise ImageRefused("the data: URI is not valid base64") from exc
    return DataImage(data, mime)


def resolve_image(target: str, base: Location, settings: Settings) -> ImageTarget:
    """Where an image reference points, judged against the allowed paths and hosts."""
    target = target.strip()
    if not target:
        raise ImageRefused("the image reference is empty")
    if target[:5].lower() == "data:":
        return _decode_data_uri(target, settings.limits.max_image_bytes)
    scheme = _SCHEME.match(target)
    if target.startswith("//"):
        if isinstance(base, LocalFile):
            raise ImageRefused("protocol-relative URLs are not followed from a local file")
        target = urljoin(base.url, target)
        scheme = _SCHEME.match(target)
    if scheme and len(scheme.group(1)) > 1:
        name = scheme.group(1).lower()
        if name == "file":
            raise ImageRefused("file: URLs are not allowed")
        if name not in ("http", "https"):
            raise ImageRefused(f"{name}: URLs are not supported")
        return _remote(target, settings)
    if isinstance(base, RemoteFile):
        return _remote(urljoin(base.url, target), settings)
    # A local reference: drop ?query and #fragment, decode %20 and friends.
    path_part = urlsplit(target).path if ("?" in target or "#" in target) else target
    raw = unquote(path_part)
    if not raw:
        raise ImageRefused("the image reference has no path")
    if "\x00" in raw:
        raise ImageRefused("the image reference contains a NUL character")
    expanded = os.path.expanduser(raw)
    return LocalImage(expanded if os.path.isabs(expanded) else str(base.path.parent / raw))


def _remote(url: str, settings: Settings) -> RemoteImage:
    if not settings.hosts.allows_urls:
        raise ImageRefused(
            f"remote images are disabled ({ACCESS.hosts.flag} none; allow hosts with {ACCESS.hosts.spelled('HOST')})"
        )
    try:
        settings.hosts.check_url(url)
    except HostDenied as exc:
        raise ImageRefused(str(exc)) from exc
    return RemoteImage(url)


def open_image(image: LocalImage, settings: Settings) -> Opened:
    """Open a local image beneath the allowed paths and check what was opened (not its name)."""
    max_bytes = settings.limits.max_image_bytes
    try:
        opened = settings.paths.open(image.path)
    except PathDenied as exc:
        raise ImageRefused(
            "outside the allowed paths"
            + (
                f" ({ACCESS.paths.spelled('DIR')}, or the client's roots)"
                if settings.follow_roots
                else f" ({ACCESS.paths.spelled('DIR')})"
            )
        ) from exc
    except FileNotFoundError as exc:
        raise ImageRefused("file not found") from exc
    except PermissionError as exc:
        raise ImageRefused("permission denied") from exc
    except OSError as exc:
        raise ImageRefused("the file cannot be read") from exc
    info = opened.info
    problem = None
    if not stat.S_ISREG(info.st_mode):
        problem = "not a regular file"
    elif info.st_size > max_bytes:
        problem = f"{info.st_size:,} bytes is over the {max_bytes:,} byte image limit"
    elif info.st_size == 0:
        problem = "the file is empty"
    if problem is not None:
        opened.close()
        raise ImageRefused(problem)
    return opened


def read_image_file(opened: Opened, max_bytes: int) -> bytes:
    """The bytes of an opened image, through its descriptor."""
    try:
        data = opened.read(max_bytes + 1)
    except OSError as exc:
        raise ImageRefused("the file cannot be read") from exc
    if len(data) > max_bytes:
        raise ImageRefused(f"over the {max_bytes:,} byte image limit")
    return data


async def fetch_image(client: GuardedClient, settings: Settings, image: RemoteImage) -> tuple[str, bytes]:
    limits = settings.limits

    def refuse_pages(final_url: str, status: int, headers: Mapping[str, str]) -> None:
        kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind.startswith("text/html") or kind.startswith(("audio/", "video/", "application/json")):
            raise FetchError(FetchErrorKind.REJECTED, f"the server sent {kind}, not an image", url=final_url)

    try:
        fetched = await client.fetch(
            image.url,
            limits=FetchLimits(limits.fetch_timeout_s, limits.max_image_bytes, limits.max_redirects),
            check_headers=refuse_pages,
        )
    except (FetchError, HostDenied) as exc:
        raise ImageRefused(str(exc)) from exc
    return fetched.url, fetched.content


class Handover:
    """An open image file that either a worker takes (and closes) or the caller closes, never
    both: closing a descriptor a worker still reads could close another file that reused its
    number."""

    def __init__(self, opened: Opened) -> None:
        self._opened: Opened | None = opened
        self._lock = threading.Lock()

    def take(self) -> Opened | None:
        """For the worker: the file, or None when the caller has closed it already."""
        with self._lock:
            opened, self._opened = self._opened, None
            return opened

    def release(self) -> None:
        """For the caller, when it no longer waits: close the file unless a worker took it."""
        with self._lock:
            opened, self._opened = self._opened, None
        if opened is not None:
            opened.close()
