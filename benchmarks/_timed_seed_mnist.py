"""The seed's MNIST CNN at batch 64 (SEEDS.md, 001) as a training script with its own step timer, for
``benchmarks/script_overhead.py``. No gluonbench in it: run plainly, or under ``gluonbench.script.boot``.

    python benchmarks/_timed_seed_mnist.py --data-dir ../shared/data/mnist --steps 300 --num-workers 0

Prints one JSON line: the median of its step times (the time from one batch's arrival to the next's, each step
ending in the seed's own ``nd.waitall()``) over ``--steps`` steps after ``--warmup``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from time import perf_counter

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon, nd


def main() -> None:
    p = argparse.ArgumentParser(description="The seed's MNIST CNN at batch 64, timing its own steps.")
    p.add_argument("--data-dir", default=os.path.join(os.environ.get("GLUONBENCH_DATA", "data"), "mnist"))
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--no-barrier", action="store_true", help="leave out the seed's nd.waitall() in each step")
    args = p.parse_args()
    mx.random.seed(1)
    np.random.seed(1)
    net = gluon.nn.HybridSequential()
    net.add(
        gluon.nn.Conv2D(channels=20, kernel_size=5, activation="relu"),
        gluon.nn.MaxPool2D(pool_size=2, strides=2),
        gluon.nn.Conv2D(channels=50, kernel_size=5, activation="relu"),
        gluon.nn.MaxPool2D(pool_size=2, strides=2),
        gluon.nn.Flatten(),
        gluon.nn.Dense(512, activation="relu"),
        gluon.nn.Dense(10),
    )
    net.hybridize()
    net.initialize(mx.init.Xavier(magnitude=2.24))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def transform(data: nd.NDArray, label: nd.NDArray) -> tuple[nd.NDArray, np.float32]:
        return nd.transpose(data.astype(np.float32), (2, 0, 1)) / 255, label.astype(np.float32)

    dataset = gluon.data.vision.MNIST(root=args.data_dir, train=True, transform=transform)
    loader = gluon.data.DataLoader(dataset, 64, shuffle=True, num_workers=args.num_workers)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    times: list[float] = []
    last = None
    while len(times) < args.warmup + args.steps:
        for data, label in loader:
            now = perf_counter()
            if last is not None:
                times.append(now - last)
            last = now
            if len(times) >= args.warmup + args.steps:
                break
            data, label = data.as_in_context(mx.cpu()), label.as_in_context(mx.cpu())
            if not args.no_barrier:
                nd.waitall()
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
        last = None  # an epoch's end is not a step
    nd.waitall()
    steady = times[args.warmup :]
    print(json.dumps({"median_step_s": statistics.median(steady), "steps": len(steady)}), flush=True)


if __name__ == "__main__":
    main()
