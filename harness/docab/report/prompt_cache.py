"""What a sample's model calls would bill with a provider's prompt caching: an estimate.

The offline floor (``baseline/keyword``) counts every turn's whole input at full price (its tokens
are characters / 4 of what it was sent), which is what a provider *without* prompt caching charges.
Providers with prompt caching charge the part of a turn's input that repeats the previous turn's
conversation (system prompt, tool definitions, earlier turns) at a fraction of the input price, so
an arm whose extra tool definitions are re-sent every turn costs less than the uncached count says
(issue 24). This module re-splits each agent call's input under a provider's documented rule:

- the cached prefix of call k is the whole of call k-1 (its input and its output), when that is
  at least the rule's minimum; OpenAI caches in 128-token steps;
- the rest of the input is new: billed at the input price, or (Anthropic) written to the cache at
  its write price, when the call's input reaches the minimum;
- the result is *input-equivalent tokens*: uncached input + read multiplier x cached input + write
  multiplier x written input + output (output is unchanged; it is not input-priced, but the same
  in both estimates).

Rules (read 2026-12; providers change them, so the report labels these figures estimates):

- ``anthropic``: docs.anthropic.com/en/docs/build-with-claude/prompt-caching, "Pricing": a cache
  read costs 0.1x the base input price, a 5-minute cache write 1.25x; the minimum cacheable
  prompt is 1,024 tokens (Claude Sonnet and Opus). The harness would mark the last message as the
  cache breakpoint, so each call's prefix is written once and read on the next call.
- ``openai``: platform.openai.com/docs/guides/prompt-caching: automatic for prompts of 1,024
  tokens or more, cache hits in increments of 128 tokens, cached input at 50 % of the input price
  for GPT-4o (newer models discount more: this is the conservative figure); no write surcharge.

Pure: it reads usage records and returns numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from docab.usage import Usage


@dataclass(frozen=True)
class CacheRule:
    """A provider's prompt-caching prices, as multiples of its input price."""

    name: str
    read: float  # a cached input token costs this many input tokens
    write: float  # a token written to the cache costs this many (1: no surcharge)
    min_prefix: int  # prompts shorter than this are not cached
    step: int = 1  # cache hits come in whole steps of this many tokens
    source: str = ""


PROMPT_CACHE_RULES: dict[str, CacheRule] = {
    "anthropic": CacheRule(
        "anthropic",
        read=0.1,
        write=1.25,
        min_prefix=1024,
        source="docs.anthropic.com/en/docs/build-with-claude/prompt-caching (read 2026-12)",
    ),
    "openai": CacheRule(
        "openai",
        read=0.5,
        write=1.0,
        min_prefix=1024,
        step=128,
        source="platform.openai.com/docs/guides/prompt-caching (read 2026-12; GPT-4o's discount)",
    ),
}


def uncached_tokens(usages: Sequence[Usage]) -> float:
    """What the calls bill without prompt caching, in input-equivalent tokens: every input token at
    full price (a provider's reported cache reads and writes counted as plain input)."""
    return float(sum(u.input_total + u.output for u in usages))


def billed_with_cache(usages: Sequence[Usage], rule: CacheRule) -> float:
    """Input-equivalent tokens of the agent's calls (in order) under ``rule``; other roles' calls
    (an extractor, tool-side models) are counted uncached."""
    total = 0.0
    prefix = 0  # the previous agent call's input and output: what this call's input starts with
    for usage in usages:
        if usage.role != "agent":
            total += usage.input_total + usage.output
            continue
        prompt = usage.input_total
        cached = min(prefix, prompt) if prefix >= rule.min_prefix else 0
        cached -= cached % rule.step
        fresh = prompt - cached
        written = fresh if prompt >= rule.min_prefix and rule.write != 1.0 else 0
        total += cached * rule.read + (fresh - written) + written * rule.write + usage.output
        prefix = prompt + usage.output
    return total


def is_estimated(usages: Sequence[Usage]) -> bool:
    """The usage was estimated (the offline policy's characters / 4), not reported by a provider."""
    return any(isinstance(u.raw, dict) and "estimated" in u.raw for u in usages)
