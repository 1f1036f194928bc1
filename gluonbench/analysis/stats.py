"""Small, dependency-free statistics used by reports and verdicts."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def median_ci(values: Sequence[float], z: float = 1.96) -> tuple[float, float]:
    """Distribution-free confidence interval of the median: order statistics at equal ranks from each end.

    The interval ``[x_(k+1), x_(n-k)]`` (1-based, sorted) covers the median with probability
    ``1 - 2 P(Binomial(n, 1/2) <= k)``; ``k`` is the largest for which that is at least the two-sided level
    of ``z`` (95 % for 1.96), computed exactly. Returns ``(low, high)``; with fewer than 3 values, the min and max.
    """
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return math.nan, math.nan
    if n < 3:
        return xs[0], xs[-1]
    k = _median_rank(n, math.erfc(z / math.sqrt(2)))
    return xs[k], xs[n - 1 - k]


def z_of(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence`` (1.96 for 0.95, 2.576 for 0.99), as :func:`median_ci` takes it."""
    return statistics.NormalDist().inv_cdf(0.5 + confidence / 2)


def fewest_for(confidence: float) -> int:
    """The fewest values whose widest median interval (their min and max) covers the median at ``confidence``:
    6 for 0.95 (96.9 %), 8 for 0.99 (99.2 %). With fewer, :func:`median_ci` gives the min and max, at a lower level."""
    n = 1
    while 2 * 0.5**n > 1 - confidence:
        n += 1
    return n


def _median_rank(n: int, alpha: float) -> int:
    """The largest ``k`` with ``2 P(Binomial(n, 1/2) <= k) <= alpha`` (0 when even ``k = 0`` exceeds it)."""
    log_half_n = n * math.log(0.5)
    tail, k = 0.0, -1
    for i in range(n // 2 + 1):
        tail += math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half_n)
        if 2 * tail > alpha:
            break
        k = i
    return max(k, 0)


def ratio_ci(
    a: float, a_ci: tuple[float, float], b: float, b_ci: tuple[float, float]
) -> tuple[float, tuple[float, float]]:
    """``a / b`` and its approximate 95 % CI from two independent estimates and their 95 % CIs.

    On a log scale the two relative uncertainties add in quadrature, side by side (the ratio's low end
    combines ``a``'s low side with ``b``'s high side), so asymmetric CIs (of medians) stay asymmetric.
    NaN where an estimate or its CI is missing or not positive.
    """
    values = (a, b, *a_ci, *b_ci)
    if not all(math.isfinite(v) and v > 0 for v in values):
        return math.nan, (math.nan, math.nan)
    r = a / b
    down = math.hypot(math.log(a / a_ci[0]), math.log(b_ci[1] / b))
    up = math.hypot(math.log(a_ci[1] / a), math.log(b / b_ci[0]))
    return r, (r * math.exp(-down), r * math.exp(up))


PAIRED_MIN_ROUNDS = 6
"""rounds both sides were measured in before :func:`paired_ratio` gives a figure (as ``min_blocks``)"""


def paired_ratio(
    a: Mapping[int, float], b: Mapping[int, float], min_rounds: int = PAIRED_MIN_ROUNDS, z: float = 1.96
) -> tuple[float, tuple[float, float]] | None:
    """``a / b`` compared round by round: the median over rounds of ``a[r] / b[r]`` and that median's 95 % CI
    (another level with ``z``, see :func:`median_ci`).

    ``a`` and ``b`` map a round number to a figure measured in that round (interleaved rounds: the two
    sides of one round ran seconds apart, under the same background load, which cancels in the ratio).
    Only rounds with a finite, positive figure on both sides count; None with fewer than ``min_rounds``.
    """
    ratios = [
        a[r] / b[r]
        for r in sorted(set(a) & set(b))
        if math.isfinite(a[r]) and math.isfinite(b[r]) and a[r] > 0 and b[r] > 0
    ]
    if len(ratios) < min_rounds:
        return None
    return median(ratios), median_ci(ratios, z)
