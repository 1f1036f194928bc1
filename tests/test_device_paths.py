"""The device paths of a GPU run, exercised on CPU contexts (issue #18, G1-G10).

MXNet treats ``cpu(0)``, ``cpu(1)``, ... as distinct devices: a copy between them is a real
``CopyCPU2CPU`` and a Parameter initialised on one is not initialised on another. So every path a
GPU run takes that does not need CUDA itself runs here on ``cpu(1)``/``cpu(2)``; what only a GPU
proves is in ``tests/test_gpu.py`` (``pytest -m gpu``). Each test names the item it covers.
"""

from __future__ import annotations

import numpy as np
import pytest

import gluonbench
from gluonbench._mx import gluon, mx, nd


class Raw:
    """A small in-memory data set of raw uint8 images (reading is an index)."""

    def __init__(self, n: int, side: int = 8) -> None:
        rng = np.random.default_rng(0)
        self.x = rng.integers(0, 255, size=(n, side, side, 1), dtype=np.uint8)
        self.y = rng.integers(0, 10, size=n)

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self) -> int:
        return len(self.y)


def to_float(x, y):
    return x.astype(np.float32).transpose(2, 0, 1) / 255, np.float32(y)


def small_net() -> gluon.HybridBlock:
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 3, activation="relu"), gluon.nn.Flatten(), gluon.nn.Dense(10))
    return net


def test_g1_deferred_net_on_second_cpu_context(no_leaks):
    """G1: a net set up the usual way (``net.initialize()``: cpu(0), shapes deferred) diagnosed on cpu(1)."""
    net = small_net()
    net.initialize(mx.init.Constant(0.25))
    d = gluonbench.diagnose(Raw(256), to_float, net, batch_size=32, ctx=mx.cpu(1), budget_s=2)
    assert d.verdict in ("preprocessing", "disk_io", "gpu_io", "inconclusive")
    for name, p in net.collect_params().items():
        # put back: the user's contexts, and no weight the probes trained
        assert p.list_ctx() == [mx.cpu(0)], name
        expected = 0.25 if name.endswith("weight") else 0.0
        assert np.allclose(p.data().asnumpy(), expected), f"{name}: trained weights were left in the user's net"


def test_g1_tune_with_deferred_net_on_second_cpu_context(no_leaks):
    """G1 for tune(): the same deferred net searched on cpu(1)."""
    net = small_net()
    net.initialize()
    result = gluonbench.tune(Raw(256), to_float, net, batch_size=32, ctx=mx.cpu(1), budget_s=10, max_workers=1)
    assert result.samples_per_s > 0
    assert all(p.list_ctx() == [mx.cpu(0)] for p in net.collect_params().values())
