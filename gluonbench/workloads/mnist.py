"""The seed's workload (SEEDS.md, 001): MNIST or Fashion-MNIST on a 2-conv CNN."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gluonbench.data import vision
from gluonbench.workloads.base import Workload, register


def seed_transform(data, label):
    """The seed's per-sample transform: HWC uint8 -> CHW float32 in [0, 1]."""
    from gluonbench._mx import nd

    return nd.transpose(data.astype(np.float32), (2, 0, 1)) / 255, label.astype(np.float32)


def seed_net(num_fc: int = 512, num_outputs: int = 10):
    """The seed's hybridized CNN: Conv(20,k5)-Pool-Conv(50,k5)-Pool-Flatten-Dense(512)-Dense(10)."""
    from gluonbench._mx import gluon

    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(channels=20, kernel_size=5, activation="relu"))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Conv2D(channels=50, kernel_size=5, activation="relu"))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Flatten())
        net.add(gluon.nn.Dense(num_fc, activation="relu"))
        net.add(gluon.nn.Dense(num_outputs))
    net.hybridize()
    return net


def seed_loss():
    from gluonbench._mx import gluon

    return gluon.loss.SoftmaxCrossEntropyLoss()


def seed_init():
    from gluonbench._mx import mx

    return mx.init.Xavier(magnitude=2.24)


def _vision_workload(name: str, data_dir: str | Path | None = None, download: bool = True) -> Workload:
    folder = vision.locate(name, data_dir, download=download)
    return Workload(
        name=name,
        train=vision.load(name, folder, train=True),
        test=vision.load(name, folder, train=False),
        transform=seed_transform,
        make_net=seed_net,
        make_loss=seed_loss,
        classes=vision.SPECS[name].classes,
        init=seed_init,
    )


@register("mnist")
def mnist(data_dir: str | Path | None = None, download: bool = True) -> Workload:
    return _vision_workload("mnist", data_dir, download)


@register("fashion-mnist")
def fashion_mnist(data_dir: str | Path | None = None, download: bool = True) -> Workload:
    return _vision_workload("fashion-mnist", data_dir, download)
