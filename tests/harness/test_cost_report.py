"""US dollars in every reader: summary.json, report.md, the terminal, the export and the viewer."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.pricing.cost import SampleCost
from docab.report.render import to_markdown, usd
from docab.report.schema import parse_summary
from docab.report.summary import build_report, load_run
from docab.usage import Usage
from tests.harness.synthetic_runs import make_record, random_run, write_run

GPT_4O = (2.5, 1.25, 10.0)  # input, cached input, output: USD per million tokens (prices.toml)


def test_a_priced_run_reports_cost_per_arm_and_question_and_the_ratio_with_its_interval(
    tmp_path: Path,
) -> None:
    folder = random_run(tmp_path / "r", model="openai/gpt-4o", documents=8, per_document=4)
    summary = build_report(load_run(folder)).summary
    records = load_run(folder).records
    for arm in summary.arms:
        assert arm.cost is not None and not arm.cost.unpriced
        expected = 0.0
        for record in records:
            if record.arm != arm.arm:
                continue
            for u in record.usage:
                expected += (
                    u.input_uncached * GPT_4O[0] + u.cache_read * GPT_4O[1] + u.output * GPT_4O[2]
                ) / 1e6
        assert arm.cost.total == pytest.approx(expected)
        assert arm.cost.per_question is not None and arm.cost.per_question.n == arm.questions
        assert sum(arm.cost.by_role.values()) == pytest.approx(expected) and arm.cost.by_role["agent"] > 0
    itt = summary.comparisons[0].itt
    assert itt is not None and itt.cost is not None
    ratio = itt.cost.ratio
    # random_run scales tokens by 1.4 in arm B: the dollar ratio follows, with the interval the
    # report gives the token ratio (the sign-flip test below 30 documents, else the cluster-robust t).
    assert ratio.method == summary.comparisons[0].itt.tokens.ratio.method  # type: ignore[union-attr]
    assert ratio.low is not None and ratio.high is not None
    assert ratio.low < ratio.value < ratio.high and 1.2 < ratio.value < 1.6
    assert ratio.documents == 8
    (row,) = summary.prices
    assert (row.model, row.origin, row.input, row.cached_input, row.output) == (
        "openai/gpt-4o",
        "table",
        *GPT_4O,
    )
    assert row.source.startswith("https://") and row.date
    text = to_markdown(summary)
    assert "## Cost (USD)" in text and "Cost (USD)/q (median)" in text
    assert (
        f"openai/gpt-4o: $2.5 input, $1.25 cached input, $2.5 cache write, $10 output per million tokens (source {row.source}, {row.date})"
        in text
    )
    assert parse_summary(summary.model_dump_json()) == summary


def test_a_model_without_a_price_says_price_unknown_never_0(tmp_path: Path) -> None:
    folder = random_run(tmp_path / "r", model="openai/some-unpriced-model", documents=3, per_document=2)
    summary = build_report(load_run(folder)).summary
    for arm in summary.arms:
        assert arm.cost is not None and arm.cost.total is None and arm.cost.per_question is None
        assert arm.cost.unpriced == ["openai/some-unpriced-model"]
    itt = summary.comparisons[0].itt
    assert itt is not None and itt.cost is None
    text = to_markdown(summary)
    assert "| fs | price unknown | price unknown |" in text
    assert "| Cost (USD)/q | price unknown | price unknown |" in text
    assert "openai/some-unpriced-model: price unknown" in text
    assert summary.prices[0].origin == "unknown"


def test_a_price_from_the_config_in_the_manifest_prices_old_records(tmp_path: Path) -> None:
    records = [
        make_record(arm, f"q{i}", f"d{i}", model="openai/gateway-model")
        for arm in ("a", "b")
        for i in range(3)
    ]
    config = {"name": "openai/gateway-model", "price": {"input": 1.0, "output": 2.0}}
    folder = write_run(
        tmp_path / "r", records, {"models": {"agent": "openai/gateway-model", "config": config}}
    )
    summary = build_report(load_run(folder)).summary
    assert summary.prices[0].origin == "config"
    assert "from the run's config" in to_markdown(summary)


def test_cache_savings_show_what_the_run_would_cost_uncached(tmp_path: Path) -> None:
    records = []
    for arm in ("a", "b"):
        for i in range(3):
            record = make_record(arm, f"q{i}", f"d{i}", model="openai/gpt-4o")
            cached = (Usage(input_uncached=1_000_000, role="tool-side", model="openai/gpt-4o-mini"),)
            cost = SampleCost(by_role={"agent": 0.01}, cached_usd=0.15)
            records.append(dataclasses.replace(record, cached_tool_usage=cached, cost=cost))
    folder = write_run(tmp_path / "r", records)
    summary = build_report(load_run(folder)).summary
    arm = summary.arms[0]
    assert arm.cost is not None
    assert arm.cost.total == pytest.approx(0.03) and arm.cost.saved_by_cache == pytest.approx(0.45)
    assert arm.cost.uncached_total == pytest.approx(0.48)
    text = to_markdown(summary)
    assert (
        "saved by cache" in text and "| a | $0.0300 | $0.0100 ($0.0100) | $0.0300 | $0.450 | $0.480 |" in text
    )
    assert {r.model for r in summary.prices} == {"openai/gpt-4o", "openai/gpt-4o-mini"}


def test_the_export_and_the_viewer_carry_cost(tmp_path: Path) -> None:
    folder = random_run(tmp_path / "r", model="openai/gpt-4o", documents=3, per_document=2)
    assert main(["export", str(folder), "--format", "csv"]) == 0
    import csv

    rows = list(csv.DictReader((folder / "records.csv").open()))
    assert rows and all(r["cost"] for r in rows)
    for r in rows:
        parts = float(r["cost_agent"]) + float(r["cost_extractor"]) + float(r["cost_tool_side"])
        assert float(r["cost"]) > 0 and float(r["cost"]) == pytest.approx(parts)
    assert main(["export", str(folder), "--format", "csv", "--level", "questions"]) == 0
    (questions,) = [p for p in folder.glob("*.csv") if p.name != "records.csv"]
    assert all(float(r["cost_usd"]) > 0 for r in csv.DictReader(questions.open()))
    assert main(["view", str(folder), "--no-plots"]) == 0
    page = (folder / "viewer" / "index.html").read_text()
    assert "Cost (USD)" in page


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0, "$0"), (0.01234, "$0.0123"), (0.5, "$0.500"), (12.345, "$12.35"), (1234.5, "$1,234"), (None, "–")],
)
def test_dollars_are_shown_to_three_significant_figures_under_a_dollar(
    value: float | None, text: str
) -> None:
    assert usd(value) == text


def test_summary_json_of_the_offline_demo_shows_cost_0(demo_run: Path) -> None:
    summary = parse_summary((demo_run / "summary.json").read_text())
    for arm in summary.arms:
        assert arm.cost is not None and arm.cost.total == 0 and not arm.cost.unpriced
    assert [(r.model, r.origin) for r in summary.prices] == [("baseline/keyword", "offline policy")]
    records = [json.loads(line) for line in (demo_run / "records.jsonl").read_text().splitlines()]
    assert all(r["cost"]["total"] == 0 for r in records)


def test_inspect_logs_carry_total_cost(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai import log as inspect_log

    records = [
        make_record("fs", "q1", "d1", model="openai/gpt-4o", input_tokens=1000, output_tokens=100),
        make_record("fs", "q2", "d2", model="openai/gpt-4o", input_tokens=2000, output_tokens=200),
        make_record("x", "q1", "d1", model="openai/unpriced", input_tokens=1000, output_tokens=100),
    ]
    folder = write_run(tmp_path / "run", records)
    assert main(["export", str(folder), "--format", "inspect"]) == 0
    log = inspect_log.read_eval_log(str(next((folder / "inspect").glob("fs-*.eval"))))
    assert log.stats.model_usage["openai/gpt-4o"].total_cost == pytest.approx((3000 * 2.5 + 300 * 10) / 1e6)
    first = next(s for s in log.samples or [] if s.id == "q1")
    assert first.model_usage["openai/gpt-4o"].total_cost == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6)
    unpriced = inspect_log.read_eval_log(str(next((folder / "inspect").glob("x-*.eval"))))
    assert unpriced.stats.model_usage["openai/unpriced"].total_cost is None
