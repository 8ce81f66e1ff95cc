"""Turn image bytes into an image block a model can take (pure CPU work, no I/O).

- PNG and JPEG that already fit (size, one frame, no EXIF rotation, within the byte share)
  pass through byte for byte.
- Everything else is decoded once under a pixel cap checked *before* decoding, EXIF-rotated,
  reduced to its first frame and scaled to fit ``max_side``; JPEG sources are decoded with
  DCT scaling (``draft``) when they are much larger than needed.
- When the result is larger than the byte share the caller grants, it is re-encoded as JPEG
  and scaled further until it fits, and :attr:`PreparedImage.reduced` says so.
- SVG is parsed with expat (no entity declarations, no external entities) under limits on depth,
  elements and text that stop the parse as soon as one is passed, its costly filter parameters are
  checked (:class:`SvgLimits`), external references (which resvg would read from the local disk)
  are removed, and it is rendered into the ``max_side`` box by resvg in a child process with time
  and memory limits (:mod:`md_vision.sandbox`; the renderer is a parameter).

Failures raise :class:`ImageRejected` whose message is a short reason fit for a placeholder.
"""

from __future__ import annotations

import base64
import gzip
import io
import math
import re
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from PIL import Image, ImageOps, UnidentifiedImageError

from docab_mcpguard import jpeg
from md_vision.errors import ImageRejected, UndecodableImage

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

RASTER_FORMATS = ("PNG", "JPEG", "GIF", "WEBP", "BMP", "TIFF")
_PASS_THROUGH = {"PNG": "image/png", "JPEG": "image/jpeg"}
_SMALL_LOSSLESS_PIXELS = 1_000_000  # below this, lossless sources stay PNG
_FIRST_JPEG_QUALITY = 85
_BUDGET_JPEG_QUALITY = 72
_Q85_OVER_Q72 = 1.4  # JPEG size at quality 85 relative to 72 (measured on drawings and photos)
_MIN_SIDE = 160  # an image that only fits below this is dropped instead of shown unreadable
_SVG_TAG = re.compile(rb"<svg[\s>]", re.I)
_XLINK = "{http://www.w3.org/1999/xlink}href"

# Our own pixel check runs first and is the one that applies; Pillow's warning would only add
# noise on stderr.
warnings.simplefilter("ignore", Image.DecompressionBombWarning)


SvgRenderer: TypeAlias = Callable[[str, int, int], bytes]  # (clean SVG, width, height) -> PNG
# (data, max_side, max_pixels, byte_budget) -> prepare_image's answer, decoded elsewhere (a child)
RasterDecoder: TypeAlias = Callable[[bytes, int, int, "int | None"], "PreparedImage"]
CORRUPT = "the image data is corrupt or truncated and could not be decoded"
IN_PROCESS_PIXELS = 4_000_000  # a decode of more pixels goes to the raster_decoder, if one is given


@dataclass(frozen=True, slots=True)
class SvgLimits:
    """What an SVG may hold before it is rendered. resvg on a 400x300 canvas
    (``uv run python -m tests.perf.svg_costs``): 250 nested groups overflow its stack (200 render);
    50,000 rectangles take about a second, 20,000 characters of text 2-4 s, feTurbulence grows by
    about 0.15 s an octave, feMorphology with the square of its radius (radius 20: 3 s),
    feConvolveMatrix with the square of its order (order 20: 1.4 s); each grows with the canvas,
    up to 20 times larger at 1568 px. What passes is still rendered under a time and memory limit
    (:mod:`md_vision.sandbox`)."""

    max_depth: int = 128
    max_elements: int = 50_000
    max_text_chars: int = 20_000
    max_turbulence_octaves: int = 10
    max_morphology_radius: float = 10.0
    max_convolve_order: int = 9


@dataclass(frozen=True, slots=True)
class PreparedImage:
    data: bytes
    mime_type: str
    width: int
    height: int
    source_format: str  # PNG, JPEG, SVG, ...
    source_width: int
    source_height: int
    passthrough: bool = False  # the original bytes, untouched
    reduced: bool = False  # scaled or compressed beyond the usual to fit the byte share

    def describe(self) -> str:
        """e.g. ``2000x1500 PNG sent as 1180x885 JPEG``."""
        source = f"{self.source_width}x{self.source_height} {self.source_format}"
        if self.passthrough:
            return f"{source}, sent unchanged"
        kind = self.mime_type.split("/", 1)[1].upper()
        return f"{source} sent as {self.width}x{self.height} {kind}"

    @property
    def encoded_size(self) -> int:
        """Size once base64-encoded, as it travels in the response."""
        return 4 * math.ceil(len(self.data) / 3)


def looks_like_svg(data: bytes, name: str = "") -> bool:
    lowered = name.lower().split("?", 1)[0]
    if lowered.endswith((".svg", ".svgz")):
        return True
    if data[:2] == b"\x1f\x8b":
        return lowered.endswith(".svgz")
    head = data[:4096].lstrip(b"\xef\xbb\xbf").lstrip()
    return head.startswith(b"<") and bool(_SVG_TAG.search(head))


def prepare_image(
    data: bytes,
    *,
    name: str = "",
    max_side: int = 1568,
    max_pixels: int = 50_000_000,
    byte_budget: int | None = None,
    svg_limits: SvgLimits | None = None,
    svg_renderer: SvgRenderer | None = None,
    raster_decoder: RasterDecoder | None = None,
    decode_budget: Callable[[int], None] | None = None,
) -> PreparedImage:
    """Make ``data`` sendable within ``max_side`` and ``byte_budget`` (raw bytes) or raise.
    ``svg_limits`` and ``svg_renderer``: see :func:`render_svg`. A raster image is first charged
    its decoded pixels (``decode_budget``, which may raise); one of more than IN_PROCESS_PIXELS is
    prepared by ``raster_decoder`` (a child process under a memory cap) when one is given."""
    if looks_like_svg(data, name):
        png, size = render_svg(
            data, max_side=max_side, max_pixels=max_pixels, limits=svg_limits, renderer=svg_renderer
        )
        prepared = _prepare_raster(png, max_side=max_side, max_pixels=max_pixels, byte_budget=byte_budget)
        return _relabel(prepared, "SVG", size)
    return _prepare_raster(data, max_side, max_pixels, byte_budget, raster_decoder, decode_budget)


def _relabel(prepared: PreparedImage, source_format: str, size: tuple[int, int]) -> PreparedImage:
    return PreparedImage(
        data=prepared.data,
        mime_type=prepared.mime_type,
        width=prepared.width,
        height=prepared.height,
        source_format=source_format,
        source_width=size[0],
        source_height=size[1],
        passthrough=False,
        reduced=prepared.reduced,
    )


def _open(data: bytes, max_pixels: int) -> Image.Image:
    try:
        image = Image.open(io.BytesIO(data), formats=RASTER_FORMATS)
    except Image.DecompressionBombError as exc:
        raise ImageRejected(f"too many pixels (over the {max_pixels:,} pixel limit)") from exc
    except UnidentifiedImageError as exc:
        raise ImageRejected("not a recognised image (PNG, JPEG, GIF, WebP, BMP, TIFF or SVG)") from exc
    except MemoryError:  # WebP allocates its canvas on open: under a decode child's memory cap
        raise
    except Exception as exc:  # corrupt headers surface as many exception types
        raise UndecodableImage("the image header could not be read") from exc
    width, height = image.size
    if width <= 0 or height <= 0:
        raise ImageRejected("the image has no pixels")
    if width * height > max_pixels:
        raise ImageRejected(
            f"{width}x{height} is {width * height:,} pixels, over the {max_pixels:,} pixel limit "
            "(decompression-bomb guard)"
        )
    return image


def _decodes(image: Image.Image) -> bool:
    """Decode fully before passing bytes through: a broken image can make a client drop the turn."""
    try:
        image.load()
    except Exception as exc:
        raise UndecodableImage(CORRUPT) from exc
    return True


def _orientation(image: Image.Image) -> int:
    try:
        return int(image.getexif().get(0x0112, 1) or 1)
    except Exception:
        return 1


def _fit(size: tuple[int, int], side: int) -> tuple[int, int]:
    width, height = size
    scale = min(1.0, side / max(width, height))
    return max(1, round(width * scale)), max(1, round(height * scale))


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (
        image.mode == "P" and "transparency" in image.info
    )


def _encode(image: Image.Image, kind: str, quality: int = _FIRST_JPEG_QUALITY) -> bytes:
    buffer = io.BytesIO()
    if kind == "PNG":
        level = 6 if image.width * image.height <= _SMALL_LOSSLESS_PIXELS else 1
        image.save(buffer, "PNG", compress_level=level)
    else:
        image.save(buffer, "JPEG", quality=quality, optimize=False)
    return buffer.getvalue()


def _flatten(image: Image.Image) -> Image.Image:
    if image.mode in ("RGB", "L"):
        return image
    if _has_alpha(image):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")


def _prepare_raster(
    data: bytes,
    max_side: int,
    max_pixels: int,
    byte_budget: int | None,
    decoder: RasterDecoder | None = None,
    decode_budget: Callable[[int], None] | None = None,
) -> PreparedImage:
    image = _open(data, max_pixels)
    source_format = image.format or "image"
    if source_format == "JPEG" and jpeg.scan_count(data) > jpeg.MAX_SCANS:
        raise ImageRejected(
            f"the JPEG has more than {jpeg.MAX_SCANS} scans (an ordinary one has about 10, and each "
            "costs a pass over the whole image), so it was not decoded"
        )
    source_size = image.size
    frames = getattr(image, "n_frames", 1) or 1
    orientation = _orientation(image)
    target = _fit(source_size, max_side)
    if source_format == "JPEG" and max(source_size) >= 2 * max(target):
        try:  # DCT scaling: fewer pixels to decode
            image.draft("RGB", (max(target), max(target)))
        except Exception as exc:
            raise UndecodableImage(CORRUPT) from exc
    if decode_budget is not None:
        decode_budget(image.size[0] * image.size[1])
    if decoder is not None and image.size[0] * image.size[1] > IN_PROCESS_PIXELS:
        return decoder(data, max_side, max_pixels, byte_budget)
    budget = byte_budget if byte_budget is not None else len(data) + (1 << 40)
    if (
        source_format in _PASS_THROUGH
        and frames == 1
        and orientation == 1
        and max(source_size) <= max_side
        and len(data) <= budget
        and not (source_format == "JPEG" and image.mode not in ("RGB", "L"))
        and _decodes(image)
    ):
        return PreparedImage(
            data=data,
            mime_type=_PASS_THROUGH[source_format],
            width=source_size[0],
            height=source_size[1],
            source_format=source_format,
            source_width=source_size[0],
            source_height=source_size[1],
            passthrough=True,
        )
    try:  # (a JPEG's draft() above asks for the square box: rotation by 90 degrees swaps sides)
        image.seek(0)
        image.load()
        image = ImageOps.exif_transpose(image) or image
        if image.mode not in ("RGB", "RGBA", "L", "LA", "P", "PA") or image.mode in ("P", "PA"):
            image = image.convert("RGBA" if _has_alpha(image) else "RGB")
    except (ImageRejected, MemoryError):  # MemoryError: under a decode child's cap (md_vision.sandbox)
        raise
    except Exception as exc:
        raise UndecodableImage(CORRUPT) from exc

    target = _fit(image.size, max_side)
    lossless = source_format != "JPEG"
    if _has_alpha(image) or (lossless and target[0] * target[1] <= _SMALL_LOSSLESS_PIXELS):
        image = _resize(image, target)
        encoded, mime = _encode(image, "PNG"), "image/png"
        reduced = False
        if len(encoded) > budget:
            encoded, image = _shrink_to(image, budget)
            mime, reduced = "image/jpeg", True
    else:
        image = _flatten(image)
        # Probe the compressibility on a small copy: JPEG bytes per pixel barely change with
        # scale, so one probe picks a size that fits instead of encoding and shrinking in turns.
        per_pixel = _bytes_per_pixel(image, _BUDGET_JPEG_QUALITY)
        natural = per_pixel * target[0] * target[1] * _Q85_OVER_Q72
        if natural <= budget * 0.9:
            image = _resize(image, target)
            encoded, reduced = _encode(image, "JPEG"), False
            if len(encoded) > budget:
                encoded, image = _shrink_to(image, budget)
                reduced = True
        else:
            scale = min(1.0, math.sqrt(budget * 0.95 / (per_pixel * target[0] * target[1])))
            size = (max(1, int(target[0] * scale)), max(1, int(target[1] * scale)))
            if max(size) < _MIN_SIDE:
                raise ImageRejected(
                    f"it does not fit in what is left of the response budget ({budget:,} bytes)"
                )
            image = _resize(image, size, for_budget=True)
            encoded, reduced = _encode(image, "JPEG", _BUDGET_JPEG_QUALITY), True
            if len(encoded) > budget:
                encoded, image = _shrink_to(image, budget)
        mime = "image/jpeg"
    return PreparedImage(
        data=encoded,
        mime_type=mime,
        width=image.width,
        height=image.height,
        source_format=source_format,
        source_width=source_size[0],
        source_height=source_size[1],
        reduced=reduced,
    )


def _resize(image: Image.Image, size: tuple[int, int], *, for_budget: bool = False) -> Image.Image:
    if size == image.size:
        return image
    if for_budget:
        # The byte budget only bounds the size. When a whole-number reduction lands within 15%
        # under it (a 2000 px drawing squeezed to about 1000 px), average blocks of pixels
        # instead: as sharp, and several times faster than resampling the full image.
        factor = math.ceil(max(image.width / size[0], image.height / size[1]))
        if factor >= 2 and min(image.width / factor / size[0], image.height / factor / size[1]) >= 0.85:
            return image.reduce(factor)
    # Bilinear with Pillow's area-aware support is sharp enough for text in downscaled
    # drawings and about twice as fast as bicubic; reducing_gap lets Pillow box-reduce first.
    return image.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)


def _bytes_per_pixel(image: Image.Image, quality: int) -> float:
    factor = max(1, max(image.size) // 512)
    probe = image.reduce(factor) if factor > 1 else image
    return len(_encode(probe, "JPEG", quality)) / (probe.width * probe.height)


def _shrink_to(image: Image.Image, budget: int) -> tuple[bytes, Image.Image]:
    """JPEG, then smaller JPEGs, until the bytes fit ``budget``; sizes scale with pixel count."""
    image = _flatten(image)
    encoded = _encode(image, "JPEG", _BUDGET_JPEG_QUALITY)
    for _attempt in range(6):
        if len(encoded) <= budget:
            return encoded, image
        scale = math.sqrt(budget / len(encoded)) * 0.92
        size = (max(1, int(image.width * scale)), max(1, int(image.height * scale)))
        if max(size) < _MIN_SIDE:
            break
        image = _resize(image, size, for_budget=True)
        encoded = _encode(image, "JPEG", _BUDGET_JPEG_QUALITY)
    if len(encoded) <= budget:
        return encoded, image
    raise ImageRejected(f"it does not fit in what is left of the response budget ({budget:,} bytes)")


# --- SVG ------------------------------------------------------------------------------------

_UNITS = {"": 1.0, "px": 1.0, "pt": 4 / 3, "pc": 16.0, "mm": 96 / 25.4, "cm": 96 / 2.54, "in": 96.0}
_LENGTH = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-z]*)\s*$")


def _length(value: str | None) -> float | None:
    if not value:
        return None
    match = _LENGTH.match(value)
    if not match or match.group(2) not in _UNITS:
        return None
    number = float(match.group(1)) * _UNITS[match.group(2)]
    return number if number > 0 else None


def _natural_size(root: ET.Element) -> tuple[float, float] | None:
    width, height = _length(root.get("width")), _length(root.get("height"))
    box = (root.get("viewBox") or "").replace(",", " ").split()
    view = None
    if len(box) == 4:
        try:
            view = (float(box[2]), float(box[3]))
        except ValueError:
            view = None
        if view and (view[0] <= 0 or view[1] <= 0):
            view = None
    if width and height:
        return width, height
    if view:
        if width:
            return width, width * view[1] / view[0]
        if height:
            return height * view[0] / view[1], height
        return view
    return None


def _safe_data_image(href: str, max_pixels: int) -> bool:
    """An embedded raster image is kept only if its header passes the pixel cap."""
    if not href.startswith("data:image/") or "svg" in href[:30].lower() or ";base64," not in href[:100]:
        return False
    try:
        raw = base64.b64decode(href.split(",", 1)[1], validate=False)
        _open(raw, max_pixels)
    except Exception:
        return False
    return True


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


class _TreeRefused(Exception):
    """Raised inside the XML parser's handlers: the tree is over a limit (the message says which)."""


def parse_svg(text: str, limits: SvgLimits) -> ET.Element:
    """Parse SVG text into a tree with expat, refusing entity declarations and external entities
    and stopping as soon as the tree nests deeper, holds more elements or more text than
    ``limits`` allow (so a hostile file never becomes a large tree). Raises :class:`ImageRejected`."""
    import xml.etree.ElementTree as ET
    from xml.parsers import expat

    parser = expat.ParserCreate(namespace_separator="}")
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    builder = ET.TreeBuilder()
    depth = elements = text_chars = in_text = 0

    def name(raw: str) -> str:  # expat's "uri}local" as ElementTree spells it: "{uri}local"
        return "{" + raw if "}" in raw else raw

    def start(tag: str, attributes: dict[str, str]) -> None:
        nonlocal depth, elements, in_text
        depth += 1
        elements += 1
        if depth > limits.max_depth:
            raise _TreeRefused(f"the SVG nests elements more than {limits.max_depth} deep (its limit)")
        if elements > limits.max_elements:
            raise _TreeRefused(f"the SVG has more than {limits.max_elements:,} elements (its limit)")
        if _local(tag) == "text":
            in_text += 1
        builder.start(name(tag), {name(key): value for key, value in attributes.items()})

    def end(tag: str) -> None:
        nonlocal depth, in_text
        depth -= 1
        if _local(tag) == "text":
            in_text -= 1
        builder.end(name(tag))

    def data(chars: str) -> None:
        nonlocal text_chars
        if in_text:
            text_chars += len(chars)
            if text_chars > limits.max_text_chars:
                raise _TreeRefused(
                    f"the SVG has more than {limits.max_text_chars:,} characters of text (its limit)"
                )
        builder.data(chars)

    def refuse_entities(*_args: object) -> None:
        raise _TreeRefused("SVG files that declare XML entities are not rendered")

    def refuse_external(*_args: object) -> int:
        raise _TreeRefused("SVG files that refer to external entities are not rendered")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = data
    parser.EntityDeclHandler = refuse_entities
    parser.UnparsedEntityDeclHandler = refuse_entities
    parser.ExternalEntityRefHandler = refuse_external
    try:
        parser.Parse(text, True)
    except _TreeRefused as exc:
        raise ImageRejected(str(exc)) from None
    except expat.ExpatError as exc:
        raise ImageRejected("the SVG is not well-formed XML") from exc
    return builder.close()


def _numbers(value: str | None) -> list[float]:
    """The numbers of an attribute such as ``radius="3 4"``; [] when it holds none."""
    found: list[float] = []
    for part in (value or "").replace(",", " ").split():
        try:
            number = float(part)
        except ValueError:
            continue
        if math.isfinite(number):
            found.append(number)
        else:
            found.append(math.inf)
    return found


def check_svg_filters(root: ET.Element, limits: SvgLimits) -> None:
    """Refuse filter primitives whose cost grows with a parameter (octaves of noise, the radius
    of a morphology, the order of a convolution): one such primitive can keep resvg busy for
    minutes. Raises :class:`ImageRejected` naming the primitive and its limit."""
    for element in root.iter():
        kind = _local(str(element.tag))
        if kind == "feTurbulence":
            octaves = _numbers(element.get("numOctaves"))
            if octaves and octaves[0] > limits.max_turbulence_octaves:
                raise ImageRejected(
                    f"the SVG asks feTurbulence for {element.get('numOctaves')} octaves, over the limit of "
                    f"{limits.max_turbulence_octaves}"
                )
        elif kind == "feMorphology":
            radius = _numbers(element.get("radius"))
            if radius and max(radius) > limits.max_morphology_radius:
                raise ImageRejected(
                    f"the SVG asks feMorphology for radius {element.get('radius')}, over the limit of "
                    f"{limits.max_morphology_radius}"
                )
        elif kind == "feConvolveMatrix":
            order = _numbers(element.get("order"))
            kernel = len((element.get("kernelMatrix") or "").replace(",", " ").split())
            side = limits.max_convolve_order
            if (order and max(order) > side) or kernel > side * side:
                raise ImageRejected(
                    f"the SVG asks feConvolveMatrix for order {element.get('order')}, over the limit of {side}"
                )


def _sanitise_svg(text: str, max_pixels: int, limits: SvgLimits) -> ET.Element:
    root = parse_svg(text, limits)
    if not str(root.tag).endswith("svg"):
        raise ImageRejected("the file is not an SVG image")
    check_svg_filters(root, limits)
    # resvg would load <image href="/any/local/file.png"> from disk, outside the allowed paths:
    # keep only references inside the document and small embedded rasters.
    for parent in root.iter():
        for child in list(parent):
            href = (child.get("href") or child.get(_XLINK) or "").strip()
            if not href or href.startswith("#") or child.tag.rsplit("}", 1)[-1] == "a":
                continue  # same-document references, and links (never fetched)
            if child.tag.endswith("}image") and _safe_data_image(href, max_pixels):
                continue
            parent.remove(child)
    return root


def render_svg(
    data: bytes,
    *,
    max_side: int,
    max_pixels: int,
    limits: SvgLimits | None = None,
    renderer: SvgRenderer | None = None,
) -> tuple[bytes, tuple[int, int]]:
    """Render SVG (or SVGZ) to PNG inside the ``max_side`` box; returns PNG and natural size.

    The tree is checked first (:func:`parse_svg`, :func:`check_svg_filters`); ``renderer`` draws
    the cleaned SVG (default: resvg in a child process under time and memory limits,
    :func:`md_vision.sandbox.render_isolated`)."""
    import xml.etree.ElementTree as ET

    limits = limits or SvgLimits()
    if data[:2] == b"\x1f\x8b":
        try:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = inflater.decompress(data, 20 * len(data) + 1_000_000)
            if inflater.unconsumed_tail:
                raise ImageRejected("the compressed SVG expands too much")
        except (zlib.error, gzip.BadGzipFile) as exc:
            raise ImageRejected("the compressed SVG is corrupt") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImageRejected("the SVG is not UTF-8 text") from exc
    root = _sanitise_svg(text, max_pixels, limits)
    natural = _natural_size(root)
    if natural and max(natural) <= max_side:
        width, height = max(1, round(natural[0])), max(1, round(natural[1]))
    elif natural:
        width, height = _fit((max(1, round(natural[0])), max(1, round(natural[1]))), max_side)
    else:
        width = height = max_side  # unknown size: resvg fits the drawing inside this box
    # Never let resvg choose the canvas: a huge width/height would make it abort the process.
    clean = ET.tostring(root, encoding="unicode")
    if renderer is None:
        from md_vision.sandbox import render_isolated

        renderer = render_isolated
    png = renderer(clean, width, height)
    size = (round(natural[0]), round(natural[1])) if natural else (width, height)
    return png, size
