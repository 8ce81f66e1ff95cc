"""Paired A/B statistics for question scores clustered by document. Pure functions on arrays.

The design (../shared/specs/harness.md, "Statistics for the A/B report"), checked by simulation
(``docab calibrate``, :mod:`docab.report.calibration`):

- Epochs are averaged per question first; then each question gives one paired difference
  d_i = s_B,i - s_A,i.
- Questions about the same document are correlated, so every interval treats the *document* as the
  unit. Every difference (accuracy, F1, evidence recall and precision, log cost ratios) gets a
  **cluster-robust t interval**: the CR3 (cluster jackknife) variance of Bell & McCaffrey (2002) with
  their degrees of freedom, which fall below C - 1 when documents carry unequal numbers of
  questions. Ratio metrics (the generalised F1, evidence precision) are linearised first. In
  simulation this interval holds 95 % coverage from 30 documents up. Below 30 documents every
  paired difference is tested and bounded by the cluster sign-flip test instead
  (:mod:`docab.report.signflip`: exact over all sign patterns up to 14 documents), whose p-value
  never grows as a result gets uniformly stronger, which the t's does below 30; the percentile cluster
  bootstrap does not (8-9 % false positives at 30 documents), nor does plain McNemar, which ignores
  documents (10-30 %).
- Tests: the clustered McNemar test (Obuchowski 1998: the same cluster-robust t on binary
  correctness) in headline tables; plain exact McNemar only labelled as ignoring documents;
  Wilcoxon signed-rank on per-document mean costs.
- Skewed costs get medians, p90 and the paired geometric-mean ratio B/A (a mean of log ratios).
- A gate over several metrics controls its family-wise error with Holm's step-down adjustment.
- Per-arm proportions with few questions get exact-type intervals: Clopper-Pearson on the
  Korn-Graubard effective sample size, which keeps the clustering.
- Planning: the minimum detectable effect for n questions, inflated by the design effect
  1 + (m - 1) ICC, from stated assumptions before a run and from the run's own variance after it.

Every function takes plain sequences or numpy arrays and returns small frozen dataclasses; nothing
here reads files or prints. ``docab.report.summary`` turns the results into the summary's schema
(``docab.report.schema``), the one JSON form of them.

Why one module: the interval, the tests and their degrees-of-freedom corrections are one design,
checked together by one simulation; the sign-flip test, which needs its own enumeration, and the
simulation already live apart (:mod:`docab.report.signflip`, :mod:`docab.report.calibration`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from docab.report.schema import IntervalMethod
from docab.report.signflip import MIN_DOCUMENTS_FOR_INTERVAL, SMALL_DOCUMENTS, SignFlip

Array = NDArray[np.float64]

SMALL_SAMPLE = 300  # below this many questions, an arm's proportions get exact-type intervals
CONFIDENCE = 0.95


# -- basic building blocks ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: IntervalMethod
    confidence: float = CONFIDENCE

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


# -- the cluster-robust t (CR3 variance, Bell-McCaffrey degrees of freedom) ----------------------------


@dataclass(frozen=True)
class ClusterT:
    """An estimate with its cluster-robust t inference.

    ``se`` is 0 when every document contributes exactly what the estimate predicts (two arms that
    never differ, or B losing every question of every document): the t statistic is then undefined,
    so there is no interval, and the p-values are the exact document-level sign test's (every one
    of C documents on one side: 2^(1 - C) two-sided, 2^-C one-sided), which a few documents can
    never make small. ``se`` is NaN with fewer than two documents: nothing can be said.

    ``flip``: on fewer than :data:`~docab.report.signflip.SMALL_DOCUMENTS` documents a paired
    difference carries its sign-flip test, and every p-value and bound comes from it.
    """

    estimate: float
    se: float
    df: float
    interval: Interval
    clusters: int
    flip: SignFlip | None = None

    def _t(self, value: float) -> float:
        return (self.estimate - value) / self.se

    def _all_one_side(self, two_sided: bool) -> float:
        """The exact sign test's p when every document lies on the same side of the null."""
        return min(1.0, 2.0 ** ((1 if two_sided else 0) - self.clusters))

    def p_two_sided(self, null: float = 0.0) -> float:
        """Two-sided p-value of H0: the true value is ``null``."""
        if math.isnan(self.se) or math.isnan(self.estimate):
            return math.nan
        if self.flip is not None:
            return 1.0 if self.se == 0 and self.estimate == null else self.flip.p_two_sided(null)
        if self.se == 0:
            return 1.0 if self.estimate == null else self._all_one_side(True)
        return float(2 * sps.t.sf(abs(self._t(null)), self.df))

    def p_above(self, bound: float) -> float:
        """One-sided p-value of H0: the true value is at most ``bound`` (small when clearly above)."""
        if math.isnan(self.se) or math.isnan(self.estimate):
            return math.nan
        if self.flip is not None:
            return self.flip.p_above(bound)
        if self.se == 0:
            return self._all_one_side(False) if self.estimate > bound else 1.0
        return float(sps.t.sf(self._t(bound), self.df))

    def p_below(self, bound: float) -> float:
        """One-sided p-value of H0: the true value is at least ``bound`` (small when clearly below)."""
        if math.isnan(self.se) or math.isnan(self.estimate):
            return math.nan
        if self.flip is not None:
            return self.flip.p_below(bound)
        if self.se == 0:
            return self._all_one_side(False) if self.estimate < bound else 1.0
        return float(sps.t.cdf(self._t(bound), self.df))

    def one_sided_bound(self, alpha: float, *, upper: bool) -> float:
        """The one-sided (1 - alpha) confidence bound: the largest (``upper``) or smallest value the
        data leave plausible; NaN when the t statistic is undefined (se NaN or 0)."""
        if not (math.isfinite(self.se) and self.se > 0 and math.isfinite(self.estimate)):
            return math.nan
        if self.flip is not None:
            return self.flip.one_sided_bound(alpha, upper=upper)
        quantile = float(sps.t.ppf(1 - alpha, self.df)) * self.se
        return self.estimate + quantile if upper else self.estimate - quantile

    def mapped(self, function: Callable[[float], float]) -> tuple[float, Interval]:
        """The estimate and interval through a monotone increasing ``function`` (exp of a log ratio)."""
        low, high = self.interval.low, self.interval.high
        return function(self.estimate), Interval(
            function(low) if math.isfinite(low) else math.nan,
            function(high) if math.isfinite(high) else math.nan,
            self.interval.method,
            self.interval.confidence,
        )


def bell_mccaffrey_df(weights: ArrayLike) -> float:
    """Degrees of freedom for a weighted mean over clusters whose weights are ``weights``.

    The Bell-McCaffrey degrees of freedom of the CR2 estimator: for the intercept-only model with
    independent working errors, G'G has diagonal h_c and off-diagonal -h_c h_d / sqrt((1 - h_c)(1 -
    h_d)), with h_c the cluster's share of the weight; df = tr(G'G)^2 / tr((G'G)^2). Equal clusters
    give C - 1; unequal ones fewer. :func:`linearised_t` pairs them with the CR3 variance (which
    is larger than CR2's): the pairing ``docab calibrate`` checks, within 4-6 % false positives from
    30 documents; CR3's own matrix gives fewer degrees of freedom still, and wider intervals.
    """
    w = as_array(weights)
    share = w / w.sum()
    root = np.sqrt(np.clip(1.0 - share, 1e-12, None))
    gram = -np.outer(share, share) / np.outer(root, root)
    np.fill_diagonal(gram, share)
    squared = float(np.sum(gram * gram))
    return float(np.trace(gram) ** 2 / squared) if squared > 0 else math.nan


def linearised_t(
    influence: ArrayLike,
    weights: ArrayLike,
    clusters: Sequence[Any] | NDArray[Any],
    estimate: float,
    confidence: float = CONFIDENCE,
    *,
    sign_flip_below: int = 0,
) -> ClusterT:
    """Cluster-robust t inference for an estimate with per-question ``influence`` values (summing to
    zero at the estimate, on the scale of the estimate times the total weight) and ``weights`` (1 per
    question for a mean; the denominator for a ratio).

    Var = sum_c U_c^2 / (1 - h_c)^2 / W^2, with U_c a document's summed influence, h_c its share of
    the weight W (CR3, the cluster jackknife); t on :func:`bell_mccaffrey_df` degrees of freedom.
    On fewer than ``sign_flip_below`` documents, the p-values and the interval are the sign-flip
    test's (:mod:`docab.report.signflip`; no interval below its minimum of documents).
    """
    u, w = as_array(influence), as_array(weights)
    codes, count = cluster_codes(clusters)
    none = ClusterT(estimate, math.nan, math.nan, Interval(math.nan, math.nan, "none", confidence), count)
    if u.size == 0 or count < 2 or not math.isfinite(estimate) or w.sum() <= 0:
        return none
    cluster_u = np.bincount(codes, weights=u, minlength=count)
    cluster_w = np.bincount(codes, weights=w, minlength=count)
    share = cluster_w / cluster_w.sum()
    if np.any(share >= 1.0 - 1e-12):  # one document holds all the weight
        return none
    # Influence sums that are zero up to rounding (identical arms) are exactly zero.
    cluster_u = np.where(np.abs(cluster_u) < 1e-9 * max(1.0, float(np.abs(u).max())), 0.0, cluster_u)
    se = math.sqrt(float(np.sum(cluster_u**2 / (1.0 - share) ** 2))) / float(w.sum())
    df = bell_mccaffrey_df(cluster_w)
    flip = None
    if count < sign_flip_below:
        flip = SignFlip(estimate, tuple(map(float, cluster_u)), tuple(map(float, cluster_w)))
    if se == 0:  # no variation between documents: no interval (see ClusterT)
        return ClusterT(estimate, 0.0, df, Interval(math.nan, math.nan, "none", confidence), count, flip)
    if flip is not None:
        low, high = flip.interval(confidence)
        bounded = count >= MIN_DOCUMENTS_FOR_INTERVAL and math.isfinite(low) and math.isfinite(high)
        interval = (
            Interval(low, high, "sign-flip", confidence)
            if bounded
            else Interval(math.nan, math.nan, "none", confidence)
        )
        return ClusterT(estimate, se, df, interval, count, flip)
    half = float(sps.t.ppf(0.5 + confidence / 2, df)) * se
    interval = Interval(estimate - half, estimate + half, "cluster-t-cr3", confidence)
    return ClusterT(estimate, se, df, interval, count)


def mean_t(
    values: ArrayLike,
    clusters: Sequence[Any] | NDArray[Any],
    confidence: float = CONFIDENCE,
    *,
    sign_flip_below: int = SMALL_DOCUMENTS,
) -> ClusterT:
    """The mean of per-question values (a paired difference: the mean of B − A); the sign-flip test
    on fewer than ``sign_flip_below`` documents."""
    x = as_array(values)
    mean = float(x.mean()) if x.size else math.nan
    return linearised_t(
        x - mean, np.ones_like(x), clusters, mean, confidence, sign_flip_below=sign_flip_below
    )


def ratio_t(
    numerator: ArrayLike,
    denominator: ArrayLike,
    clusters: Sequence[Any] | NDArray[Any],
    confidence: float = CONFIDENCE,
) -> ClusterT:
    """sum(numerator) / sum(denominator), linearised: influence (num - R den) / mean(den)."""
    num, den = as_array(numerator), as_array(denominator)
    total = float(den.sum())
    if num.size == 0 or total <= 0:
        return linearised_t(num, den, clusters, math.nan, confidence)
    ratio = float(num.sum()) / total
    return linearised_t(
        (num - ratio * den) / (total / den.size), den / den.mean(), clusters, ratio, confidence
    )


def ratio_difference_t(
    numerator_a: ArrayLike,
    denominator_a: ArrayLike,
    numerator_b: ArrayLike,
    denominator_b: ArrayLike,
    clusters: Sequence[Any] | NDArray[Any],
    confidence: float = CONFIDENCE,
    *,
    sign_flip_below: int = SMALL_DOCUMENTS,
) -> ClusterT:
    """(sum num_b / sum den_b) − (sum num_a / sum den_a) over paired questions, linearised; the
    sign-flip test on fewer than ``sign_flip_below`` documents."""
    na, da, nb, db = (as_array(v) for v in (numerator_a, denominator_a, numerator_b, denominator_b))
    if na.size == 0 or da.sum() <= 0 or db.sum() <= 0:
        return linearised_t(na, np.ones_like(na), clusters, math.nan, confidence)
    ra, rb = float(na.sum() / da.sum()), float(nb.sum() / db.sum())
    ua = (na - ra * da) / da.mean()
    ub = (nb - rb * db) / db.mean()
    weights = (da / da.mean() + db / db.mean()) / 2
    return linearised_t(ub - ua, weights, clusters, rb - ra, confidence, sign_flip_below=sign_flip_below)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values; NaN (nothing measured) stays NaN and is not counted."""
    present = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    adjusted = [math.nan] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(present):
        running = max(running, min(1.0, (len(present) - rank) * p))
        adjusted[index] = running
    return adjusted


# -- proportions (one arm) ---------------------------------------------------------------------------


def clopper_pearson(successes: float, n: float, confidence: float = CONFIDENCE) -> Interval:
    """The exact binomial interval; ``successes`` and ``n`` may be fractional (effective counts)."""
    if n <= 0:
        return Interval(math.nan, math.nan, "clopper-pearson", confidence)
    alpha = 1 - confidence
    k = min(max(successes, 0.0), n)
    low = 0.0 if k <= 0 else float(sps.beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k >= n else float(sps.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return Interval(low, high, "clopper-pearson", confidence)


def clustered_se(values: ArrayLike, clusters: Sequence[Any] | NDArray[Any]) -> float:
    """sqrt(C/(C-1) * sum_c (sum_{i in c} (x_i - mean))^2) / n; NaN with fewer than two clusters."""
    x = as_array(values)
    codes, count = cluster_codes(clusters)
    if x.size == 0 or count < 2:
        return math.nan
    residual_sums = np.bincount(codes, weights=x - x.mean(), minlength=count)
    return math.sqrt(count / (count - 1) * float(np.sum(residual_sums**2))) / x.size


def korn_graubard(
    values: ArrayLike, clusters: Sequence[Any] | NDArray[Any], confidence: float = CONFIDENCE
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
    confidence: float = CONFIDENCE,
    small_sample: int = SMALL_SAMPLE,
) -> Interval:
    """A mean score's interval: exact-type (Korn-Graubard) below ``small_sample`` questions, the
    cluster-robust t (CR3) above, clipped to [0, 1]."""
    x = as_array(values)
    if cluster_codes(clusters)[1] < 2:  # one document: its questions say nothing of another's
        return Interval(math.nan, math.nan, "none", confidence)
    if x.size < small_sample:
        return korn_graubard(x, clusters, confidence)
    interval = mean_t(x, clusters, confidence).interval
    if interval.method == "none":
        return korn_graubard(x, clusters, confidence)
    return Interval(max(0.0, interval.low), min(1.0, interval.high), interval.method, confidence)


# -- tests on pairs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar: a binomial test of the discordant pairs. It ignores documents."""

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
class ClusteredMcNemar:
    """McNemar's comparison of paired correctness with documents as clusters (Obuchowski 1998): the
    mean of (B correct) − (A correct) tested with the cluster-robust t (CR3, Bell-McCaffrey df)."""

    b: int  # A right, B wrong
    c: int  # A wrong, B right
    test: ClusterT

    @property
    def p_value(self) -> float:
        return self.test.p_two_sided(0.0)


def clustered_mcnemar(
    correct_a: ArrayLike, correct_b: ArrayLike, clusters: Sequence[Any] | NDArray[Any]
) -> ClusteredMcNemar:
    a = np.asarray(correct_a, dtype=bool)
    b_arm = np.asarray(correct_b, dtype=bool)
    return ClusteredMcNemar(
        int(np.sum(a & ~b_arm)), int(np.sum(~a & b_arm)), mean_t(b_arm.astype(float) - a, clusters)
    )


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


def per_cluster_means(values: ArrayLike, clusters: Sequence[Any] | NDArray[Any]) -> Array:
    """The mean of ``values`` within each cluster (in code order)."""
    x = as_array(values)
    codes, count = cluster_codes(clusters)
    sizes = np.bincount(codes, minlength=count)
    return np.bincount(codes, weights=x, minlength=count) / np.maximum(sizes, 1)


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


def f1_parts(scores: ArrayLike, answerable: ArrayLike, answered: ArrayLike) -> tuple[Array, Array]:
    """MMLongBench-Doc's generalised F1 as a ratio of per-question sums.

    recall R = S / NA and precision P = S / NP, with S the sum of scores on answerable questions, NA
    their count and NP the number of predictions other than "Not answerable"; F1 = 2PR / (P + R)
    = 2S / (NA + NP). Returns the per-question numerator 2 s a and denominator a + p.
    """
    s, a, p = as_array(scores), as_array(answerable), as_array(answered)
    return 2 * s * a, a + p


def generalised_f1(scores: ArrayLike, answerable: ArrayLike, answered: ArrayLike) -> float:
    """The F1 of one arm; 0 when there is nothing to score (as the official code's fallback)."""
    numerator, denominator = f1_parts(scores, answerable, answered)
    if float(as_array(answered).sum()) <= 0 or float(as_array(answerable).sum()) <= 0:
        return 0.0  # precision or recall undefined: 0, as the official code's fallback
    return float(numerator.sum()) / float(denominator.sum())


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


def design_effect(questions_per_document: float, icc: float, size_cv: float = 0.0) -> float:
    """1 + ((1 + CV^2) m - 1) ICC: the variance inflation of clustering, with m questions per document
    on average and CV the coefficient of variation of the documents' sizes (unequal documents
    inflate it more; Eldridge et al. 2006). With equal documents it is 1 + (m - 1) ICC."""
    m = max(questions_per_document, 1.0)
    return 1.0 + ((1.0 + size_cv**2) * m - 1.0) * max(icc, 0.0)


def _quantile_sum(alpha: float, power: float, documents: int | None = None) -> float:
    """z_{1-alpha/2} + z_power, or with t on documents - 1 degrees of freedom when their number is
    known (few documents leave few degrees of freedom)."""
    if documents is not None and documents >= 2:
        df = documents - 1
        return float(sps.t.ppf(1 - alpha / 2, df) + sps.t.ppf(power, df))
    return float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power))


def minimum_detectable_effect(
    n: int,
    variance_of_difference: float,
    *,
    questions_per_document: float = 1.0,
    icc: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
    size_cv: float = 0.0,
    documents: int | None = None,
) -> float:
    """The smallest true mean difference that n paired questions detect with the given power:
    (q_{1-alpha/2} + q_power) * sqrt(Var(d) * DE / n), with DE from :func:`design_effect` and q the
    normal quantiles, or t on documents - 1 degrees of freedom when ``documents`` is given."""
    if n <= 0:
        return math.inf
    de = design_effect(questions_per_document, icc, size_cv)
    return _quantile_sum(alpha, power, documents) * math.sqrt(variance_of_difference * de / n)


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
    de = design_effect(questions_per_document, icc)
    return math.ceil(_quantile_sum(alpha, power) ** 2 * variance_of_difference * de / delta**2)


@dataclass(frozen=True)
class PlanningAssumptions:
    """What a run can resolve, stated before it and without its data. A paired binary outcome where
    a share ``discordance`` of questions flips between arms gives Var(d) ~ discordance. The defaults
    follow MMLongBench-Doc: about 8 questions per document, a modest within-document correlation of
    the differences (ICC 0.1), and 30 % of answers differing between arms."""

    discordance: float = 0.3
    questions_per_document: float = 8.0
    icc: float = 0.1
    alpha: float = 0.05
    power: float = 0.8

    def mde(
        self,
        n: int,
        questions_per_document: float | None = None,
        *,
        size_cv: float = 0.0,
        documents: int | None = None,
    ) -> float:
        """For a run of n questions; given the run's documents (their number and the spread of their
        sizes), with its design effect and t quantiles instead of the planning defaults."""
        return minimum_detectable_effect(
            n,
            self.discordance,
            questions_per_document=questions_per_document or self.questions_per_document,
            icc=self.icc,
            alpha=self.alpha,
            power=self.power,
            size_cv=size_cv,
            documents=documents,
        )


def observed_mde(test: ClusterT, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest difference this run's own standard error resolves: (t_{df,1-alpha/2} +
    t_{df,power}) SE. Meaningless alone when the arms barely differ (SE near 0): report it beside
    the planned one, never instead of it."""
    if not (math.isfinite(test.se) and math.isfinite(test.df)):
        return math.nan
    return float(sps.t.ppf(1 - alpha / 2, test.df) + sps.t.ppf(power, test.df)) * test.se


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
    difference: ClusterT  # mean of b - a per question
    ratio: float  # geometric mean of b / a over pairs where both are positive
    ratio_interval: Interval
    ratio_test: ClusterT  # on the log scale: log(ratio) and its inference
    pairs: int  # pairs in the ratio
    excluded: int  # pairs with a zero or missing value on either side
    wilcoxon: SignedRank  # on per-document means (questions cluster)


def compare_costs(a: ArrayLike, b: ArrayLike, clusters: NDArray[Any]) -> CostComparison:
    """Tokens or seconds of two arms. Pairs missing a value on either side count in no statistic;
    pairs with a zero count in the difference but not in the ratio."""
    x, y = as_array(a), as_array(b)
    both = np.isfinite(x) & np.isfinite(y)
    positive = both & (x > 0) & (y > 0)
    log_ratio = mean_t(np.log(y[positive] / x[positive]), clusters[positive])
    ratio, ratio_interval = log_ratio.mapped(math.exp)
    return CostComparison(
        a=spread(x[both]),
        b=spread(y[both]),
        difference=mean_t(y[both] - x[both], clusters[both]),
        ratio=ratio,
        ratio_interval=ratio_interval,
        ratio_test=log_ratio,
        pairs=int(positive.sum()),
        excluded=int(x.size - positive.sum()),
        wilcoxon=wilcoxon_signed_rank(
            per_cluster_means(x[both], clusters[both]), per_cluster_means(y[both], clusters[both])
        ),
    )


@dataclass(frozen=True)
class PairedAnalysis:
    n: int
    clusters: int
    accuracy_a: float
    accuracy_b: float
    accuracy_difference: ClusterT
    answerable: int  # paired questions whose gold answer is not "Not answerable"
    answerable_accuracy_a: float
    answerable_accuracy_b: float
    answerable_difference: ClusterT
    f1_a: float
    f1_b: float
    f1_difference: ClusterT
    clustered_mcnemar: ClusteredMcNemar
    mcnemar: McNemar  # ignores documents: shown labelled, never as the headline test
    score_correlation: float
    tokens: CostComparison
    latency: CostComparison
    icc: float  # of the differences, within documents
    mde_planned: float  # from PlanningAssumptions at this n and questions per document
    mde_observed: float  # from this run's standard error (or its bound, see mde_bounded)
    mde_bounded: bool = False  # the arms never differed: the observed MDE uses an upper bound of Var(d)

    @property
    def mde(self) -> float:
        """The finest resolution this run may claim: never finer than the planned figure."""
        values = [v for v in (self.mde_planned, self.mde_observed) if math.isfinite(v)]
        return max(values) if values else math.nan


def paired_analysis(
    data: PairedData,
    *,
    correct_threshold: float = 0.5,
    planning: PlanningAssumptions | None = None,
) -> PairedAnalysis:
    """Everything the A/B table reports, for one pair of arms.

    Binary correctness for the McNemar tests is ``score >= correct_threshold`` (ANLS-scored answers
    are partly right between 0.5 and 1; averaged epochs count as correct when right at least half
    the time).
    """
    clusters = np.asarray(data.clusters, dtype=object)
    codes, count = cluster_codes(clusters)
    sizes = np.bincount(codes, minlength=count).astype(np.float64) if count else np.zeros(0)
    size_cv = float(sizes.std() / sizes.mean()) if count else 0.0
    diff = data.score_b - data.score_a
    accuracy = mean_t(diff, clusters)
    answerable = data.answerable > 0
    f1_a = f1_parts(data.score_a, data.answerable, data.answered_a)
    f1_b = f1_parts(data.score_b, data.answerable, data.answered_b)
    icc = icc_oneway(diff, clusters)
    per_document = data.n / count if count else 1.0
    plan = planning or PlanningAssumptions()
    observed = observed_mde(accuracy, alpha=plan.alpha, power=plan.power)
    bounded = accuracy.se == 0
    if bounded:
        # No variance of the differences: an MDE of 0 would claim every difference resolvable. No
        # discordant pair in n bounds the discordance rate (and so Var(d)) by 3/n at 95 % (the rule
        # of three); a constant difference bounds Var(d) by its square.
        variance = float(np.mean(diff**2)) if diff.any() else min(1.0, 3.0 / data.n)
        observed = minimum_detectable_effect(
            data.n,
            variance,
            questions_per_document=per_document,
            icc=plan.icc,
            alpha=plan.alpha,
            power=plan.power,
            size_cv=size_cv,
            documents=count,
        )
    return PairedAnalysis(
        n=data.n,
        clusters=count,
        accuracy_a=float(data.score_a.mean()) if data.n else math.nan,
        accuracy_b=float(data.score_b.mean()) if data.n else math.nan,
        accuracy_difference=accuracy,
        answerable=int(answerable.sum()),
        answerable_accuracy_a=float(data.score_a[answerable].mean()) if answerable.any() else math.nan,
        answerable_accuracy_b=float(data.score_b[answerable].mean()) if answerable.any() else math.nan,
        answerable_difference=mean_t(diff[answerable], clusters[answerable]),
        f1_a=generalised_f1(data.score_a, data.answerable, data.answered_a),
        f1_b=generalised_f1(data.score_b, data.answerable, data.answered_b),
        f1_difference=ratio_difference_t(f1_a[0], f1_a[1], f1_b[0], f1_b[1], clusters),
        clustered_mcnemar=clustered_mcnemar(
            data.score_a >= correct_threshold, data.score_b >= correct_threshold, clusters
        ),
        mcnemar=mcnemar_exact(data.score_a >= correct_threshold, data.score_b >= correct_threshold),
        score_correlation=pearson(data.score_a, data.score_b),
        tokens=compare_costs(data.tokens_a, data.tokens_b, clusters),
        latency=compare_costs(data.latency_a, data.latency_b, clusters),
        icc=icc,
        mde_planned=plan.mde(data.n, per_document, size_cv=size_cv, documents=count)
        if count >= 2
        else math.nan,
        mde_observed=observed if count >= 2 else math.nan,
        mde_bounded=bounded,
    )
