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


def test_levels_and_the_fewest_values_that_reach_them():
    from gluonbench.analysis.stats import fewest_for, z_of

    assert z_of(0.95) == pytest.approx(1.96, abs=1e-3) and z_of(0.99) == pytest.approx(2.576, abs=1e-3)
    assert fewest_for(0.95) == 6 and fewest_for(0.99) == 8
    for level in (0.95, 0.99, 0.999):
        n = fewest_for(level)
        assert _coverage(n, 0) >= level > _coverage(n - 1, 0)
    # a wider level gives a wider interval of the same values
    xs = random.Random(7).sample(range(1000), 60)
    lo95, hi95 = median_ci(xs)
    lo99, hi99 = median_ci(xs, z_of(0.99))
    assert lo99 < lo95 and hi99 > hi95
