"""The contract every model client meets; the agent loop knows nothing else about models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from docab.messages import Message, ToolSpec, Turn


class ModelError(Exception):
    """A model call that failed for good (after retries).

    ``kind``: ``timeout``, ``rate_limit``, ``connection``, ``server`` (5xx), ``auth`` (401/403),
    ``api`` (any other refusal, e.g. 400), ``malformed`` (a reply that cannot be read), ``config``.
    ``cause`` is what went wrong in a few words (``connection refused``, ``HTTP 401: <the
    provider's message>``, with the retries made); the message adds who failed where: the role
    (``agent``, ``extractor``), the model and the endpoint's URL::

        extractor model openai/gpt-4o at http://127.0.0.1:8000/v1: connection refused (after 4 retries)

    The message is safe to show and to record; it never holds a traceback or a key.
    """

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        retries: int = 0,
        status: int | None = None,
        role: str | None = None,
        model: str | None = None,
        url: str | None = None,
    ):
        self.kind = kind
        self.cause = message
        self.retries = retries
        self.status = status
        self.role = role
        self.model = model
        self.url = url
        super().__init__(self._text())

    def _text(self) -> str:
        who = " ".join(part for part in (self.role, "model" if self.model else None, self.model) if part)
        if self.url:
            who = f"{who} at {self.url}" if who else self.url
        return f"{who}: {self.cause}" if who else self.cause

    def with_role(self, role: str) -> ModelError:
        """The same failure, said of ``role`` (a model built as the agent, used as the extractor)."""
        return ModelError(
            self.kind,
            self.cause,
            retries=self.retries,
            status=self.status,
            role=role,
            model=self.model,
            url=self.url,
        )


@runtime_checkable
class Model(Protocol):
    name: str  # as configured, e.g. "openai/gpt-4o" or "baseline/keyword"
    supports_images: bool
    is_baseline: bool  # True only for offline policies: reports label them a floor, never a model result

    async def generate(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_output_tokens: int,
    ) -> Turn: ...
