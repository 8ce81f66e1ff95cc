"""Decompression bombs built at test time: N bytes of zeros in any content coding, or a stack.

Built fast, since a test session builds 1 GiB bombs: deflate repeats one compressed block
(after a full flush the compressor starts from scratch, so every 1 MiB of zeros compresses to the
same bytes), the zlib trailer of zeros is arithmetic, brotli and zstd stream their fastest level.
:func:`bomb` caches what it built for the rest of the session.

    body, header = bomb(("gzip", "br"))   # Content-Encoding: gzip, br (gzip applied first)
"""

from __future__ import annotations

import functools
import struct
import sys
import zlib
from collections.abc import Sequence

import brotli

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

GIB = 1 << 30
_BLOCK = 1 << 20
_ZEROS = bytes(_BLOCK)


def _raw_deflate_zeros(size: int) -> bytes:
    assert size % _BLOCK == 0
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = compressor.compress(_ZEROS) + compressor.flush(zlib.Z_FULL_FLUSH)
    again = compressor.compress(_ZEROS) + compressor.flush(zlib.Z_FULL_FLUSH)
    assert block == again  # the trick holds: each block is independent
    return block * (size // _BLOCK) + compressor.flush(zlib.Z_FINISH)


def _gzip_zeros(size: int) -> bytes:
    crc = 0
    for _ in range(size // _BLOCK):
        crc = zlib.crc32(_ZEROS, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + _raw_deflate_zeros(size) + struct.pack("<II", crc, size & 0xFFFFFFFF)


def _zlib_zeros(size: int) -> bytes:
    adler = (size % 65521) << 16 | 1  # a = 1 + sum of bytes = 1; b = size * a
    return b"\x78\xda" + _raw_deflate_zeros(size) + struct.pack(">I", adler)


def _streamed(compressor_process, finish, size: int) -> bytes:  # type: ignore[no-untyped-def]
    parts = [compressor_process(_ZEROS) for _ in range(size // _BLOCK)]
    return b"".join(parts) + finish()


def zeros_in(coding: str, size: int) -> bytes:
    """``size`` bytes of zeros (a multiple of 1 MiB) encoded with ``coding``."""
    if coding == "gzip":
        return _gzip_zeros(size)
    if coding == "deflate":
        return _zlib_zeros(size)
    if coding == "br":
        brotli_compressor = brotli.Compressor(quality=1)
        return _streamed(brotli_compressor.process, brotli_compressor.finish, size)
    if coding == "zstd":
        zstd_compressor = zstd.ZstdCompressor(level=1)
        return _streamed(zstd_compressor.compress, zstd_compressor.flush, size)
    raise ValueError(coding)


def encode(coding: str, data: bytes) -> bytes:
    """``data`` encoded once more with ``coding`` (for the outer layers of a stack)."""
    if coding == "gzip":
        compressor = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        return compressor.compress(data) + compressor.flush()
    if coding == "deflate":
        return zlib.compress(data, 6)
    if coding == "br":
        return brotli.compress(data, quality=5)
    if coding == "zstd":
        return zstd.compress(data, level=3)
    raise ValueError(coding)


@functools.cache
def bomb(codings: Sequence[str] | str, size: int = GIB) -> tuple[bytes, str]:
    """A body of ``size`` zeros encoded with ``codings`` (applied in order) and its Content-Encoding."""
    stack = (codings,) if isinstance(codings, str) else tuple(codings)
    body = zeros_in(stack[0], size)
    for coding in stack[1:]:
        body = encode(coding, body)
    return body, ", ".join(stack)
