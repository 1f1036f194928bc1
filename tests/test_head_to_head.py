"""`gluonbench.tune.head_to_head`: two loader settings confirmed against each other, the ratio with its CI."""

from __future__ import annotations

import math
import time

import pytest

from gluonbench.analysis.stats import paired_ratio, ratio_ci
from gluonbench.errors import GluonbenchError


def test_ratio_ci_combines_both_sides():
    r, (lo, hi) = ratio_ci(90.0, (85.0, 95.0), 100.0, (98.0, 102.0))
    assert r == pytest.approx(0.9)
    # wider than either relative CI alone, and asymmetric as the inputs are
    assert lo < 85 / 100 * 1.0 and hi > 95 / 100
    assert lo < r < hi
    down = math.hypot(math.log(90 / 85), math.log(102 / 100))
    assert lo == pytest.approx(0.9 * math.exp(-down))
    # exact estimates: a point
    assert ratio_ci(2.0, (2.0, 2.0), 4.0, (4.0, 4.0)) == (0.5, (0.5, 0.5))
    for bad in ((math.nan, (1.0, 2.0)), (1.0, (0.0, 2.0)), (1.0, (math.nan, 2.0))):
        assert math.isnan(ratio_ci(*bad, 1.0, (1.0, 1.0))[0])


def test_paired_ratio_cancels_what_both_sides_of_a_round_share():
    load = [1.0, 2.0, 1.3, 1.8, 1.1, 1.6, 1.4]
    a = {r: 3.0 * f for r, f in enumerate(load, 1)}
    b = {r: 4.0 * f for r, f in enumerate(load, 1)}
    b[99] = 1.0  # a round without a: left out
    assert paired_ratio(a, b) == (pytest.approx(0.75), (pytest.approx(0.75), pytest.approx(0.75)))
    assert paired_ratio(a, {r: v for r, v in b.items() if r <= 5}) is None, "5 rounds in common: fewer than 6"
    b[3] = math.nan  # a round with no figure on one side does not count
    assert paired_ratio(a, b, min_rounds=7) is None and paired_ratio(a, b, min_rounds=6) is not None


def _slow_read(x, y):
    time.sleep(0.002)  # a read that waits (the GIL is released): threads overlap it
    return x, y


def _pipeline():
    import numpy as np

    from gluonbench._mx import gluon, mx
    from gluonbench.pipeline import EmulatedStep, Loader, Pipeline

    data = gluon.data.ArrayDataset(np.zeros((512, 4), np.float32), np.zeros(512, np.float32))
    return Pipeline(
        dataset=data,
        loader=Loader(16, 0, False, None, shuffle=True),
        ctx=mx.cpu(),
        step=EmulatedStep(0.002, 16),
        transform=_slow_read,
    )


def test_head_to_head_measures_two_settings_in_one_run(no_leaks):
    from gluonbench.tune import head_to_head
    from gluonbench.tune.model import Setting

    slow, fast = Setting(0), Setting(4, thread_pool=True)
    h = head_to_head(_pipeline(), slow, fast, budget_s=8)
    assert h.a.setting == slow and h.b.setting == fast
    # 0 workers: 16 x 2 ms of reads then the 2 ms step, ~34 ms a batch; 4 threads overlap the reads
    # compared round by round; the paired ratio agrees with the ratio of the two medians within their CIs
    assert len(set(h.a.per_round) & set(h.b.per_round)) >= 6
    _, (lo, hi) = ratio_ci(h.a.samples_per_s, h.a.ci, h.b.samples_per_s, h.b.ci)
    assert lo <= h.ratio <= hi
    assert h.ratio < 0.8, h
    assert h.ci[0] <= h.ratio <= h.ci[1] and h.ci[1] < 1.0
    assert {e.phase for e in h.evidence} == {"confirm"} and len(h.evidence) == 2
    assert h.to_dict()["ratio"] == h.ratio


def test_head_to_head_bad_input():
    from gluonbench.tune import head_to_head
    from gluonbench.tune.model import Setting

    with pytest.raises(GluonbenchError, match="two different settings"):
        head_to_head(_pipeline(), Setting(2), Setting(2), 5)
    with pytest.raises(GluonbenchError, match="budget_s must be a number of seconds"):
        head_to_head(_pipeline(), Setting(0), Setting(2), math.nan)
    with pytest.raises(GluonbenchError, match="budget_s must be at least 3 seconds"):
        head_to_head(_pipeline(), Setting(0), Setting(2), 1)
