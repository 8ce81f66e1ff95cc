"""The cluster sign-flip test: inference for a paired difference on few documents.

Below :data:`SMALL_DOCUMENTS` documents the cluster-robust t is not reliable, and it is not
monotone either (issue 24): with 6 documents, B winning every question had p = 0.031 (the exact
sign test, because the t is undefined without variance) while B winning all but one had
p = 0.00058 (t), so a gate could pass the weaker result and fail the stronger one. Below the
threshold every paired difference is therefore tested by flipping the signs of whole documents
(a randomisation test, Fisher 1935; with clusters, e.g. Canay, Romano and Shaikh 2017):

- each document c contributes U_c(mu), its summed influence under the null value mu (for a mean
  difference, the sum over its questions of d_i - mu; for a linearised ratio, the same on the
  ratio's scale), and a weight W_c (its questions, or its share of the ratio's denominator), so
  U_c(mu) = U_c + (estimate - mu) W_c with U_c the influence at the estimate;
- the statistic is T = sum_c U_c(mu); under H0 each document's contribution is symmetric about
  zero, so every sign pattern s is as likely: p = #{s: sum_c s_c U_c(mu) >= T} / #patterns.

Every pattern's comparison is linear in mu, so the p-value is a count of precomputed thresholds
r_s = A_s / (W - B_s) (A_s = sum s_c U_c, B_s = sum s_c W_c, W = sum W_c) that the tested gap
estimate - mu reaches, and the confidence bounds are order statistics of r_s: exact inversion,
no search. The one-sided p-value is monotone in each document's contribution: raising any U_c never
raises it, so a uniformly stronger result never gets a larger p-value than a weaker one.

Patterns: all 2^C of them up to :data:`EXACT_DOCUMENTS` documents; above, :data:`SAMPLED_PAIRS`
random patterns and their mirror images, from a fixed seed (the same patterns for every test on C
documents, which keeps the monotonicity), plus the identity. A two-sided p-value is twice the
smaller one-sided one. The smallest p-value C documents allow is 2 / 2^C two-sided: 5 documents
cannot reach 0.05, so a difference on fewer than :data:`MIN_DOCUMENTS_FOR_INTERVAL` documents
has no interval.

Pure: numpy on a few dozen numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

SMALL_DOCUMENTS = 30  # below this many documents, paired differences use the sign-flip test
EXACT_DOCUMENTS = 14  # up to this many, every sign pattern (16,384 at 14)
SAMPLED_PAIRS = 8_192  # above it, this many random patterns and their mirror images
SEED = 24  # fixed: the same patterns for every test on the same number of documents
MIN_DOCUMENTS_FOR_INTERVAL = 6  # 2 / 2^C < 0.05 from 6 documents on
TIE_TOLERANCE = 1e-9  # relative: a pattern this close to the observed statistic ties with it


@lru_cache(maxsize=64)
def sign_patterns(documents: int) -> NDArray[np.float64]:
    """The sign patterns tested for ``documents`` documents, without the identity (all +1)."""
    if documents <= EXACT_DOCUMENTS:
        codes = np.arange(1, 2**documents, dtype=np.int64)[:, None]
        bits = (codes >> np.arange(documents, dtype=np.int64)) & 1
        return np.asarray(1.0 - 2.0 * bits, dtype=np.float64)  # bit set: that document flipped
    rng = np.random.default_rng([SEED, documents])
    half = rng.choice(np.array([-1.0, 1.0]), size=(SAMPLED_PAIRS, documents))
    return np.concatenate([half, -half])


@dataclass(frozen=True)
class SignFlip:
    """The sign-flip inference of one estimate from its documents' influence and weight sums."""

    estimate: float
    influence: tuple[float, ...]  # U_c: each document's summed influence at the estimate
    weights: tuple[float, ...]  # W_c: each document's weight (questions, or denominator share)
    _thresholds: NDArray[np.float64] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        u = np.asarray(self.influence, dtype=np.float64)
        w = np.asarray(self.weights, dtype=np.float64)
        patterns = sign_patterns(len(u))
        spread = float(w.sum()) - patterns @ w  # W - B_s >= 0; 0 only where flipped weights are 0
        moved = patterns @ u  # A_s
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(spread > 1e-12, moved / np.where(spread > 1e-12, spread, 1.0), np.nan)
        # A pattern that flips only weightless documents compares A_s >= 0 whatever mu is.
        ratio = np.where(np.isnan(ratio), np.where(moved >= 0, math.inf, -math.inf), ratio)
        object.__setattr__(self, "_thresholds", np.sort(ratio))

    @property
    def documents(self) -> int:
        return len(self.influence)

    @property
    def patterns(self) -> int:
        """Sign patterns counted, the identity included."""
        return int(self._thresholds.size) + 1

    def p_above(self, bound: float) -> float:
        """One-sided p of H0 "the true value is at most ``bound``" (small when clearly above)."""
        gap = self.estimate - bound
        # Ties (common with 0/1 scores) count as reached, whatever rounding did to either side.
        gap -= TIE_TOLERANCE * max(1.0, abs(gap))
        reached = self._thresholds.size - int(np.searchsorted(self._thresholds, gap, side="left"))
        return (1 + reached) / self.patterns

    def p_below(self, bound: float) -> float:
        """One-sided p of H0 "the true value is at least ``bound``" (small when clearly below)."""
        gap = self.estimate - bound
        gap += TIE_TOLERANCE * max(1.0, abs(gap))
        reached = int(np.searchsorted(self._thresholds, gap, side="right"))
        return (1 + reached) / self.patterns

    def p_two_sided(self, null: float = 0.0) -> float:
        return min(1.0, 2.0 * min(self.p_above(null), self.p_below(null)))

    def one_sided_bound(self, alpha: float, *, upper: bool) -> float:
        """The one-sided (1 - alpha) bound: every value beyond it is rejected at ``alpha``; NaN when
        no value is (too few documents for ``alpha``)."""
        # p > alpha needs 1 + reached > alpha * patterns: at least k thresholds reached.
        k = math.floor(alpha * self.patterns - 1) + 1
        if k <= 0:
            return math.nan
        if k > self._thresholds.size:
            return self.estimate
        # upper: the largest mu with p_below(mu) > alpha, a gap at the k-th smallest threshold;
        # lower: the smallest mu with p_above(mu) > alpha, a gap at the k-th largest threshold.
        threshold = float(self._thresholds[k - 1] if upper else self._thresholds[-k])
        return self.estimate - threshold if math.isfinite(threshold) else math.nan

    def interval(self, confidence: float) -> tuple[float, float]:
        """The two-sided interval at ``confidence``; NaNs when a bound does not exist."""
        alpha = (1.0 - confidence) / 2
        return self.one_sided_bound(alpha, upper=False), self.one_sided_bound(alpha, upper=True)
