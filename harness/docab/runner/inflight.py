"""Calls in flight: each priced model call of a sample is journaled before it is sent, so a run
killed while it waits for the reply still knows the call may have been billed.

The spend journal (:mod:`docab.log.spend_journal`) gets one line per call as it returns. A call in
flight when the run is killed (SIGKILL, a power loss) was billed by the provider all the same, and
without a line before it was sent nothing said so: the resumed run's total, its spend cap and the
report understated what was spent, by up to one call per worker per kill. :class:`JournaledModel`
wraps the run's models (the agent's, and the extractor's through its completion adapter): before a
call it writes an ``opened`` line with the call's id and :func:`call_bound`, the most the call can
cost, and the call's closing entry carries the same id (written by the sample's meter,
:class:`docab.runner.spend.SampleMeter`, as the call returns; a call that billed nothing is closed
at $0). A reader of the journal counts the calls opened and never closed, at their bound.

The bound is the call's input tokens as :mod:`docab.tokens` counts content everywhere in the
harness (text at :data:`~docab.tokens.CHARS_PER_TOKEN` characters a token, the system prompt and the
tool definitions included, an image at the most any provider rule counts it) plus
:data:`MESSAGE_TOKENS` per message for the wire format, each at the dearer of the input and the
cache-write price, plus ``max_output_tokens`` at the output price. It is an estimate of the input:
text tokenized denser than four characters a token (CJK text, say) counts more than it says. Calls
of a model that costs nothing (an offline policy, a local server) are not journaled before they are
sent: no kill can bill them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from docab.messages import Image, Message, Text, ToolSpec, Turn
from docab.models.base import Model
from docab.models.meter import METER
from docab.pricing import PER_TOKENS, Price
from docab.runner.spend import SampleMeter
from docab.tokens import CHARS_PER_TOKEN, IMAGE_RULE_MAXIMUM, IMAGE_RULES, image_size

MESSAGE_TOKENS = 8  # a message's wire-format overhead (role, separators): more than any provider's


def input_tokens(system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
    """The input tokens of a call, as :mod:`docab.tokens` estimates content (see the module)."""
    chars = len(system)
    images = 0
    for message in messages:
        chars += MESSAGE_TOKENS * CHARS_PER_TOKEN
        for block in message.blocks:
            if isinstance(block, Text):
                chars += len(block.text)
            elif isinstance(block, Image):
                images += _image_tokens(block)
        for call in message.tool_calls:
            chars += len(call.id) + len(call.name) + len(json.dumps(call.arguments, ensure_ascii=False))
        for reasoning in message.reasoning:
            chars += len(reasoning.text) + len(reasoning.signature) + len(reasoning.redacted)
    for spec in tools:
        chars += (
            len(spec.name) + len(spec.description) + len(json.dumps(spec.input_schema, ensure_ascii=False))
        )
    return -(-chars // CHARS_PER_TOKEN) + images


def _image_tokens(image: Image) -> int:
    """The most any provider's rule counts ``image`` (the provider's own rule may count less)."""
    size = image_size(image.data)
    if size is None:
        return max(IMAGE_RULE_MAXIMUM.values())
    return max(rule(*size) for rule in IMAGE_RULES.values())


def call_bound(price: Price, input_tokens: int, max_output_tokens: int) -> float:
    """USD: the most a call of ``input_tokens`` and up to ``max_output_tokens`` can cost at ``price``
    (every input token at the dearer of the input and cache-write prices)."""
    per_input = max(price.input, price.cache_write if price.cache_write is not None else price.input)
    return (input_tokens * per_input + max_output_tokens * price.output) / PER_TOKENS


class JournaledModel:
    """``model``, each of whose calls made for a metered sample is journaled before it is sent
    (see the module). Everything else is ``model``'s; ``with_options`` variants are wrapped too."""

    def __init__(self, model: Model) -> None:
        self.inner = model
        self.name = model.name
        self.supports_images = model.supports_images
        self.is_baseline = model.is_baseline

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if name == "with_options":
            return lambda **options: JournaledModel(value(**options))
        return value

    async def generate(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_output_tokens: int,
    ) -> Turn:
        meter = METER.get()
        if not isinstance(meter, SampleMeter) or meter.journal is None:
            return await self.inner.generate(system, messages, tools, max_output_tokens=max_output_tokens)
        price = meter.prices.quote(self.name).price
        if price is not None and price.free:
            return await self.inner.generate(system, messages, tools, max_output_tokens=max_output_tokens)
        bound = None
        if price is not None:
            bound = call_bound(price, input_tokens(system, messages, tools), max_output_tokens)
        with meter.call(self.name, bound):
            return await self.inner.generate(system, messages, tools, max_output_tokens=max_output_tokens)


def journaled(model: Model) -> Model:
    """``model`` wrapped in a :class:`JournaledModel` (once)."""
    return model if isinstance(model, JournaledModel) else JournaledModel(model)


def unwrapped(model: Any) -> Any:
    """The model a :class:`JournaledModel` wraps (``model`` itself otherwise)."""
    return model.inner if isinstance(model, JournaledModel) else model
