"""The statistics every figure's interval comes from: the median's distribution-free CI, exact at every n."""

from __future__ import annotations

import math
import random

import pytest

from gluonbench.analysis.stats import median, median_ci


def _coverage(n: int, k: int) -> float:
    """P(the order statistics x_(k+1) .. x_(n-k) hold the median) for any continuous distribution."""
    return 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n


@pytest.mark.parametrize("n", [3, 5, 6, 8, 10, 11, 20, 27, 50, 100, 257, 1000])
def test_median_ci_is_symmetric_in_rank_and_the_narrowest_with_95_percent(n):
    xs = list(range(n))
    lo, hi = median_ci(random.Random(n).sample(xs, n))
    k = lo
    assert hi == n - 1 - k, "as many values left out above the interval as below it"
    if n >= 6:  # below 6 values even the min and max hold the median less than 97 % of the time
        assert _coverage(n, k) >= 0.95
        assert _coverage(n, k + 1) < 0.95, "one rank further in would cover less than 95 %"


def test_median_ci_known_table_values():
    # the textbook ranks: n = 100 -> 40th and 61st; n = 10 -> 2nd and 9th; n = 6 -> min and max
    assert median_ci(range(1, 101)) == (40, 61)
    assert median_ci(range(1, 11)) == (2, 9)
    assert median_ci(range(1, 7)) == (1, 6)


def test_median_ci_covers_the_median_95_percent_of_the_time():
    rng = random.Random(7)
    for n in (6, 10, 27):
        hits = 0
        for _ in range(4000):
            lo, hi = median_ci([rng.expovariate(1.0) for _ in range(n)])
            hits += lo <= math.log(2) <= hi
        assert 0.95 <= hits / 4000 <= 0.995, (n, hits)


def test_median_ci_edges():
    assert all(math.isnan(v) for v in median_ci([]))
    assert median_ci([2.0]) == (2.0, 2.0) and median_ci([3.0, 1.0]) == (1.0, 3.0)
    lo, hi = median_ci([5.0] * 9)
    assert lo == hi == median([5.0] * 9)
