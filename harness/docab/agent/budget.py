"""The one output budget every tool result passes through, whatever tool produced it.

A fairness requirement (``../shared/specs/harness.md``): other harnesses cut plain-string tool
output but not list-of-content output, which favours MCP tools. Here the agent loop applies
:meth:`OutputBudget.apply` to every result — filesystem tool, MCP tool, error or not — after the
result has been converted to neutral blocks, so the same content costs the same and is cut at the
same place wherever it came from.

Cost model (one per run, stated in the config):

- ``unit = "chars"``: a text block costs its length in characters; an image costs ``image_cost``.
- ``unit = "tokens"``: a text block costs ``ceil(chars / 4)`` (a provider-neutral estimate: the
  real tokenizer differs per model and would make the cut depend on the model); an image costs
  ``image_cost``.

The default image cost is what one full-page image costs a vision model (about 1,600 tokens for
an image scaled to 1,568 px on its long side), so a page image and a page of text weigh alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from docab.agent.messages import Block, Image, Text, ToolResult

BudgetUnit = Literal["chars", "tokens"]

CHARS_PER_TOKEN = 4
DEFAULT_IMAGE_TOKENS = 1600


@dataclass(frozen=True)
class OutputBudget:
    limit: int = 32_000
    unit: BudgetUnit = "chars"
    image_cost: int | None = None  # in ``unit``; None: DEFAULT_IMAGE_TOKENS tokens' worth

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"the output budget must be at least 1 {self.unit}, got {self.limit}")
        if self.image_cost is not None and self.image_cost < 0:
            raise ValueError(f"image_cost must not be negative, got {self.image_cost}")

    @property
    def cost_of_image(self) -> int:
        if self.image_cost is not None:
            return self.image_cost
        return DEFAULT_IMAGE_TOKENS * (CHARS_PER_TOKEN if self.unit == "chars" else 1)

    def cost_of_text(self, text: str) -> int:
        return len(text) if self.unit == "chars" else math.ceil(len(text) / CHARS_PER_TOKEN)

    def chars_for(self, cost: int) -> int:
        """How many characters of text ``cost`` units buy."""
        return cost if self.unit == "chars" else cost * CHARS_PER_TOKEN

    def cost(self, blocks: tuple[Block, ...]) -> int:
        return sum(self.cost_of_text(b.text) if isinstance(b, Text) else self.cost_of_image for b in blocks)

    def apply(self, result: ToolResult) -> ToolResult:
        """Return ``result`` unchanged if it fits, else its leading part that fits, marked truncated.

        Blocks are kept in order until the budget runs out. A text block that does not fit is cut
        (at its last line break in the allowed part when that keeps at least half of it, so a
        line-numbered listing is not cut mid-line); an image that does not fit is replaced by a
        short note; everything after the cut is dropped. A final text block tells the model what
        was cut and how to see the rest.
        """
        total = self.cost(result.blocks)
        if total <= self.limit:
            return result
        kept: list[Block] = []
        remaining = self.limit
        omitted_images = 0
        shown_chars = 0
        all_chars = sum(len(b.text) for b in result.blocks if isinstance(b, Text))
        for index, block in enumerate(result.blocks):
            if isinstance(block, Image):
                if self.cost_of_image <= remaining:
                    kept.append(block)
                    remaining -= self.cost_of_image
                else:
                    omitted_images += 1
                    remaining = 0
                continue
            cost = self.cost_of_text(block.text)
            if cost <= remaining:
                kept.append(block)
                remaining -= cost
                shown_chars += len(block.text)
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


def _notice(shown_chars: int, all_chars: int, omitted_images: int, budget: OutputBudget) -> str:
    parts = [f"showed {shown_chars:,} of {all_chars:,} characters"]
    if omitted_images:
        parts.append(f"{omitted_images} image{'s' if omitted_images != 1 else ''} omitted")
    return (
        f"[output truncated at the tool output budget of {budget.limit:,} {budget.unit}: "
        f"{'; '.join(parts)}. Request a smaller part (an offset and limit, a section, a line range "
        "or a narrower search) to see the rest.]"
    )
