"""Small, dependency-free statistics used by reports and verdicts."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def median_ci(values: Sequence[float], z: float = 1.96) -> tuple[float, float]:
    """Distribution-free confidence interval of the median (order statistics, normal approximation).

    Returns ``(low, high)``; with fewer than 3 values, the min and max.
    """
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return math.nan, math.nan
    if n < 3:
        return xs[0], xs[-1]
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half))
    return xs[lo], xs[hi]


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    if not values:
        return math.nan, math.nan
    if len(values) == 1:
        return float(values[0]), 0.0
    return statistics.fmean(values), statistics.stdev(values)
