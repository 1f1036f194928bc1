"""Find and load MNIST-style data sets (MNIST, Fashion-MNIST) without surprises.

Look-up order for a data set ``NAME``:

1. ``--data-dir`` (``data_dir=``), used alone when given;
2. ``$GLUONBENCH_DATA/NAME``;
3. MXNet's own cache, ``$MXNET_HOME/datasets/NAME`` (default ``~/.mxnet``);
4. system copies, e.g. Debian's ``/usr/share/datasets/fashion-mnist``;
5. the copy shipped inside gluonbench (MNIST only: ``gluonbench/data/mnist``,
   CC BY-SA 3.0, see its README), used only when every file matches gluon's
   SHA-1 list; ``GLUONBENCH_PACKAGED_DATA=0`` skips it;
6. a download into MXNet's cache through gluon (unless ``download=False`` or
   ``$GLUONBENCH_OFFLINE`` is set).

A folder counts when it holds the four IDX files (gzipped or not). Their
content is validated (magic, shape, counts), so Debian's Fashion-MNIST, whose
gzip bytes differ from gluon's SHA-1 list, is used as it is rather than
re-downloaded. Files that match gluon's SHA-1 list load through
``gluon.data.vision.MNIST``/``FashionMNIST`` itself; others through
:class:`IdxImageDataset`, which returns the same sample types.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from gluonbench.data.idx import read_image_label_pair
from gluonbench.errors import DataError
from gluonbench.names import param

log = logging.getLogger(__name__)

PACKAGED = Path(__file__).resolve().parent
"""Data sets shipped inside gluonbench (``PACKAGED / "mnist"``)."""
PACKAGED_ENV = "GLUONBENCH_PACKAGED_DATA"
TRAIN_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
TEST_FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


@dataclass(frozen=True)
class VisionDataSpec:
    name: str
    gluon_class: str
    classes: int
    system_dirs: tuple[str, ...] = ()


SPECS: dict[str, VisionDataSpec] = {
    "mnist": VisionDataSpec("mnist", "MNIST", 10),
    "fashion-mnist": VisionDataSpec(
        "fashion-mnist", "FashionMNIST", 10, system_dirs=("/usr/share/datasets/fashion-mnist",)
    ),
}


def _namespace(name: str) -> str:
    """The folder name gluon's cache uses (``fashion-mnist`` -> ``fashion-mnist``)."""
    return name


def mxnet_cache_dir(name: str) -> Path:
    home = os.environ.get("MXNET_HOME") or os.path.join(os.path.expanduser("~"), ".mxnet")
    return Path(home) / "datasets" / _namespace(name)


def find_file(folder: Path, name: str) -> Path | None:
    """``folder/name``, or its decompressed twin (``name`` without ``.gz``); None if neither is there."""
    for candidate in (folder / name, folder / name.removesuffix(".gz")):
        if candidate.is_file():
            return candidate
    return None


def is_complete(folder: Path) -> bool:
    """All four IDX files (train and test images and labels) are in ``folder``."""
    return all(find_file(folder, f) is not None for f in TRAIN_FILES + TEST_FILES)


def find_local(name: str, data_dir: str | Path | None = None) -> Path | None:
    """The first folder of :func:`candidate_dirs` that holds all four files, without downloading; else None."""
    return next((folder for _, folder in candidate_dirs(name, data_dir) if is_complete(folder)), None)


def candidate_dirs(name: str, data_dir: str | Path | None = None) -> list[tuple[str, Path]]:
    """Where a data set is looked for, in order, as (origin, folder) pairs."""
    spec = _spec(name)
    if data_dir is not None:
        return [("--data-dir", Path(data_dir))]
    found: list[tuple[str, Path]] = []
    env = os.environ.get("GLUONBENCH_DATA")
    if env:
        found.append(("$GLUONBENCH_DATA", Path(env) / name))
    found.append(("MXNet cache", mxnet_cache_dir(name)))
    found.extend(("system copy", Path(d)) for d in spec.system_dirs)
    packaged = PACKAGED / name
    if packaged.is_dir() and os.environ.get(PACKAGED_ENV, "1") != "0":
        found.append(("packaged copy", packaged))
    return found


def _spec(name: str) -> VisionDataSpec:
    try:
        return SPECS[name]
    except KeyError:
        raise DataError(f"unknown data set {name!r}; choose one of {', '.join(SPECS)}") from None


def locate(name: str, data_dir: str | Path | None = None, download: bool = True) -> Path:
    """Return the folder holding ``name``'s four files, downloading as a last resort."""
    spec = _spec(name)
    candidates = candidate_dirs(name, data_dir)
    for origin, folder in candidates:
        if is_complete(folder):
            if origin == "packaged copy" and not (
                _sha1_matches(name, folder, TRAIN_FILES) and _sha1_matches(name, folder, TEST_FILES)
            ):
                log.warning("the copy of %s shipped in %s does not match gluon's SHA-1 list; not used", name, folder)
                continue
            log.info("using %s from %s (%s)", name, folder, origin)
            return folder
    needed = ", ".join(TRAIN_FILES + TEST_FILES)
    looked = "; ".join(f"{folder} ({origin})" for origin, folder in candidates)
    if data_dir is not None:
        missing = [f for f in TRAIN_FILES + TEST_FILES if find_file(Path(data_dir), f) is None]
        raise DataError(
            f"{name}: {param('data_dir')} {data_dir} lacks {', '.join(missing)}; put the four files "
            f"({needed}) there or drop {param('data_dir')} to use the default look-up"
        )
    if not download or os.environ.get("GLUONBENCH_OFFLINE"):
        raise DataError(
            f"{name} not found, looked in: {looked}; put the four files ({needed}) in one of "
            f"those folders or pass {param('data_dir')} DIR"
        )
    cache = mxnet_cache_dir(name)
    log.info("%s not found locally; downloading into %s", name, cache)
    try:
        from gluonbench._mx import gluon

        getattr(gluon.data.vision, spec.gluon_class)(root=str(cache), train=True)
        getattr(gluon.data.vision, spec.gluon_class)(root=str(cache), train=False)
    except Exception as exc:
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise DataError(
            f"{name} not found and the download failed ({reason}); looked in: {looked}; "
            f"put the four files ({needed}) in one of those folders or pass {param('data_dir')} DIR"
        ) from exc
    return cache


def validate(folder: Path) -> dict[str, int]:
    """Read every file once, raising :class:`DataError` naming the first bad one."""
    counts = {}
    for split, (images, labels) in (("train", TRAIN_FILES), ("test", TEST_FILES)):
        x, _ = read_image_label_pair(find_file(folder, images), find_file(folder, labels))
        counts[split] = int(x.shape[0])
    return counts


_GLUON_SHA1 = {
    # gluon.data.vision.MNIST's own list (mxnet 1.9.1)
    "mnist": {
        "train-images-idx3-ubyte.gz": "6c95f4b05d2bf285e1bfb0e7960c31bd3b3f8a7d",
        "train-labels-idx1-ubyte.gz": "2a80914081dc54586dbdf242f9805a6b8d2a15fc",
        "t10k-images-idx3-ubyte.gz": "c3a25af1f52dad7f726cce8cacb138654b760d48",
        "t10k-labels-idx1-ubyte.gz": "763e7fa3757d93b0cdec073cef058b2004252c17",
    },
    # gluon.data.vision.FashionMNIST's list
    "fashion-mnist": {
        "train-images-idx3-ubyte.gz": "0cf37b0d40ed5169c6b3aba31069a9770ac9043d",
        "train-labels-idx1-ubyte.gz": "236021d52f1e40852b06a4c3008d8de8aef1e40b",
        "t10k-images-idx3-ubyte.gz": "626ed6a7c06dd17c0eec72fa3be1740f146a2863",
        "t10k-labels-idx1-ubyte.gz": "17f9ab60e7257a1620f4ad76bbbaf857c3920701",
    },
}


def _sha1_matches(name: str, folder: Path, files: tuple[str, str]) -> bool:
    for f in files:
        path = folder / f
        if not path.is_file():
            return False
        if hashlib.sha1(path.read_bytes()).hexdigest() != _GLUON_SHA1[name][f]:
            return False
    return True


def load(name: str, folder: str | Path, train: bool):
    """The raw (untransformed) gluon Dataset of one split: ``(28, 28, 1)`` uint8 NDArray, int32 label."""
    from gluonbench._mx import gluon

    spec = _spec(name)
    folder = Path(folder)
    files = TRAIN_FILES if train else TEST_FILES
    if _sha1_matches(name, folder, files):
        return getattr(gluon.data.vision, spec.gluon_class)(root=str(folder), train=train)
    return IdxImageDataset(find_file(folder, files[0]), find_file(folder, files[1]))


def dataset(name: str = "mnist", train: bool = True, data_dir: str | Path | None = None, download: bool = False):
    """The raw gluon Dataset of MNIST or Fashion-MNIST, found by gluonbench's look-up (for MNIST, at the latest
    the copy shipped inside gluonbench): no network unless ``download=True``. Samples are ``(28, 28, 1)``
    uint8 NDArrays with an int32 label, as ``gluon.data.vision.MNIST`` gives them."""
    return load(name, locate(name, data_dir, download=download), train)


def _idx_dataset_class():
    from gluonbench._mx import gluon, nd

    class _IdxImageDataset(gluon.data.Dataset):
        """MNIST-layout images from any valid IDX pair; samples as gluon's MNIST returns them."""

        def __init__(self, images: Path, labels: Path) -> None:
            x, y = read_image_label_pair(images, labels)
            self._data = nd.array(x, dtype=x.dtype)
            self._label = y

        def __getitem__(self, idx):
            return self._data[idx], self._label[idx]

        def __len__(self) -> int:
            return len(self._label)

    return _IdxImageDataset


def IdxImageDataset(images: Path, labels: Path):  # noqa: N802 - a factory that reads like a class
    """Build the IDX-backed dataset (the class needs MXNet, imported lazily)."""
    return _idx_dataset_class()(images, labels)
