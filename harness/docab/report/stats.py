"""Paired A/B statistics for question scores clustered by document. Pure functions on arrays.

The design (../shared/specs/harness.md, "Statistics for the A/B report"):

- Epochs are averaged per question first; then each question gives one paired difference
  d_i = s_B,i - s_A,i.
- Questions about the same document are correlated, so every interval treats the *document* as the
  unit: the clustered standard error with t on C-1 degrees of freedom, and the primary interval, a
  paired cluster bootstrap that resamples documents (percentile interval). Ratio metrics such as the
  generalised F1 are recomputed inside each resample.
- Secondary tests: exact McNemar on binary correctness, Wilcoxon signed-rank on tokens and latency.
- Skewed costs get medians, p90 and the paired ratio (geometric mean of B/A).
- Small samples get exact-type intervals: Clopper-Pearson on the Korn-Graubard effective sample
  size, which keeps the clustering.
- Planning: the minimum detectable effect for n questions, inflated by the design effect
  1 + (m - 1) ICC.

Every function takes plain sequences or numpy arrays and returns small frozen dataclasses; nothing
here reads files or prints. ``docab.report.summary`` turns the results into the summary's schema
(``docab.report.schema``), the one JSON form of them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from docab.report.schema import IntervalMethod

Array = NDArray[np.float64]

DEFAULT_RESAMPLES = 10_000
SMALL_SAMPLE = 300  # below this many questions, proportions get exact-type intervals
_CHUNK = 2_000  # resamples drawn at a time: bounds memory for runs with many documents


# -- basic building blocks ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: IntervalMethod
    confidence: float = 0.95

    @property
    def excludes_zero(self) -> bool:
        return bool(self.low > 0 or self.high < 0)


NO_INTERVAL = Interval(math.nan, math.nan, "none")


def as_array(values: ArrayLike) -> Array:
    return np.asarray(values, dtype=np.float64).reshape(-1)


def cluster_codes(clusters: Sequence[Any] | NDArray[Any]) -> tuple[NDArray[np.intp], int]:
    """Integer codes 0..C-1 for cluster labels (documents), and C."""
    _, codes = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
    codes = codes.reshape(-1)
    return codes, int(codes.max()) + 1 if codes.size else 0


# -- clustered means -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusteredMean:
    mean: float
    se: float
    n: int
    clusters: int
    interval: Interval

    @property
    def df(self) -> int:
        return self.clusters - 1


def clustered_se(values: ArrayLike, clusters: Sequence[Any] | NDArray[Any]) -> float:
    """sqrt(C/(C-1) * sum_c (sum_{i in c} (x_i - mean))^2) / n; NaN with fewer than two clusters."""
    x = as_array(values)
    codes, count = cluster_codes(clusters)
    if x.size == 0 or count < 2:
        return math.nan
    residual_sums = np.bincount(codes, weights=x - x.mean(), minlength=count)
    return math.sqrt(count / (count - 1) * float(np.sum(residual_sums**2))) / x.size


def clustered_mean(
    values: ArrayLike, clusters: Sequence[Any] | NDArray[Any], confidence: float = 0.95
) -> ClusteredMean:
    """The mean with its cluster-robust SE and a t interval on C-1 degrees of freedom."""
    x = as_array(values)
    _, count = cluster_codes(clusters)
    mean = float(x.mean()) if x.size else math.nan
    se = clustered_se(x, clusters)
    if not math.isfinite(se):
        return ClusteredMean(mean, se, int(x.size), count, NO_INTERVAL)
    half = float(sps.t.ppf(0.5 + confidence / 2, count - 1)) * se
    return ClusteredMean(
        mean, se, int(x.size), count, Interval(mean - half, mean + half, "cluster-t", confidence)
    )


# -- proportions -------------------------------------------------------------------------------------


def clopper_pearson(successes: float, n: float, confidence: float = 0.95) -> Interval:
    """The exact binomial interval; ``successes`` and ``n`` may be fractional (effective counts)."""
    if n <= 0:
        return Interval(math.nan, math.nan, "clopper-pearson", confidence)
    alpha = 1 - confidence
    k = min(max(successes, 0.0), n)
    low = 0.0 if k <= 0 else float(sps.beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k >= n else float(sps.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return Interval(low, high, "clopper-pearson", confidence)


def korn_graubard(
    values: ArrayLike, clusters: Sequence[Any] | NDArray[Any], confidence: float = 0.95
) -> Interval:
    """Clopper-Pearson on the effective sample size (Korn & Graubard 1998), for clustered proportions.

    n_eff = p(1-p) / SE_clustered^2 (capped at n), shrunk by (t_{n-1} / t_{C-1})^2 for the few
    degrees of freedom that C clusters give. With no clustering information it is plain
    Clopper-Pearson on n.
    """
    x = as_array(values)
    n = x.size
    if n == 0:
        return Interval(math.nan, math.nan, "korn-graubard", confidence)
    p = float(x.mean())
    _, count = cluster_codes(clusters)
    se = clustered_se(x, clusters)
    n_eff = float(n)
    if 0 < p < 1 and math.isfinite(se) and se > 0:
        n_eff = min(float(n), p * (1 - p) / se**2)
    if count >= 2 and n > 1:
        quantile = 0.5 + confidence / 2
        n_eff *= (float(sps.t.ppf(quantile, n - 1)) / float(sps.t.ppf(quantile, count - 1))) ** 2
    interval = clopper_pearson(p * n_eff, n_eff, confidence)
    return Interval(interval.low, interval.high, "korn-graubard", confidence)


def proportion_interval(
    values: ArrayLike,
    clusters: Sequence[Any] | NDArray[Any],
    confidence: float = 0.95,
    small_sample: int = SMALL_SAMPLE,
) -> Interval:
    """A mean score's interval: exact-type (Korn-Graubard) for small n, clustered t otherwise."""
    x = as_array(values)
    if x.size < small_sample:
        return korn_graubard(x, clusters, confidence)
    interval = clustered_mean(x, clusters, confidence).interval
    if interval.method == "none":
        return korn_graubard(x, clusters, confidence)
    return Interval(max(0.0, interval.low), min(1.0, interval.high), interval.method, confidence)


# -- tests on pairs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class McNemar:
    b: int  # A right, B wrong
    c: int  # A wrong, B right
    p_value: float


def mcnemar_exact(correct_a: ArrayLike, correct_b: ArrayLike) -> McNemar:
    """Exact two-sided McNemar: a binomial test of b against b+c discordant pairs at 1/2."""
    a = np.asarray(correct_a, dtype=bool)
    b_arm = np.asarray(correct_b, dtype=bool)
    b = int(np.sum(a & ~b_arm))
    c = int(np.sum(~a & b_arm))
    discordant = b + c
    p = 1.0 if discordant == 0 else min(1.0, 2 * float(sps.binom.cdf(min(b, c), discordant, 0.5)))
    return McNemar(b, c, p)


@dataclass(frozen=True)
class SignedRank:
    statistic: float
    p_value: float
    n_nonzero: int


def wilcoxon_signed_rank(a: ArrayLike, b: ArrayLike) -> SignedRank:
    """Wilcoxon signed-rank on b - a (zero differences dropped, exact for small n without ties)."""
    d = as_array(b) - as_array(a)
    d = d[np.isfinite(d) & (d != 0)]
    if d.size == 0:
        return SignedRank(math.nan, 1.0, 0)
    result = sps.wilcoxon(d)
    return SignedRank(float(result.statistic), float(result.pvalue), int(d.size))


@dataclass(frozen=True)
class PairedRatio:
    geometric_mean: float  # exp(mean(log(b / a))) over pairs where both are positive
    n_used: int
    n_excluded: int  # pairs with a zero (or missing) value on either side


def paired_ratio(a: ArrayLike, b: ArrayLike) -> PairedRatio:
    x, y = as_array(a), as_array(b)
    usable = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    used = int(usable.sum())
    if used == 0:
        return PairedRatio(math.nan, 0, int(x.size))
    return PairedRatio(float(np.exp(np.mean(np.log(y[usable] / x[usable])))), used, int(x.size) - used)


def pearson(a: ArrayLike, b: ArrayLike) -> float:
    """Correlation of the arms' per-question scores; NaN when either is constant."""
    x, y = as_array(a), as_array(b)
    if x.size < 2 or np.std(x) == 0 or np.std(y) == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


# -- spread ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    n: int
    mean: float
    median: float
    p90: float


def spread(values: ArrayLike) -> Spread:
    x = as_array(values)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return Spread(0, math.nan, math.nan, math.nan)
    return Spread(int(x.size), float(x.mean()), float(np.median(x)), float(np.percentile(x, 90)))


# -- generalised F1 ----------------------------------------------------------------------------------


def generalised_f1(
    score_on_answerable: ArrayLike | float, answerable: ArrayLike | float, answered: ArrayLike | float
) -> Array:
    """MMLongBench-Doc's F1 from sums (vectorised over resamples).

    recall = sum of scores on answerable questions / their count; precision = the same sum / the
    number of predictions other than "Not answerable"; F1 = 2PR / (P + R), and 0 when a count or
    P + R is 0 (as the official code's fallback does).
    """
    s = np.asarray(score_on_answerable, dtype=np.float64)
    na = np.asarray(answerable, dtype=np.float64)
    np_ = np.asarray(answered, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(na > 0, s / na, np.nan)
        precision = np.where(np_ > 0, s / np_, np.nan)
        f1 = 2 * precision * recall / (precision + recall)
    return np.where(np.isfinite(f1), f1, 0.0)


# -- the paired cluster bootstrap -------------------------------------------------------------------


@dataclass(frozen=True)
class BootstrapEstimate:
    estimate: float
    interval: Interval
    resamples: int
    undefined: int = 0  # resamples where the statistic was not defined (e.g. no usable pair)


Statistic = Callable[[Mapping[str, Array]], Array]


_CACHE_LIMIT = 4_000_000  # cells of weights kept for reuse (32 MB per entry)


def _draw_weights(clusters: int, resamples: int, seed: int) -> Iterator[Array]:
    """How often each cluster is drawn in each resample (rows sum to ``clusters``), in chunks."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < resamples:
        size = min(_CHUNK, resamples - done)
        drawn = rng.integers(0, clusters, size=(size, clusters))
        flat = (np.arange(size)[:, None] * clusters + drawn).ravel()
        yield np.bincount(flat, minlength=size * clusters).reshape(size, clusters).astype(np.float64)
        done += size


@functools.lru_cache(maxsize=4)
def _cached_weights(clusters: int, resamples: int, seed: int) -> tuple[Array, ...]:
    """The same draws for every statistic of a report on the same documents (read-only arrays)."""
    chunks = tuple(_draw_weights(clusters, resamples, seed))
    for chunk in chunks:
        chunk.flags.writeable = False
    return chunks


class ClusterResampler:
    """Resamples of whole clusters (documents) with replacement, shared by several statistics.

    Each resample draws C clusters out of C; a statistic sees, per resample, the *sums* of each
    column over the drawn clusters (a cluster drawn twice counts twice). Every statistic here (means,
    differences of means, generalised F1, mean log-ratios) is a function of such sums, so 10,000
    resamples are a few matrix-vector products. Both arms' columns go through the same draws, which keeps the
    pairs together. The draws depend only on the clusters, ``resamples`` and ``seed``.
    """

    def __init__(
        self, clusters: Sequence[Any] | NDArray[Any], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
    ):
        self.codes, self.count = cluster_codes(clusters)
        self.resamples = resamples
        self.seed = seed

    def _weights(self) -> Iterator[Array]:
        if self.resamples * self.count <= _CACHE_LIMIT:
            yield from _cached_weights(self.count, self.resamples, self.seed)
        else:
            yield from _draw_weights(self.count, self.resamples, self.seed)

    def bootstrap(
        self, columns: Mapping[str, ArrayLike], statistic: Statistic, confidence: float = 0.95
    ) -> BootstrapEstimate:
        """The statistic on the full sample and its percentile interval over the resamples."""
        names = list(columns)
        matrix = np.column_stack(
            [np.bincount(self.codes, weights=as_array(columns[k]), minlength=self.count) for k in names]
        )
        point = float(statistic({k: matrix[:, j].sum(keepdims=True) for j, k in enumerate(names)})[0])
        empty = Interval(math.nan, math.nan, "cluster-bootstrap", confidence)
        if self.count < 2:  # one document: no between-document variation to resample
            return BootstrapEstimate(point, empty, 0)
        draws = []
        for weights in self._weights():
            # One matrix-vector product per column: OpenBLAS threads small matrix-matrix products,
            # which on a busy machine made them 10-20 times slower than these.
            sums = np.column_stack([weights @ matrix[:, j] for j in range(len(names))])
            draws.append(
                np.asarray(statistic({k: sums[:, j] for j, k in enumerate(names)}), dtype=np.float64)
            )
        values = np.concatenate(draws)
        defined = values[np.isfinite(values)]
        undefined = int(values.size - defined.size)
        if defined.size == 0:
            return BootstrapEstimate(point, empty, self.resamples, undefined)
        tail = (1 - confidence) / 2 * 100
        low, high = np.percentile(defined, [tail, 100 - tail])
        interval = Interval(float(low), float(high), "cluster-bootstrap", confidence)
        return BootstrapEstimate(point, interval, self.resamples, undefined)


def cluster_bootstrap(
    columns: Mapping[str, ArrayLike],
    clusters: Sequence[Any] | NDArray[Any],
    statistic: Statistic,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = 0.95,
) -> BootstrapEstimate:
    """Percentile interval of a vectorised ``statistic`` of column sums (see ClusterResampler)."""
    return ClusterResampler(clusters, resamples=resamples, seed=seed).bootstrap(
        columns, statistic, confidence
    )


def _ratio(numerator: str, denominator: str) -> Statistic:
    def statistic(s: Mapping[str, Array]) -> Array:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(s[denominator] > 0, s[numerator] / s[denominator], np.nan)

    return statistic


def bootstrap_mean(
    values: ArrayLike,
    clusters: Sequence[Any] | NDArray[Any],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> BootstrapEstimate:
    x = as_array(values)
    return cluster_bootstrap(
        {"x": x, "n": np.ones_like(x)}, clusters, _ratio("x", "n"), resamples=resamples, seed=seed
    )


def bootstrap_f1(
    scores: ArrayLike,
    answerable: ArrayLike,
    answered: ArrayLike,
    clusters: Sequence[Any] | NDArray[Any],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> BootstrapEstimate:
    s, a = as_array(scores), as_array(answerable)
    columns = {"s": s * a, "a": a, "p": as_array(answered)}
    return cluster_bootstrap(
        columns, clusters, lambda t: generalised_f1(t["s"], t["a"], t["p"]), resamples=resamples, seed=seed
    )


# -- planning: design effect and minimum detectable effect ------------------------------------------


def icc_oneway(values: ArrayLike, clusters: Sequence[Any] | NDArray[Any]) -> float:
    """The intraclass correlation of ``values`` within clusters (one-way ANOVA estimator, ICC(1)),
    for unequal cluster sizes; clipped at 0; NaN when it cannot be estimated."""
    x = as_array(values)
    codes, count = cluster_codes(clusters)
    n = x.size
    if count < 2 or n <= count:
        return math.nan
    sizes = np.bincount(codes, minlength=count).astype(np.float64)
    means = np.bincount(codes, weights=x, minlength=count) / sizes
    grand = x.mean()
    ms_between = float(np.sum(sizes * (means - grand) ** 2)) / (count - 1)
    ms_within = float(np.sum((x - means[codes]) ** 2)) / (n - count)
    m0 = (n - float(np.sum(sizes**2)) / n) / (count - 1)
    denominator = ms_between + (m0 - 1) * ms_within
    if denominator <= 0:
        return math.nan
    return max(0.0, (ms_between - ms_within) / denominator)


def design_effect(questions_per_document: float, icc: float) -> float:
    return 1.0 + (max(questions_per_document, 1.0) - 1.0) * max(icc, 0.0)


def minimum_detectable_effect(
    n: int,
    variance_of_difference: float,
    *,
    questions_per_document: float = 1.0,
    icc: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """The smallest true mean difference that n paired questions detect with the given power:
    (z_{1-alpha/2} + z_power) * sqrt(Var(d) * DE / n), DE = 1 + (m - 1) ICC."""
    if n <= 0:
        return math.inf
    z = float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power))
    return z * math.sqrt(variance_of_difference * design_effect(questions_per_document, icc) / n)


def required_questions(
    delta: float,
    variance_of_difference: float,
    *,
    questions_per_document: float = 1.0,
    icc: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """n ~ (z_{1-alpha/2} + z_power)^2 Var(d) DE / delta^2, rounded up."""
    z = float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power))
    de = design_effect(questions_per_document, icc)
    return math.ceil(z**2 * variance_of_difference * de / delta**2)


@dataclass(frozen=True)
class PlanningAssumptions:
    """Before a run, without data: a paired binary outcome where a share ``discordance`` of questions
    flips between arms gives Var(d) ~ discordance. The defaults follow MMLongBench-Doc: about 8
    questions per document and a modest within-document correlation."""

    discordance: float = 0.3
    questions_per_document: float = 8.0
    icc: float = 0.1
    alpha: float = 0.05
    power: float = 0.8

    def mde(self, n: int) -> float:
        return minimum_detectable_effect(
            n,
            self.discordance,
            questions_per_document=self.questions_per_document,
            icc=self.icc,
            alpha=self.alpha,
            power=self.power,
        )


# -- the paired analysis ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedData:
    """Two arms' per-question values, aligned question by question (epochs already averaged).

    ``answerable``: the gold answer is not "Not answerable". ``answered_*``: the share of the arm's
    epochs whose prediction was not exactly "Not answerable" (the F1 precision denominator).
    ``tokens_*`` and ``latency_*`` may be NaN where a record lacks them.
    """

    clusters: NDArray[Any]
    score_a: Array
    score_b: Array
    answerable: Array
    answered_a: Array
    answered_b: Array
    tokens_a: Array
    tokens_b: Array
    latency_a: Array
    latency_b: Array

    @property
    def n(self) -> int:
        return int(self.score_a.size)

    def subset(self, mask: ArrayLike) -> PairedData:
        keep = np.asarray(mask, dtype=bool)
        return PairedData(**{name: getattr(self, name)[keep] for name in self.__dataclass_fields__})


@dataclass(frozen=True)
class CostComparison:
    """A skewed cost (tokens or seconds) compared between arms."""

    a: Spread
    b: Spread
    difference: BootstrapEstimate  # mean of b - a per question
    ratio: PairedRatio  # geometric mean of b / a
    ratio_interval: Interval
    wilcoxon: SignedRank


@dataclass(frozen=True)
class PairedAnalysis:
    n: int
    clusters: int
    accuracy_a: float
    accuracy_b: float
    accuracy_difference: BootstrapEstimate
    accuracy_difference_t: ClusteredMean  # the clustered-SE view of the same difference
    f1_a: float
    f1_b: float
    f1_difference: BootstrapEstimate
    mcnemar: McNemar
    score_correlation: float
    tokens: CostComparison
    latency: CostComparison
    icc: float  # of the differences, within documents
    mde: float  # minimum detectable accuracy difference at this n (alpha 0.05, power 0.8)
    mde_bounded: bool = False  # Var(d) was 0: the MDE uses an upper bound of it, not the estimate


def compare_costs(a: ArrayLike, b: ArrayLike, resampler: ClusterResampler) -> CostComparison:
    """Tokens or seconds of two arms. Pairs missing a value on either side count in no statistic;
    pairs with a zero count in the difference but not in the ratio."""
    x, y = as_array(a), as_array(b)
    both = np.isfinite(x) & np.isfinite(y)
    positive = both & (x > 0) & (y > 0)
    safe_x, safe_y = np.where(positive, x, 1.0), np.where(positive, y, 1.0)
    log_ratio = np.where(positive, np.log(safe_y / safe_x), 0.0)
    difference = np.where(both, y - x, 0.0)
    mean_gap = resampler.bootstrap({"d": difference, "n": both.astype(np.float64)}, _ratio("d", "n"))
    ratio_boot = resampler.bootstrap(
        {"log": log_ratio, "n": positive.astype(np.float64)}, lambda s: np.exp(_ratio("log", "n")(s))
    )
    return CostComparison(
        a=spread(x[both]),
        b=spread(y[both]),
        difference=mean_gap,
        ratio=paired_ratio(x[both], y[both]),
        ratio_interval=ratio_boot.interval,
        wilcoxon=wilcoxon_signed_rank(x[both], y[both]),
    )


def paired_analysis(
    data: PairedData,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    correct_threshold: float = 0.5,
) -> PairedAnalysis:
    """Everything the A/B table reports, for one pair of arms.

    Binary correctness for McNemar is ``score >= correct_threshold`` (ANLS-scored answers are partly
    right between 0.5 and 1; averaged epochs count as correct when right at least half the time).
    """
    clusters = np.asarray(data.clusters)
    resampler = ClusterResampler(clusters, resamples=resamples, seed=seed)
    count = resampler.count
    diff = data.score_b - data.score_a
    accuracy_columns = {"a": data.score_a, "b": data.score_b, "n": np.ones_like(data.score_a)}

    def accuracy_gap(s: Mapping[str, Array]) -> Array:
        return (s["b"] - s["a"]) / s["n"]

    f1_columns = {
        "sa": data.score_a * data.answerable,
        "sb": data.score_b * data.answerable,
        "na": data.answerable,
        "pa": data.answered_a,
        "pb": data.answered_b,
    }

    def f1_gap(s: Mapping[str, Array]) -> Array:
        return generalised_f1(s["sb"], s["na"], s["pb"]) - generalised_f1(s["sa"], s["na"], s["pa"])

    f1_a = float(generalised_f1(f1_columns["sa"].sum(), data.answerable.sum(), data.answered_a.sum()))
    f1_b = float(generalised_f1(f1_columns["sb"].sum(), data.answerable.sum(), data.answered_b.sum()))
    icc = icc_oneway(diff, clusters)
    variance = float(np.var(diff, ddof=1)) if diff.size > 1 else math.nan
    # A sample variance of 0 gives an MDE of 0, which would claim every difference resolvable. When
    # no pair differs, no discordant pair in n bounds the discordance rate (and so Var(d)) by 3/n at
    # 95 % (the rule of three). When every pair differs by the same amount, Var(d) is bounded by the
    # mean squared difference. The MDE is stated on the bound instead.
    bounded = variance == 0.0
    if bounded:
        variance = float(np.mean(diff**2)) if diff.any() else min(1.0, 3.0 / data.n)
    per_document = data.n / count if count else 1.0
    if count < 2:
        mde = math.nan  # one document: what varies between documents is unknown
    else:
        mde = minimum_detectable_effect(
            data.n, variance, questions_per_document=per_document, icc=0.0 if math.isnan(icc) else icc
        )
    return PairedAnalysis(
        n=data.n,
        clusters=count,
        accuracy_a=float(data.score_a.mean()) if data.n else math.nan,
        accuracy_b=float(data.score_b.mean()) if data.n else math.nan,
        accuracy_difference=resampler.bootstrap(accuracy_columns, accuracy_gap),
        accuracy_difference_t=clustered_mean(diff, clusters),
        f1_a=f1_a,
        f1_b=f1_b,
        f1_difference=resampler.bootstrap(f1_columns, f1_gap),
        mcnemar=mcnemar_exact(data.score_a >= correct_threshold, data.score_b >= correct_threshold),
        score_correlation=pearson(data.score_a, data.score_b),
        tokens=compare_costs(data.tokens_a, data.tokens_b, resampler),
        latency=compare_costs(data.latency_a, data.latency_b, resampler),
        icc=icc,
        mde=mde,
        mde_bounded=bounded,
    )
