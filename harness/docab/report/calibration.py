"""Calibration of the report's intervals, tests and gate by simulation (``docab calibrate``).

Every figure is computed by the code the report itself runs (:func:`docab.report.stats.paired_analysis`,
:func:`docab.report.comparisons.paired_results`, :func:`docab.report.gate.evaluate`) on runs simulated
with a known truth, so what is measured is what a user reads.

The simulated run (:func:`simulate`), for one design:

- ``documents`` documents, each with 2-20 questions: a geometric number (mean about 8, as in
  MMLongBench-Doc) clipped to that range, so sizes are unequal, the hard case for clustered
  inference;
- a share ``discordance`` of questions is answered right by exactly one arm; a discordant
  question favours B with a probability ``theta_c`` drawn per document from Beta(a (1 + s),
  a (1 − s)), so some documents favour one arm and some the other. ``a`` is set so that the
  paired differences d_i have the intraclass correlation ``icc`` within documents (when ``icc``
  exceeds what a fixed discordance allows, the discordance also varies by document), and
  ``s = difference / discordance`` makes the true mean difference exactly ``difference``;
- concordant questions are right in both arms with a document-level probability (Beta, ICC 0.2);
- 20 % of questions are unanswerable; an arm answers "Not answerable" on 30 % of the questions it
  gets wrong, which feeds the generalised F1;
- tokens and seconds are log-normal with document and question effects shared by the arms and a
  document-level arm effect of mean zero, so their true ratio is 1;
- evidence recall per question is the share of 1-3 evidence pages read, with a document effect,
  and the same distribution in both arms.

Under ``difference = 0`` the arms are exchangeable within documents, so every true difference
(accuracy, F1, costs, recall) is zero: a rejection is a false positive and the gate (all five
metrics gated at zero thresholds) fails only by mistake. Under a non-zero difference the F1
difference's truth is taken from one very large simulated run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from docab.report import stats
from docab.report.gate import Thresholds, evaluate
from docab.report.schema import Comparison, EvidenceComparison, ScoreComparison

Array = NDArray[np.float64]

DEFAULT_DOCUMENTS = (30, 80, 130)
DEFAULT_ICCS = (0.1, 0.3)
ZERO_THRESHOLDS = Thresholds(
    accuracy_drop_points=0.0,
    f1_drop_points=0.0,
    evidence_recall_drop_points=0.0,
    tokens_rise_percent=0.0,
    latency_rise_percent=0.0,
)


@dataclass(frozen=True)
class Design:
    """One cell of the calibration table."""

    documents: int
    icc: float  # within-document correlation of the paired differences
    difference: float = 0.0  # the true accuracy difference B − A
    discordance: float = 0.3  # share of questions answered right by exactly one arm
    mean_questions: float = 8.0  # per document, before clipping to 2-20
    accuracy: float = 0.45  # of the concordant questions
    # Share of documents the difference lives in (1: spread over all). Below 1, the arms' background
    # discordance is symmetric and each document drawn as "affected" gives B the win on a further
    # share difference / effect_share of its questions (a tool that helps only on some documents).
    effect_share: float = 1.0

    def __post_init__(self) -> None:
        if self.documents < 2:
            raise ValueError("a design needs at least 2 documents")
        if not 0 < self.icc < 1:
            raise ValueError(f"icc must be between 0 and 1, got {self.icc}")
        if not 0 < self.discordance < 1:
            raise ValueError(f"discordance must be between 0 and 1, got {self.discordance}")
        if not 0 < self.effect_share <= 1:
            raise ValueError(f"effect_share must be above 0 and at most 1, got {self.effect_share}")
        if self.effect_share < 1 and abs(self.difference) > self.effect_share:
            raise ValueError(
                f"a difference of {self.difference} cannot live in {self.effect_share:.0%} of documents"
            )
        if self.effect_share == 1 and abs(self.difference) >= self.discordance:
            raise ValueError(
                f"a difference of {self.difference} needs more than {self.discordance:.0%} of answers to differ"
            )


@dataclass(frozen=True)
class SimulatedRun:
    data: stats.PairedData
    recall_a: Array
    recall_b: Array


def _direction_shape(design: Design) -> tuple[float, float]:
    """(a, variance of the per-document discordance) giving the paired differences ICC ``icc``.

    With a fixed discordance pi and direction theta ~ Beta(a, a): ICC = pi / (2a + 1). When that
    needs a < 1/4, a is held at 1/4 and the discordance varies by document instead:
    ICC = (Var(pi) + pi^2) / ((2a + 1) pi).
    """
    a = (design.discordance / design.icc - 1) / 2
    if a >= 0.25:
        return a, 0.0
    a = 0.25
    return a, design.icc * design.discordance * (2 * a + 1) - design.discordance**2


def _beta_by_mean(rng: np.random.Generator, mean: float, variance: float, size: int) -> Array:
    concentration = mean * (1 - mean) / variance - 1
    return rng.beta(mean * concentration, (1 - mean) * concentration, size=size)


def simulate(design: Design, rng: np.random.Generator) -> SimulatedRun:
    """One run of the design (see the module docstring)."""
    count = design.documents
    sizes = np.clip(rng.geometric(1 / (design.mean_questions - 1), size=count) + 1, 2, 20)
    codes = np.repeat(np.arange(count), sizes)
    n = codes.size
    a, pi_variance = _direction_shape(design)
    disc = design.discordance
    pi = _beta_by_mean(rng, disc, pi_variance, count) if pi_variance > 0 else np.full(count, disc)
    spread = design.effect_share == 1
    s = design.difference / disc if spread else 0.0
    theta = rng.beta(a * (1 + s), a * (1 - s), size=count)
    right = _beta_by_mean(rng, design.accuracy, 0.2 * design.accuracy * (1 - design.accuracy), count)
    discordant = rng.random(n) < pi[codes]
    b_better = rng.random(n) < theta[codes]
    both = rng.random(n) < right[codes]
    score_a = np.where(discordant, ~b_better, both).astype(np.float64)
    score_b = np.where(discordant, b_better, both).astype(np.float64)
    if not spread and design.difference:
        affected = (rng.random(count) < design.effect_share)[codes]
        won = affected & (rng.random(n) < abs(design.difference) / design.effect_share)
        winner, loser = (score_b, score_a) if design.difference > 0 else (score_a, score_b)
        winner[won], loser[won] = 1.0, 0.0
    answerable = (rng.random(n) >= 0.2).astype(np.float64)
    answered_a = np.where((score_a == 1) & (answerable == 1), 1.0, (rng.random(n) >= 0.3).astype(np.float64))
    answered_b = np.where((score_b == 1) & (answerable == 1), 1.0, (rng.random(n) >= 0.3).astype(np.float64))

    def cost(mu: float, document_sd: float) -> tuple[Array, Array]:
        shared = rng.normal(mu, 0.6, n) + rng.normal(0, document_sd, count)[codes]
        arm = rng.normal(0, 0.15, count)[codes]
        return np.exp(shared + rng.normal(0, 0.3, n)), np.exp(shared + arm + rng.normal(0, 0.3, n))

    tokens_a, tokens_b = cost(8.0, 0.5)
    latency_a, latency_b = cost(2.0, 0.4)
    pages = rng.integers(1, 4, size=n)
    skill = rng.beta(2, 2, size=count)[codes]
    recall_a = rng.binomial(pages, skill) / pages
    recall_b = rng.binomial(pages, skill) / pages
    data = stats.PairedData(
        clusters=np.array([f"d{c}" for c in codes], dtype=object),
        score_a=score_a,
        score_b=score_b,
        answerable=answerable,
        answered_a=answered_a,
        answered_b=answered_b,
        tokens_a=tokens_a,
        tokens_b=tokens_b,
        latency_a=latency_a,
        latency_b=latency_b,
    )
    return SimulatedRun(data, recall_a.astype(np.float64), recall_b.astype(np.float64))


def true_differences(
    design: Design, rng: np.random.Generator, questions: int = 400_000
) -> tuple[float, float]:
    """The design's (accuracy, F1) differences: both exactly 0 when the arms are exchangeable; the
    accuracy one is the design's by construction when the difference is spread over all documents,
    and otherwise, like the F1 one always, taken from one very large run."""
    if design.difference == 0:
        return 0.0, 0.0
    big = simulate(
        Design(**{**design.__dict__, "documents": max(2, int(questions / design.mean_questions))}), rng
    )
    d = big.data
    f1 = stats.generalised_f1(d.score_b, d.answerable, d.answered_b) - stats.generalised_f1(
        d.score_a, d.answerable, d.answered_a
    )
    accuracy = design.difference if design.effect_share == 1 else float(np.mean(d.score_b - d.score_a))
    return accuracy, f1


def percentile_bootstrap_excludes(
    values: Array, codes: NDArray[np.intp], count: int, truth: float, rng: np.random.Generator, resamples: int
) -> bool:
    """Whether the paired percentile cluster bootstrap's 95 % interval of a mean excludes ``truth``.
    Not used by the report: here to show why (it is anti-conservative with few documents)."""
    drawn = rng.integers(0, count, size=(resamples, count))
    weights = np.bincount(
        (np.arange(resamples)[:, None] * count + drawn).ravel(), minlength=resamples * count
    )
    weights = weights.reshape(resamples, count).astype(np.float64)
    sums = np.bincount(codes, weights=values, minlength=count)
    sizes = np.bincount(codes, minlength=count).astype(np.float64)
    estimates = (weights @ sums) / (weights @ sizes)
    low, high = np.percentile(estimates, [2.5, 97.5])
    return not low <= truth <= high


# -- tallies ------------------------------------------------------------------------------------------


@dataclass
class Tally:
    """How often an event happened over ``runs`` simulated runs."""

    hits: int = 0
    runs: int = 0

    def add(self, event: bool) -> None:
        self.hits += bool(event)
        self.runs += 1

    @property
    def rate(self) -> float:
        return self.hits / self.runs if self.runs else math.nan

    @property
    def standard_error(self) -> float:
        """The Monte Carlo standard error of the rate."""
        p = self.rate
        return math.sqrt(p * (1 - p) / self.runs) if self.runs else math.nan


CHECKS: tuple[tuple[str, str], ...] = (
    ("accuracy difference", "cluster-t (CR3) interval of B − A"),
    ("clustered McNemar", "headline paired test"),
    ("F1 difference", "linearised cluster-t interval"),
    ("evidence recall difference", "cluster-t interval"),
    ("token ratio", "cluster-t interval of the mean log ratio"),
    ("latency ratio", "cluster-t interval of the mean log ratio"),
    ("arm accuracy", "Korn-Graubard / cluster-t interval of one arm"),
    ("gate", "Holm over 5 metrics, zero thresholds"),
    ("plain McNemar", "ignores documents: not used"),
    ("percentile bootstrap", "of the accuracy difference: not used"),
)


@dataclass
class CellResult:
    """One design's figures: false positives and coverage under no difference, coverage and power
    under the design's difference."""

    design: Design
    null_runs: int
    effect_runs: int
    false_positive: dict[str, Tally] = field(default_factory=dict)
    coverage: dict[str, Tally] = field(default_factory=dict)  # under the true difference
    power: dict[str, Tally] = field(default_factory=dict)


def _covers(low: float | None, high: float | None, truth: float) -> bool:
    return low is not None and high is not None and low <= truth <= high


def _excludes(low: float | None, high: float | None, value: float) -> bool:
    return low is not None and high is not None and not low <= value <= high


def _comparison(run: SimulatedRun) -> tuple[stats.PairedAnalysis, Comparison]:
    from docab.report.arms import difference
    from docab.report.comparisons import paired_results

    analysis = stats.paired_analysis(run.data)
    recall = stats.mean_t(run.recall_b - run.recall_a, run.data.clusters)
    evidence = EvidenceComparison(
        questions=run.data.n,
        recall=ScoreComparison(
            a=float(run.recall_a.mean()), b=float(run.recall_b.mean()), difference=difference(recall)
        ),
        precision=None,
    )
    itt = paired_results(analysis, evidence)
    return analysis, Comparison(
        a="A", b="B", questions_a=run.data.n, questions_b=run.data.n, paired=run.data.n, itt=itt
    )


def run_cell(
    design: Design,
    *,
    runs: int,
    rng: np.random.Generator,
    effect: float,
    bootstrap_resamples: int = 1_000,
    progress: Callable[[int], None] | None = None,
) -> CellResult:
    """``runs`` simulated runs with no difference and ``runs`` with ``effect``, through the report.
    ``bootstrap_resamples = 0`` leaves out the percentile bootstrap (the slowest part)."""
    null_design = Design(**{**design.__dict__, "difference": 0.0})
    effect_design = Design(**{**design.__dict__, "difference": effect})
    result = CellResult(design, runs, runs)
    fp, cov, pw = result.false_positive, result.coverage, result.power
    for key, _ in CHECKS:
        fp[key], cov[key], pw[key] = Tally(), Tally(), Tally()
    truth_arm = design.accuracy * (1 - design.discordance) + design.discordance / 2  # under the null
    for index in range(runs):
        run = simulate(null_design, rng)
        analysis, comparison = _comparison(run)
        itt = comparison.itt
        assert itt is not None
        fp["accuracy difference"].add(
            _excludes(itt.accuracy.difference.low, itt.accuracy.difference.high, 0.0)
        )
        fp["clustered McNemar"].add((itt.accuracy.clustered_mcnemar.p_value or 1.0) < 0.05)
        fp["F1 difference"].add(_excludes(itt.f1.difference.low, itt.f1.difference.high, 0.0))
        assert itt.evidence is not None
        recall = itt.evidence.recall.difference
        fp["evidence recall difference"].add(_excludes(recall.low, recall.high, 0.0))
        fp["token ratio"].add(_excludes(itt.tokens.ratio.low, itt.tokens.ratio.high, 1.0))
        fp["latency ratio"].add(_excludes(itt.latency.ratio.low, itt.latency.ratio.high, 1.0))
        arm = stats.proportion_interval(run.data.score_a, run.data.clusters)
        fp["arm accuracy"].add(not arm.low <= truth_arm <= arm.high)
        fp["gate"].add(any(c.verdict == "fail" for c in evaluate(comparison, ZERO_THRESHOLDS)))
        fp["plain McNemar"].add(analysis.mcnemar.p_value < 0.05)
        if bootstrap_resamples:
            codes, count = stats.cluster_codes(run.data.clusters)
            fp["percentile bootstrap"].add(
                percentile_bootstrap_excludes(
                    run.data.score_b - run.data.score_a, codes, count, 0.0, rng, bootstrap_resamples
                )
            )
        if progress:
            progress(index)
    accuracy_truth, f1_truth = true_differences(effect_design, rng)
    for index in range(runs):
        run = simulate(effect_design, rng)
        analysis, comparison = _comparison(run)
        itt = comparison.itt
        assert itt is not None
        gap = itt.accuracy.difference
        cov["accuracy difference"].add(_covers(gap.low, gap.high, accuracy_truth))
        pw["accuracy difference"].add(_excludes(gap.low, gap.high, 0.0))
        pw["clustered McNemar"].add((itt.accuracy.clustered_mcnemar.p_value or 1.0) < 0.05)
        cov["F1 difference"].add(_covers(itt.f1.difference.low, itt.f1.difference.high, f1_truth))
        pw["F1 difference"].add(_excludes(itt.f1.difference.low, itt.f1.difference.high, 0.0))
        pw["plain McNemar"].add(analysis.mcnemar.p_value < 0.05)
        if bootstrap_resamples:
            codes, count = stats.cluster_codes(run.data.clusters)
            cov["percentile bootstrap"].add(
                not percentile_bootstrap_excludes(
                    run.data.score_b - run.data.score_a,
                    codes,
                    count,
                    accuracy_truth,
                    rng,
                    bootstrap_resamples,
                )
            )
        if progress:
            progress(runs + index)
    return result


def designs(documents: Sequence[int], iccs: Sequence[float], discordance: float) -> Iterator[Design]:
    for count in documents:
        for icc in iccs:
            yield Design(count, icc, discordance=discordance)
