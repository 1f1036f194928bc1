"""A training script of the usual shape whose bottleneck is chosen by its arguments, with its own plain timer.

Used by ``benchmarks/script_agreement.py``: ``gluonbench diagnose -- python benchmarks/_agreement_train.py ARGS``
diagnoses it as written, and ``--own-timer ROUNDS`` makes the script itself time its loop (no gluonbench in it):
in each round, ``--block`` training steps of each of three inputs in turn, through its own switches:

* ``full``: its DataLoader as written;
* ``no_preprocess``: every sample's transform swapped for a sample made once (``dataset[i]`` still read);
* ``reused``: one batch, loaded once, trained on every step (the seed's "reload the same batch").

It prints one JSON line: the seconds per step of each input per round. The bottleneck's knobs:
``--transform-work`` (per-sample CPU work in the transform: preprocessing), ``--read-ms`` (a wait before every
``dataset[i]``: slow storage), ``--width`` (the model's width: model compute; with ``--light-input`` the input costs about 1 % of its step).

    python benchmarks/_agreement_train.py --epochs 1
    python benchmarks/_agreement_train.py --own-timer 8 --read-ms 3
"""

from __future__ import annotations

import argparse
import json
import time

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon, nd


class Images(gluon.data.Dataset):
    """``count`` 28x28 uint8 images of 10 classes (each its own mean), each read after ``read_ms``."""

    def __init__(self, count: int, seed: int, read_ms: float) -> None:
        rng = np.random.RandomState(seed)
        self.labels = rng.randint(0, 10, size=count).astype("int32")
        base = rng.randint(0, 256, size=(10, 28, 28, 1))
        noise = rng.randint(-30, 30, size=(count, 28, 28, 1))
        self.images = np.clip(base[self.labels] + noise, 0, 255).astype("uint8")
        self.read_s = read_ms / 1000.0

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple:
        if self.read_s:
            time.sleep(self.read_s)
        return self.images[i], int(self.labels[i])


class Augment:
    """The training transform: ``work`` rounds of a random affine jitter on the image (real CPU work), then
    scaling to float CHW."""

    def __init__(self, work: int) -> None:
        self.work = work

    def __call__(self, image: np.ndarray) -> nd.NDArray:
        x = image.astype("float32")
        for _ in range(self.work):
            shift = np.random.randint(-2, 3, size=2)
            x = np.roll(x, tuple(shift), axis=(0, 1)) * 0.5 + np.flip(x, axis=1) * 0.5
        return nd.array(np.transpose(x / 255.0, (2, 0, 1)))


class Light:
    """A transform that hands out NumPy (the loader's batchify then makes one NDArray a batch, not one a sample):
    an input pipeline that costs about 1 % of the wide model's step, for a clearly model-bound case."""

    def __call__(self, image: np.ndarray) -> np.ndarray:
        return np.transpose(image.astype("float32") / 255.0, (2, 0, 1))


def to_test(image: np.ndarray) -> nd.NDArray:
    return nd.array(np.transpose(image.astype("float32") / 255.0, (2, 0, 1)))


def build_net(width: int) -> gluon.nn.HybridSequential:
    net = gluon.nn.HybridSequential()
    net.add(
        gluon.nn.Conv2D(width, 3, padding=1, activation="relu"),
        gluon.nn.MaxPool2D(2),
        gluon.nn.Conv2D(2 * width, 3, padding=1, activation="relu"),
        gluon.nn.MaxPool2D(2),
        gluon.nn.Flatten(),
        gluon.nn.Dense(4 * width, activation="relu"),
        gluon.nn.Dense(10),
    )
    return net


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--train-size", type=int, default=4096)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--transform-work", type=int, default=0, help="rounds of jitter per training sample")
    p.add_argument("--read-ms", type=float, default=0.0, help="a wait before every dataset[i] (slow storage)")
    p.add_argument("--light-input", action="store_true", help="a NumPy transform (a cheap input: model-bound)")
    p.add_argument("--width", type=int, default=16, help="channels of the first convolution")
    p.add_argument("--contexts", type=int, default=1, help="CPU contexts each batch is split over")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--own-timer", type=int, default=0, metavar="ROUNDS", help="time the loop itself (see above)")
    p.add_argument("--block", type=int, default=12, help="steps per input and round with --own-timer")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    mx.random.seed(1)
    np.random.seed(1)
    ctx = [mx.cpu(i) for i in range(args.contexts)]
    train = Images(args.train_size, 0, args.read_ms)
    test = Images(512, 1, 0.0)
    augment = Light() if args.light_input else Augment(args.transform_work)
    train_loader = gluon.data.DataLoader(
        train.transform_first(augment), batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers,
        last_batch="discard",
    )  # fmt: skip
    test_loader = gluon.data.DataLoader(test.transform_first(to_test), batch_size=256)
    net = build_net(args.width)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.hybridize(static_alloc=True)
    steps_per_epoch = len(train_loader)
    schedule = mx.lr_scheduler.FactorScheduler(step=max(steps_per_epoch, 1), factor=0.9, base_lr=args.lr)
    trainer = gluon.Trainer(
        net.collect_params(), "nag", {"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4, "lr_scheduler": schedule}
    )
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step(data: nd.NDArray, label: nd.NDArray) -> None:
        parts = gluon.utils.split_and_load(data, ctx, even_split=False)
        labels = gluon.utils.split_and_load(label, ctx, even_split=False)
        with autograd.record():
            losses = [loss_fn(net(x), y) for x, y in zip(parts, labels, strict=True)]
        for loss in losses:
            loss.backward()
        trainer.step(data.shape[0])

    if args.own_timer:
        own_timer(args, train, augment, train_loader, step)
        return
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        for data, label in train_loader:
            step(data, label)
        nd.waitall()
        correct = total = 0
        for data, label in test_loader:
            out = net(data.as_in_context(ctx[0]))
            correct += int((out.argmax(axis=1) == label.astype("float32").as_in_context(ctx[0])).sum().asscalar())
            total += data.shape[0]
        print(f"epoch {epoch}: {time.perf_counter() - t0:.1f} s, test accuracy {correct / max(total, 1):.3f}")


def own_timer(
    args: argparse.Namespace, train: Images, augment: Augment | Light, loader: gluon.data.DataLoader, step
) -> None:
    """The script's own measurement: rounds of ``--block`` steps of each input, timed in steady state (from the
    end of a block's first step to the end of its last), as the seed's loop waits for each step."""
    ready = augment(train.images[0])
    no_pre = gluon.data.DataLoader(
        train.transform_first(lambda image: ready), batch_size=args.batch_size, shuffle=True,
        num_workers=args.num_workers, last_batch="discard",
    )  # fmt: skip
    one = next(iter(loader))

    def forever(dl):
        while True:
            yield from dl

    sources = {"full": forever(loader), "no_preprocess": forever(no_pre), "reused": iter(lambda: one, None)}
    times: dict[str, list[float]] = {k: [] for k in sources}
    for _ in range(2):  # warm-up: workers started, the graph built
        for it in sources.values():
            step(*next(it))
            nd.waitall()
    for _ in range(args.own_timer):
        for name, it in sources.items():
            step(*next(it))
            nd.waitall()
            t0 = time.perf_counter()
            for _ in range(args.block - 1):
                data, label = next(it)
                nd.waitall()
                step(data, label)
            nd.waitall()
            times[name].append((time.perf_counter() - t0) / (args.block - 1))
    print(json.dumps({"own_timer": times}), flush=True)


if __name__ == "__main__":
    main()
