"""Token estimates with each provider's prompt caching (issue 24, item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from docab.report.prompt_cache import (
    PROMPT_CACHE_RULES,
    CacheRule,
    billed_with_cache,
    is_estimated,
    uncached_tokens,
)
from docab.usage import Usage

ESTIMATED = {"estimated": "characters / 4"}


def calls(*pairs: tuple[int, int], role: str = "agent") -> list[Usage]:
    return [Usage(input_uncached=i, output=o, role=role, raw=ESTIMATED) for i, o in pairs]  # type: ignore[arg-type]


def test_each_turn_reads_the_previous_turn_from_the_cache_at_the_read_price() -> None:
    rule = CacheRule("test", read=0.1, write=1.0, min_prefix=1000)
    usages = calls((2000, 100), (2500, 50), (3000, 10))
    # turn 1: nothing cached; turn 2: 2,100 of 2,500 cached; turn 3: 2,550 of 3,000 cached
    expected = 2000 + 100 + (2100 * 0.1 + 400) + 50 + (2550 * 0.1 + 450) + 10
    assert billed_with_cache(usages, rule) == pytest.approx(expected)
    assert uncached_tokens(usages) == 2000 + 100 + 2500 + 50 + 3000 + 10


def test_writes_pay_the_surcharge_and_short_prompts_are_never_cached() -> None:
    anthropic = PROMPT_CACHE_RULES["anthropic"]
    assert billed_with_cache(calls((500, 10), (900, 10)), anthropic) == 500 + 10 + 900 + 10
    usages = calls((2000, 0), (2100, 0))
    assert billed_with_cache(usages, anthropic) == pytest.approx(2000 * 1.25 + 2000 * 0.1 + 100 * 1.25)


def test_openai_caches_in_steps_of_128_tokens_and_other_roles_are_uncached() -> None:
    openai = PROMPT_CACHE_RULES["openai"]
    usages = [*calls((1100, 0), (1300, 0)), *calls((5000, 5), role="extractor")]
    cached = 1100 - 1100 % 128  # 1,024
    assert billed_with_cache(usages, openai) == pytest.approx(1100 + cached * 0.5 + (1300 - cached) + 5005)


def test_only_the_offline_policys_usage_is_estimated() -> None:
    assert is_estimated(calls((10, 1)))
    assert not is_estimated([Usage(input_uncached=10, raw={"prompt_tokens": 10})])


def test_the_report_compares_tokens_with_each_providers_prompt_caching_as_estimates(tmp_path: Path) -> None:
    from docab.report.render import to_markdown
    from docab.report.summary import build_report, load_run
    from tests.harness.synthetic_runs import make_record, write_run

    records = []
    for q in range(8):
        for arm, extra in (("fs", 0), ("md", 800)):
            record = make_record(arm, f"q{q}", f"d{q % 4}", input_tokens=0, output_tokens=0)
            usage = tuple(calls((1500 + extra, 50), (2500 + extra, 50), (3500 + extra, 20)))
            records.append(record.__class__(**{**record.__dict__, "usage": usage}))
    summary = build_report(load_run(write_run(tmp_path / "run", records))).summary
    itt = summary.comparisons[0].itt
    assert itt is not None and itt.tokens_estimated
    rules = {e.rule: e for e in itt.prompt_cache}
    assert set(rules) == {"anthropic", "openai"}
    uncached = itt.tokens.ratio.value
    assert uncached is not None
    for estimate in rules.values():
        assert estimate.tokens.ratio.value is not None and estimate.tokens.ratio.value < uncached
        assert estimate.tokens.a.median is not None and itt.tokens.a.median is not None
        assert estimate.tokens.a.median < itt.tokens.a.median
    markdown = to_markdown(summary)
    assert "with anthropic prompt caching (estimate)" in markdown
    assert "Tokens are estimates" in markdown
