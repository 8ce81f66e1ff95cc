"""Whether an image that failed to decode under a memory cap most likely ran out of memory.

A decode child caps its own address space (:func:`docab_mcpguard.children.cap_address_space`).
Some decoders tell a failed allocation as ``MemoryError``; others as a decoding error: libwebp
cannot create its decoder (Pillow: ``OSError``), a codec's "out of memory" status becomes Pillow's
``OSError`` too. Told as it is, a 1 KB WebP of 6000 x 6000 pixels under a 64 MB cap read "not a
readable image", when a larger cap would have decoded it. So when a decode fails with any error,
the caller asks :func:`short_of_memory` with the size the file declares (its header, read without
decoding: :func:`webp_size` where Pillow's header reader itself allocates the canvas) and names
its cap when the answer is yes; an image that declares few pixels and fails is corrupt.

Measured under a 64 MB cap (Pillow 13, libwebp): a WebP failed to open from about 2400 x 2400
(22 MB as RGBA, a third of the cap: the decoder holds its canvas, the previous frame and Pillow's
copy), and converting or scaling any format holds two or three copies more. Hence
:data:`DECODE_COPIES`: a failure is put down to memory from a quarter of the cap, which at the
servers' default caps (1 to 2 GB) is 64 to 128 megapixels as RGBA.

Pure: no I/O, no Pillow.
"""

from __future__ import annotations

DECODE_COPIES = 4
"""How many copies of the decoded pixels a decode and its conversion hold at their peak (at least)."""

MIN_BYTES_PER_PIXEL = 4
"""Decoders and the servers' conversions work in RGB or RGBA (WebP always decodes to RGBA)."""


def decoded_bytes(width: int, height: int, bytes_per_pixel: int = MIN_BYTES_PER_PIXEL) -> int:
    """The bytes of ``width`` x ``height`` pixels once decoded (at least RGBA)."""
    return max(0, width) * max(0, height) * max(bytes_per_pixel, MIN_BYTES_PER_PIXEL)


def short_of_memory(
    cap_bytes: int, width: int, height: int, bytes_per_pixel: int = MIN_BYTES_PER_PIXEL
) -> bool:
    """True when decoding ``width`` x ``height`` pixels would take a large share of ``cap_bytes``:
    a decode of this size that failed most likely failed for want of memory, not for bad data."""
    return decoded_bytes(width, height, bytes_per_pixel) * DECODE_COPIES >= cap_bytes


def webp_size(data: bytes) -> tuple[int, int] | None:
    """The canvas a WebP declares (VP8X, VP8L or VP8 header), or None when ``data`` is not one."""
    if len(data) < 30 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        return None
    chunk, body = data[12:16], data[20:30]
    if chunk == b"VP8X":  # flags (1), reserved (3), canvas width - 1 (3), height - 1 (3)
        width = 1 + int.from_bytes(body[4:7], "little")
        height = 1 + int.from_bytes(body[7:10], "little")
    elif chunk == b"VP8L" and body[0] == 0x2F:  # signature, then 14 bits each of width - 1, height - 1
        bits = int.from_bytes(body[1:5], "little")
        width, height = 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    elif chunk == b"VP8 " and body[3:6] == b"\x9d\x01\x2a":  # frame tag (3), start code (3), sides
        width = int.from_bytes(body[6:8], "little") & 0x3FFF
        height = int.from_bytes(body[8:10], "little") & 0x3FFF
    else:
        return None
    return (width, height) if width > 0 and height > 0 else None
