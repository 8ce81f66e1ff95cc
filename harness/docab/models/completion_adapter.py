"""Any harness model as the benchmark's answer-extraction client.

``docab_benchmark.mmlongbench.extraction.extract_answer(model, question, response)`` needs only
``async complete(messages, *, max_tokens, temperature) -> Completion(text, usage)``. This adapter
gives that shape to every harness model (OpenAI, Anthropic, or a test double) and books the tokens
under the ``extractor`` role, so helper-model tokens are never lost in the A/B accounting.

``messages`` may be harness ``Message`` objects or plain ``{"role", "content"}`` mappings with
string content (roles ``system``, ``user``, ``assistant``): the official extraction protocol sends
the prompt as a user turn and the question with the response as an assistant turn.

That final assistant turn means different things to the two APIs. Chat Completions (GPT-4o, the
paper's extractor) takes it as a finished earlier turn and writes a new reply; the Anthropic
Messages API takes a final assistant turn as *prefill* to be continued, and newer Claude models
reject prefill with a 400. So for ``anthropic/`` models the adapter sends that final assistant text
as part of the user turn, which keeps the OpenAI meaning (``final_assistant_as_user``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from docab.messages import Message
from docab.models.base import Model, ModelError
from docab.models.config import ModelConfigError
from docab.usage import UsageRole
from docab_benchmark.mmlongbench.extraction import Completion  # the benchmark defines the result type


def to_neutral(messages: Sequence[Message | Mapping[str, Any]]) -> tuple[str, list[Message]]:
    """Split plain chat messages into a system prompt and neutral messages."""
    system: list[str] = []
    neutral: list[Message] = []
    for index, message in enumerate(messages):
        if isinstance(message, Message):
            neutral.append(message)
            continue
        role = message.get("role")
        content = message.get("content")
        if not isinstance(content, str):
            raise ValueError(f"message {index}: content must be a string, got {type(content).__name__}")
        if role == "system":
            system.append(content)
        elif role == "user":
            neutral.append(Message.user(content))
        elif role == "assistant":
            neutral.append(Message.assistant(content))
        else:
            raise ValueError(f"message {index}: role must be system, user or assistant, got {role!r}")
    return "\n\n".join(system), neutral


def final_assistant_into_user(messages: list[Message]) -> list[Message]:
    """Move a closing assistant message's text into the user turn before it (or a new one)."""
    if not messages or messages[-1].role != "assistant" or messages[-1].tool_calls:
        return messages
    *head, last = messages
    if head and head[-1].role == "user":
        return [*head[:-1], Message(role="user", blocks=head[-1].blocks + last.blocks)]
    return [*head, Message(role="user", blocks=last.blocks)]


class CompletionAdapter:
    """``complete()`` over a harness model; usage is booked under ``role``.

    ``temperature`` is applied through the model's ``with_options`` when it has one (the SDK-backed
    models do); with ``apply_temperature=False`` the model keeps its configured temperature, which
    reasoning models that accept only their default need. Model failures propagate as ModelError,
    said of ``role`` (the model may have been built as the agent), which the extractor turns into
    its "Failed" answer.
    """

    def __init__(
        self,
        model: Model,
        *,
        role: UsageRole = "extractor",
        apply_temperature: bool = True,
        final_assistant_as_user: bool | None = None,
    ):
        self.model = model
        self.role: UsageRole = role
        self.apply_temperature = apply_temperature
        if final_assistant_as_user is None:
            final_assistant_as_user = model.name.startswith("anthropic/")
        self.final_assistant_as_user = final_assistant_as_user
        self._variants: dict[float, Model] = {}

    def _model_for(self, temperature: float | None) -> Model:
        if temperature is None or not self.apply_temperature:
            return self.model
        with_options = getattr(self.model, "with_options", None)
        if with_options is None:
            return self.model
        variant = self._variants.get(temperature)
        if variant is None:
            try:
                variant = with_options(temperature=temperature)
            except ModelConfigError:  # e.g. extended thinking, which fixes the temperature
                variant = self.model
            self._variants[temperature] = variant
        return variant

    async def complete(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        max_tokens: int,
        temperature: float | None = 0.0,
    ) -> Completion:
        system, neutral = to_neutral(messages)
        if self.final_assistant_as_user:
            neutral = final_assistant_into_user(neutral)
        try:
            turn = await self._model_for(temperature).generate(
                system, neutral, (), max_output_tokens=max_tokens
            )
        except ModelError as exc:
            raise (exc if exc.role == self.role else exc.with_role(self.role)) from None
        return Completion(text=turn.text, usage=turn.usage.with_role(self.role))
