"""Image-folder data sets: one sub-folder per class, as ``ImageFolderDataset`` and ``im2rec`` expect.

:func:`image_folder` turns a store listing (local or S3) into classes and
labelled objects, rejecting layouts that would train on the wrong thing.
:func:`make_jpeg_folder` writes a real JPEG data set of ~40 KB files (MNIST
digits upscaled, tinted and noised, then JPEG-encoded with OpenCV) for the
input-mode benchmark, the size the seed 004 case study used (~39 KB).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gluonbench.data.store import ObjectInfo
from gluonbench.errors import DataError
from gluonbench.files import atomic_write_bytes

log = logging.getLogger(__name__)

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp")


@dataclass(frozen=True)
class ImageFolder:
    """Classes (sorted folder names) and every image with its class index, in key order."""

    where: str
    classes: list[str]
    items: list[tuple[ObjectInfo, int]]

    @property
    def total_bytes(self) -> int:
        return sum(o.size for o, _ in self.items)


def is_image(key: str) -> bool:
    return key.lower().endswith(IMAGE_EXTENSIONS)


def image_folder(listing: Iterable[ObjectInfo], where: str) -> ImageFolder:
    """Classes and labelled images of a listing; :class:`DataError` for a layout that is not one."""
    listing = list(listing)
    if not listing:
        raise DataError(f"{where} holds no objects; check the path or the S3 prefix")
    folders: set[str] = set()
    per_class: dict[str, list[ObjectInfo]] = {}
    skipped = 0
    top_images = []
    for o in listing:
        top, sep, _ = o.key.partition("/")
        if o.is_folder:
            folders.add(top)
            continue
        if not sep:
            if is_image(o.key):
                top_images.append(o.key)
            continue
        folders.add(top)
        if is_image(o.key):
            per_class.setdefault(top, []).append(o)
        else:
            skipped += 1
    if top_images:
        raise DataError(
            f"{where} has images at its top level ({top_images[0]}, ...); put each class's images in its own sub-folder"
        )
    if not folders:
        raise DataError(f"{where} has no class sub-folders; put each class's images in SRC/<class>/")
    empty = sorted(folders - set(per_class))
    if empty:
        raise DataError(
            f"class folder {empty[0]!r} in {where} holds no images ({', '.join(IMAGE_EXTENSIONS)}); "
            "add images or remove the folder"
        )
    if skipped:
        log.warning("%s: %d file(s) that are not images (%s) were skipped", where, skipped, ", ".join(IMAGE_EXTENSIONS))
    classes = sorted(per_class)
    items = [(o, label) for label, name in enumerate(classes) for o in per_class[name]]
    items.sort(key=lambda item: item[0].key)
    return ImageFolder(where, classes, items)


def _digit_source(mnist_dir: Path | None) -> tuple[np.ndarray, np.ndarray]:
    """MNIST training digits when a copy is at hand, else synthetic strokes (still real, labelled images)."""
    if mnist_dir is not None:
        from gluonbench.data import vision
        from gluonbench.data.idx import read_image_label_pair

        images, labels = vision.TRAIN_FILES
        x, y = read_image_label_pair(Path(mnist_dir) / images, Path(mnist_dir) / labels)
        return x[..., 0], y
    rng = np.random.default_rng(0)
    x = np.zeros((1000, 28, 28), np.uint8)
    y = rng.integers(0, 10, 1000).astype(np.int32)
    for i, label in enumerate(y):
        x[i, 4 + label : 24, 6 + label % 5 * 3 : 10 + label % 5 * 3] = 255
    return x, y


def make_jpeg_folder(
    out: str | Path,
    total_bytes: int,
    file_bytes: int = 40_000,
    mnist_dir: str | Path | None = None,
    seed: int = 0,
    classes: int = 10,
) -> ImageFolder:
    """Write about ``total_bytes`` of ~``file_bytes`` JPEGs into ``out/<digit>/NNNNNNN.jpg``.

    Each file is an MNIST digit upscaled to a square colour image with noise, so
    the JPEG encoder lands near ``file_bytes``; labels are the digits. The
    noise level is calibrated on a few images first. Returns the folder's layout.
    """
    import cv2

    from gluonbench.data.store import LocalStore

    out = Path(out)
    x, y = _digit_source(Path(mnist_dir) if mnist_dir else None)
    rng = np.random.default_rng(seed)
    side = max(64, int((file_bytes / 0.8) ** 0.5))

    # a bank of unit-noise fields, scaled per image: drawing fresh noise per image costs more than encoding
    bank = rng.standard_normal((8, side, side, 3)).astype(np.float32)

    def render(i: int, sigma: float) -> bytes:
        digit = cv2.resize(x[i % len(x)], (side, side), interpolation=cv2.INTER_LINEAR).astype(np.float32)
        c = int(y[i % len(y)]) % classes
        tint = np.array([0.6 + 0.04 * c, 0.9, 1.0 - 0.05 * c], np.float32)
        img = digit[..., None] * tint + bank[i % len(bank)] * np.float32(sigma)
        ok, buf = cv2.imencode(".jpg", np.clip(img, 0, 255).astype(np.uint8), [cv2.IMWRITE_JPEG_QUALITY, 90])
        if not ok:  # pragma: no cover - OpenCV always encodes a valid array
            raise DataError("OpenCV failed to encode a JPEG; check the opencv-python install")
        return buf.tobytes()

    lo, hi = 0.0, 120.0
    for _ in range(12):  # bisect the noise level so the mean size lands near file_bytes
        mid = (lo + hi) / 2
        size = np.mean([len(render(i, mid)) for i in range(8)])
        lo, hi = (mid, hi) if size < file_bytes else (lo, mid)
    sigma = (lo + hi) / 2
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create {out}: {exc.strerror}; choose a writable folder") from exc
    written = 0
    i = 0
    while written < total_bytes:
        data = render(i, sigma)
        label = int(y[i % len(y)]) % classes
        path = out / str(label) / f"{i:07d}.jpg"
        path.parent.mkdir(exist_ok=True)  # class folders appear with their first image, never empty
        atomic_write_bytes(path, data, sync=False)  # generated data: a crash loses nothing worth an fsync
        written += len(data)
        i += 1
    return image_folder(LocalStore(out).list(), str(out))
