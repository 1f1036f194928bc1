"""Train a small CNN on MNIST with Gluon: a training script of the usual shape, with no gluonbench in it.

    python examples/train_mnist_gluon.py --epochs 2 --num-workers 2
    gluonbench diagnose -- python examples/train_mnist_gluon.py --epochs 20 --num-workers 2

Momentum SGD with weight decay and a step LR schedule, random-crop augmentation for training only
(``transform_first`` with separate train and test transforms), data-parallel over two CPU contexts
(``split_and_load``, stand-ins for two GPUs) and an evaluation pass after every epoch. The data is read
from ``--data-dir`` (the four MNIST ``*-ubyte.gz`` files; default ``$GLUONBENCH_DATA/mnist``, else MXNet's
cache); ``--limit`` trains on the first N images only.
"""

from __future__ import annotations

import argparse
import logging
import os
import time

import mxnet as mx
from mxnet import autograd, gluon, nd
from mxnet.gluon.data.vision import transforms


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Train a CNN on MNIST.")
    default_dir = os.path.join(os.environ.get("GLUONBENCH_DATA", "~/.mxnet/datasets"), "mnist")
    p.add_argument("--data-dir", default=os.path.expanduser(default_dir))
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64, help="per step, over all contexts")
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--wd", type=float, default=1e-4)
    p.add_argument("--lr-step", type=int, default=2, help="epochs between LR drops (x0.1)")
    p.add_argument("--contexts", type=int, default=2, help="CPU contexts to split each batch over")
    p.add_argument("--limit", type=int, default=0, help="train on the first N images, test on N/5 (0: all)")
    p.add_argument("--log-interval", type=int, default=100)
    return p.parse_args()


def build_net() -> gluon.HybridBlock:
    net = gluon.nn.HybridSequential()
    net.add(
        gluon.nn.Conv2D(20, kernel_size=5, activation="relu"),
        gluon.nn.MaxPool2D(pool_size=2, strides=2),
        gluon.nn.Conv2D(50, kernel_size=5, activation="relu"),
        gluon.nn.MaxPool2D(pool_size=2, strides=2),
        gluon.nn.Flatten(),
        gluon.nn.Dense(256, activation="relu"),
        gluon.nn.Dense(10),
    )
    return net


def evaluate(net: gluon.Block, loader: gluon.data.DataLoader, ctx: list) -> float:
    metric = mx.metric.Accuracy()
    for data, label in loader:
        datas = gluon.utils.split_and_load(data, ctx, even_split=False)
        labels = gluon.utils.split_and_load(label, ctx, even_split=False)
        metric.update(labels, [net(x) for x in datas])
    return metric.get()[1]


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    ctx = [mx.cpu(i) for i in range(args.contexts)]

    train_tf = transforms.Compose([transforms.RandomResizedCrop(28, scale=(0.85, 1.0)), transforms.ToTensor()])
    test_tf = transforms.ToTensor()
    train_set = gluon.data.vision.MNIST(root=args.data_dir, train=True)
    if args.limit:
        train_set = gluon.data.SimpleDataset([train_set[i] for i in range(args.limit)])
    test_set = gluon.data.vision.MNIST(root=args.data_dir, train=False)
    if args.limit:
        test_set = gluon.data.SimpleDataset([test_set[i] for i in range(max(args.limit // 5, 1))])
    train_loader = gluon.data.DataLoader(
        train_set.transform_first(train_tf),
        batch_size=args.batch_size,
        shuffle=True,
        last_batch="discard",
        num_workers=args.num_workers,
    )
    test_loader = gluon.data.DataLoader(test_set.transform_first(test_tf), batch_size=256, num_workers=args.num_workers)

    net = build_net()
    net.initialize(mx.init.Xavier(magnitude=2.24), ctx=ctx)
    net.hybridize(static_alloc=True)
    steps_per_epoch = len(train_loader)
    schedule = mx.lr_scheduler.FactorScheduler(step=max(1, args.lr_step * steps_per_epoch), factor=0.1, base_lr=args.lr)
    trainer = gluon.Trainer(
        net.collect_params(),
        "sgd",
        {"momentum": args.momentum, "wd": args.wd, "lr_scheduler": schedule},
    )
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    metric = mx.metric.Accuracy()

    for epoch in range(args.epochs):
        metric.reset()
        tic = time.time()
        for i, (data, label) in enumerate(train_loader):
            datas = gluon.utils.split_and_load(data, ctx)
            labels = gluon.utils.split_and_load(label, ctx)
            with autograd.record():
                outputs = [net(x) for x in datas]
                losses = [loss_fn(o, y) for o, y in zip(outputs, labels, strict=True)]
            for loss in losses:
                loss.backward()
            trainer.step(data.shape[0])
            metric.update(labels, outputs)
            if args.log_interval and (i + 1) % args.log_interval == 0:
                logging.info("epoch %d batch %d: train accuracy %.3f", epoch, i + 1, metric.get()[1])
        nd.waitall()
        train_s = time.time() - tic
        logging.info(
            "epoch %d: train accuracy %.3f in %.1f s, test accuracy %.4f, lr %.4g",
            epoch,
            metric.get()[1],
            train_s,
            evaluate(net, test_loader, ctx),
            trainer.learning_rate,
        )


if __name__ == "__main__":
    main()
