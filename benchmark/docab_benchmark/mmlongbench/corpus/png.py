"""A fast lossless PNG writer for rendered pages.

Pillow's PNG encoder tries every row filter on every row and then deflates at level 6; on a
144-dpi page (1224 x 1584 RGB) that costs about five times the rendering itself. Rendered document
pages compress well with the single "Up" filter and a fast deflate: ISA-L's (the ``isal`` package,
about six times faster than zlib level 1, files ~15 % larger than Pillow's) when installed, else
zlib level 1 (files the size of Pillow's). The pixels are identical, only the compression differs.
Pages whose pixels are all grey are written as 8-bit greyscale, which is lossless too (R = G = B
for every pixel) and a third of the data.
"""

from __future__ import annotations

import struct
import zlib
from types import ModuleType
from typing import Final

import numpy as np

_isal: ModuleType | None
try:  # ISA-L deflate: same format, several times faster than zlib at its fast levels
    from isal import isal_zlib as _isal
except ImportError:  # pragma: no cover - docab depends on it
    _isal = None

DEFAULT_LEVEL: Final = 1
_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES: Final = {1: 0, 3: 2, 4: 6}  # channels -> PNG colour type (grey, RGB, RGBA)
_FILTER_UP: Final = 2


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def lossless_grey(rgb: np.ndarray) -> np.ndarray | None:
    """The single-channel view of an RGB image whose pixels are all grey, else None.

    A sparse sample of rows is checked first, so colour pages (the common case) exit cheaply.
    """
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        return None
    sample = rgb[:: max(1, rgb.shape[0] // 64)]
    if not (
        np.array_equal(sample[..., 0], sample[..., 1]) and np.array_equal(sample[..., 1], sample[..., 2])
    ):
        return None
    if np.array_equal(rgb[..., 0], rgb[..., 1]) and np.array_equal(rgb[..., 1], rgb[..., 2]):
        return np.ascontiguousarray(rgb[..., 0])
    return None


def default_codec() -> str:
    return "isal" if _isal is not None else "zlib"


def codec_version(codec: str) -> str:
    if codec == "isal" and _isal is not None:
        from importlib.metadata import version

        return f"isal-{version('isal')}"
    return f"zlib-{zlib.ZLIB_RUNTIME_VERSION}"


def _deflate(data: memoryview, level: int, codec: str) -> bytes:
    if codec == "isal":
        if _isal is None:
            raise ValueError("the 'isal' codec needs the isal package (pip install isal)")
        return bytes(_isal.compress(data, min(max(level, 0), 2)))  # ISA-L level 3 is slow: cap at 2
    if codec == "zlib":
        return zlib.compress(data, level)
    raise ValueError(f"unknown PNG codec {codec!r}; use isal or zlib")


def encode_png(pixels: np.ndarray, *, level: int = DEFAULT_LEVEL, codec: str | None = None) -> bytes:
    """PNG bytes of an 8-bit image: ``(h, w)`` grey, ``(h, w, 3)`` RGB or ``(h, w, 4)`` RGBA.

    Every row uses the "Up" filter; deflate runs at ``level`` (1 by default) with ``codec``
    (``isal`` when installed, else ``zlib``). Deterministic for a given codec build.
    """
    if pixels.dtype != np.uint8:
        raise ValueError(f"expected 8-bit pixels, got {pixels.dtype}")
    channels = 1 if pixels.ndim == 2 else pixels.shape[2]
    if pixels.ndim not in (2, 3) or channels not in _COLOR_TYPES:
        raise ValueError(f"unsupported pixel array shape {pixels.shape}")
    height, width = pixels.shape[:2]
    if height == 0 or width == 0:
        raise ValueError("cannot encode an empty image")
    rows = pixels.reshape(height, width * channels)
    filtered = np.empty((height, width * channels + 1), dtype=np.uint8)
    filtered[:, 0] = _FILTER_UP
    filtered[0, 1:] = rows[0]  # "Up" against the implicit zero row above
    np.subtract(rows[1:], rows[:-1], out=filtered[1:, 1:])  # wraps modulo 256, as PNG wants
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPES[channels], 0, 0, 0)
    return b"".join(
        (
            _SIGNATURE,
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", _deflate(filtered.data, level, codec or default_codec())),
            _chunk(b"IEND", b""),
        )
    )
