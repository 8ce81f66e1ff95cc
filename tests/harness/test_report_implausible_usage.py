"""A call whose reported usage no model can reach (an endpoint's bug) is in the cost table as
billed, and the report says so: the run warned only on its console, which a report read later
(or a merge of shards) never sees."""

from __future__ import annotations

from pathlib import Path

from docab.report.render import to_markdown
from docab.report.summary import build_report, load_run
from docab.usage import PLAUSIBLE_COUNT
from tests.harness.synthetic_runs import make_record, write_run


def _run(tmp_path: Path, *, huge_input: int | None) -> Path:
    records = []
    for arm in ("A", "B"):
        for i in range(3):
            tokens = huge_input if (huge_input and arm == "B" and i == 1) else 1000
            records.append(make_record(arm, f"q{i}", f"d{i}", input_tokens=tokens, model="openai/gpt-4o"))
    return write_run(tmp_path / "run", records)


def test_a_call_past_any_models_context_is_warned_in_the_report_with_its_place(tmp_path: Path) -> None:
    folder = _run(tmp_path, huge_input=10**15)
    data = load_run(folder)
    (warning,) = [w for w in data.warnings if "more tokens than any model uses" in w]
    assert "1 model call(s)" in warning and "in B/q1" in warning
    assert "1,000,000,000 input tokens (or more" in warning  # held at the record's cap, and said so
    summary = build_report(data).summary
    assert warning in summary.warnings
    assert warning in to_markdown(summary)
    # billed as reported, never dropped: the cost table counts the call
    arm_b = next(a for a in summary.arms if a.arm == "B")
    arm_a = next(a for a in summary.arms if a.arm == "A")
    assert arm_b.cost is not None and arm_a.cost is not None and arm_b.cost.total > 1000 * arm_a.cost.total


def test_plausible_usage_gives_no_warning_even_just_under_the_bound(tmp_path: Path) -> None:
    data = load_run(_run(tmp_path, huge_input=PLAUSIBLE_COUNT))
    assert not [w for w in data.warnings if "more tokens than any model uses" in w]


def test_just_over_the_bound_is_warned_without_the_cap_remark(tmp_path: Path) -> None:
    data = load_run(_run(tmp_path, huge_input=PLAUSIBLE_COUNT + 1))
    (warning,) = [w for w in data.warnings if "more tokens than any model uses" in w]
    assert f"{PLAUSIBLE_COUNT + 1:,} input tokens" in warning and "or more" not in warning
