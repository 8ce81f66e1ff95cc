"""The calibration simulation (``docab calibrate``): its runs have the truths it claims, and the
report's tests hold their error rates on it. The full table (2,000 runs per cell) is in the README."""

from __future__ import annotations

import json

import numpy as np
import pytest

from docab.cli.main import main
from docab.report import stats
from docab.report.calibration import Design, run_cell, simulate, true_differences


def test_a_simulated_run_has_the_truths_its_design_states() -> None:
    rng = np.random.default_rng(0)
    for icc in (0.1, 0.3):
        design = Design(documents=4000, icc=icc, difference=0.1)
        run = simulate(design, rng).data
        sizes = np.bincount(stats.cluster_codes(run.clusters)[0])
        assert sizes.min() >= 2 and sizes.max() <= 20 and 7 <= sizes.mean() <= 9
        diff = run.score_b - run.score_a
        assert diff.mean() == pytest.approx(0.1, abs=0.01)
        assert np.mean(diff != 0) == pytest.approx(0.3, abs=0.01)  # the discordance
        null = simulate(Design(documents=4000, icc=icc), rng).data
        assert stats.icc_oneway(null.score_b - null.score_a, null.clusters) == pytest.approx(icc, abs=0.03)
        assert 1 - run.answerable.mean() == pytest.approx(0.2, abs=0.01)


def test_exchangeable_arms_have_no_f1_difference_and_a_shift_has_one() -> None:
    rng = np.random.default_rng(1)
    assert true_differences(Design(documents=30, icc=0.1), rng) == (0.0, 0.0)
    accuracy, f1 = true_differences(Design(documents=30, icc=0.1, difference=0.1), rng)
    assert accuracy == 0.1 and f1 > 0.05
    concentrated = Design(documents=30, icc=0.1, difference=0.05, effect_share=0.1)
    accuracy, _ = true_differences(concentrated, rng)
    assert accuracy == pytest.approx(0.05, abs=0.01)  # a tenth of documents carry the whole gain


def test_designs_that_cannot_exist_are_refused() -> None:
    with pytest.raises(ValueError, match="needs more than 30% of answers to differ"):
        Design(documents=30, icc=0.1, difference=0.4)
    with pytest.raises(ValueError, match="at least 2 documents"):
        Design(documents=1, icc=0.1)


def test_the_reports_tests_hold_their_error_rates_and_plain_mcnemar_does_not() -> None:
    """300 seeded runs of 30 documents at ICC 0.3, through paired_analysis and the gate. The rates'
    Monte Carlo SE is about 1.3 points: the bounds leave room for it, not for a broken method."""
    cell = run_cell(
        Design(documents=30, icc=0.3),
        runs=300,
        rng=np.random.default_rng(7),
        effect=0.1,
        bootstrap_resamples=0,
    )
    fp = cell.false_positive
    assert fp["accuracy difference"].rate <= 0.09
    assert fp["clustered McNemar"].rate <= 0.09
    assert fp["F1 difference"].rate <= 0.09
    assert fp["gate"].rate <= 0.08  # Holm over five metrics: at most 5 % in expectation
    assert fp["plain McNemar"].rate >= 0.15  # ignoring documents: several times too many
    assert cell.coverage["accuracy difference"].rate >= 0.90
    assert cell.power["clustered McNemar"].rate > 0.15
    assert cell.power["accuracy difference"].runs == 300


def test_the_command_prints_every_cell(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["calibrate", "--runs", "4", "--documents", "10,12", "--icc", "0.2", "--format", "json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert [(c["documents"], c["icc"]) for c in data["cells"]] == [(10, 0.2), (12, 0.2)]
    cell = data["cells"][0]
    assert set(cell["false_positive"]) >= {
        "accuracy difference",
        "gate",
        "plain McNemar",
        "percentile bootstrap",
    }
    assert all(0 <= t["rate"] <= 1 and t["runs"] == 4 for t in cell["false_positive"].values())
    assert main(["calibrate", "--runs", "2", "--documents", "10", "--icc", "0.2"]) == 0
    assert "False-positive rate (%)" in capsys.readouterr().out


def test_bad_options_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--icc", "1.5"]) == 2
    assert "each ICC must be between 0 and 1" in capsys.readouterr().err
    assert main(["calibrate", "--effect", "0.5", "--runs", "1", "--documents", "5"]) == 2
    assert "needs more than 30% of answers to differ" in capsys.readouterr().err
