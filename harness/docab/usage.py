"""The usage record: one normalised account of the tokens a model call spent.

Providers count differently, and mixing their conventions is the most common bug in published
harnesses:

- OpenAI Chat Completions: ``prompt_tokens`` INCLUDES ``prompt_tokens_details.cached_tokens`` (and
  ``cache_write_tokens`` where reported); ``completion_tokens`` includes
  ``completion_tokens_details.reasoning_tokens``.
- OpenAI Responses: the same convention under other names: ``input_tokens`` includes
  ``input_tokens_details.cached_tokens`` (and ``cache_write_tokens``), ``output_tokens`` includes
  ``output_tokens_details.reasoning_tokens``.
- Anthropic Messages: ``input_tokens`` EXCLUDES the cache; ``cache_read_input_tokens`` and
  ``cache_creation_input_tokens`` come separately; ``output_tokens`` includes thinking.
- Gemini (``usageMetadata``): ``promptTokenCount`` INCLUDES ``cachedContentTokenCount``;
  ``toolUsePromptTokenCount`` (tool-use prompts) comes on top of it; ``candidatesTokenCount``
  EXCLUDES ``thoughtsTokenCount``, which is billed as output too.

Here every input token is counted exactly once: ``input_total = input_uncached + cache_read +
cache_write``, and ``output`` includes ``reasoning`` (which is reported for information only).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

UsageRole = Literal["agent", "tool-side", "extractor"]

RESPONSE_CACHE_KEY = "docab_response_cache"  # in ``raw`` of a reply docab's response cache served
TOOL_USAGE_META_KEY = "io.github.docab/usage"
"""Where a tool reports the tokens it spent in a result's ``_meta`` (see docs/architecture.md)."""


UNREPORTED_KEY = "docab_usage_unreported"  # in ``raw`` of a reply that carried no usage at all
MAX_COUNT = 1_000_000_000  # tokens in one field of one call: far past any model's context
PLAUSIBLE_COUNT = 10_000_000
"""The most input (or output) tokens one call can plausibly use: five times the largest context
window offered (2 million tokens). A reply that says more is billed as it says all the same (never
under-counted), and the run warns (:func:`implausible`, ``docab.models.provider.UsageAlarm``)."""


def _int(value: Any) -> int:
    """A token count as a provider sent it; a count that cannot be one (a string, 1e400, which
    JSON reads as infinity) is 0, and a huge one is held at MAX_COUNT (1e30 tokens was recorded
    as $2.5e24)."""
    try:
        return min(MAX_COUNT, max(0, int(value or 0)))
    except (TypeError, ValueError, OverflowError):
        return 0


def _get(obj: Mapping[str, Any] | None, *path: str) -> Any:
    current: Any = obj
    for key in path:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


@dataclass(frozen=True)
class Usage:
    input_uncached: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    reasoning: int = 0  # part of ``output``, never added to it
    role: UsageRole = "agent"
    model: str = ""
    raw: dict[str, Any] | None = field(default=None, compare=False)

    @classmethod
    def unreported(cls, *, model: str, role: UsageRole = "agent") -> Usage:
        """A provider reply without a usage object (some OpenAI-compatible gateways drop it): what
        it cost is unknown, not 0 (:attr:`reported` is False, and pricing says so)."""
        return cls(role=role, model=model, raw={UNREPORTED_KEY: True})

    @property
    def reported(self) -> bool:
        """False for :meth:`unreported` calls: their token counts are not known."""
        return not (isinstance(self.raw, Mapping) and self.raw.get(UNREPORTED_KEY))

    @property
    def input_total(self) -> int:
        return self.input_uncached + self.cache_read + self.cache_write

    @property
    def total(self) -> int:
        return self.input_total + self.output

    @classmethod
    def from_openai(
        cls, raw: Mapping[str, Any] | None, *, role: UsageRole = "agent", model: str = ""
    ) -> Usage:
        """Chat Completions' ``usage``."""
        return cls._openai_convention(
            raw,
            total_in=_int(_get(raw, "prompt_tokens")),
            details=_get(raw, "prompt_tokens_details"),
            output=_int(_get(raw, "completion_tokens")),
            reasoning=_int(_get(raw, "completion_tokens_details", "reasoning_tokens")),
            role=role,
            model=model,
        )

    @classmethod
    def from_openai_responses(
        cls, raw: Mapping[str, Any] | None, *, role: UsageRole = "agent", model: str = ""
    ) -> Usage:
        """The Responses API's ``usage``."""
        return cls._openai_convention(
            raw,
            total_in=_int(_get(raw, "input_tokens")),
            details=_get(raw, "input_tokens_details"),
            output=_int(_get(raw, "output_tokens")),
            reasoning=_int(_get(raw, "output_tokens_details", "reasoning_tokens")),
            role=role,
            model=model,
        )

    @classmethod
    def _openai_convention(
        cls,
        raw: Mapping[str, Any] | None,
        *,
        total_in: int,
        details: Any,
        output: int,
        reasoning: int,
        role: UsageRole,
        model: str,
    ) -> Usage:
        """OpenAI's totals include their parts: the cached and cache-written tokens are taken out
        of the input total (never beyond it), so the record's three input fields sum to it."""
        cached = min(total_in, _int(_get(details, "cached_tokens")))
        written = min(total_in - cached, _int(_get(details, "cache_write_tokens")))
        return cls(
            input_uncached=total_in - cached - written,
            cache_read=cached,
            cache_write=written,
            output=output,
            reasoning=min(output, reasoning),
            role=role,
            model=model,
            raw=dict(raw) if raw else None,
        )

    @classmethod
    def from_anthropic(
        cls, raw: Mapping[str, Any] | None, *, role: UsageRole = "agent", model: str = ""
    ) -> Usage:
        return cls(
            input_uncached=_int(_get(raw, "input_tokens")),
            cache_read=_int(_get(raw, "cache_read_input_tokens")),
            cache_write=_int(_get(raw, "cache_creation_input_tokens")),
            output=_int(_get(raw, "output_tokens")),
            role=role,
            model=model,
            raw=dict(raw) if raw else None,
        )

    @classmethod
    def from_gemini(
        cls, raw: Mapping[str, Any] | None, *, role: UsageRole = "agent", model: str = ""
    ) -> Usage:
        """The Gemini API's ``usageMetadata`` (wire names; the SDK's snake_case names also read)."""

        def count(camel: str, snake: str) -> int:
            return _int(_get(raw, camel) if _get(raw, camel) is not None else _get(raw, snake))

        total_in = count("promptTokenCount", "prompt_token_count") + count(
            "toolUsePromptTokenCount", "tool_use_prompt_token_count"
        )
        cached = min(total_in, count("cachedContentTokenCount", "cached_content_token_count"))
        thoughts = count("thoughtsTokenCount", "thoughts_token_count")
        return cls(
            input_uncached=total_in - cached,
            cache_read=cached,
            output=count("candidatesTokenCount", "candidates_token_count") + thoughts,
            reasoning=thoughts,
            role=role,
            model=model,
            raw=dict(raw) if raw else None,
        )

    @classmethod
    def from_tool_meta(cls, meta: Mapping[str, Any] | None) -> Usage | None:
        """Read a sidecar's report (``_meta[TOOL_USAGE_META_KEY]``); None when the tool reported none."""
        report = _get(meta, TOOL_USAGE_META_KEY)
        if not isinstance(report, Mapping):
            return None
        total_in = _int(report.get("input_tokens"))
        cache_read = min(total_in, _int(report.get("cached_tokens")))
        cache_write = min(total_in - cache_read, _int(report.get("cache_write_tokens")))
        model = str(report.get("model") or "")
        provider = str(report.get("provider") or "")
        return cls(
            input_uncached=total_in - cache_read - cache_write,
            cache_read=cache_read,
            cache_write=cache_write,
            output=_int(report.get("output_tokens")),
            reasoning=_int(report.get("reasoning_tokens")),
            role="tool-side",
            model=f"{provider}/{model}" if provider and model else model or provider,
            raw=dict(report),
        )

    @classmethod
    def cached_original_from_tool_meta(cls, meta: Mapping[str, Any] | None) -> Usage | None:
        """What a tool answer served from the tool's cache cost when it was first computed: the
        report's ``original_usage`` when ``from_cache`` is true (docs/architecture.md, "Sidecar
        token use"), else None. Not spent by this call: records keep it apart from ``usage``."""
        report = _get(meta, TOOL_USAGE_META_KEY)
        if not isinstance(report, Mapping) or report.get("from_cache") is not True:
            return None
        original = report.get("original_usage")
        if not isinstance(original, Mapping):
            return None
        counted = cls.from_tool_meta(
            {
                TOOL_USAGE_META_KEY: {
                    **original,
                    "model": report.get("model"),
                    "provider": report.get("provider"),
                }
            }
        )
        return replace(counted, raw=dict(report)) if counted is not None else None

    @classmethod
    def cache_hit(cls, original: Usage) -> Usage:
        """The usage of a reply served from docab's response cache: no tokens (nothing was spent),
        with what the reply cost when it was first made kept in ``raw`` (:meth:`cached_original`)."""
        return cls(
            role=original.role,
            model=original.model,
            raw={RESPONSE_CACHE_KEY: "hit", "original_usage": original.to_dict()},
        )

    def cached_original(self) -> Usage | None:
        """What a reply served from the response cache cost when first made; None for any other call."""
        if not isinstance(self.raw, Mapping) or self.raw.get(RESPONSE_CACHE_KEY) != "hit":
            return None
        original = self.raw.get("original_usage")
        if not isinstance(original, Mapping):
            return None
        return replace(Usage.from_dict(original), role=self.role, model=self.model)

    def with_role(self, role: UsageRole) -> Usage:
        return replace(self, role=role)

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "model": self.model,
            "input_uncached": self.input_uncached,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "output": self.output,
            "reasoning": self.reasoning,
            "raw": self.raw,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        return cls(
            input_uncached=_int(data.get("input_uncached")),
            cache_read=_int(data.get("cache_read")),
            cache_write=_int(data.get("cache_write")),
            output=_int(data.get("output")),
            reasoning=_int(data.get("reasoning")),
            role=data.get("role", "agent"),
            model=str(data.get("model", "")),
            raw=data.get("raw"),
        )


@dataclass(frozen=True)
class UsageTotals:
    """Sums of usage records, per role. ``calls`` counts the records summed."""

    input_uncached: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    reasoning: int = 0
    calls: int = 0

    @property
    def input_total(self) -> int:
        return self.input_uncached + self.cache_read + self.cache_write

    @property
    def total(self) -> int:
        return self.input_total + self.output

    def add(self, usage: Usage) -> UsageTotals:
        return UsageTotals(
            self.input_uncached + usage.input_uncached,
            self.cache_read + usage.cache_read,
            self.cache_write + usage.cache_write,
            self.output + usage.output,
            self.reasoning + usage.reasoning,
            self.calls + 1,
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "input_uncached": self.input_uncached,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "output": self.output,
            "reasoning": self.reasoning,
            "input_total": self.input_total,
            "total": self.total,
            "calls": self.calls,
        }


def totals_by_role(records: Iterable[Usage]) -> dict[str, UsageTotals]:
    totals: dict[str, UsageTotals] = {}
    for usage in records:
        totals[usage.role] = totals.get(usage.role, UsageTotals()).add(usage)
    return totals


@dataclass(frozen=True)
class Implausible:
    """A call's token count past :data:`PLAUSIBLE_COUNT`: ``what`` (``input``, ``output``) and
    ``count`` as recorded; ``held`` when a field of it was reported over :data:`MAX_COUNT` and is
    recorded at that."""

    what: str
    count: int
    held: bool = False

    def describe(self) -> str:
        """``1,000,000,000 input tokens (or more: docab records a field at most at 1,000,000,000)``."""
        held = f" (or more: docab records a field at most at {MAX_COUNT:,})" if self.held else ""
        return f"{self.count:,} {self.what} tokens{held}"


def implausible(usage: Usage) -> Implausible | None:
    """The larger of ``usage``'s input total and output when it is over :data:`PLAUSIBLE_COUNT`
    (no model reads or writes that much in one call); None for a plausible call."""
    inputs = (usage.input_uncached, usage.cache_read, usage.cache_write)
    found = max(
        Implausible("input", usage.input_total, held=max(inputs) >= MAX_COUNT),
        Implausible("output", usage.output, held=usage.output >= MAX_COUNT),
        key=lambda item: item.count,
    )
    return found if found.count > PLAUSIBLE_COUNT else None
