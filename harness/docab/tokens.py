"""What content costs a model in tokens, estimated the same way in every arm: text by
:data:`CHARS_PER_TOKEN`, images by their provider's documented rule.

Part of the harness's ground floor (with :mod:`docab.messages` and :mod:`docab.usage`): the
output budget (:mod:`docab.agent.budget`) and the offline policy (:mod:`docab.models.baseline`)
both count with it.

An image's tokens follow the documented rule of the provider the run's model is served by
(:func:`image_rule_for`), the same rule in every arm, from the image's pixel size:

- ``"anthropic"`` — Anthropic, "Vision" guide (docs.anthropic.com/en/docs/build-with-claude/vision,
  "Evaluate image size" and "Calculate image costs"): an image whose long edge is over 1,568 px,
  or that would cost more than about 1,600 tokens, is first scaled down, keeping its aspect
  ratio, until it fits; it then costs ``width * height / 750`` tokens. Implemented as: scale so
  the long edge is at most 1,568 px and the area at most 1,600 * 750 px, round each side down,
  cost ``ceil(width * height / 750)``.
- ``"openai"`` — OpenAI, "Images and vision" guide (platform.openai.com/docs/guides/vision,
  "Calculating costs", GPT-4o-class models, ``detail: high``): the image is scaled to fit a
  2,048 px square, then so that its shortest side is at most 768 px; it costs 170 tokens per
  512 px tile covering it plus 85. (The harness sends images without a ``detail`` option, which
  OpenAI treats as ``auto``; high detail is the upper bound a page image gets.)
- Models served by neither (the offline policy ``baseline/...``, which never looks at images)
  use :data:`DEFAULT_IMAGE_RULE`, Anthropic's: its cap of about 1,600 tokens for a full page is
  the flat cost the budget used before it counted sizes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from typing import Literal

from docab.messages import Image

ImageRule = Literal["anthropic", "openai"]

CHARS_PER_TOKEN = 4
"""Characters per token of text: a provider-neutral estimate (the real tokenizers differ per model)."""

ANTHROPIC_MAX_LONG_EDGE = 1568
ANTHROPIC_MAX_TOKENS = 1600
ANTHROPIC_PIXELS_PER_TOKEN = 750
OPENAI_FIT_SQUARE = 2048
OPENAI_SHORT_SIDE = 768
OPENAI_TILE = 512
OPENAI_TILE_TOKENS = 170
OPENAI_BASE_TOKENS = 85


def anthropic_image_tokens(width: int, height: int) -> int:
    """Tokens of a ``width`` x ``height`` image for an Anthropic model (see the module docstring)."""
    width, height = max(1, width), max(1, height)
    scale = min(
        1.0,
        ANTHROPIC_MAX_LONG_EDGE / max(width, height),
        math.sqrt(ANTHROPIC_MAX_TOKENS * ANTHROPIC_PIXELS_PER_TOKEN / (width * height)),
    )
    if scale < 1.0:
        width, height = max(1, math.floor(width * scale)), max(1, math.floor(height * scale))
    return math.ceil(width * height / ANTHROPIC_PIXELS_PER_TOKEN)


def openai_image_tokens(width: int, height: int) -> int:
    """Tokens of a ``width`` x ``height`` image for an OpenAI GPT-4o-class model at high detail."""
    width, height = max(1, width), max(1, height)
    fit = min(1.0, OPENAI_FIT_SQUARE / max(width, height))
    w, h = width * fit, height * fit
    short = min(1.0, OPENAI_SHORT_SIDE / min(w, h))
    w, h = w * short, h * short
    tiles = math.ceil(math.floor(w) / OPENAI_TILE) * math.ceil(math.floor(h) / OPENAI_TILE)
    return OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * max(1, tiles)


IMAGE_RULES: dict[ImageRule, Callable[[int, int], int]] = {
    "anthropic": anthropic_image_tokens,
    "openai": openai_image_tokens,
}
IMAGE_RULE_MAXIMUM: dict[ImageRule, int] = {
    "anthropic": anthropic_image_tokens(10_000, 10_000),  # scaled to the cap
    "openai": openai_image_tokens(
        OPENAI_SHORT_SIDE, OPENAI_FIT_SQUARE
    ),  # the most tiles a scaled image covers
}
DEFAULT_IMAGE_RULE: ImageRule = "anthropic"


def image_rule_for(provider: str) -> ImageRule:
    """The image-token rule of a model provider (``openai``, ``anthropic``), else the default."""
    if provider == "openai":
        return "openai"
    if provider == "anthropic":
        return "anthropic"
    return DEFAULT_IMAGE_RULE


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from an image's header (no pixels are decoded), or None if unreadable."""
    from PIL import Image as PILImage

    try:
        with PILImage.open(io.BytesIO(data)) as opened:
            width, height = opened.size
    except Exception:  # any unreadable or hostile header: the caller charges the maximum
        return None
    return (int(width), int(height)) if width > 0 and height > 0 else None


def image_tokens(image: Image, rule: ImageRule = DEFAULT_IMAGE_RULE) -> int:
    """What ``image`` costs a model under ``rule``; its rule's maximum when its size is unreadable."""
    size = image_size(image.data)
    if size is None:
        return IMAGE_RULE_MAXIMUM[rule]
    return IMAGE_RULES[rule](*size)
