"""A user's own training pipeline for gluonbench: a gluon image-folder data set, gluon's vision transforms (a
random resized crop, as image training uses) and a small CNN, or any gluoncv classification model with
``--pipeline-option model=NAME`` (random weights, nothing downloaded).

    python examples/imagefolder_pipeline.py data/images        # write a small demo folder of PNG images
    gluonbench sweep    --pipeline examples/imagefolder_pipeline.py:make --pipeline-option root=data/images \\
                        --workers 0,2 --max-batches 50
    gluonbench diagnose --pipeline examples/imagefolder_pipeline.py:make --pipeline-option root=data/images \\
                        --workers 0 --batch-size 16 --budget 60      # preprocessing-bound: the augmentations
    gluonbench tune     --pipeline examples/imagefolder_pipeline.py:make --pipeline-option root=data/images
    gluonbench profile  --pipeline examples/imagefolder_pipeline.py:make --pipeline-option root=data/images \\
                        --workers 2 --max-batches 50

``make(**options)`` returns a :class:`gluonbench.PipelineSpec`; every ``--pipeline-option KEY=VALUE`` is one of
its keyword arguments. The per-sample functions are module-level, so DataLoader workers can pickle them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import gluonbench
from gluonbench._mx import gluon

transforms = gluon.data.vision.transforms

# gluon's vision transforms, built once per process (DataLoader workers inherit them)
_MEAN, _STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)
_TRAIN = {}


def _train_transform(size: int):
    if size not in _TRAIN:
        _TRAIN[size] = transforms.Compose(
            [
                transforms.RandomResizedCrop(size),
                transforms.RandomFlipLeftRight(),
                transforms.RandomColorJitter(brightness=0.2, contrast=0.2, saturation=0.2, hue=0.1),
                transforms.RandomLighting(0.1),
                transforms.ToTensor(),
                transforms.Normalize(_MEAN, _STD),
            ]
        )
    return _TRAIN[size]


class Augment:
    """The per-sample transform: gluon's vision transforms on the image; the label as float32 (picklable)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __call__(self, data, label):
        return _train_transform(self.size)(data), np.float32(label)


def small_cnn(classes: int):
    """A small CNN: two convolutions and a classifier (hybridized)."""
    net = gluon.nn.HybridSequential()
    net.add(
        gluon.nn.Conv2D(16, 3, padding=1, activation="relu"),
        gluon.nn.MaxPool2D(2),
        gluon.nn.Conv2D(32, 3, padding=1, activation="relu"),
        gluon.nn.GlobalAvgPool2D(),
        gluon.nn.Dense(classes),
    )
    net.hybridize()
    return net


def make(
    root: str,
    model: str = "small",
    image_size: int = 32,
    batch_size: int = 16,
    classes: int | None = None,
) -> gluonbench.PipelineSpec:
    """The pipeline: ``ImageFolderDataset(root)`` (ROOT/<class>/*.png|jpg), gluon's augmentations, a model with
    as many outputs as classes (``small``: :func:`small_cnn`; else a gluoncv model name, e.g.
    ``cifar_resnet20_v1``), softmax cross-entropy."""
    folder = Path(root)
    if not folder.is_dir():
        raise ValueError(f"root={root!r} is not a folder; write one with: python {__file__} {root}")
    dataset = gluon.data.vision.ImageFolderDataset(str(folder), flag=1)
    n = classes or len(dataset.synsets)

    def net():
        if model == "small":
            return small_cnn(n)
        from gluoncv import model_zoo

        return model_zoo.get_model(model, classes=n, pretrained=False)

    return gluonbench.PipelineSpec(
        dataset=dataset,
        transform=Augment(image_size),
        net=net,
        loss=gluon.loss.SoftmaxCrossEntropyLoss(),
        batch_size=batch_size,
        classes=n,
        name=f"imagefolder-{model}",
    )


def make_images(root: str | Path, classes: int = 3, per_class: int = 40, size: int = 48, seed: int = 0) -> Path:
    """Write ``classes`` x ``per_class`` small PNG images under ROOT/<class>/ (random shapes per class)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    root = Path(root)
    for c in range(classes):
        folder = root / f"class{c}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            img = rng.integers(0, 64, (size, size, 3), dtype=np.uint8)
            lo, hi = sorted(rng.integers(0, size, 2))
            img[lo : hi + 1, :, c % 3] = 200 + c  # a band in the class's colour channel
            Image.fromarray(img).save(folder / f"{i:04d}.png")
    return root


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "data/images"
    print(f"wrote {make_images(target)}")
