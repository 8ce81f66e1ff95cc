"""Image inputs: what a caller may pass as ``image``, and how each kind becomes bytes or a URL.

Four kinds, as in the reference: a local path (png, jpg, jpeg, gif, webp, bmp), an http(s) URL,
a ``data:image/*;base64,`` URL, or the word ``clipboard`` (also ``clip``, ``pasteboard``).

The pure part (:func:`classify`, :func:`decode_data_url`, :func:`sniff_mime`) has no I/O. The
:class:`ImageLoader` is the I/O face: it reads local files inside the allowed paths (opened
beneath them by descriptor, regular files only, byte-capped), reads the clipboard, and downloads
image URLs through mcpguard's :class:`~docab_mcpguard.GuardedClient` (loopback, private and
metadata addresses refused on every redirect hop and at connect time unless a host is explicitly
allowed; the decoded body capped).

An image URL is never handed to the provider: the bridge downloads it and sends the bytes. A
provider given a URL fetches it again, following redirects, from its own network; a check made
here of each hop cannot bind what the server answers that second fetch (it may redirect the
provider, and only the provider, to an internal address, or its name may resolve elsewhere). Only
the bytes fetched under the guard are what was checked.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING

from vision_bridge.clipboard import ClipboardReader
from vision_bridge.errors import ErrorCause, VisionError, input_error

if TYPE_CHECKING:
    from docab_mcpguard import FetchError, PathPolicy, Resolver

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
    """An image held in memory. ``origin`` names it in messages ("photo.png", "clipboard", ...).

    ``redirects``: for an image downloaded from a URL, the redirect hops followed (each checked);
    None for an image that was not downloaded."""

    data: bytes
    origin: str
    declared_mime: str | None = None
    redirects: int | None = None

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def identity(self) -> str:
        """What the cache key uses for this image: its content."""
        return "sha256:" + self.sha256


@dataclass(frozen=True)
class ImageUrl:
    """A remote image, its URL well-formed and allowed in form; the service downloads it (every
    hop checked) before anything is sent to the provider."""

    url: str

    @property
    def origin(self) -> str:
        return _shorten(self.url)

    @property
    def identity(self) -> str:
        # Before the download its content is unknown: the URL stands for it (the cache is keyed
        # by the downloaded bytes instead).
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


def _download_failure(exc: FetchError) -> VisionError:
    """What a failed (or refused) download of an image URL tells the caller."""
    from docab_mcpguard import FetchErrorKind

    cause = ErrorCause.TIMEOUT if exc.kind is FetchErrorKind.TIMEOUT else ErrorCause.INPUT
    # A refusal already ends with the setting that lifts it (the host policy's remedy).
    return VisionError(cause, f"could not download the image: {exc}")


@dataclass
class ImageLoader:
    """Turns raw ``image`` arguments into :data:`ResolvedImage` values; the only file/network I/O of inputs.

    ``allowed_paths``: the real roots local images may come from (a call may pass the client's
    roots instead). ``allow_hosts``: exact hosts a download may reach on internal addresses.
    ``url_images``: false under ``--allow-host none`` (image URLs refused). ``clipboard``: the
    clipboard reader (injectable).
    """

    allowed_paths: tuple[str, ...]
    allow_hosts: tuple[str, ...] = ()
    clipboard: ClipboardReader = field(default_factory=ClipboardReader)
    max_bytes: int = MAX_IMAGE_BYTES
    resolver: Resolver | None = None  # None: the system's DNS (tests map names to addresses)
    url_images: bool = True

    def __post_init__(self) -> None:
        from docab_mcpguard import HostPolicy, PathPolicy, SystemResolver
        from docab_mcpguard.access import host_remedy, path_remedy
        from vision_bridge.config import ACCESS

        self._paths = PathPolicy(tuple(self.allowed_paths), remedy=path_remedy(ACCESS))
        self._host_policy = HostPolicy.build(
            allow_any=self.url_images,
            internal_hosts=self.allow_hosts if self.url_images else (),
            remedy=host_remedy(ACCESS),
        )
        self._resolver: Resolver = self.resolver if self.resolver is not None else SystemResolver()

    async def load(self, raw: str, paths: PathPolicy | None = None) -> ResolvedImage:
        """One ``image`` argument, resolved; ``paths``: the folders allowed for this call (the
        client's roots), instead of ``allowed_paths``."""
        if not isinstance(raw, str) or not raw.strip():
            raise input_error("image is empty; pass a file path, an http(s) URL, a data URL or 'clipboard'")
        kind = classify(raw)
        if kind is InputKind.CLIPBOARD:
            data = await self.clipboard.read_image(max_bytes=self.max_bytes)
            return ImageBytes(data, "clipboard")
        if kind is InputKind.DATA_URL:
            return decode_data_url(raw, max_bytes=self.max_bytes)
        if kind is InputKind.URL:
            if not self.url_images:
                from docab_mcpguard.access import urls_disabled
                from vision_bridge.config import ACCESS

                raise input_error(urls_disabled(ACCESS))
            return ImageUrl(await self._checked_url(raw.strip()))
        return await asyncio.to_thread(self._read_local, raw.strip(), paths or self._paths)

    async def _checked_url(self, url: str) -> str:
        """The URL, if its form is allowed (scheme, no embedded credentials). Its host, addresses
        and every redirect hop are checked when it is downloaded (:meth:`download`)."""
        from docab_mcpguard import HostDenied

        try:
            parsed = self._host_policy.check_url(url)
        except HostDenied as exc:  # the scheme, embedded credentials, not a URL at all
            raise input_error(str(exc)) from None
        return str(parsed)

    def _read_local(self, raw: str, paths: PathPolicy) -> ImageBytes:
        """Open beneath the allowed paths (every folder on the way opened by descriptor, no link
        followed outside), then check and read what was opened: no window between check and use."""
        from docab_mcpguard import PathDenied

        shown = _shorten(raw)
        try:
            opened = paths.open(raw)
        except PathDenied as exc:
            raise input_error(str(exc)) from None
        except FileNotFoundError:
            raise input_error(f"{shown!r} does not exist") from None
        except OSError:
            raise input_error(f"{shown!r} cannot be read") from None
        with opened:
            ext = opened.path.suffix.lower()
            if ext not in LOCAL_EXTENSIONS:
                kinds = ", ".join(e.lstrip(".") for e in LOCAL_EXTENSIONS)
                raise input_error(f"{shown!r} is not an image file; accepted extensions: {kinds}")
            info = opened.info
            if not stat.S_ISREG(info.st_mode):  # a FIFO opens without waiting, and is refused here
                raise input_error(f"{shown!r} is not a regular file")
            if info.st_size > self.max_bytes:
                raise input_error(
                    f"{shown!r} is {info.st_size:,} bytes, over the limit of {self.max_bytes:,} per image"
                )
            try:
                # One byte past the cap: a file that grew since it was opened is still caught.
                data = opened.read(self.max_bytes + 1)
            except OSError:
                raise input_error(f"{shown!r} cannot be read") from None
            name = opened.path.name
        if len(data) > self.max_bytes:
            raise input_error(f"{shown!r} is over the limit of {self.max_bytes:,} bytes per image")
        if not data:
            raise input_error(f"{shown!r} is empty")
        return ImageBytes(data, name, declared_mime=LOCAL_EXTENSIONS[ext])

    async def download(self, urls: Iterable[str], *, timeout_s: float) -> dict[str, ImageBytes]:
        """Fetch each URL under the host policy, in parallel; URL -> image bytes."""
        from docab_mcpguard import FetchError, FetchLimits, GuardedClient

        unique = list(dict.fromkeys(urls))
        limits = FetchLimits(timeout_s=max(timeout_s, 0.001), max_bytes=self.max_bytes, max_redirects=5)
        headers = {"User-Agent": "vision-bridge (+https://github.com/docab/docab)", "Accept": "image/*"}
        async with GuardedClient(
            self._host_policy, limits=limits, headers=headers, resolver=self._resolver
        ) as client:

            async def one(url: str) -> ImageBytes:
                try:
                    fetched = await client.fetch(url, check_headers=_image_headers_only)
                except FetchError as exc:
                    raise _download_failure(exc) from None
                if not fetched.content:
                    raise input_error(f"{_shorten(url)} sent an empty body, not an image")
                return ImageBytes(
                    fetched.content,
                    _shorten(url),
                    declared_mime=fetched.content_type or None,
                    redirects=len(fetched.redirects),
                )

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
