"""Make an image acceptable to a provider: check it, convert it, and downscale it when it is too big.

An image that fits (accepted type, within the provider's side and byte limits) is sent byte for
byte as it came (:func:`sent_as_is`: headers and checksums are read, no pixel is decoded).
Otherwise it is decoded once and re-encoded (:func:`reencode`): first frame only, EXIF orientation
applied, types the provider does not take (BMP, TIFF, animated GIF) become PNG, sides over the
limit are scaled down, and an encoding still over the byte limit is retried as JPEG at smaller
scales. Pixels are capped before anything is decoded, so a decompression bomb costs nothing; the
server runs :func:`reencode` in a child process with a memory cap and a deadline
(:mod:`vision_bridge.isolation`), since an image within the pixel cap can still take gigabytes
and minutes to decode.

Pillow is imported inside the functions: the server starts without it.
"""

from __future__ import annotations

import base64
import io
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from docab_mcpguard import decodecost, jpeg
from vision_bridge.errors import DecodeMemoryError, UndecodableImageError, VisionError, input_error
from vision_bridge.inputs import ImageBytes

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

MAX_PIXELS = 100_000_000
"""Largest image, in pixels, the bridge will decode (a 10,000 x 10,000 image)."""

_SAFE_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA"})
_MAX_SHRINK_STEPS = 12


@dataclass(frozen=True)
class ImageLimits:
    """What a backend accepts inline. ``max_bytes`` counts the encoded file, before base64."""

    accepted_mimes: frozenset[str] | None  # None: anything Pillow decodes
    max_bytes: int | None = None
    max_side: int | None = None
    opaque_png: bool = False
    """The backend reads opaque PNG only (Tesseract): every image is decoded, laid over white and
    re-encoded losslessly, so that the backend itself never decodes what a user sent."""

    def with_side_cap(self, side: int | None) -> ImageLimits:
        if side is None:
            return self
        current = self.max_side
        return replace(self, max_side=side if current is None else min(current, side))


@dataclass(frozen=True)
class PreparedImage:
    data: bytes
    mime: str
    width: int
    height: int
    note: str = ""  # what was changed, for ``_meta`` ("" when sent as it came)

    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{self.base64()}"


# Pillow warns past ~89 MP; the pixel cap is the bridge's own decision. Set once, here: a
# catch_warnings() around each open is not thread-safe, and the warning reached stderr when two
# images opened at once. By message, so that Pillow need not be imported to say it.
warnings.filterwarnings("ignore", message=r"Image size \(\d+ pixels\) exceeds limit")

# The formats Pillow may open. Left to guess, it opened any it knows by the bytes, whatever the
# name or data URL said: an EPS ran Ghostscript on the file's PostScript, and JPEG 2000 and ICO
# decoders came with costs of their own. TIFF is what a macOS clipboard gives.
ACCEPTED_FORMATS = ("PNG", "JPEG", "GIF", "WEBP", "BMP", "TIFF")


def _unreadable(origin: str) -> VisionError:
    return UndecodableImageError(
        f"{origin} is not a readable image (accepted: PNG, JPEG, GIF, WebP, BMP, TIFF)"
    )


def _corrupt(origin: str) -> VisionError:
    return UndecodableImageError(f"{origin} is corrupt or truncated and cannot be decoded")


def _over_pixels(origin: str, width: int, height: int, max_pixels: int) -> VisionError:
    return input_error(
        f"{origin} is {width}x{height} = {width * height:,} pixels, over the limit of {max_pixels:,}"
    )


def declared_size(image: ImageBytes) -> tuple[int, int, int] | None:
    """Width, height and bands the file's header declares, read without decoding (a WebP by hand:
    Pillow's reader decodes it on open); None when no header says."""
    from PIL import Image

    webp = decodecost.webp_size(image.data)
    if webp is not None:
        return (*webp, 4)
    try:
        with Image.open(io.BytesIO(image.data), formats=ACCEPTED_FORMATS) as opened:
            return (*opened.size, len(opened.getbands()))
    except Exception:  # MemoryError included: the header is what is asked for, nothing more
        return None


def failure_under_cap(
    image: ImageBytes, error: VisionError, memory_bytes: int, *, max_pixels: int = MAX_PIXELS
) -> VisionError:
    """What a decode that failed with ``error`` under a cap of ``memory_bytes`` should say. Some
    decoders tell a failed allocation as bad data (libwebp "cannot create its decoder"): an image
    whose header declares more pixels than the pixel cap is refused for them, one that declares
    enough to fill the cap (:func:`docab_mcpguard.decodecost.short_of_memory`) is a
    :class:`DecodeMemoryError`, and any other keeps ``error``."""
    if not isinstance(error, UndecodableImageError):
        return error
    declared = declared_size(image)
    if declared is None:
        return error
    width, height, bands = declared
    if width * height > max_pixels:
        return _over_pixels(image.origin, width, height, max_pixels)
    if decodecost.short_of_memory(memory_bytes, width, height, bands):
        return DecodeMemoryError(f"{image.origin} needs more memory to decode than this server has")
    return error


def open_checked(image: ImageBytes, *, max_pixels: int = MAX_PIXELS) -> PILImage:
    """Open (headers only) and check the pixel cap; raise an input error for anything unreadable."""
    from PIL import Image, UnidentifiedImageError

    try:
        opened = Image.open(io.BytesIO(image.data), formats=ACCEPTED_FORMATS)
    except Image.DecompressionBombError:
        raise input_error(f"{image.origin} has more than the limit of {max_pixels:,} pixels") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        raise _unreadable(image.origin) from None
    if opened.format == "JPEG" and jpeg.scan_count(image.data) > jpeg.MAX_SCANS:
        # Each scan is a pass over the whole image: a 250 KB JPEG repeating one scan 5,000 times
        # cost 56 s of CPU to decode, on a thread no timeout can stop.
        raise input_error(
            f"{image.origin} is a progressive JPEG of more than {jpeg.MAX_SCANS} scans, which would be "
            "too slow to decode; send it re-encoded"
        )
    width, height = opened.size
    if width * height > max_pixels:
        raise _over_pixels(image.origin, width, height, max_pixels)
    if width < 1 or height < 1:
        raise _unreadable(image.origin)
    return opened


def load_pixels(
    image: ImageBytes, *, max_pixels: int = MAX_PIXELS, draft_to: tuple[int, int] | None = None
) -> PILImage:
    """Decode the first frame with EXIF orientation applied; input error when the data is corrupt."""
    from PIL import ImageOps

    opened = open_checked(image, max_pixels=max_pixels)
    try:
        if draft_to is not None and opened.format == "JPEG":
            # JPEG can decode straight at 1/2, 1/4 or 1/8 scale: much faster for big photos.
            opened.draft("RGB", draft_to)
        opened.seek(0)
        opened.load()
        oriented = ImageOps.exif_transpose(opened)
    except (OSError, ValueError, SyntaxError, EOFError):
        raise _corrupt(image.origin) from None
    except MemoryError:  # a strip of 100,000,000 x 1 pixels, within the pixel cap
        raise DecodeMemoryError(f"{image.origin} needs more memory to decode than this server has") from None
    if oriented.mode not in _SAFE_MODES:
        oriented = oriented.convert("RGBA" if "A" in oriented.getbands() else "RGB")
    return oriented


def _encode(picture: PILImage, fmt: str) -> bytes:
    buffer = io.BytesIO()
    if fmt == "JPEG":
        flatten_over_white(picture).save(buffer, "JPEG", quality=88, optimize=True)
    else:
        picture.save(buffer, "PNG", optimize=False, compress_level=6)
    return buffer.getvalue()


def _scaled(size: tuple[int, int], scale: float) -> tuple[int, int]:
    return max(1, round(size[0] * scale)), max(1, round(size[1] * scale))


def flatten_over_white(picture: PILImage) -> PILImage:
    """An opaque ``L`` or ``RGB`` picture: transparent pixels over white, so that dark text on a
    transparent background stays visible to an OCR engine."""
    from PIL import Image

    if picture.mode in ("RGBA", "LA") or (picture.mode == "P" and "transparency" in picture.info):
        rgba = picture.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    return picture if picture.mode in ("L", "RGB") else picture.convert("RGB")


def prepare_image(image: ImageBytes, limits: ImageLimits, *, max_pixels: int = MAX_PIXELS) -> PreparedImage:
    """Return the image in a form ``limits`` accepts; downscale rather than refuse. In this
    process: a library user's choice; the server decodes in a child (:mod:`vision_bridge.isolation`)."""
    as_is = sent_as_is(image, limits, max_pixels=max_pixels)
    return as_is if as_is is not None else reencode(image, limits, max_pixels=max_pixels)


def sent_as_is(
    image: ImageBytes, limits: ImageLimits, *, max_pixels: int = MAX_PIXELS
) -> PreparedImage | None:
    """The image as it came when ``limits`` accept it so (its type, sides and bytes), else None: it
    must be re-encoded. Reads headers and checksums only; an input error for anything unreadable."""
    from PIL import Image

    opened = open_checked(image, max_pixels=max_pixels)
    mime = Image.MIME.get(opened.format or "", "")
    width, height = opened.size
    try:
        # Counting frames reads past the first: a corrupt animated GIF raised IndexError here.
        animated = bool(getattr(opened, "is_animated", False))
    except Exception:
        raise _corrupt(image.origin) from None
    if limits.opaque_png or not mime or animated:
        return None
    if limits.max_side is not None and max(width, height) > limits.max_side:
        return None
    if limits.accepted_mimes is not None and mime not in limits.accepted_mimes:
        return None
    if limits.max_bytes is not None and len(image.data) > limits.max_bytes:
        return None
    try:
        opened.verify()  # checks PNG chunk CRCs and structure without decoding
    except Exception:
        raise _corrupt(image.origin) from None
    return PreparedImage(image.data, mime, width, height)


def reencode(image: ImageBytes, limits: ImageLimits, *, max_pixels: int = MAX_PIXELS) -> PreparedImage:
    """Decode the image and encode it again as ``limits`` require (see the module's docstring)."""
    from PIL import Image

    opened = open_checked(image, max_pixels=max_pixels)
    fmt = opened.format or ""
    mime = Image.MIME.get(fmt, "")
    width, height = opened.size
    animated = bool(getattr(opened, "is_animated", False))
    longest = max(width, height)
    scale = 1.0
    if limits.max_side is not None and longest > limits.max_side:
        scale = limits.max_side / longest
    # EXIF orientations 5-8 turn the picture a quarter: its sides swap once it is upright.
    orientation = opened.getexif().get(0x0112, 1)
    upright = (height, width) if orientation in (5, 6, 7, 8) else (width, height)
    target = _scaled(upright, scale)
    picture = load_pixels(
        image, max_pixels=max_pixels, draft_to=_scaled((width, height), scale) if scale < 1 else None
    )
    if picture.size != target:
        picture = picture.resize(target, Image.Resampling.LANCZOS)
    if limits.opaque_png:
        picture = flatten_over_white(picture)
    # Photos stay JPEG; screenshots, diagrams and text stay lossless (and what an OCR engine reads).
    out_fmt = "JPEG" if fmt == "JPEG" and not limits.opaque_png else "PNG"
    data = _encode(picture, out_fmt)
    steps = 0
    while limits.max_bytes is not None and len(data) > limits.max_bytes:
        if out_fmt == "PNG" and not limits.opaque_png:  # an OCR engine reads lossless pixels best
            out_fmt = "JPEG"
        else:
            scale *= 0.75
            picture = picture.resize(_scaled(picture.size, 0.75), Image.Resampling.LANCZOS)
        data = _encode(picture, out_fmt)
        steps += 1
        if steps > _MAX_SHRINK_STEPS:
            raise input_error(f"{image.origin} could not be made smaller than {limits.max_bytes:,} bytes")
    changes: list[str] = []
    if picture.size != upright:
        changes.append(f"downscaled from {upright[0]}x{upright[1]} to {picture.size[0]}x{picture.size[1]}")
    new_mime = "image/jpeg" if out_fmt == "JPEG" else "image/png"
    if new_mime != mime or animated:
        changes.append(
            f"converted from {fmt or 'unknown'}{' (animated, first frame)' if animated else ''} to {out_fmt}"
        )
    if not changes and not limits.opaque_png:
        changes.append(f"re-encoded to fit {limits.max_bytes:,} bytes")
    return PreparedImage(data, new_mime, picture.size[0], picture.size[1], note="; ".join(changes))
