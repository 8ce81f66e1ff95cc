"""Token use of the vision model, and the report every tool result carries in ``_meta``.

The report follows the project's contract (docs/architecture.md, "Sidecar token use in a tool
result"): under ``io.github.docab/usage``, ``input_tokens`` is the total input including cache
reads and writes, ``calls`` the provider requests made (0 when the answer came from the cache).
An answer from the cache spends nothing, so its token counts are zero; what it cost when it was
first computed is kept under ``original_usage`` (the same five token fields), so that a harness
can still show the cost of the answers it was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

USAGE_META_KEY = "io.github.docab/usage"
"""Key of the token report in a result's ``_meta`` (the harness reads exactly this)."""

DETAILS_META_KEY = "io.github.docab/vision"
"""Key of vision-bridge's own details in ``_meta``: backend, error cause, image changes, answer source."""


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


@dataclass(frozen=True)
class TokenUsage:
    input_tokens: int = 0  # total input: uncached + cache reads + cache writes
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0  # includes reasoning
    reasoning_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.cached_tokens + other.cached_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.output_tokens + other.output_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    @classmethod
    def from_openai(cls, usage: Mapping[str, Any] | None) -> TokenUsage:
        """Chat Completions: ``prompt_tokens`` already includes the cached tokens."""
        usage = usage or {}
        prompt_details = usage.get("prompt_tokens_details") or {}
        completion_details = usage.get("completion_tokens_details") or {}
        prompt = _count(usage.get("prompt_tokens"))
        return cls(
            input_tokens=prompt,
            cached_tokens=min(prompt, _count(prompt_details.get("cached_tokens"))),
            output_tokens=_count(usage.get("completion_tokens")),
            reasoning_tokens=_count(completion_details.get("reasoning_tokens")),
        )

    @classmethod
    def from_anthropic(cls, usage: Mapping[str, Any] | None) -> TokenUsage:
        """Messages: ``input_tokens`` excludes cache reads and writes, which come separately."""
        usage = usage or {}
        read = _count(usage.get("cache_read_input_tokens"))
        write = _count(usage.get("cache_creation_input_tokens"))
        return cls(
            input_tokens=_count(usage.get("input_tokens")) + read + write,
            cached_tokens=read,
            cache_write_tokens=write,
            output_tokens=_count(usage.get("output_tokens")),
        )

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TokenUsage:
        return cls(**{name: _count(data.get(name)) for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class UsageReport:
    provider: str
    model: str
    usage: TokenUsage
    calls: int
    from_cache: bool
    latency_s: float
    original: TokenUsage | None = None  # a cached answer: what it cost when first computed

    def to_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            **self.usage.to_dict(),
            "calls": self.calls,
            "from_cache": self.from_cache,
            "latency_s": round(self.latency_s, 4),
        }
        if self.from_cache and self.original is not None:
            meta["original_usage"] = self.original.to_dict()
        return meta
