"""Image inputs: what a caller may pass as ``image``, and how each kind becomes bytes or a URL.

Four kinds, as in the reference: a local path (png, jpg, jpeg, gif, webp, bmp), an http(s) URL,
a ``data:image/*;base64,`` URL, or the word ``clipboard`` (also ``clip``, ``pasteboard``).

The pure part (:func:`classify`, :func:`decode_data_url`, :func:`sniff_mime`) has no I/O. The
:class:`ImageLoader` is the I/O face: it reads local files inside the allowed paths (real paths,
regular files only, byte-capped), reads the clipboard, and downloads URLs through mcpguard's
:class:`~docab_mcpguard.GuardedClient` (loopback, private and metadata addresses refused on every
redirect hop unless a host is explicitly allowed).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING

from vision_bridge.clipboard import ClipboardReader
from vision_bridge.errors import ErrorCause, VisionError, input_error

if TYPE_CHECKING:
    from docab_mcpguard import Resolver

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""Largest image accepted from any source (file, download, data URL, clipboard), as in the reference."""

CLIPBOARD_WORDS = frozenset({"clipboard", "clip", "pasteboard"})

LOCAL_EXTENSIONS = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
}

_SHOWN = 120  # characters of a rejected input quoted back in a message


class InputKind(StrEnum):
    PATH = "path"
    URL = "url"
    DATA_URL = "data URL"
    CLIPBOARD = "clipboard"


@dataclass(frozen=True)
class ImageBytes:
    """An image held in memory. ``origin`` names it in messages ("photo.png", "clipboard", ...)."""

    data: bytes
    origin: str
    declared_mime: str | None = None

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def identity(self) -> str:
        """What the cache key uses for this image: its content."""
        return "sha256:" + self.sha256


@dataclass(frozen=True)
class ImageUrl:
    """A remote image passed to the provider by URL (downloaded only if the provider cannot)."""

    url: str

    @property
    def origin(self) -> str:
        return _shorten(self.url)

    @property
    def identity(self) -> str:
        # The provider fetches it, so its content is unknown here: the URL stands for it.
        return "url:" + self.url


ResolvedImage = ImageBytes | ImageUrl


def _shorten(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def classify(raw: str) -> InputKind:
    text = raw.strip()
    lowered = text.lower()
    if lowered in CLIPBOARD_WORDS:
        return InputKind.CLIPBOARD
    if lowered.startswith("data:"):
        return InputKind.DATA_URL
    if lowered.startswith(("http://", "https://")):
        return InputKind.URL
    return InputKind.PATH


def sniff_mime(data: bytes) -> str | None:
    """The image type from the first bytes, for the formats every path of the bridge knows."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"BM"):
        return "image/bmp"
    return None


def decode_data_url(raw: str, *, max_bytes: int = MAX_IMAGE_BYTES) -> ImageBytes:
    """Decode ``data:image/<type>;base64,<payload>``; anything else is an input error."""
    text = raw.strip()
    header, sep, payload = text.partition(",")
    if not sep:
        raise input_error("the data URL has no ',' before its payload; expected data:image/png;base64,...")
    params = [p.strip().lower() for p in header[len("data:") :].split(";")]
    mime = params[0] if params else ""
    if not mime.startswith("image/"):
        raise input_error(
            f"the data URL holds {mime or 'no type'!r}, not an image; expected data:image/*;base64,..."
        )
    if "base64" not in params[1:]:
        raise input_error("only base64 data URLs are accepted (data:image/...;base64,...)")
    # Reject before decoding: the decoded size is 3/4 of the base64 length.
    payload = "".join(payload.split())
    if len(payload) * 3 // 4 > max_bytes + 2:
        raise input_error(f"the data URL holds more than the limit of {max_bytes:,} bytes per image")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise input_error("the data URL's payload is not valid base64") from None
    if len(data) > max_bytes:
        raise input_error(
            f"the data URL holds {len(data):,} bytes, over the limit of {max_bytes:,} per image"
        )
    if not data:
        raise input_error("the data URL is empty")
    return ImageBytes(data, "data URL", declared_mime=mime)


def _download_message_cause(kind: object) -> ErrorCause:
    from docab_mcpguard import FetchErrorKind

    return ErrorCause.TIMEOUT if kind is FetchErrorKind.TIMEOUT else ErrorCause.INPUT


@dataclass
class ImageLoader:
    """Turns raw ``image`` arguments into :data:`ResolvedImage` values; the only file/network I/O of inputs.

    ``allowed_paths``: the real roots local images may come from. ``allow_hosts``: exact hosts a
    download may reach on internal addresses. ``clipboard``: the clipboard reader (injectable).
    """

    allowed_paths: tuple[str, ...]
    allow_hosts: tuple[str, ...] = ()
    clipboard: ClipboardReader = field(default_factory=ClipboardReader)
    max_bytes: int = MAX_IMAGE_BYTES
    resolver: Resolver | None = None  # None: the system's DNS (tests map names to addresses)

    def __post_init__(self) -> None:
        from docab_mcpguard import PathPolicy

        self._paths = PathPolicy(tuple(self.allowed_paths))

    async def load(self, raw: str) -> ResolvedImage:
        if not isinstance(raw, str) or not raw.strip():
            raise input_error("image is empty; pass a file path, an http(s) URL, a data URL or 'clipboard'")
        kind = classify(raw)
        if kind is InputKind.CLIPBOARD:
            data = await self.clipboard.read_image(max_bytes=self.max_bytes)
            return ImageBytes(data, "clipboard")
        if kind is InputKind.DATA_URL:
            return decode_data_url(raw, max_bytes=self.max_bytes)
        if kind is InputKind.URL:
            return ImageUrl(self._checked_url(raw.strip()))
        return await asyncio.to_thread(self._read_local, raw.strip())

    @staticmethod
    def _checked_url(url: str) -> str:
        from docab_mcpguard import HostDenied, HostPolicy

        try:
            return str(HostPolicy.build(allow_any=True).check_url(url))
        except HostDenied as exc:
            raise input_error(str(exc)) from None

    def _read_local(self, raw: str) -> ImageBytes:
        from docab_mcpguard import PathDenied

        try:
            path = self._paths.resolve(raw)
        except PathDenied as exc:
            raise input_error(
                f"{exc}. Local images must lie in VISION_ALLOWED_PATHS; set it in the server's environment "
                "to allow another folder"
            ) from None
        shown = _shorten(raw)
        ext = path.suffix.lower()
        if ext not in LOCAL_EXTENSIONS:
            kinds = ", ".join(e.lstrip(".") for e in LOCAL_EXTENSIONS)
            raise input_error(f"{shown!r} is not an image file; accepted extensions: {kinds}")
        # Open first, then check what was opened (fstat on the descriptor): no window between the
        # check and the read. O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: the
        # real path has no symlink left, so one appearing now is refused.
        flags = (
            os.O_RDONLY
            | getattr(os, "O_NONBLOCK", 0)
            | getattr(os, "O_NOFOLLOW", 0)
            | getattr(os, "O_BINARY", 0)
        )
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            raise input_error(f"{shown!r} does not exist") from None
        except IsADirectoryError:
            raise input_error(f"{shown!r} is not a regular file") from None
        except OSError:
            raise input_error(f"{shown!r} cannot be read") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > self.max_bytes:
            os.close(fd)
            if not stat.S_ISREG(info.st_mode):
                raise input_error(f"{shown!r} is not a regular file")
            raise input_error(
                f"{shown!r} is {info.st_size:,} bytes, over the limit of {self.max_bytes:,} per image"
            )
        with os.fdopen(fd, "rb") as handle:
            try:
                # One byte past the cap: a file that grew since fstat() is still caught.
                data = handle.read(self.max_bytes + 1)
            except OSError:
                raise input_error(f"{shown!r} cannot be read") from None
        if len(data) > self.max_bytes:
            raise input_error(f"{shown!r} is over the limit of {self.max_bytes:,} bytes per image")
        if not data:
            raise input_error(f"{shown!r} is empty")
        return ImageBytes(data, path.name, declared_mime=LOCAL_EXTENSIONS[ext])

    async def download(self, urls: Iterable[str], *, timeout_s: float) -> dict[str, ImageBytes]:
        """Fetch each URL under the host policy, in parallel; URL -> image bytes."""
        from docab_mcpguard import FetchError, FetchLimits, GuardedClient, HostPolicy, SystemResolver

        unique = list(dict.fromkeys(urls))
        policy = HostPolicy.build(allow_any=True, internal_hosts=self.allow_hosts)
        limits = FetchLimits(timeout_s=max(timeout_s, 0.001), max_bytes=self.max_bytes, max_redirects=5)
        headers = {"User-Agent": "vision-bridge (+https://github.com/docab/docab)", "Accept": "image/*"}
        resolver = self.resolver if self.resolver is not None else SystemResolver()
        async with GuardedClient(policy, limits=limits, headers=headers, resolver=resolver) as client:

            async def one(url: str) -> ImageBytes:
                try:
                    fetched = await client.fetch(url, check_headers=_image_headers_only)
                except FetchError as exc:
                    hint = ""
                    if exc.kind.value == "blocked":
                        hint = " (set VISION_ALLOW_HOSTS to the exact host to allow a local image server)"
                    raise VisionError(
                        _download_message_cause(exc.kind), f"could not download the image: {exc}{hint}"
                    ) from None
                if not fetched.content:
                    raise input_error(f"{_shorten(url)} sent an empty body, not an image")
                return ImageBytes(fetched.content, _shorten(url), declared_mime=fetched.content_type or None)

            images = await asyncio.gather(*(one(u) for u in unique))
        return dict(zip(unique, images, strict=True))


def _image_headers_only(url: str, status: int, headers: object) -> None:
    from docab_mcpguard import FetchError, FetchErrorKind

    content_type = str(headers.get("content-type", "")).split(";", 1)[0].strip().lower()  # type: ignore[attr-defined]
    if content_type and not content_type.startswith("image/") and content_type not in _BINARY_TYPES:
        raise FetchError(
            FetchErrorKind.REJECTED,
            f"{_shorten(url)} is {content_type}, not an image",
            url=url,
            status=status,
        )


_BINARY_TYPES = frozenset({"application/octet-stream", "binary/octet-stream", "application/binary"})
