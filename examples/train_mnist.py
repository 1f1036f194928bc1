"""The seed's MNIST training (SEEDS.md, 001) with gluonbench's profiler hooks: a user's script.

    python examples/train_mnist.py --workers 2                       # trains; the hooks do nothing
    gluonbench profile -- python examples/train_mnist.py --workers 2  # profiled: steps, data wait, report

Data comes through gluonbench's look-up (``gluonbench.data.vision``: $GLUONBENCH_DATA/mnist, MXNet's
cache, system copies); nothing is downloaded with --no-download.
"""

from __future__ import annotations

import argparse
import mmap
import os
import time

from gluonbench import profiler
from gluonbench._mx import autograd, gluon, mx, nd
from gluonbench.data import vision
from gluonbench.workloads.mnist import seed_init, seed_loss, seed_net, seed_transform


class DiskBacked:
    """A dataset whose every sample first reads its 4 KiB record from ``path`` with O_DIRECT (no page
    cache), as a job reading from cold storage would; the sample itself comes from ``base``."""

    def __init__(self, base, path: str) -> None:
        self.base, self.path = base, path
        self.blocks = max(os.path.getsize(path) // 4096, 1)
        self._pid, self._fd, self._buf = None, -1, None

    def __len__(self) -> int:
        return len(self.base)

    def __getstate__(self) -> dict:  # workers open their own descriptor
        return {**self.__dict__, "_pid": None, "_fd": -1, "_buf": None}

    def __getitem__(self, i):
        if self._pid != os.getpid():  # one descriptor and aligned buffer per (worker) process
            self._pid, self._fd, self._buf = (
                os.getpid(),
                os.open(self.path, os.O_RDONLY | os.O_DIRECT),
                mmap.mmap(-1, 4096),
            )
        os.preadv(self._fd, [self._buf], (i * 7919 % self.blocks) * 4096)
        return self.base[i]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", type=int, default=0, help="DataLoader workers (default 0)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--batches", type=int, default=200, help="training batches (default 200)")
    p.add_argument("--eval-batches", type=int, default=20, help="evaluation batches (default 20)")
    p.add_argument("--data-dir", help="folder with the MNIST IDX files")
    p.add_argument("--no-download", action="store_true")
    p.add_argument("--disk-file", help="read a 4 KiB record per sample from this file with O_DIRECT (cold storage)")
    args = p.parse_args()

    mx.random.seed(1)
    folder = vision.locate("mnist", args.data_dir, download=not args.no_download)
    train = vision.load("mnist", folder, train=True).transform(seed_transform)
    if args.disk_file:
        train = DiskBacked(train, args.disk_file)
    test = vision.load("mnist", folder, train=False).transform(seed_transform)
    train_loader = gluon.data.DataLoader(train, args.batch_size, shuffle=True, num_workers=args.workers)
    test_loader = gluon.data.DataLoader(test, args.batch_size, shuffle=False, num_workers=args.workers)

    ctx = mx.cpu()
    net = seed_net()
    net.initialize(seed_init(), ctx=ctx)
    loss_fn = seed_loss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})

    t0 = time.perf_counter()
    with profiler.epoch(0), profiler.phase("train"):
        for i, (data, label) in enumerate(profiler.wrap(train_loader)):
            if i >= args.batches:
                break
            with profiler.step():
                data, label = data.as_in_context(ctx), label.as_in_context(ctx)
                nd.waitall()  # the seed's barrier
                with profiler.region("forward_backward"):
                    with autograd.record():
                        loss = loss_fn(net(data), label)
                    loss.backward()
                with profiler.region("update"):
                    trainer.step(data.shape[0])
                nd.waitall()
    train_s = time.perf_counter() - t0

    acc = mx.metric.Accuracy()
    with profiler.phase("eval"):
        for i, (data, label) in enumerate(profiler.wrap(test_loader)):
            if i >= args.eval_batches:
                break
            with profiler.step():
                acc.update(preds=nd.argmax(net(data.as_in_context(ctx)), axis=1), labels=label.as_in_context(ctx))
    print(f"workers={args.workers} train {train_s:.2f} s for {args.batches} batches, accuracy {acc.get()[1]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
