"""The one output budget every tool result passes through, whatever tool produced it.

A fairness requirement (``../shared/specs/harness.md``): other harnesses cut plain-string tool
output but not list-of-content output, which favours MCP tools. Here the agent loop applies
:meth:`OutputBudget.apply` to every result — filesystem tool, MCP tool, error or not — after the
result has been converted to neutral blocks (and, for a text-only model, after its images became
notes), so the same content costs the same and is cut at the same place wherever it came from.

Cost model (one per run, stated in the config):

- ``unit = "chars"``: a text block costs its length in characters; an image costs its tokens
  times :data:`CHARS_PER_TOKEN`.
- ``unit = "tokens"``: a text block costs ``ceil(chars / 4)`` (a provider-neutral estimate: the
  real tokenizer differs per model and would make the cut depend on the model); an image costs
  its tokens.

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

An image whose size cannot be read costs its rule's maximum. ``image_cost`` in the config
replaces the rule with a flat cost per image (in ``unit``), for experiments that want one.

Cutting (:meth:`OutputBudget.apply`): blocks are taken in order while they fit. An image that
does not fit is replaced, in its place, by a short note, and the blocks after it still count
against the same budget (a smaller image or the text after a large one can still be shown). A
text block that does not fit is cut (at its last line break in the allowed part when that keeps
at least half of it) and ends the result: the blocks after it are dropped, their images counted
as omitted. A truncated result ends with exactly one notice block saying what was cut and how to
see the rest; the notes and the notice are the harness's and cost nothing.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from docab.agent.messages import Block, Image, Text, ToolResult

BudgetUnit = Literal["chars", "tokens"]
ImageRule = Literal["anthropic", "openai"]

CHARS_PER_TOKEN = 4

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


@dataclass(frozen=True)
class OutputBudget:
    limit: int = 32_000
    unit: BudgetUnit = "chars"
    image_cost: int | None = None  # a flat cost per image in ``unit``; None: by ``image_rule``
    image_rule: ImageRule = DEFAULT_IMAGE_RULE

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"the output budget must be at least 1 {self.unit}, got {self.limit}")
        if self.image_cost is not None and self.image_cost < 0:
            raise ValueError(f"image_cost must not be negative, got {self.image_cost}")
        if self.image_rule not in IMAGE_RULES:
            raise ValueError(f"unknown image rule {self.image_rule!r}; known: {', '.join(IMAGE_RULES)}")

    def cost_of_image(self, image: Image) -> int:
        if self.image_cost is not None:
            return self.image_cost
        tokens = image_tokens(image, self.image_rule)
        return tokens * (CHARS_PER_TOKEN if self.unit == "chars" else 1)

    def cost_of_text(self, text: str) -> int:
        return len(text) if self.unit == "chars" else math.ceil(len(text) / CHARS_PER_TOKEN)

    def cost_of(self, block: Block) -> int:
        return self.cost_of_text(block.text) if isinstance(block, Text) else self.cost_of_image(block)

    def chars_for(self, cost: int) -> int:
        """How many characters of text ``cost`` units buy."""
        return cost if self.unit == "chars" else cost * CHARS_PER_TOKEN

    def cost(self, blocks: tuple[Block, ...]) -> int:
        return sum(self.cost_of(b) for b in blocks)

    def apply(self, result: ToolResult) -> ToolResult:
        """Return ``result`` unchanged if it fits, else what fits, marked truncated (see the module
        docstring for the rule)."""
        costs = [self.cost_of(b) for b in result.blocks]
        if sum(costs) <= self.limit:
            return result
        kept: list[Block] = []
        remaining = self.limit
        omitted_images = 0
        shown_chars = 0
        all_chars = sum(len(b.text) for b in result.blocks if isinstance(b, Text))
        for index, (block, cost) in enumerate(zip(result.blocks, costs, strict=True)):
            if cost <= remaining:
                kept.append(block)
                remaining -= cost
                shown_chars += len(block.text) if isinstance(block, Text) else 0
                continue
            if isinstance(block, Image):
                omitted_images += 1
                kept.append(Text(_image_note(cost, remaining, self.unit)))
                continue
            prefix = _cut(block.text, self.chars_for(remaining))
            if prefix:
                kept.append(Text(prefix))
                shown_chars += len(prefix)
            omitted_images += sum(1 for b in result.blocks[index + 1 :] if isinstance(b, Image))
            break
        kept.append(Text(_notice(shown_chars, all_chars, omitted_images, self)))
        return ToolResult(blocks=tuple(kept), is_error=result.is_error, meta=result.meta, truncated=True)


def _cut(text: str, max_chars: int) -> str:
    if max_chars <= 0:
        return ""
    prefix = text[:max_chars]
    newline = prefix.rfind("\n")
    if newline >= max_chars // 2:
        return prefix[: newline + 1]
    return prefix


def _image_note(cost: int, remaining: int, unit: BudgetUnit) -> str:
    # Not named: only some tools name their images, and the note must not depend on the tool.
    return (
        f"[image not shown: it costs {cost:,} {unit} and {remaining:,} {unit} of the tool output "
        "budget were left]"
    )


def _notice(shown_chars: int, all_chars: int, omitted_images: int, budget: OutputBudget) -> str:
    parts = [f"showed {shown_chars:,} of {all_chars:,} characters"]
    if omitted_images:
        parts.append(f"{omitted_images} image{'s' if omitted_images != 1 else ''} omitted")
    return (
        f"[output truncated at the tool output budget of {budget.limit:,} {budget.unit}: "
        f"{'; '.join(parts)}. Request a smaller part (an offset and limit, a section, a line range "
        "or a narrower search) to see the rest.]"
    )
