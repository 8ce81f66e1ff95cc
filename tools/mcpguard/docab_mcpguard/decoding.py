"""Content-Encoding decoded in bounded steps, so a byte cap counts decoded bytes.

A decompression bomb is a small body that expands enormously: 1 GiB of zeros is about 1 MB as
gzip, 190 KB as brotli (quality 1), 33 KB as zstd. A decoder that turns each received chunk into
all of its output at once holds gigabytes before a cap can look at them, and runs for seconds
without giving the event loop back. :class:`BodyDecoder` never produces more than ``step`` bytes
(about) per call: every coding here (zlib's ``max_length``, brotli's ``output_buffer_limit``, zstd's
``max_length``) can stop mid-input and resume, so the caller counts each piece against its cap,
yields to the event loop between pieces, and stops the moment the cap is passed. Stacked codings
(``Content-Encoding: gzip, br``) are chained the same way, each layer pulled only as far as the
next one needs; more than :data:`MAX_CODINGS` layers are refused.

Codings: ``gzip`` (also ``x-gzip``; concatenated members are read), ``deflate`` (zlib-wrapped, or
raw deflate as some servers send it), ``br``, ``zstd`` (window capped at 8 MB as RFC 9659 asks of
HTTP, so a frame cannot demand a huge window). ``identity`` is no coding. An unknown coding is
passed through undecoded, as HTTP clients and browsers do; it does not count as a layer.

Pure: no I/O. Errors raise :class:`UndecodableBody` with a message fit to show.
"""

from __future__ import annotations

import importlib
import sys
import zlib
from typing import Protocol, cast

if sys.version_info >= (3, 14):  # zstd is in the standard library from 3.14; before, its backport
    from compression import zstd
else:
    from backports import zstd

MAX_CODINGS = 2
"""Most content codings one response may stack; real servers use one."""

STEP = 64 * 1024
"""Most decoded bytes one :meth:`BodyDecoder.pull` returns (brotli may pass it by one growth of its
output buffer: it stops growing the buffer once the limit is reached)."""

ZSTD_WINDOW_LOG_MAX = 23  # 8 MB: RFC 9659 limits a zstd window in HTTP to 8 MB

SUPPORTED_CODINGS: tuple[str, ...] = ("gzip", "deflate", "br", "zstd")
"""The codings decoded here, in the order a Chrome ``Accept-Encoding`` lists them."""

_ALIASES = {"x-gzip": "gzip"}


class _BrotliDecompressor(Protocol):
    def process(self, data: bytes, output_buffer_limit: int = ...) -> bytes: ...
    def can_accept_more_data(self) -> bool: ...
    def is_finished(self) -> bool: ...


class _BrotliModule(Protocol):
    error: type[Exception]

    def Decompressor(self) -> _BrotliDecompressor: ...


# brotli ships no type information: the part used here, typed.
brotli = cast(_BrotliModule, importlib.import_module("brotli"))


class UndecodableBody(Exception):
    """The body cannot be decoded (corrupt data, too many layers); ``str()`` says which."""


class _Layer(Protocol):
    def feed(self, data: bytes) -> None:
        """Hand over more encoded input (only when :meth:`pull` has returned ``b""``)."""

    def pull(self, limit: int) -> bytes:
        """About ``limit`` decoded bytes at most; ``b""`` when more input is needed or the stream ended."""

    @property
    def complete(self) -> bool:
        """Has the encoded stream ended properly (or was it never started: an empty body)?"""


class _Zlib:
    """gzip (``wbits`` 31, concatenated members) or deflate (zlib-wrapped or raw, sniffed)."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._pending = b""
        self._decompressor: zlib._Decompress | None = None
        self._ended = False
        self._started = False
        self._between = False  # a gzip member has ended; another may follow, in this read or a later one

    @property
    def complete(self) -> bool:
        return self._ended or self._between or not (self._started or self._pending)

    def _start(self) -> bool:
        if self._coding == "gzip":
            if self._between:
                if len(self._pending) < 2 and _GZIP_MAGIC.startswith(self._pending):
                    return False  # the next member's magic is not all here yet
                if not self._pending.startswith(_GZIP_MAGIC):
                    # Anything else after a member is ignored, as browsers do.
                    self._ended, self._pending = True, b""
                    return False
                self._between = False
            self._decompressor = zlib.decompressobj(zlib.MAX_WBITS | 16)
            return True
        if len(self._pending) < 2:
            return False  # the zlib header is two bytes
        cmf, flg = self._pending[0], self._pending[1]
        wrapped = cmf & 0x0F == 8 and (cmf << 8 | flg) % 31 == 0
        self._decompressor = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        return True

    def feed(self, data: bytes) -> None:
        if not self._ended:
            self._pending += data
            self._started = True

    def pull(self, limit: int) -> bytes:
        # A loop: a gzip member can end without output left to give (its trailer came in this
        # read), and the next member, already here, must still be read before asking for more.
        while not self._ended and self._pending:
            if self._decompressor is None and not self._start():
                return b""
            decompressor = self._decompressor
            assert decompressor is not None
            try:
                out = decompressor.decompress(self._pending, limit)
            except zlib.error as exc:
                raise UndecodableBody(f"the {self._coding} data is corrupt") from exc
            self._pending = decompressor.unconsumed_tail
            if decompressor.eof:
                rest = decompressor.unused_data
                # Another gzip member may follow (RFC 1952), here or in a later read: a member that
                # ended where a read ended had once ended the body there, silently half a document.
                # Anything else after the end is ignored, as browsers do.
                if self._coding == "gzip" and _GZIP_MAGIC.startswith(rest[:2]):
                    self._decompressor = None
                    self._pending = rest
                    self._between = True
                else:
                    self._ended = True
                    self._pending = b""
            elif not out:
                return b""  # more input is needed
            if out:
                return out
        return b""


_GZIP_MAGIC = b"\x1f\x8b"


class _Brotli:
    def __init__(self) -> None:
        self._decompressor = brotli.Decompressor()
        self._pending = b""
        self._started = False

    @property
    def complete(self) -> bool:
        return self._decompressor.is_finished() or not self._started

    def feed(self, data: bytes) -> None:
        self._pending += data
        self._started = self._started or bool(data)

    def pull(self, limit: int) -> bytes:
        decompressor = self._decompressor
        if decompressor.is_finished():
            return b""
        # Input may be handed over only when the decoder has emptied its output buffer.
        data = b""
        if self._pending and decompressor.can_accept_more_data():
            data, self._pending = self._pending, b""
        try:
            out = decompressor.process(data, output_buffer_limit=limit)
        except brotli.error as exc:
            raise UndecodableBody("the br data is corrupt") from exc
        if not out and self._pending and decompressor.can_accept_more_data():
            return self.pull(limit)
        return out


class _Zstd:
    def __init__(self) -> None:
        self._decompressor = self._new()
        self._pending = b""
        self._started = False

    @property
    def complete(self) -> bool:
        return (self._decompressor.eof and not self._pending) or not self._started

    @staticmethod
    def _new() -> zstd.ZstdDecompressor:
        return zstd.ZstdDecompressor(
            options={zstd.DecompressionParameter.window_log_max: ZSTD_WINDOW_LOG_MAX}
        )

    def feed(self, data: bytes) -> None:
        self._pending += data
        self._started = self._started or bool(data)

    def pull(self, limit: int) -> bytes:
        decompressor = self._decompressor
        if decompressor.eof:
            rest = decompressor.unused_data + self._pending
            if not rest:
                return b""
            # Another frame follows (a stream may hold several).
            self._decompressor = decompressor = self._new()
            self._pending = rest
        if decompressor.needs_input and not self._pending:
            return b""
        data, self._pending = self._pending, b""
        try:
            return decompressor.decompress(data, limit)
        except zstd.ZstdError as exc:
            raise UndecodableBody(f"the zstd data is corrupt ({exc})") from exc


class _Identity:
    complete = True

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> None:
        self._pending += data

    def pull(self, limit: int) -> bytes:
        out, self._pending = self._pending[:limit], self._pending[limit:]
        return out


def parse_codings(content_encoding: str) -> list[str]:
    """The known codings of a Content-Encoding value, in the order they were applied."""
    codings = []
    for part in content_encoding.split(","):
        name = _ALIASES.get(part.strip().lower(), part.strip().lower())
        if name in SUPPORTED_CODINGS:
            codings.append(name)
    return codings


def _layer(coding: str) -> _Layer:
    if coding == "br":
        return _Brotli()
    if coding == "zstd":
        return _Zstd()
    return _Zlib(coding)


class BodyDecoder:
    """Decode a body sent with ``Content-Encoding: content_encoding``, ``step`` bytes at a time.

    Feed received bytes with :meth:`feed`, then call :meth:`pull` until it returns ``b""``;
    after the last bytes, call :meth:`finish`. Raises :class:`UndecodableBody` at construction
    for more than :data:`MAX_CODINGS` layers, from :meth:`pull` for corrupt data, and from
    :meth:`finish` for a stream that ends early (never half a document).
    """

    def __init__(self, content_encoding: str = "", *, step: int = STEP) -> None:
        codings = parse_codings(content_encoding)
        if len(codings) > MAX_CODINGS:
            raise UndecodableBody(
                f"the body is encoded {len(codings)} times ({', '.join(codings)}); "
                f"at most {MAX_CODINGS} stacked content codings are accepted"
            )
        self.codings = tuple(codings)
        self._step = step
        # The last coding applied is the first to undo.
        layers = [_layer(coding) for coding in reversed(codings)]
        self._layers: list[_Layer] = layers or [_Identity()]

    def feed(self, data: bytes) -> None:
        self._layers[0].feed(data)

    def pull(self) -> bytes:
        """The next decoded piece (about ``step`` bytes at most), or ``b""`` when more input is needed."""
        return self._pull(len(self._layers) - 1)

    def finish(self) -> None:
        """After the last input and the last piece: raise if an encoded stream ended early."""
        for coding, layer in zip(reversed(self.codings), self._layers, strict=False):
            if not layer.complete:
                raise UndecodableBody(f"the {coding} data ends early (the body is truncated)")

    def _pull(self, index: int) -> bytes:
        layer = self._layers[index]
        while True:
            out = layer.pull(self._step)
            if out or index == 0:
                return out
            upstream = self._pull(index - 1)
            if not upstream:
                return b""
            layer.feed(upstream)
