"""A synthetic workload with known costs per stage, for demos and for checking verdicts.

Every cost is real work, set by a knob:

* **reading** (``record_kb``, ``read_ms``, ``cold``): each sample is its own file
  of ``record_kb`` KiB, written once into a cache folder and read with
  ``open``/``read``/``close`` in ``Dataset.__getitem__``. ``cold=True`` evicts
  each file from the page cache after reading it (``posix_fadvise``
  ``DONTNEED``), so every read goes to the device. ``read_ms`` adds a latency
  per file (a sleep: the process waits and the CPU idles, as on a slow network
  file system).
* **preprocessing** (``cpu_ms``): the per-sample transform converts the image as
  the seed does (HWC uint8 to CHW float32 in [0, 1]) and then spends ``cpu_ms``
  of CPU time on chained BLAKE2b hashing, calibrated once per process against
  the thread's CPU clock (not the wall clock), so the amount of work does not
  depend on how busy the machine is while calibrating. The CPU's own speed still
  moves it: on a 2-core VM (2026-11-27) fresh processes found 32-34 rounds/ms in
  8 of 12 tries and 44-46 in 3, a third more work for the same ``cpu_ms``. So a
  sweep calibrates once, in its parent, and passes the figure to every run as
  ``hash_rate`` (:func:`pin_hash_rate`): every worker count does the same work per
  sample; give ``hash_rate`` yourself to compare separate commands.
* **model** (``width``, ``depth``): ``depth`` dense layers of ``width`` units
  (ReLU) on the flattened image, then a dense output layer.

Images carry their label (a bright band at a label-dependent row over noise), so
training on them learns something and accuracy is above chance.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gluonbench.errors import GluonbenchError
from gluonbench.files import CACHE_ENV, cache_folder
from gluonbench.names import arg
from gluonbench.settings import BOOL_TEXTS
from gluonbench.workloads.base import register
from gluonbench.workloads.spec import PipelineSpec

log = logging.getLogger(__name__)

_HASH_BLOCK = 16 * 1024


@dataclass(frozen=True)
class SyntheticKnobs:
    """The synthetic workload's settings (``--set``-style options of ``--dataset synthetic``)."""

    samples: int = 4096
    """training samples (the test split has a quarter as many, at least one batch's worth of 64)"""
    record_kb: float = 4.0
    """size of each sample's file in KiB (at least the image's bytes)"""
    read_ms: float = 0.0
    """added latency per file read in ms (a slow network file system)"""
    cold: bool = False
    """evict each file from the page cache after reading it, so reads hit the device"""
    cpu_ms: float = 0.0
    """CPU time of the per-sample transform's extra work, in ms"""
    hash_rate: float = 0.0
    """BLAKE2b rounds per ms of CPU time that ``cpu_ms`` is converted with; 0: calibrated in this process
    (:func:`hash_rounds_per_ms`). A sweep sets it once for all its runs (:func:`pin_hash_rate`)"""
    width: int = 64
    """units per hidden dense layer"""
    depth: int = 1
    """hidden dense layers"""
    side: int = 28
    """image height and width"""
    channels: int = 1
    classes: int = 10
    seed: int = 0

    def check(self) -> SyntheticKnobs:
        ints = {"samples": 1, "width": 1, "depth": 0, "side": 4, "channels": 1, "classes": 2}
        for name, low in ints.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise GluonbenchError(f"synthetic option {name} must be a whole number >= {low} (got {value!r})")
        for name in ("record_kb", "read_ms", "cpu_ms", "hash_rate"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0 or not math.isfinite(value):
                raise GluonbenchError(f"synthetic option {name} must be a number >= 0 (got {value!r})")
        if self.hash_rate and not 1 <= self.hash_rate <= 1e6:
            raise GluonbenchError(
                f"synthetic option hash_rate={self.hash_rate:g} is outside 1..10^6 rounds a ms; leave it 0 to calibrate"
            )
        if self.record_kb > 64 * 1024:
            raise GluonbenchError(f"synthetic option record_kb={self.record_kb:g} is over 64 MiB a sample; lower it")
        return self

    @property
    def image_bytes(self) -> int:
        return self.side * self.side * self.channels

    @property
    def record_bytes(self) -> int:
        return max(self.image_bytes, round(self.record_kb * 1024))

    def folder_name(self) -> str:
        return (
            f"n{self.samples}-b{self.record_bytes}-{self.side}x{self.side}x{self.channels}-c{self.classes}-s{self.seed}"
        )


SYNTHETIC_OPTIONS = tuple(f for f in SyntheticKnobs.__dataclass_fields__)


def cache_root(data_dir: str | Path | None = None) -> Path:
    """Where the synthetic files live: ``data_dir``, ``$GLUONBENCH_CACHE`` or ``~/.cache/gluonbench``."""
    if data_dir is not None:
        return Path(data_dir)
    return cache_folder()


def _images(knobs: SyntheticKnobs, labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Noise with a bright band whose row depends on the label: learnable, as a data set should be."""
    n, side = len(labels), knobs.side
    x = rng.integers(0, 96, size=(n, side, side, knobs.channels), dtype=np.uint8)
    band = max(1, side // (2 * knobs.classes))
    rows = (labels * (side - band) // max(knobs.classes - 1, 1)).astype(int)
    for i, r in enumerate(rows):
        x[i, r : r + band] = 255
    return x


def _write_split(folder: Path, knobs: SyntheticKnobs, n: int, rng: np.random.Generator) -> None:
    labels = rng.integers(0, knobs.classes, size=n).astype(np.int32)
    images = _images(knobs, labels, rng)
    pad = knobs.record_bytes - knobs.image_bytes
    folder.mkdir(parents=True)
    for i in range(n):
        with open(folder / f"{i:07d}.rec", "wb") as f:
            f.write(images[i].tobytes())
            if pad:
                f.write(rng.integers(0, 256, size=pad, dtype=np.uint8).tobytes())
    np.save(folder / "labels.npy", labels)


def ensure_files(knobs: SyntheticKnobs, root: Path) -> Path:
    """Write the data set's files once (atomically: a temporary folder renamed into place)."""
    from gluonbench.data.folders import atomic_folder

    def build(tmp: Path) -> None:
        rng = np.random.default_rng(knobs.seed)
        _write_split(tmp / "train", knobs, knobs.samples, rng)
        _write_split(tmp / "test", knobs, max(knobs.samples // 4, 64), rng)

    def done(target: Path) -> bool:
        return (target / "train" / "labels.npy").is_file() and (target / "test" / "labels.npy").is_file()

    return atomic_folder(
        root / "synthetic" / knobs.folder_name(),
        build,
        done,
        "the synthetic data set under {parent} ({reason}); "
        f"pass {arg('data_dir')} DIR or set {CACHE_ENV} to a writable folder",
    )


def _dataset_class():
    from gluonbench._mx import gluon

    class SyntheticFiles(gluon.data.Dataset):
        """One file per sample; ``__getitem__`` reads it (really) and returns ``(HWC uint8, int32)``."""

        def __init__(self, folder: Path, knobs: SyntheticKnobs) -> None:
            self.folder = Path(folder)
            self.labels = np.load(self.folder / "labels.npy")
            self.shape = (knobs.side, knobs.side, knobs.channels)
            self.image_bytes = knobs.image_bytes
            self.record_bytes = knobs.record_bytes
            self.read_s = knobs.read_ms / 1000.0
            self.cold = knobs.cold

        def __len__(self) -> int:
            return len(self.labels)

        def read(self, idx: int) -> bytes:
            fd = os.open(self.folder / f"{idx:07d}.rec", os.O_RDONLY)
            try:
                chunks, left = [], self.record_bytes
                while left > 0:
                    chunk = os.read(fd, left)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    left -= len(chunk)
                if self.cold:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            if self.read_s:
                time.sleep(self.read_s)
            return b"".join(chunks)

        def __getitem__(self, idx: int) -> tuple[np.ndarray, np.int32]:
            idx = int(idx)
            buf = self.read(idx)
            image = np.frombuffer(buf, dtype=np.uint8, count=self.image_bytes).reshape(self.shape)
            return image, self.labels[idx]

    return SyntheticFiles


@functools.lru_cache(maxsize=1)
def hash_rounds_per_ms() -> float:
    """BLAKE2b rounds over a 16 KiB block per ms of this thread's CPU time (best of 5)."""
    block = bytes(_HASH_BLOCK)
    best = float("inf")
    rounds = 200
    for _ in range(5):
        t0 = time.thread_time()
        digest = b""
        for _ in range(rounds):
            digest = hashlib.blake2b(block, key=digest[:64]).digest()
        best = min(best, time.thread_time() - t0)
    return rounds / max(best * 1000.0, 1e-6)


FACTORY = "gluonbench.workloads.synthetic:make"
"""the ``--pipeline`` that names this workload's factory (``--pipeline-option`` gives its options)"""


def is_synthetic(pipeline: Any) -> bool:
    """True when ``pipeline`` (a workload name or a ``--pipeline`` target) is this workload: one whose ``cpu_ms`` a
    command pins (:func:`pin_hash_rate`) before the work runs in another process."""
    return pipeline in ("synthetic", FACTORY)


def pin_hash_rate(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with ``hash_rate`` set from this process's calibration when they ask for ``cpu_ms`` and give none:
    what a sweep passes to each run (its own process), so every run converts ``cpu_ms`` into the same work. ``options``
    may be :func:`make`'s keyword arguments (``data_dir`` besides the knobs)."""
    knobs = _coerce_knobs({k: v for k, v in options.items() if k != "data_dir"})
    if knobs.cpu_ms <= 0 or knobs.hash_rate > 0:
        return options
    return {**options, "hash_rate": round(hash_rounds_per_ms(), 3)}


class SyntheticTransform:
    """The seed's conversion (HWC uint8 -> CHW float32 / 255) plus ``rounds`` of real CPU work."""

    def __init__(self, rounds: int, seed: int = 0) -> None:
        self.rounds = rounds
        self.block = np.random.default_rng(seed).integers(0, 256, size=_HASH_BLOCK, dtype=np.uint8).tobytes()

    def __call__(self, data: Any, label: Any) -> tuple[np.ndarray, np.float32]:
        x = np.asarray(data, dtype=np.float32).transpose(2, 0, 1) / 255.0
        digest = bytes(x[0, 0, :8].tobytes())
        for _ in range(self.rounds):
            digest = hashlib.blake2b(self.block, key=digest[:64]).digest()
        # the work feeds the output (a jitter below one grey level), so it is never dead code
        x[0, 0, 0] += digest[0] / (255.0 * 256.0)
        return x, np.float32(label)


def synthetic_net(width: int = 64, depth: int = 1, classes: int = 10):
    """``depth`` x Dense(width, relu) on the flattened image, then Dense(classes); hybridized."""
    from gluonbench._mx import gluon

    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Flatten())
        for _ in range(depth):
            net.add(gluon.nn.Dense(width, activation="relu"))
        net.add(gluon.nn.Dense(classes))
    net.hybridize()
    return net


def _coerce_knobs(options: dict[str, Any]) -> SyntheticKnobs:
    fields = SyntheticKnobs.__dataclass_fields__
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise GluonbenchError(
            f"unknown synthetic option(s) {', '.join(unknown)}; known: {', '.join(SYNTHETIC_OPTIONS)}"
        )
    values: dict[str, Any] = {}
    for name, raw in options.items():
        kind = type(getattr(SyntheticKnobs, name))
        if isinstance(raw, str):
            text = raw.strip().lower()
            try:
                if kind is bool:
                    if text not in BOOL_TEXTS:
                        raise ValueError(text)
                    raw = BOOL_TEXTS[text]
                elif kind is int:
                    raw = int(text)
                else:
                    raw = float(text)
            except ValueError:
                raise GluonbenchError(
                    f"synthetic option {name}={raw!r} is not a {'true/false' if kind is bool else kind.__name__}"
                ) from None
        elif kind is float and isinstance(raw, int) and not isinstance(raw, bool):
            raw = float(raw)
        values[name] = raw
    return SyntheticKnobs(**values).check()


def check_options(options: dict[str, Any]) -> SyntheticKnobs:
    """The synthetic workload's options, validated (in the parent, before any run starts)."""
    return _coerce_knobs(options)


def make(data_dir: str | Path | None = None, **options: Any) -> PipelineSpec:
    """The synthetic pipeline as a :class:`PipelineSpec`: ``--pipeline gluonbench.workloads.synthetic:make
    [--pipeline-option cpu_ms=2 ...]`` trains what ``--dataset synthetic`` does; ``options`` are
    :class:`SyntheticKnobs` fields (strings are parsed)."""
    knobs = _coerce_knobs(options)
    folder = ensure_files(knobs, cache_root(data_dir))
    cls = _dataset_class()
    rounds = round(knobs.cpu_ms * (knobs.hash_rate or hash_rounds_per_ms())) if knobs.cpu_ms > 0 else 0
    return PipelineSpec(
        name="synthetic",
        dataset=cls(folder / "train", knobs),
        test_dataset=cls(folder / "test", knobs),
        transform=SyntheticTransform(rounds, knobs.seed),
        net=functools.partial(synthetic_net, knobs.width, knobs.depth, knobs.classes),
        loss=_loss,
        classes=knobs.classes,
    )


make.checks_options = True  # type: ignore[attr-defined]  # unknown options are refused by _coerce_knobs


@register("synthetic")
def synthetic(data_dir: str | Path | None = None, download: bool = True, **options: Any) -> PipelineSpec:
    """The synthetic workload: :func:`make`'s spec; ``options`` are :class:`SyntheticKnobs` fields."""
    return make(data_dir, **options)


def _loss():
    from gluonbench._mx import gluon

    return gluon.loss.SoftmaxCrossEntropyLoss()
