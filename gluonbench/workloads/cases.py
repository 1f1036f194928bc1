"""Pipelines whose bottleneck is known by construction, to check that ``diagnose`` gets it right.

Each case is built from real reads, real CPU work and real model compute (the
synthetic workload's knobs, or the real MNIST / Fashion-MNIST files) and sized
so that one stage dominates by a wide margin on any machine: the expected
verdict follows from the construction, not from a measurement. The tests run
the ``quick`` cases; ``benchmarks/diagnose_accuracy.py`` runs them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gluonbench.workloads.base import Workload


@dataclass(frozen=True)
class Case:
    name: str
    expected: str
    """the verdict by construction"""
    why: str
    workload: str
    options: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 32
    workers: int = 0
    net: str | None = None
    """``linear``: swap the workload's net for one dense layer (a model that costs almost nothing)"""
    pretransformed: bool = False
    """apply the transform once up front (an in-memory ArrayDataset of ready arrays, no transform)"""
    quick: bool = False
    """part of the test suite (short, unambiguous)"""


CASES: tuple[Case, ...] = (
    Case(
        "synthetic-cpu",
        "preprocessing",
        "2 ms of CPU work per sample in the transform; tiny model; cached 4 KiB files",
        "synthetic",
        {"cpu_ms": 2.0, "width": 32, "depth": 1, "samples": 2048},
        quick=True,
    ),
    Case(
        "mnist-seed-transform-linear",
        "preprocessing",
        "MNIST in memory with the seed's per-sample NDArray transform, and a linear model",
        "mnist",
        batch_size=64,
        net="linear",
        quick=True,
    ),
    Case(
        "synthetic-cpu-2workers",
        "preprocessing",
        "1 ms of CPU work per sample on 2 workers; tiny model",
        "synthetic",
        {"cpu_ms": 1.0, "width": 32, "depth": 1, "samples": 2048},
        workers=2,
    ),
    Case(
        "synthetic-nfs-latency",
        "disk_io",
        "1 ms of read latency per file (a slow network file system); no transform work; tiny model",
        "synthetic",
        {"read_ms": 1.0, "width": 32, "depth": 1, "samples": 2048},
        quick=True,
    ),
    Case(
        "synthetic-nfs-latency-2workers",
        "disk_io",
        "3 ms of read latency per file on 2 workers: parallel reads still cannot keep up",
        "synthetic",
        {"read_ms": 3.0, "width": 32, "depth": 1, "samples": 2048},
        workers=2,
        quick=True,
    ),
    Case(
        "synthetic-cold-large-records",
        "disk_io",
        "2 MiB records evicted from the page cache after every read: each sample is a real device read",
        "synthetic",
        {"record_kb": 2048, "cold": True, "width": 32, "depth": 1, "samples": 256},
        batch_size=16,
    ),
    Case(
        "synthetic-heavy-model",
        "gpu_io",
        "3 dense layers of 1024 units on cached 4 KiB files with no transform work: compute-bound",
        "synthetic",
        {"width": 1024, "depth": 3, "samples": 2048},
        batch_size=64,
        quick=True,
    ),
    Case(
        "mnist-pretransformed-seed-cnn",
        "gpu_io",
        "MNIST transformed once up front (ready float32 arrays in memory), the seed's CNN at batch 64",
        "mnist",
        batch_size=64,
        pretransformed=True,
        quick=True,
    ),
    Case(
        "fashion-mnist-pretransformed-seed-cnn-2workers",
        "gpu_io",
        "Fashion-MNIST transformed up front, the seed's CNN at batch 128, 2 workers",
        "fashion-mnist",
        batch_size=128,
        workers=2,
        pretransformed=True,
    ),
)


def linear_net(classes: int = 10):
    from gluonbench._mx import gluon

    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(classes))
    net.hybridize()
    return net


def pretransform(w: Workload, limit: int = 8192):
    """The first ``limit`` training samples through the transform, as an in-memory ArrayDataset."""
    import numpy as np

    from gluonbench._mx import gluon

    n = min(limit, len(w.train))
    xs, ys = [], []
    for i in range(n):
        x, y = w.transform(*w.train[i])
        xs.append(x.asnumpy() if hasattr(x, "asnumpy") else np.asarray(x))
        ys.append(np.float32(y))
    return gluon.data.ArrayDataset(np.stack(xs), np.asarray(ys, dtype=np.float32))


def build(case: Case, dirs: Mapping[str, str | Path] | None = None) -> dict[str, Any]:
    """Keyword arguments of :func:`gluonbench.diagnose` for ``case`` (less budget and context).

    ``dirs`` maps a workload name to its ``data_dir`` (for ``synthetic``: where its files go);
    workloads not in it use the default look-up. Nothing is downloaded.
    """
    from gluonbench.workloads import get_workload

    data_dir = (dirs or {}).get(case.workload)
    w = get_workload(case.workload, data_dir=data_dir, download=False, **case.options)
    dataset, transform = (pretransform(w), None) if case.pretransformed else (w.train, w.transform)
    net = linear_net(w.classes) if case.net == "linear" else w.make_net()
    return {
        "dataset": dataset,
        "transform": transform,
        "net": net,
        "loss": w.make_loss(),
        "batch_size": case.batch_size,
        "num_workers": case.workers,
        "label": case.name,
    }
