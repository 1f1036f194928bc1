"""The seed's workload (SEEDS.md, 001): MNIST or Fashion-MNIST on a 2-conv CNN."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gluonbench.data import vision
from gluonbench.errors import GluonbenchError
from gluonbench.workloads.base import register
from gluonbench.workloads.spec import PipelineSpec


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


def make(name: str = "mnist", data_dir: str | Path | None = None, download: bool = True) -> PipelineSpec:
    """The seed's pipeline as a :class:`PipelineSpec`: ``--pipeline gluonbench.workloads.mnist:make`` trains what
    ``--dataset mnist`` does (``name="fashion-mnist"`` for Fashion-MNIST)."""
    if name not in ("mnist", "fashion-mnist"):
        raise GluonbenchError(f"name must be mnist or fashion-mnist (got {name!r})")
    folder = vision.locate(name, data_dir, download=download)
    return PipelineSpec(
        dataset=vision.load(name, folder, train=True),
        test_dataset=vision.load(name, folder, train=False),
        transform=seed_transform,
        net=seed_net,
        loss=seed_loss,
        classes=vision.SPECS[name].classes,
        init=seed_init(),
        name=name,
    )


@register("mnist")
def mnist(data_dir: str | Path | None = None, download: bool = True) -> PipelineSpec:
    return make("mnist", data_dir, download)


@register("fashion-mnist")
def fashion_mnist(data_dir: str | Path | None = None, download: bool = True) -> PipelineSpec:
    return make("fashion-mnist", data_dir, download)
