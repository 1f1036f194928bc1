"""The *ruler*: a fixed reference pipeline measured in the same interleaved rounds as the user's.

A CI runner today may be faster or slower than the one that saved the baseline, and its neighbours
come and go. Every figure a check compares is the user's pipeline *relative to the ruler in the same
round* (:func:`gluonbench.analysis.stats.paired_ratio`), so a uniformly slower machine or a burst of
background load moves both sides alike and cancels. The ruler is the seed's training step (its CNN,
batch 64, on the context of the check) fed by an in-memory data set through a CPU-bound per-sample
transform (the synthetic workload's chained BLAKE2b hashing, a *fixed* number of rounds, so the work
is the same on every machine): a little of everything a data pipeline spends time on.

Changing anything here changes every ratio: bump :data:`RULER_VERSION`, and baselines saved with
another version are refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

RULER_VERSION = 1
RULER_SAMPLES = 2048
RULER_BATCH = 32
RULER_HASH_ROUNDS = 16
"""BLAKE2b rounds over 16 KiB per sample (about 0.3 ms of one core on a 2020s x86 CPU)"""


def ruler_description() -> dict[str, Any]:
    """What the ruler is, stored in every baseline."""
    return {
        "version": RULER_VERSION,
        "what": (
            f"seed CNN step, batch {RULER_BATCH}, in-memory 28x28x1 uint8 samples ({RULER_SAMPLES}), "
            f"seed conversion + {RULER_HASH_ROUNDS} BLAKE2b rounds over 16 KiB per sample, 0 workers"
        ),
    }


def ruler_pipeline(ctx: Any) -> Any:
    """The ruler as a :class:`~gluonbench.pipeline.Pipeline` on ``ctx`` (same weights and data every time)."""
    from gluonbench._mx import gluon, mx
    from gluonbench.pipeline import build_pipeline
    from gluonbench.pipeline.stages import ModelStep
    from gluonbench.workloads.mnist import seed_loss, seed_net
    from gluonbench.workloads.spec import PipelineSpec
    from gluonbench.workloads.synthetic import SyntheticTransform

    rng = np.random.default_rng(20261123)
    images = rng.integers(0, 256, size=(RULER_SAMPLES, 28, 28, 1), dtype=np.uint8)
    labels = rng.integers(0, 10, size=RULER_SAMPLES).astype(np.int32)
    dataset = gluon.data.SimpleDataset(list(zip(images, labels, strict=True)))
    net = seed_net()
    mx.random.seed(1)
    net.collect_params().initialize(mx.init.Xavier(magnitude=2.24), ctx=ctx)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    spec = PipelineSpec(dataset=dataset, net=net, transform=SyntheticTransform(RULER_HASH_ROUNDS, seed=0), name="ruler")
    step = ModelStep(net, seed_loss(), trainer)
    return build_pipeline(spec, ctx=ctx, step=step, batch_size=RULER_BATCH, num_workers=0)  # the one assembly
