"""Usage normalisation: each provider's convention maps to one record, every token counted once."""

from __future__ import annotations

from docab.usage import TOOL_USAGE_META_KEY, Usage, totals_by_role


def test_openai_prompt_tokens_include_cached_tokens() -> None:
    raw = {
        "prompt_tokens": 1000,
        "completion_tokens": 300,
        "prompt_tokens_details": {"cached_tokens": 800},
        "completion_tokens_details": {"reasoning_tokens": 200},
    }
    usage = Usage.from_openai(raw, model="openai/gpt-x")
    assert (usage.input_uncached, usage.cache_read, usage.cache_write) == (200, 800, 0)
    assert usage.input_total == 1000  # cached tokens counted once, not twice
    assert (usage.output, usage.reasoning, usage.total) == (300, 200, 1300)
    assert usage.raw == raw


def test_anthropic_input_tokens_exclude_cache() -> None:
    raw = {
        "input_tokens": 50,
        "cache_read_input_tokens": 900,
        "cache_creation_input_tokens": 100,
        "output_tokens": 40,
    }
    usage = Usage.from_anthropic(raw)
    assert (usage.input_uncached, usage.cache_read, usage.cache_write) == (50, 900, 100)
    assert usage.input_total == 1050
    assert usage.output == 40


def test_missing_and_garbage_fields_count_as_zero() -> None:
    assert Usage.from_openai(None).total == 0
    assert Usage.from_openai({"prompt_tokens": "x", "prompt_tokens_details": None}).total == 0
    # A provider claiming more cached tokens than prompt tokens cannot make input negative.
    assert (
        Usage.from_openai({"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 9}}).input_uncached
        == 0
    )


def test_impossible_counts_are_zero_or_held_at_the_ceiling_never_a_crash() -> None:
    import json

    from docab.usage import MAX_COUNT

    infinite = json.loads('{"prompt_tokens": 1e400, "completion_tokens": 5}')  # JSON reads inf
    assert Usage.from_openai(infinite).input_total == 0  # was: OverflowError, "failed unexpectedly"
    assert Usage.from_openai({"prompt_tokens": 1e30}).input_total == MAX_COUNT  # was $2.5e24


def test_a_reply_without_usage_is_unreported_not_zero() -> None:
    usage = Usage.unreported(model="openai/gpt-4o")
    assert not usage.reported and Usage.from_openai({"prompt_tokens": 3}).reported
    assert not Usage.from_dict(usage.to_dict()).reported  # as a record reads it back


def test_tool_side_usage_from_result_meta() -> None:
    meta = {
        TOOL_USAGE_META_KEY: {
            "provider": "openai",
            "model": "gpt-4o",
            "input_tokens": 1200,
            "cached_tokens": 200,
            "output_tokens": 80,
            "calls": 1,
        }
    }
    usage = Usage.from_tool_meta(meta)
    assert usage is not None
    assert (usage.role, usage.model, usage.input_uncached, usage.cache_read, usage.output) == (
        "tool-side",
        "openai/gpt-4o",
        1000,
        200,
        80,
    )
    assert Usage.from_tool_meta({}) is None


def test_round_trip_and_totals_by_role() -> None:
    a = Usage.from_openai({"prompt_tokens": 10, "completion_tokens": 2})
    b = Usage.from_anthropic({"input_tokens": 3, "output_tokens": 1}, role="extractor")
    assert Usage.from_dict(a.to_dict()) == a
    totals = totals_by_role([a, a, b])
    assert totals["agent"].input_total == 20 and totals["agent"].calls == 2
    assert totals["extractor"].total == 4
