"""Text-only mode: a model that cannot see images gets a note where each image was.

The note names the image and its size, so the model knows something was there and can choose a tool
that turns pictures into text (vision-bridge), rather than silently missing content.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Sequence

from docab.messages import Block, Image, Message, Text


def image_size(image: Image) -> tuple[int, int] | None:
    """Width and height from the image header, or None when the bytes are not a readable image."""
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    try:
        with PILImage.open(io.BytesIO(image.data)) as opened:
            return opened.size
    except (UnidentifiedImageError, OSError, ValueError):
        return None


def describe_omitted_image(image: Image) -> str:
    """``[image omitted: page-0003.png, 1584x2048; this model cannot see images]``."""
    label = image.name.rsplit("/", 1)[-1] if image.name else f"{image.media_type} {image.sha256[:12]}"
    size = image_size(image)
    dims = f"{size[0]}x{size[1]}" if size else "unreadable image data"
    return f"[image omitted: {label}, {dims}; this model cannot see images]"


def strip_blocks(blocks: Sequence[Block]) -> tuple[Block, ...]:
    return tuple(Text(describe_omitted_image(b)) if isinstance(b, Image) else b for b in blocks)


def strip_images(messages: Sequence[Message]) -> list[Message]:
    """The same conversation with every image replaced by a note saying what it was."""
    stripped: list[Message] = []
    for message in messages:
        if any(isinstance(b, Image) for b in message.blocks):
            message = dataclasses.replace(message, blocks=strip_blocks(message.blocks))
        stripped.append(message)
    return stripped
