"""The regression gate's verdicts on comparison summaries, and its threshold files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from docab.report.gate import (
    GateConfigError,
    Thresholds,
    evaluate,
    failures,
    load_thresholds,
    parse_thresholds,
)


def comparison(
    accuracy: tuple[float, float, float] = (0.0, 0.0, 0.0),
    tokens_ratio: tuple[float, float, float] = (1.0, 1.0, 1.0),
    recall: tuple[float, float, float] | None = None,
) -> dict[str, Any]:
    estimate, low, high = accuracy
    cell = {"a": 0.8, "b": 0.8 + estimate, "difference": {"estimate": estimate, "low": low, "high": high}}
    ratio, ratio_low, ratio_high = tokens_ratio
    result: dict[str, Any] = {
        "a": "base",
        "b": "new",
        "itt": {
            "accuracy": cell,
            "f1": cell,
            "tokens": {
                "a": {"median": 1000.0},
                "b": {"median": 1000.0 * ratio},
                "ratio": {"ratio": ratio, "ratio_low": ratio_low, "ratio_high": ratio_high},
            },
            "latency": {"a": {"median": 1.0}, "b": {"median": 1.0}, "ratio": {}},
        },
        "evidence_recall": None,
    }
    if recall:
        result["evidence_recall"] = {
            "a": 0.9,
            "b": 0.9 + recall[0],
            "difference": dict(zip(("estimate", "low", "high"), recall, strict=True)),
        }
    return result


def verdicts(checks: list[Any]) -> dict[str, str]:
    return {c.metric: c.verdict for c in checks}


def test_a_drop_beyond_the_threshold_with_a_certain_interval_fails() -> None:
    checks = evaluate(comparison(accuracy=(-0.05, -0.08, -0.02)), Thresholds(accuracy_drop_points=2))
    assert verdicts(checks)["accuracy"] == "fail"
    assert checks[0].change == pytest.approx(-5.0) and checks[0].high == pytest.approx(-2.0)
    assert verdicts(checks)["F1"] == "not gated"
    assert verdicts(checks)["evidence recall"] == "not measured"
    assert verdicts(checks)["latency"] == "not measured"


def test_a_drop_whose_interval_reaches_zero_passes_however_large() -> None:
    noisy = comparison(accuracy=(-0.10, -0.25, 0.01))
    assert verdicts(evaluate(noisy, Thresholds(accuracy_drop_points=2)))["accuracy"] == "pass"


def test_a_certain_drop_within_the_threshold_passes() -> None:
    small = comparison(accuracy=(-0.01, -0.015, -0.005))
    assert verdicts(evaluate(small, Thresholds(accuracy_drop_points=2)))["accuracy"] == "pass"
    assert verdicts(evaluate(small, Thresholds(accuracy_drop_points=0)))["accuracy"] == "fail"


def test_costs_fail_on_a_certain_rise_beyond_the_percentage() -> None:
    dearer = comparison(tokens_ratio=(1.30, 1.20, 1.40))
    assert verdicts(evaluate(dearer, Thresholds(tokens_rise_percent=10)))["tokens"] == "fail"
    assert verdicts(evaluate(dearer, Thresholds(tokens_rise_percent=50)))["tokens"] == "pass"
    uncertain = comparison(tokens_ratio=(1.30, 0.95, 1.70))
    assert verdicts(evaluate(uncertain, Thresholds(tokens_rise_percent=10)))["tokens"] == "pass"
    (line,) = failures(dearer, Thresholds(tokens_rise_percent=10))
    assert line.startswith("tokens of new rose by 30.0 % against base (95 % CI +20.0 to +40.0)")


def test_evidence_recall_is_gated_in_points() -> None:
    lost = comparison(recall=(-0.2, -0.3, -0.1))
    (line,) = failures(lost, Thresholds(evidence_recall_drop_points=5))
    assert line.startswith("evidence recall of new fell by 20.0 points")


def test_nothing_paired_fails_only_a_gate_that_gates_something() -> None:
    empty = {"a": "base", "b": "new", "note": "the arms share no question; nothing to pair"}
    assert failures(empty, Thresholds()) == []
    assert failures(empty, Thresholds(f1_drop_points=1)) == [
        "nothing to compare: the arms share no question; nothing to pair"
    ]


def test_flags_override_the_file_and_none_keeps_it() -> None:
    base = Thresholds(accuracy_drop_points=2, tokens_rise_percent=10)
    merged = base.merged(accuracy_drop_points=None, tokens_rise_percent=20, latency_rise_percent=None)
    assert merged == Thresholds(accuracy_drop_points=2, tokens_rise_percent=20)
    assert not Thresholds().any and merged.any


def test_threshold_files(tmp_path: Path) -> None:
    path = tmp_path / "gate.toml"
    path.write_text("[gate]\naccuracy_drop_points = 2\ntokens_rise_percent = 7.5\n")
    assert load_thresholds(path) == Thresholds(accuracy_drop_points=2.0, tokens_rise_percent=7.5)
    with pytest.raises(GateConfigError, match="must be a number"):
        parse_thresholds({"gate": {"f1_drop_points": True}})
    with pytest.raises(GateConfigError, match="must be a number"):
        parse_thresholds({"gate": {"f1_drop_points": "2"}})


def test_the_committed_ci_gate_file_is_valid() -> None:
    from tests.conftest import REPO_ROOT

    thresholds = load_thresholds(REPO_ROOT / "results" / "baselines" / "gate.toml")
    assert thresholds.accuracy_drop_points is not None and thresholds.evidence_recall_drop_points is not None
