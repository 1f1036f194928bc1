"""The hooks' own timing, in this process, on a real DataLoader and MXNet's engine (no script, no channel)."""

from time import perf_counter

import numpy as np

from gluonbench._mx import mx
from gluonbench.script.hooks import Driver, Feed, Slice


def test_a_loader_only_slice_does_not_time_the_step_still_computing():
    # a script's last step before a switch to loader_only may still run in MXNet's engine threads: the slice's
    # first batch must not wait for it (it once read 184 ms a batch, the model's step, for a 1.5 ms loader)
    loader = mx.gluon.data.DataLoader(mx.gluon.data.ArrayDataset(np.zeros((256, 4), "float32")), batch_size=8)
    driver = Driver(None, None, None)
    driver.training, driver.phase, driver.mode = 1, "slice", "loader_only"
    driver.slice = Slice("loader_only", 0.0, 4, 0, t0=perf_counter())
    loader._gluonbench_index = 1
    feed = Feed(loader, driver, iter(loader))
    x = mx.nd.random.uniform(shape=(600, 600))
    t0 = perf_counter()
    for _ in range(20):  # queued, not computed: the engine works on it after this loop returns
        x = mx.nd.dot(x, x) / 600
    queued_s = perf_counter() - t0
    started = perf_counter()
    driver.loader_only(feed)
    mx.nd.waitall()
    engine_s = perf_counter() - started
    ((block,),) = [driver.results["loader_only"]]
    batch_s = [dt for dt, _, _ in block]
    assert len(batch_s) == 4
    assert engine_s > 5 * max(batch_s) and engine_s > queued_s, (engine_s, queued_s, batch_s)


def test_each_round_of_a_script_check_gets_the_ruler_on_both_sides():
    from gluonbench.script.check import bracketed

    # before round 1, then after rounds 1, 2 and 4 (round 3's pass timed nothing): a load that arrived during round 2
    raw = {0: 1.0, 1: 1.0, 2: 2.0, 4: 1.0}
    assert bracketed(raw) == {1: 1.0, 2: 1.5, 4: 1.0}
    assert bracketed({}) == {} and bracketed({0: 1.0}) == {}
