"""Small real pipelines for the ``gluonbench check`` tests (loaded with ``--pipeline tests/check_pipelines.py:FUNC``).

``make(samples=512)``: in-memory 28x28x1 images through the synthetic workload's CPU-bound transform (real
BLAKE2b hashing), the seed's CNN step. ``$CHECK_TEST_SLOW_PCT`` raises the transform's work by that
percentage: the same pipeline, made slower, as a pull request might.
"""

from __future__ import annotations

import os

import numpy as np


def make(samples: int = 512) -> dict:
    from gluonbench._mx import gluon
    from gluonbench.workloads.synthetic import SyntheticTransform

    pct = float(os.environ.get("CHECK_TEST_SLOW_PCT", "0"))
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(samples, 28, 28, 1), dtype=np.uint8)
    labels = rng.integers(0, 10, size=samples).astype(np.int32)
    dataset = gluon.data.SimpleDataset(list(zip(images, labels, strict=True)))
    return {"dataset": dataset, "transform": SyntheticTransform(round(10 * (1 + pct / 100))), "batch_size": 32}


def other() -> dict:
    """Another pipeline (another identity): a baseline of ``make`` is refused for it."""
    return make()


def not_a_pipeline() -> int:
    return 42
