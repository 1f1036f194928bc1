"""Ground-truth pipelines written the way Gluon users write their input pipelines.

The cases of :mod:`gluonbench.workloads.cases` that are built here are the shapes found in published training
scripts, not gluonbench's own workloads: an ``ImageFolderDataset`` with ``transform_first`` (the JPEG is decoded
inside ``dataset[i]``), ``gluon.data.vision.MNIST(transform=...)`` (the transform runs inside ``dataset[i]``),
encoded image bytes that the transform decodes with ``mx.image.imdecode``, a text classifier over padded token
ids, and a dataset whose reads wait on slow storage. Their files are made here, in the folder the caller gives
(a few megabytes, a second or two), and nothing is downloaded.

Where the CPU work of a pipeline sits inside ``dataset[i]``, the plain loop of ``benchmarks/ground_truth.py``
cannot swap a transform out. :attr:`Built.read_only` is the same data set with that work left out and the reads
kept (each file still opened and read, each array still indexed; the sample handed on is one ready sample): the
seed's "remove preprocessing" for such a pipeline.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

JPEG_IMAGES = 400
"""JPEGs in the made image folder (~12 KB each, about 5 MB)"""
JPEG_BYTES = 12_000
SLOW_FILES = 512
"""files of the slow-storage case (12 KiB of float32 each)"""


@dataclass
class Built:
    """A case ready to run: :func:`gluonbench.diagnose`'s keyword arguments and the plain loop's extra input."""

    kwargs: dict[str, Any]
    read_only: Any | None = None
    """the dataset with the CPU work inside ``dataset[i]`` left out and its reads kept (one ready sample handed
    on), for pipelines whose preprocessing runs inside ``dataset[i]``; None where a transform is given apart"""


def _folder(dirs: Mapping[str, str | Path] | None, name: str) -> Path:
    """``name`` under the synthetic cache folder of ``dirs`` (where the case's files are made)."""
    from gluonbench.workloads.synthetic import cache_root

    return cache_root((dirs or {}).get("synthetic")) / name


def _mnist_dir(dirs: Mapping[str, str | Path] | None) -> Path:
    from gluonbench.data import vision

    return vision.locate("mnist", (dirs or {}).get("mnist"), download=False)


def jpeg_folder(dirs: Mapping[str, str | Path] | None) -> Path:
    """An image folder (one sub-folder per digit) of :data:`JPEG_IMAGES` JPEGs, made once per cache folder."""
    from gluonbench.data.images import make_jpeg_folder

    root = _folder(dirs, f"jpeg-folder-{JPEG_IMAGES}")
    done = root / ".complete"
    if not done.is_file():
        make_jpeg_folder(root / "train", JPEG_IMAGES * JPEG_BYTES, file_bytes=JPEG_BYTES, mnist_dir=_mnist_dir(dirs))
        done.write_text("made by gluonbench.workloads.user_cases\n")
    return root / "train"


def _image_transform():
    """The vision transforms of a small image classifier: resize, to CHW float in [0, 1], normalise."""
    from gluonbench._mx import gluon

    T = gluon.data.vision.transforms  # noqa: N806 - the name users give it
    return T.Compose([T.Resize(32), T.ToTensor(), T.Normalize(0.5, 0.25)])


def small_cnn(classes: int = 10):
    """A small hybridized CNN for 32x32 colour images: one convolution, pooling, one dense layer."""
    from gluonbench._mx import gluon

    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(8, kernel_size=3, activation="relu"))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Flatten())
        net.add(gluon.nn.Dense(classes))
    net.hybridize()
    return net


@functools.lru_cache(maxsize=1)
def _classes() -> dict[str, type]:
    """The datasets of these cases, as gluon ``Dataset`` classes (MXNet is imported only when a case is built)."""
    from gluonbench._mx import gluon

    class FileReads(gluon.data.Dataset):
        """Each item opens and reads its file, then hands on one ready sample with the item's label."""

        def __init__(self, paths: list[str], labels: list[int], ready: Any) -> None:
            self.paths, self.labels, self.ready = paths, labels, ready

        def __len__(self) -> int:
            return len(self.paths)

        def __getitem__(self, idx: int) -> tuple[Any, Any]:
            with open(self.paths[idx], "rb") as f:
                f.read()
            return self.ready, self.labels[idx]

    class IndexOnly(gluon.data.Dataset):
        """``base[i]`` (its reads, no transform), then one ready sample with the item's label."""

        def __init__(self, base: Any, ready: Any) -> None:
            self.base, self.ready = base, ready

        def __len__(self) -> int:
            return len(self.base)

        def __getitem__(self, idx: int) -> tuple[Any, Any]:
            _, label = self.base[idx]
            return self.ready, label

    class SlowStorage(gluon.data.Dataset):
        """One file per sample on storage that answers each read after ``latency_s`` (a network file system);
        the file is dropped from the page cache after it is read, so no read is served from memory."""

        def __init__(self, folder: Path, latency_s: float) -> None:
            self.folder, self.latency_s = Path(folder), latency_s
            self.labels = np.load(self.folder / "labels.npy")

        def __len__(self) -> int:
            return len(self.labels)

        def __getitem__(self, idx: int) -> tuple[np.ndarray, np.float32]:
            fd = os.open(self.folder / f"{int(idx):05d}.f32", os.O_RDONLY)
            try:
                time.sleep(self.latency_s)
                buf = os.read(fd, 1 << 20)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            return np.frombuffer(buf, dtype=np.float32).reshape(3, 32, 32), self.labels[int(idx)]

    for cls in (FileReads, IndexOnly, SlowStorage):
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__
        globals()[cls.__name__] = cls  # reachable by name, so a dataset pickles for spawned loader workers
    return {c.__name__: c for c in (FileReads, IndexOnly, SlowStorage)}


def imagefolder(batch_size: int, workers: int, dirs: Mapping[str, str | Path] | None) -> Built:
    """``ImageFolderDataset(root).transform_first(...)`` over JPEGs made here; the JPEG decode runs in dataset[i]."""
    from gluonbench._mx import gluon

    base = gluon.data.vision.ImageFolderDataset(str(jpeg_folder(dirs)))
    dataset = base.transform_first(_image_transform())
    ready = dataset[0][0]
    read_only = _classes()["FileReads"]([p for p, _ in base.items], [y for _, y in base.items], ready)
    return Built(_kwargs(dataset, None, small_cnn(len(base.synsets)), batch_size, workers), read_only)


def flat_pixels(data: Any, label: Any) -> tuple[Any, Any]:
    """MNIST's 28x28x1 uint8 image as 784 floats in [0, 1], as MXNet's Gluon MNIST example flattens it."""
    return data.reshape((-1,)).astype("float32") / 255, label


def mlp(classes: int = 10):
    """A hybridized multilayer perceptron of 128 and 64 ReLU units."""
    from gluonbench._mx import gluon

    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(128, activation="relu"))
        net.add(gluon.nn.Dense(64, activation="relu"))
        net.add(gluon.nn.Dense(classes))
    net.hybridize()
    return net


def gluon_mnist(batch_size: int, workers: int, dirs: Mapping[str, str | Path] | None) -> Built:
    """``gluon.data.vision.MNIST(root=..., train=True, transform=flat_pixels)``: the transform runs in dataset[i].

    The root is the folder holding the real MNIST files (checked by their SHA-1, so nothing is downloaded).
    """
    from gluonbench._mx import gluon

    root = str(_mnist_dir(dirs))
    dataset = gluon.data.vision.MNIST(root=root, train=True, transform=flat_pixels)
    base = gluon.data.vision.MNIST(root=root, train=True)
    read_only = _classes()["IndexOnly"](base, dataset[0][0])
    return Built(_kwargs(dataset, None, mlp(10), batch_size, workers), read_only)


def decode_jpeg(data: bytes, label: Any) -> tuple[Any, Any]:
    """Encoded JPEG bytes to a normalised CHW float image: ``mx.image.imdecode``, then the vision transforms."""
    from gluonbench._mx import mx

    return _decoded_transform()(mx.image.imdecode(data)), label


@functools.lru_cache(maxsize=1)
def _decoded_transform():
    return _image_transform()


def encoded_bytes(batch_size: int, workers: int, dirs: Mapping[str, str | Path] | None) -> Built:
    """The made JPEGs held in memory as encoded bytes (as from a key-value store); the transform decodes them."""
    from gluonbench._mx import gluon

    base = gluon.data.vision.ImageFolderDataset(str(jpeg_folder(dirs)))
    items = [(Path(p).read_bytes(), y) for p, y in base.items]
    return Built(
        _kwargs(gluon.data.SimpleDataset(items), decode_jpeg, small_cnn(len(base.synsets)), batch_size, workers)
    )


def text_rnn(vocab: int, classes: int = 2):
    """A sentiment-style text classifier: embedding, a bidirectional LSTM, the mean over time, one dense layer."""
    from gluonbench._mx import gluon

    class TextRNN(gluon.HybridBlock):
        def __init__(self) -> None:
            super().__init__()
            with self.name_scope():
                self.embedding = gluon.nn.Embedding(vocab, 64)
                self.encoder = gluon.rnn.LSTM(64, bidirectional=True, layout="NTC")
                self.decoder = gluon.nn.Dense(classes)

        def hybrid_forward(self, F, tokens):  # noqa: N803 - MXNet's name for the operator namespace
            return self.decoder(F.mean(self.encoder(self.embedding(tokens)), axis=1))

    net = TextRNN()
    net.hybridize()
    return net


def text_tokens(batch_size: int, workers: int, dirs: Mapping[str, str | Path] | None) -> Built:
    """Padded token ids (an ArrayDataset of 4096 sequences of 48 ids from a 5000-word vocabulary) and an LSTM."""
    from gluonbench._mx import gluon

    vocab, length, n = 5000, 48, 4096
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, vocab, (n, length)).astype(np.float32)
    labels = rng.integers(0, 2, n).astype(np.float32)
    return Built(_kwargs(gluon.data.ArrayDataset(tokens, labels), None, text_rnn(vocab), batch_size, workers))


def slow_storage(batch_size: int, workers: int, dirs: Mapping[str, str | Path] | None, latency_ms: float = 4.0):
    """:data:`SLOW_FILES` files of 3x32x32 float32, each read after ``latency_ms`` and dropped from the page cache."""
    from gluonbench.workloads.cases import linear_net

    folder = _folder(dirs, f"slow-storage-{SLOW_FILES}")
    if not (folder / "labels.npy").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(0)
        for i in range(SLOW_FILES):
            rng.random((3, 32, 32), dtype=np.float32).tofile(folder / f"{i:05d}.f32")
        np.save(folder / "labels.npy", rng.integers(0, 10, SLOW_FILES).astype(np.float32))
    dataset = _classes()["SlowStorage"](folder, latency_ms / 1000.0)
    return Built(_kwargs(dataset, None, linear_net(10), batch_size, workers))


def _kwargs(dataset: Any, transform: Any, net: Any, batch_size: int, workers: int) -> dict[str, Any]:
    from gluonbench._mx import gluon

    return {
        "dataset": dataset,
        "transform": transform,
        "net": net,
        "loss": gluon.loss.SoftmaxCrossEntropyLoss(),
        "batch_size": batch_size,
        "num_workers": workers,
    }


BUILDERS = {
    "imagefolder": imagefolder,
    "gluon-mnist": gluon_mnist,
    "encoded-bytes": encoded_bytes,
    "text": text_tokens,
    "slow-storage": slow_storage,
}
"""the ``workload`` of a case built here -> its builder (batch size, workers, the caller's folders)"""
