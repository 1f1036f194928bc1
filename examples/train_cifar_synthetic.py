"""Train a small CNN on CIFAR-10-shaped images with Gluon: a training script of the usual shape, no gluonbench in it.

    python examples/train_cifar_synthetic.py --epochs 2
    gluonbench diagnose -- python -m examples.train_cifar_synthetic --epochs 50 --read-ms 2

The images are made up (32x32 RGB, a fixed seed) so that it runs anywhere without a download; ``--read-ms``
makes every ``dataset[i]`` wait that long first, as a slow network file system would. Adam with weight decay,
a cosine LR schedule with warm-up, ``transform_first`` with separate train and test transforms, a custom
``batchify_fn``, mixup, gradient accumulation (``--accumulate``: one ``trainer.step`` every N batches),
data-parallel over two CPU contexts (``split_and_load``) and an evaluation pass after every epoch.
"""

from __future__ import annotations

import argparse
import logging
import time

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon, nd
from mxnet.gluon.data.vision import transforms

MEAN, STD = (0.49, 0.48, 0.45), (0.25, 0.24, 0.26)


class SyntheticImages(gluon.data.Dataset):
    """``count`` uint8 HWC images of 10 classes (each class its own mean colour), read with an optional delay."""

    def __init__(self, count: int, seed: int, read_ms: float = 0.0) -> None:
        rng = np.random.RandomState(seed)
        self.labels = rng.randint(0, 10, size=count).astype("int32")
        base = rng.randint(0, 256, size=(10, 1, 1, 3))
        noise = rng.randint(-40, 40, size=(count, 32, 32, 3))
        self.images = np.clip(base[self.labels] + noise, 0, 255).astype("uint8")
        self.read_s = read_ms / 1000.0

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        if self.read_s:
            time.sleep(self.read_s)
        return nd.array(self.images[i], dtype="uint8"), int(self.labels[i])


def batchify(samples: list) -> tuple:
    """Stack images; labels as float32 (the loss and mixup take them so)."""
    data = nd.stack(*[s[0] for s in samples])
    label = nd.array([s[1] for s in samples], dtype="float32")
    return data, label


def build_net(classes: int = 10) -> gluon.HybridBlock:
    net = gluon.nn.HybridSequential()
    for channels in (32, 64):
        net.add(
            gluon.nn.Conv2D(channels, 3, padding=1),
            gluon.nn.BatchNorm(),
            gluon.nn.Activation("relu"),
            gluon.nn.MaxPool2D(2),
        )
    net.add(gluon.nn.GlobalAvgPool2D(), gluon.nn.Dense(classes))
    return net


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Train a small CNN on synthetic CIFAR-10-shaped images.")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--train-size", type=int, default=2048)
    p.add_argument("--test-size", type=int, default=512)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--read-ms", type=float, default=0.0, help="a delay before every dataset[i] (slow storage)")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--wd", type=float, default=5e-4)
    p.add_argument("--warmup-epochs", type=int, default=1)
    p.add_argument("--mixup", type=float, default=0.2, help="mixup's Beta(alpha, alpha); 0 turns it off")
    p.add_argument("--accumulate", type=int, default=1, help="batches per optimizer update")
    p.add_argument("--contexts", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    return p.parse_args()


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    ctx = [mx.cpu(i) for i in range(args.contexts)]
    normalize = transforms.Normalize(MEAN, STD)
    train_tf = transforms.Compose([transforms.RandomFlipLeftRight(), transforms.ToTensor(), normalize])
    test_tf = transforms.Compose([transforms.ToTensor(), normalize])
    train_set = SyntheticImages(args.train_size, args.seed, args.read_ms)
    test_set = SyntheticImages(args.test_size, args.seed + 1)
    train_loader = gluon.data.DataLoader(
        train_set.transform_first(train_tf),
        batch_size=args.batch_size,
        shuffle=True,
        last_batch="rollover",
        num_workers=args.num_workers,
        batchify_fn=batchify,
    )
    test_loader = gluon.data.DataLoader(
        test_set.transform_first(test_tf), batch_size=256, num_workers=args.num_workers, batchify_fn=batchify
    )

    net = build_net()
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.hybridize(static_alloc=True)
    if args.accumulate > 1:
        net.collect_params().setattr("grad_req", "add")
    updates_per_epoch = max(1, len(train_loader) // args.accumulate)
    schedule = mx.lr_scheduler.CosineScheduler(
        max_update=args.epochs * updates_per_epoch,
        base_lr=args.lr,
        warmup_steps=args.warmup_epochs * updates_per_epoch,
    )
    trainer = gluon.Trainer(
        net.collect_params(), "adam", {"learning_rate": args.lr, "wd": args.wd, "lr_scheduler": schedule}
    )
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=False)
    metric = mx.metric.Accuracy()

    for epoch in range(args.epochs):
        tic, seen = time.time(), 0
        for i, (data, label) in enumerate(train_loader):
            lam = np.random.beta(args.mixup, args.mixup) if args.mixup > 0 else 1.0
            one_hot = nd.one_hot(label, 10)
            if lam < 1.0:  # mixup: each image blended with the batch reversed
                data = lam * data + (1 - lam) * data[::-1]
                one_hot = lam * one_hot + (1 - lam) * one_hot[::-1]
            datas = gluon.utils.split_and_load(data, ctx)
            labels = gluon.utils.split_and_load(one_hot, ctx)
            with autograd.record():
                losses = [loss_fn(net(x), y) for x, y in zip(datas, labels, strict=True)]
            for loss in losses:
                loss.backward()
            seen += data.shape[0]
            if (i + 1) % args.accumulate == 0:
                trainer.step(args.batch_size * args.accumulate)
                if args.accumulate > 1:
                    net.collect_params().zero_grad()
        nd.waitall()
        train_s = time.time() - tic
        metric.reset()
        for data, label in test_loader:
            outs = [net(x) for x in gluon.utils.split_and_load(data, ctx, even_split=False)]
            metric.update(gluon.utils.split_and_load(label, ctx, even_split=False), outs)
        logging.info(
            "epoch %d: %d samples in %.1f s (%.0f/s), test accuracy %.3f, lr %.2e",
            epoch,
            seen,
            train_s,
            seen / train_s,
            metric.get()[1],
            trainer.learning_rate,
        )


if __name__ == "__main__":
    main()
