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
(:mod:`docab.tokens`), the same rule in every arm, from the image's pixel size.

An image whose size cannot be read costs its rule's maximum. ``image_cost`` in the config
replaces the rule with a flat cost per image (in ``unit``), for experiments that want one.

Cutting (:meth:`OutputBudget.apply`): blocks are taken in order while they fit. An image that
does not fit is replaced, in its place, by a short note, and the blocks after it still count
against the same budget (a smaller image or the text after a large one can still be shown). A
text block that does not fit is cut (at its last line break in the allowed part when that keeps
at least half of it) and ends the result: the blocks after it are dropped, their images counted
as omitted. A truncated result ends with exactly one notice block saying what was cut and how to
see the rest; the notes and the notice are the harness's and cost nothing.

Document lines (:mod:`docab.agent.document_lines`): when a result shows lines of a document and
the caller says where they are (``read_file``'s numbered lines, md-vision's source blocks), the
budget charges each line its own characters plus one for its line end, whatever the tool wrapped
around it: ``read_file``'s line numbers are not charged, and the tool's other text in such a result
(notes, headers, a "read on" trailer: its *framing*) is charged against a separate allowance of
:data:`FRAMING_CHARS` characters and cut beyond it. The cut then falls at the same document line
in every arm: whole lines are kept while they fit, and a line that does not fit ends the result
(the first line of a result is cut at the same character instead, so a result is never empty).
The condition, stated in the harness README: lines shorter than ``read_file``'s 2,000-character
line cut (``MAX_LINE_CHARS``); a longer line is shown whole by md-vision but cut by ``read_file``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from docab.agent.document_lines import BlockLines, ResultLines
from docab.messages import Block, Image, Text, ToolResult
from docab.tokens import CHARS_PER_TOKEN, DEFAULT_IMAGE_RULE, IMAGE_RULES, ImageRule, image_tokens

BudgetUnit = Literal["chars", "tokens"]

FRAMING_CHARS = 1_000  # a tool's own notes around document lines, charged apart (see above)


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

    def apply(self, result: ToolResult, lines: ResultLines | None = None) -> ToolResult:
        """Return ``result`` unchanged if it fits, else what fits, marked truncated (see the module
        docstring for the rule). ``lines``: where the result shows document lines, by block."""
        if lines:
            return self._apply_by_lines(result, lines)
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

    def _apply_by_lines(self, result: ToolResult, lines: ResultLines) -> ToolResult:
        """The budget of a result that shows document lines (see the module docstring)."""
        remaining = self.chars_for(self.limit)  # document characters and images, in characters
        framing = FRAMING_CHARS
        kept: list[Block] = []
        charged: set[int] = set()  # document lines already charged (a line may span blocks)
        shown_chars = 0
        all_chars = sum(span.chars + 1 for spans in lines.values() for span in spans)
        omitted_images = 0
        cut = False
        for index, block in enumerate(result.blocks):
            if isinstance(block, Image):
                cost = self.chars_for(self.cost_of_image(block))
                if cost <= remaining:
                    kept.append(block)
                    remaining -= cost
                else:
                    omitted_images += 1
                    kept.append(Text(_image_note(cost, remaining, "chars")))
                    cut = True
                continue
            spans = lines.get(index)
            if not spans:
                framing_cost = len(block.text)
                if framing_cost <= framing:
                    kept.append(block)
                    framing -= framing_cost
                else:
                    kept.append(Text(block.text[:framing]))
                    framing = 0
                    cut = True
                continue
            end, shown, whole, remaining = _fit_lines(
                block.text, spans, remaining, charged, first=not charged
            )
            shown_chars += shown
            if whole:
                kept.append(block)
                # Its text beside the lines (a "read on" trailer) is framing; line numbers are not.
                beside = len(block.text) - sum(s.end - s.row for s in spans) - len(spans)
                framing -= min(framing, max(0, beside))
                continue
            if end > 0:
                kept.append(Text(block.text[:end]))
            omitted_images += sum(1 for b in result.blocks[index + 1 :] if isinstance(b, Image))
            cut = True
            break
        if not cut:
            return result
        kept.append(Text(_notice(shown_chars, all_chars, omitted_images, self, document=True)))
        return ToolResult(blocks=tuple(kept), is_error=result.is_error, meta=result.meta, truncated=True)


def _fit_lines(
    text: str, spans: BlockLines, remaining: int, charged: set[int], *, first: bool
) -> tuple[int, int, bool, int]:
    """How much of a block of document lines fits in ``remaining`` characters: (end of the kept
    text, document characters shown, whether all of it fits, what remains). Each line costs its
    characters plus one for its end, charged once however many blocks it spans."""
    shown = 0
    for position, span in enumerate(spans):
        cost = span.chars + (0 if span.number in charged else 1)
        if cost <= remaining:
            remaining -= cost
            charged.add(span.number)
            shown += span.chars + (1 if cost > span.chars else 0)
            continue
        if first and position == 0 and remaining > 0:  # a result is never empty: cut the line itself
            return span.start + remaining, shown + remaining, False, 0
        if position > 0 and spans[position - 1].number == span.number:
            # Never end inside a line that the previous piece began: back up to where it began.
            start = next(s.row for s in spans if s.number == span.number)
            return start, shown, False, remaining
        return span.row, shown, False, remaining
    return len(text), shown, True, remaining


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


def _notice(
    shown_chars: int, all_chars: int, omitted_images: int, budget: OutputBudget, *, document: bool = False
) -> str:
    what = "characters of document lines" if document else "characters"
    parts = [f"showed {shown_chars:,} of {all_chars:,} {what}"]
    if omitted_images:
        parts.append(f"{omitted_images} image{'s' if omitted_images != 1 else ''} omitted")
    return (
        f"[output truncated at the tool output budget of {budget.limit:,} {budget.unit}: "
        f"{'; '.join(parts)}. Request a smaller part (an offset and limit, a section, a line range "
        "or a narrower search) to see the rest.]"
    )
