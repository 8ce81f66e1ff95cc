"""The read behind ``read_md_with_images``: a section or line range of a document, within a token
budget, with its images prepared (local, remote, data URIs, SVGs rendered in a child process)
and inlined after the lines that reference them."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import io
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from PIL import Image

from docab_mcpguard import decodecost
from md_vision.cache import SharedWork, SizedLRU
from md_vision.datauri import MIN_ELIDED_CHARS, elide, placeholder, shown_chars
from md_vision.document import Document, ImageRef
from md_vision.errors import ImageRejected, UndecodableImage
from md_vision.imaging import RASTER_FORMATS, PreparedImage, RasterDecoder, SvgRenderer, prepare_image
from md_vision.loading import Loader
from md_vision.paging import (
    char_budget,
)
from md_vision.results import Block, ImageBlock, ReadResult, TextBlock, ToolFailure
from md_vision.sandbox import RenderLimits, decode_isolated, render_isolated
from md_vision.selection import Selection, SelectionError, select
from md_vision.sources import (
    MAX_SHOWN_REFERENCE,
    DataImage,
    Handover,
    ImageRefused,
    ImageTarget,
    LoadedMarkdown,
    LocalFile,
    LocalImage,
    RemoteFile,
    RemoteImage,
    SourceError,
    fetch_image,
    open_image,
    read_image_file,
    resolve_image,
)

_BLOCK_OVERHEAD = 120  # JSON framing per content block, counted against the response budget
_MIN_IMAGE_SHARE = 12_000  # below this many encoded bytes per image, images are not attempted


@dataclass
class _Slot:
    image: ImageRef
    block_index: int
    budget: int = 0  # raw bytes
    outcome: list[Block] = field(default_factory=list)


_NOTES_RESERVE = 1_200  # characters of a page's budget kept for its notes


_LABEL_CHARS = 100  # an image label's words around its path, and the block's framing


def _elide_data_uris(
    text: str, following: list[_Slot], shown_before: int, skipped_targets: set[str]
) -> list[Block]:
    """``text`` (a source block) with its long data URIs as placeholders naming the image block
    that carries each: one of ``following`` (the images placed after this block's last line),
    numbered after the ``shown_before`` images already in the result."""
    unused = list(following)

    def describe(uri: str) -> str:
        number = shown_before
        for slot in unused:
            carried = any(isinstance(block, ImageBlock) for block in slot.outcome)
            if slot.image.target == uri:
                unused.remove(slot)
                if carried:
                    return placeholder(uri, number + 1)
                return placeholder(uri, None, "the image could not be shown; the line after says why")
            number += carried
        if uri in skipped_targets:
            return placeholder(uri, None, "beyond max_images; raise max_images to see the image")
        return placeholder(uri, None, "not an image shown here")

    return [
        TextBlock(piece.text) if piece.original is None else TextBlock(piece.text, "data-uri", piece.original)
        for piece in elide(text, describe)
    ]


def _text_chars(blocks: list[Block]) -> int:
    return sum(len(block.text) for block in blocks if isinstance(block, TextBlock))


def _source_bytes(blocks: list[Block]) -> int:
    """Bytes of source a read carries: its text, and the data URIs its placeholders stand for."""
    return sum(
        len((block.original or block.text).encode("utf-8", "surrogatepass"))
        for block in blocks
        if isinstance(block, TextBlock)
    )


def _cut_text(blocks: list[Block], budget: int, raw_budget: int) -> list[Block]:
    """The blocks with their text cut after ``budget`` characters (images kept); an elided data URI
    that would take the result over ``raw_budget`` bytes is not carried (its placeholder stays)."""
    out: list[Block] = []
    used = raw = 0
    for block in blocks:
        if isinstance(block, ImageBlock):
            out.append(block)
            continue
        room = budget - used
        if room <= 0:
            continue
        if len(block.text) > room:
            if block.role == "data-uri":
                continue  # a placeholder is never cut in two
            block = replace(block, text=block.text[:room])
        size = len((block.original or block.text).encode("utf-8", "surrogatepass"))
        if block.original and raw + size > raw_budget:
            block = replace(block, original="")
            size = len(block.text)
        out.append(block)
        used += len(block.text)
        raw += size
    return out


def _size_of_prepared(prepared: PreparedImage) -> int:
    return len(prepared.data) + 256


class OverReadBudget(ImageRejected):
    """This read has decoded its share of pixels (not remembered: another read may show it)."""


class PixelBudget:
    """The pixels one read may decode, all its images together (``--max-read-pixels``): a section
    of fifty 2 KB images of 50 MP each would otherwise hold the image lane for a minute."""

    def __init__(self, pixels: int) -> None:
        self._left = pixels
        self._total = pixels
        self._lock = threading.Lock()  # charged from the image lane's threads

    def charge(self, pixels: int) -> None:
        with self._lock:
            if pixels > self._left:
                raise OverReadBudget(
                    f"this read has decoded its {self._total:,} pixels (--max-read-pixels) and this image "
                    f"has {pixels:,}; read it with fewer images (max_images) or a smaller section"
                )
            self._left -= pixels


def declared_size(data: bytes) -> tuple[int, int, int] | None:
    """Width, height and bands the image's header declares, read without decoding (a WebP by hand:
    Pillow's reader decodes it as it opens it); None when no header says."""
    webp = decodecost.webp_size(data)
    if webp is not None:
        return (*webp, 4)
    try:
        with Image.open(io.BytesIO(data), formats=RASTER_FORMATS) as opened:
            return (*opened.size, len(opened.getbands()))
    except Exception:  # MemoryError included: only the header is asked for
        return None


def failure_under_cap(data: bytes, error: UndecodableImage, memory_bytes: int, max_pixels: int) -> Exception:
    """What a decode that failed with ``error`` in a child capped at ``memory_bytes`` should raise.
    Some decoders tell a failed allocation as bad data (libwebp cannot create its decoder): an
    image whose header declares more than ``max_pixels`` is refused for them, one that declares
    enough to fill the cap (:func:`docab_mcpguard.decodecost.short_of_memory`) raises MemoryError
    (the sandbox names the cap), and any other keeps ``error``."""
    declared = declared_size(data)
    if declared is None:
        return error
    width, height, bands = declared
    if width * height > max_pixels:
        return ImageRejected(
            f"{width}x{height} is {width * height:,} pixels, over the {max_pixels:,} pixel limit "
            "(decompression-bomb guard)"
        )
    if decodecost.short_of_memory(memory_bytes, width, height, bands):
        return MemoryError(f"{width}x{height} pixels do not decode within {memory_bytes:,} bytes")
    return error


def _decode_here(
    data: bytes, max_side: int, max_pixels: int, byte_budget: int | None, memory_bytes: int
) -> bytes:
    """The child's work (:func:`decode_in_child`): prepare the image, answer a JSON header line
    and its bytes. A decoder's failure is checked against the child's cap (``memory_bytes``)."""
    try:
        prepared = prepare_image(data, max_side=max_side, max_pixels=max_pixels, byte_budget=byte_budget)
    except UndecodableImage as exc:
        told = failure_under_cap(data, exc, memory_bytes, max_pixels)
        if told is exc:
            raise
        raise told from exc
    fields = {name: getattr(prepared, name) for name in _HEADER_FIELDS}
    return json.dumps(fields).encode() + b"\n" + prepared.data


_HEADER_FIELDS = (
    "mime_type", "width", "height", "source_format", "source_width", "source_height", "passthrough", "reduced",
)  # fmt: skip


def decode_in_child(
    data: bytes,
    max_side: int,
    max_pixels: int,
    byte_budget: int | None,
    *,
    limits: RenderLimits,
    cancelled: threading.Event | None = None,
) -> PreparedImage:
    """:func:`prepare_image` of a large raster image in a child process under ``limits`` (memory
    and time, :func:`md_vision.sandbox.decode_isolated`); raises :class:`ImageRejected`."""
    work = functools.partial(_decode_here, data, max_side, max_pixels, byte_budget, limits.memory_bytes)
    answer = decode_isolated(work, limits, cancelled=cancelled)
    header, _, encoded = answer.partition(b"\n")
    try:
        fields = json.loads(header)
        return PreparedImage(data=encoded, **{name: fields[name] for name in _HEADER_FIELDS})
    except (ValueError, KeyError, TypeError) as exc:
        raise ImageRejected("the image decoder answered something unreadable") from exc


class Reader:
    """Reads sections with their images; documents come from ``loader``."""

    def __init__(self, loader: Loader) -> None:
        self._loader = loader
        limits = loader.settings.limits
        self._images: SizedLRU[PreparedImage] = SizedLRU(160_000_000, _size_of_prepared)
        # Images that could not be prepared (an SVG that ran out of time, a corrupt file), by the
        # same keys: a hostile image costs its time once, not once per reference and per read.
        self._refusals: SizedLRU[str] = SizedLRU(1_000)
        self._preparing: SharedWork[PreparedImage] = SharedWork()
        self._render_limits = RenderLimits(limits.svg_render_s, limits.svg_memory_mb * 1_000_000)
        self._decode_limits = RenderLimits(limits.svg_render_s, limits.decode_memory_mb * 1_000_000)

    async def read(
        self,
        uri: str,
        section: str | None = None,
        line_range: tuple[int, int] | list[int] | None = None,
        max_images: int = 10,
        *,
        max_tokens: int | None = None,
        raw_data_uris: bool | None = None,
    ) -> ReadResult:
        """The read behind ``read_md_with_images``; raises :class:`ToolFailure`.

        The text stays within ``max_tokens`` (default: ``--max-result-tokens``): a longer selection
        is read up to a line end and ``next_line_range`` names the rest. Long ``data:`` URIs are
        placeholders in the text unless ``raw_data_uris`` (default: the server's
        ``--raw-data-uris``; :mod:`md_vision.datauri`).
        """
        if not 0 <= max_images <= 50:
            raise ToolFailure("max_images must be between 0 and 50")
        if line_range is not None and len(line_range) != 2:
            raise ToolFailure("line_range must be two integers: [start, end] (1-based, inclusive)")
        tokens = self._loader.result_tokens(max_tokens)
        try:
            loaded, document = await self._loader.load(uri)
            selection = select(
                document, section=section, line_range=line_range, name=self._loader.shown(loaded.location)
            )
        except (SourceError, SelectionError) as exc:
            raise ToolFailure(str(exc)) from exc
        raw = self._loader.settings.raw_data_uris if raw_data_uris is None else raw_data_uris
        return await self._read_selection(
            loaded, document, selection, max_images, tokens=tokens, raw_data_uris=raw
        )

    def _page_end(
        self, document: Document, selection: Selection, budget: int, raw_budget: int, raw_data_uris: bool
    ) -> int:
        """Last line of the page that starts the selection: as many whole lines as fit both the
        token budget (``budget`` characters, data URIs counted as their placeholders, each image
        with its label) and the response limit (``raw_budget`` bytes of source), at least one."""
        first, last = selection.first, selection.last
        whole = document.char_count_of(first, last)
        if whole <= budget and whole * 4 <= raw_budget:
            return last  # the common case: the whole selection fits, nothing to measure
        starts = document.line_starts
        image_lines: dict[int, int] = {}
        for image in document.images_between(first, last):
            label = min(len(image.target), MAX_SHOWN_REFERENCE) + _LABEL_CHARS
            image_lines[image.line] = image_lines.get(image.line, 0) + label
        fitting = shown = raw = 0
        for line in range(first, last + 1):
            size = starts[line] - starts[line - 1]
            text = document.lines(line, line) if size >= MIN_ELIDED_CHARS else ""
            shown += (size if raw_data_uris or not text else shown_chars(text)) + image_lines.get(line, 0)
            raw += len(text.encode("utf-8", "surrogatepass")) if text else size * 4
            if shown > budget or raw > raw_budget:
                break
            fitting += 1
        return first + max(1, fitting) - 1

    async def _read_selection(
        self,
        loaded: LoadedMarkdown,
        document: Document,
        whole: Selection,
        max_images: int,
        *,
        tokens: int,
        raw_data_uris: bool,
    ) -> ReadResult:
        limits = self._loader.settings.limits
        notes = list(whole.notes)
        budget = char_budget(tokens) - _NOTES_RESERVE
        raw_budget = limits.max_response_bytes - _NOTES_RESERVE
        end = self._page_end(document, whole, budget, raw_budget, raw_data_uris)
        selection = replace(whole, last=end)
        next_range = (end + 1, whole.last) if end < whole.last else None
        images = document.images_between(selection.first, selection.last)
        inlined, skipped = images[:max_images], images[max_images:]
        if skipped:
            notes.append(
                f"{len(skipped)} more image(s) in this range were not inlined (max_images={max_images}); they "
                "remain as markdown in the text. Raise max_images (up to 50) or read a smaller section."
            )
        cut_short = document.structure_end
        if cut_short is not None and selection.last > cut_short.line:
            notes.append(
                f"Images after line {cut_short.line} of this document are not inlined: md-vision stopped "
                "reading its structure there (too many headings and images, or a block too dense to parse)."
            )
        if next_range is not None:
            notes.append(
                f"This result holds lines {selection.first}-{end} of the {whole.first}-{whole.last} requested, "
                f"to stay within {tokens:,} tokens (max_tokens). Read the rest with line_range="
                f"[{next_range[0]}, {next_range[1]}] (same uri)."
            )
        text = document.lines(selection.first, selection.last)
        # The source travels whole (data URIs in _meta, see md_vision.datauri); a single line over
        # the response limit is cut below to the budget.
        text_bytes = min(len(text.encode("utf-8", errors="surrogatepass")), raw_budget) + sum(
            len(note) + _BLOCK_OVERHEAD for note in notes
        )

        # Split the source after each line that ends an inlined image; images follow their line.
        blocks: list[Block] = []
        slots: list[_Slot] = []
        cursor = selection.first
        for image in inlined:
            if image.line >= cursor:
                blocks.append(TextBlock(document.lines(cursor, image.line)))
                cursor = image.line + 1
            slots.append(_Slot(image, len(blocks)))
            blocks.append(TextBlock(""))  # replaced below
        if cursor <= selection.last:
            blocks.append(TextBlock(document.lines(cursor, selection.last)))

        if slots:
            label_bytes = sum(
                min(len(slot.image.target), MAX_SHOWN_REFERENCE) + 2 * _BLOCK_OVERHEAD for slot in slots
            )
            left = limits.max_response_bytes - text_bytes - label_bytes - _BLOCK_OVERHEAD * len(blocks)
            share = left // len(slots)
            for slot in slots:
                slot.budget = max(0, share) * 3 // 4  # base64 grows 4/3
            pixels = PixelBudget(limits.max_read_pixels)
            await asyncio.gather(*(self._fill(slot, loaded.location, share, pixels) for slot in slots))

        out: list[Block] = []
        filled = {slot.block_index: slot for slot in slots}
        failed = 0
        shown_images = 0
        skipped_targets = {image.target for image in skipped}
        for index, block in enumerate(blocks):
            if index in filled:
                outcome = filled[index].outcome
                failed += sum(1 for b in outcome if isinstance(b, TextBlock) and b.role == "placeholder")
                shown_images += sum(1 for b in outcome if isinstance(b, ImageBlock))
                out.extend(outcome)
            elif isinstance(block, TextBlock) and block.text:
                if raw_data_uris:
                    out.append(block)
                    continue
                following: list[_Slot] = []
                for after in range(index + 1, len(blocks)):
                    if after not in filled:
                        break
                    following.append(filled[after])
                out.extend(_elide_data_uris(block.text, following, shown_images, skipped_targets))
        if selection.first == selection.last and (
            _text_chars(out) > budget or _source_bytes(out) > raw_budget
        ):
            notes.append(
                f"Line {selection.first} is longer than one result allows ({tokens:,} tokens, "
                f"{limits.max_response_bytes:,} bytes): it is cut after about {budget:,} characters. "
                "Pass a larger max_tokens to read more of it."
            )
            out = _cut_text(out, budget, raw_budget)
        if notes:
            out.insert(0, TextBlock("Note: " + " ".join(notes), role="note"))
        if not any(isinstance(block, TextBlock) and block.role == "source" for block in out):
            out.append(TextBlock("", role="source"))
        return ReadResult(
            source=self._loader.shown(loaded.location),
            first_line=selection.first,
            last_line=selection.last,
            heading=selection.heading.label if selection.heading else None,
            blocks=tuple(out),
            notes=tuple(notes),
            images_inlined=len(inlined) - failed,
            images_skipped=len(skipped),
            images_failed=failed,
            next_line_range=next_range,
        )

    async def _fill(self, slot: _Slot, base: LocalFile | RemoteFile, share: int, pixels: PixelBudget) -> None:
        image = slot.image
        shown_ref = image.target if len(image.target) <= 80 else image.target[:77] + "..."
        if share < _MIN_IMAGE_SHARE:
            slot.outcome = [
                TextBlock(
                    f"[image not shown: {shown_ref} — the response budget is used up by the text; read a smaller section]",
                    role="placeholder",
                )
            ]
            return
        try:
            target = resolve_image(image.target, base, self._loader.settings)
            prepared, shown = await self._prepare(target, slot.budget, image.target, pixels)
        except (ImageRefused, ImageRejected) as exc:
            slot.outcome = [TextBlock(f"[image not shown: {shown_ref} — {exc}]", role="placeholder")]
            return
        except Exception:  # a bug here must not cost the whole read
            slot.outcome = [
                TextBlock(f"[image not shown: {shown_ref} — unexpected error]", role="placeholder")
            ]
            return
        description = prepared.describe()
        if prepared.reduced:
            budget_mb = self._loader.settings.limits.max_response_bytes / 1_000_000
            description += f" to fit the {budget_mb:g} MB response budget"
        outcome: list[Block] = []
        if shown and len(shown) <= MAX_SHOWN_REFERENCE:
            outcome.append(TextBlock(f"Image: {shown} ({description})", role="label"))
        elif prepared.reduced:
            outcome.append(TextBlock(f"Image ({description})", role="label"))
        outcome.append(ImageBlock(prepared.data, prepared.mime_type, shown, description))
        slot.outcome = outcome

    async def _prepare_cancellably(self, prepare: _Prepare) -> PreparedImage:
        """Run ``prepare`` on the image lane (:meth:`Loader.run_image`) with an SVG renderer and a
        decoder of large rasters (child processes, see :mod:`md_vision.sandbox`) that are killed
        when this call is cancelled, instead of running on to their deadline."""
        cancelled = threading.Event()
        renderer = functools.partial(render_isolated, limits=self._render_limits, cancelled=cancelled)
        decoder = functools.partial(decode_in_child, limits=self._decode_limits, cancelled=cancelled)
        try:
            return await self._loader.run_image(prepare, renderer, decoder)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def _once(self, key: _ImageKey, prepare: _Prepare) -> PreparedImage:
        """The image of ``key``: from the cache, or a refusal remembered, or prepared once for
        every caller that asks for it meanwhile (:class:`~md_vision.cache.SharedWork`)."""
        cached = self._images.get(key)
        if cached is not None:
            return cached
        refused = self._refusals.get(key)
        if refused is not None:
            raise ImageRejected(refused)

        async def prepare_and_keep() -> PreparedImage:
            try:
                prepared = await self._prepare_cancellably(prepare)
            except OverReadBudget:
                raise  # this read's budget, not the image's fault
            except ImageRejected as exc:
                self._refusals.put(key, str(exc))
                raise
            self._images.put(key, prepared)
            return prepared

        return await self._preparing.run(key, prepare_and_keep)

    async def _prepare(
        self, target: ImageTarget, budget: int, name: str, pixels: PixelBudget
    ) -> tuple[PreparedImage, str]:
        limits = self._loader.settings.limits
        if isinstance(target, LocalImage):
            opened = open_image(target, self._loader.settings)
            real = str(opened.path)
            key: _ImageKey = (
                "file",
                real,
                opened.info.st_size,
                opened.info.st_mtime_ns,
                budget,
                limits.max_image_side,
            )

            handover = Handover(opened)

            def load_and_prepare(renderer: SvgRenderer, decoder: RasterDecoder) -> PreparedImage:
                taken = handover.take()
                if taken is None:
                    raise ImageRejected("the read was cancelled before the image was opened")
                with taken:  # the worker thread owns the descriptor from here on
                    data = read_image_file(taken, limits.max_image_bytes)
                return prepare_image(
                    data,
                    name=real,
                    max_side=limits.max_image_side,
                    max_pixels=limits.max_image_pixels,
                    byte_budget=budget,
                    svg_renderer=renderer,
                    raster_decoder=decoder,
                    decode_budget=pixels.charge,
                )

            try:
                prepared = await self._once(key, load_and_prepare)
            finally:
                handover.release()  # a cached, refused or shared image never reached a worker
            return prepared, self._loader.settings.show(opened.path)
        if isinstance(target, RemoteImage):
            final_url, data = await fetch_image(self._loader.http(), self._loader.settings, target)
            shown = final_url
        else:
            assert isinstance(target, DataImage)
            data, shown = target.data, ""
        key = ("bytes", hashlib.sha256(data).hexdigest(), budget, limits.max_image_side)
        prepared = await self._once(
            key,
            lambda renderer, decoder: prepare_image(
                data,
                name=shown or name,
                max_side=limits.max_image_side,
                max_pixels=limits.max_image_pixels,
                byte_budget=budget,
                svg_renderer=renderer,
                raster_decoder=decoder,
                decode_budget=pixels.charge,
            ),
        )
        return prepared, shown


_ImageKey = tuple[str | int, ...]
_Prepare = Callable[[SvgRenderer, RasterDecoder], PreparedImage]
