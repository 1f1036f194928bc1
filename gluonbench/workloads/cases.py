"""Pipelines whose bottleneck is known, to check that ``diagnose`` gets it right.

Each case is built from real reads, real CPU work and real model compute (the
synthetic workload's knobs, in-memory float32 arrays, or the real MNIST /
Fashion-MNIST files). Most are sized so that one stage dominates by a wide margin
on any machine, and ``expected`` follows from the construction; a case with
``expected == ""`` (the seed's MNIST at 2 workers) has no verdict by construction.
Either way the ground truth is the seed's rule measured by a plain training loop
that overlaps like MXNet's (``benchmarks/ground_truth.py``): how much faster one
reused batch trains than the full pipeline. The device-bound (``gpu_io``) cases are built so that the input
costs a few per cent of the step, but on a small CPU machine the loader shares the cores with the model's
operators: on 2 cores the plain loop has measured one reused batch 1.02-1.18x faster for them, run to run,
which is either side of the 5 % line. For them ``expected`` is the intent, not a promise, and the plain
loop decides. The cases whose ``workload`` is one of :data:`gluonbench.workloads.user_cases.BUILDERS` are written the way
users write Gluon input pipelines (``ImageFolderDataset``, ``gluon.data.vision.MNIST(transform=...)``, encoded
bytes decoded by the transform, token ids, slow storage). The tests run the ``quick`` cases;
``benchmarks/diagnose_accuracy.py`` runs them all against that ground truth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gluonbench.workloads.user_cases import BUILDERS, Built

if TYPE_CHECKING:
    from gluonbench.workloads.spec import PipelineSpec


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
    """``linear``: swap the workload's net for one dense layer (a model that costs almost nothing);
    ``dense:<units>[x<depth>]``: ``depth`` (default 1) hidden dense layers of that many units (ReLU) before it"""
    arrays: tuple[int, ...] | None = None
    """workload ``arrays``: in-memory random float32 samples of this shape in an ArrayDataset (no file reads,
    no transform: the loader's batchify is the whole input pipeline)"""
    samples: int = 4096
    """samples of an ``arrays`` case"""
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
        "2 dense layers of 2048 units on cached 4 KiB files with no transform work, batch 32: compute-bound "
        "(the input costs ~2 % of the step when measured alone)",
        "synthetic",
        {"width": 2048, "depth": 2, "samples": 2048},
        batch_size=32,
    ),
    Case(
        "arrays-heavy-model",
        "gpu_io",
        "ready float32 samples (1x28x28) in memory, no transform, and 2 dense layers of 2048 units at batch 32: "
        "the loader costs well under 1 % of the step",
        "arrays",
        batch_size=32,
        net="dense:2048x2",
        arrays=(1, 28, 28),
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
    Case(
        "arrays-loader-heavy-linear",
        "disk_io",
        "in-memory float32 samples (3x32x32, 12 KiB) batched 256 at a time, and a linear model costing less than "
        "the loader: batchify in the main process is the limit",
        "arrays",
        batch_size=256,
        net="linear",
        arrays=(3, 32, 32),
        quick=True,
    ),
    Case(
        "arrays-loader-model-balanced",
        "disk_io",
        "the same in-memory samples and loader, and a model (a hidden dense layer of 32 units) costing about as "
        "much as the loader: the two compete for the cores, and reusing one batch still trains faster",
        "arrays",
        batch_size=256,
        net="dense:32",
        arrays=(3, 32, 32),
    ),
    Case(
        "mnist-seed-0workers",
        "preprocessing",
        "the seed's MNIST pipeline (per-sample NDArray transform, seed CNN, batch 64) at 0 workers: the seed's own "
        "table (12.96 s at 0 workers, 6.2 s at 2) says moving preprocessing off the training loop pays",
        "mnist",
        batch_size=64,
    ),
    Case(
        "imagefolder-jpeg-small-cnn",
        "preprocessing",
        "ImageFolderDataset over 400 JPEGs (~12 KB) with transform_first(Resize, ToTensor, Normalize), a small CNN: "
        "the decode and transform inside dataset[i] cost more than the step",
        "imagefolder",
    ),
    Case(
        "gluon-mnist-transform-mlp",
        "preprocessing",
        "gluon.data.vision.MNIST(root=..., transform=...) as MXNet's example writes it (the transform inside "
        "dataset[i]), an MLP of 128 and 64 units at batch 100",
        "gluon-mnist",
        batch_size=100,
    ),
    Case(
        "encoded-bytes-imdecode",
        "preprocessing",
        "JPEG bytes held in memory, decoded by the transform with mx.image.imdecode then resized and normalised; "
        "a small CNN",
        "encoded-bytes",
    ),
    Case(
        "text-token-ids-lstm",
        "gpu_io",
        "padded token ids in memory (48 per sample) and an embedding + bidirectional LSTM classifier at batch 32: "
        "the loader only batches 32 short rows, the step runs an LSTM",
        "text",
    ),
    Case(
        "arrays-tiny-samples-linear",
        "disk_io",
        "32768 tiny tabular samples (16 float32) batched 1024 at a time into a linear model: the loader's per-sample "
        "work (1024 dataset[i] and the batchify) costs far more than the step",
        "arrays",
        batch_size=1024,
        net="linear",
        arrays=(16,),
        samples=32768,
    ),
    Case(
        "slow-storage-2workers",
        "disk_io",
        "a dataset whose every file read waits 4 ms (a network file system) and is dropped from the page cache, "
        "2 workers, a linear model: the reads wait, no CPU is busy",
        "slow-storage",
        workers=2,
    ),
    Case(
        "mnist-seed-2workers",
        "",
        "the seed's MNIST pipeline at 2 workers on this machine's cores: no verdict by construction, the plain "
        "loop's measurement decides",
        "mnist",
        batch_size=64,
        workers=2,
    ),
)


def linear_net(classes: int = 10, hidden: int = 0, depth: int = 1):
    """One dense layer (``hidden``: ``depth`` hidden dense layers of that many ReLU units before it), hybridized."""
    from gluonbench._mx import gluon

    net = gluon.nn.HybridSequential()
    with net.name_scope():
        for _ in range(depth if hidden else 0):
            net.add(gluon.nn.Dense(hidden, activation="relu"))
        net.add(gluon.nn.Dense(classes))
    net.hybridize()
    return net


def array_dataset(shape: tuple[int, ...], samples: int, classes: int = 10, seed: int = 0):
    """``samples`` random float32 arrays of ``shape`` with labels, in memory (an ArrayDataset)."""
    import numpy as np

    from gluonbench._mx import gluon

    rng = np.random.default_rng(seed)
    x = rng.random((samples, *shape), dtype=np.float32)
    y = rng.integers(0, classes, samples).astype(np.float32)
    return gluon.data.ArrayDataset(x, y)


def _net(case: Case, classes: int, default: Any):
    if case.net == "linear":
        return linear_net(classes)
    if case.net and case.net.startswith("dense:"):
        units, _, depth = case.net.split(":", 1)[1].partition("x")
        return linear_net(classes, int(units), int(depth or 1))
    return default()


def pretransform(w: PipelineSpec, limit: int = 8192):
    """The first ``limit`` training samples through the transform, as an in-memory ArrayDataset."""
    import numpy as np

    from gluonbench._mx import gluon

    n = min(limit, len(w.dataset))
    xs, ys = [], []
    for i in range(n):
        x, y = w.transform(*w.dataset[i])
        xs.append(x.asnumpy() if hasattr(x, "asnumpy") else np.asarray(x))
        ys.append(np.float32(y))
    return gluon.data.ArrayDataset(np.stack(xs), np.asarray(ys, dtype=np.float32))


def build(case: Case, dirs: Mapping[str, str | Path] | None = None) -> dict[str, Any]:
    """Keyword arguments of :func:`gluonbench.diagnose` for ``case`` (less budget and context).

    ``dirs`` maps a workload name to its ``data_dir`` (for ``synthetic``: where its files go, and those of the
    cases of :mod:`gluonbench.workloads.user_cases`); workloads not in it use the default look-up. Nothing is
    downloaded.
    """
    return build_case(case, dirs).kwargs


def build_case(case: Case, dirs: Mapping[str, str | Path] | None = None) -> Built:
    """``case`` ready to run: :func:`build`'s keyword arguments, and for a pipeline whose preprocessing runs inside
    ``dataset[i]`` the same data set with that work left out (:attr:`~gluonbench.workloads.user_cases.Built.read_only`,
    the plain loop's "remove preprocessing")."""
    if case.workload in BUILDERS:
        built = BUILDERS[case.workload](case.batch_size, case.workers, dirs)
        built.kwargs["label"] = case.name
        return built
    return Built(_build_workload(case, dirs))


def _build_workload(case: Case, dirs: Mapping[str, str | Path] | None) -> dict[str, Any]:
    from gluonbench._mx import gluon
    from gluonbench.workloads import get_workload

    if case.workload == "arrays":
        if case.arrays is None:
            raise ValueError(f"case {case.name}: workload 'arrays' needs a sample shape (arrays=...)")
        return {
            "dataset": array_dataset(case.arrays, case.samples),
            "transform": None,
            "net": _net(case, 10, lambda: linear_net(10)),
            "loss": gluon.loss.SoftmaxCrossEntropyLoss(),
            "batch_size": case.batch_size,
            "num_workers": case.workers,
            "label": case.name,
        }
    data_dir = (dirs or {}).get(case.workload)
    w = get_workload(case.workload, data_dir=data_dir, download=False, **case.options)
    dataset, transform = (pretransform(w), None) if case.pretransformed else (w.dataset, w.transform)
    net = _net(case, w.classes or 10, w.make_net)
    return {
        "dataset": dataset,
        "transform": transform,
        "net": net,
        "loss": w.make_loss(),
        "batch_size": case.batch_size,
        "num_workers": case.workers,
        "label": case.name,
    }
