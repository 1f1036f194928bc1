"""One cell of the input-mode benchmark: the pipeline with the *source* stage swapped.

A cell opens one data set through one input mode and measures ``epochs`` epochs of
that pipeline with :func:`~gluonbench.engine.measure.measure` (the one timer), with
the model step swapped for nothing (``step=None``): at the *read* stage the decode
is swapped for the samples' byte counts (the bytes were read, nothing else); at the
*decode* stage the samples are decoded and batched with the seed's transform. Measured per cell: start-up to
the first batch (listing, copy, producer start, first read), read MB/s and
samples/s per epoch, total time, local disk used, and the process tree's CPU
and memory (:class:`~gluonbench.monitor.SystemMonitor`).

Emulated compute (``emulate_step_ms``, DLIO's method): the step is swapped for a timed wait per
batch (:func:`~gluonbench.pipeline.emulate.emulated_step`) instead of nothing, so the cell answers
"would this input pipeline keep that GPU fed?"; it then records its accelerator utilisation
(AU = emulated compute time / total time, per epoch and over the cell; DLIO passes at 90 %).

Page cache: ``warm`` reads the origin once before the cell; ``cold`` evicts the
origin's pages first with ``posix_fadvise(DONTNEED)`` after ``fdatasync``
(only our files), plus ``/proc/sys/vm/drop_caches`` when asked and permitted.
The residency measured with ``mincore(2)`` right before the cell is recorded,
so a report says what the cache really held. A VM's host may still cache the
disk; then "cold" reads run at memory speed and the report shows it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import mmap
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from gluonbench.engine.measure import Epochs, measure
from gluonbench.env import utc_now
from gluonbench.monitor import SystemMonitor
from gluonbench.pipeline import build_pipeline
from gluonbench.workloads.spec import PipelineSpec

log = logging.getLogger(__name__)


# -- page cache ---------------------------------------------------------------------------


def files_under(folder: str | Path) -> list[Path]:
    out = []
    for dirpath, _, names in os.walk(folder):
        out += [Path(dirpath) / n for n in sorted(names)]
    return out


def warm_page_cache(paths: Iterable[Path]) -> None:
    """Read every file once so its pages sit in the page cache."""
    buf = bytearray(8 << 20)
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass


def evict_page_cache(paths: Iterable[Path], drop_caches: bool = False) -> str:
    """Evict these files' pages; returns the method used (``fadvise`` or ``fadvise+drop_caches``)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    method = "fadvise"
    if drop_caches:
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("1\n")
            method += "+drop_caches"
        except OSError as exc:
            log.warning("cannot write /proc/sys/vm/drop_caches (%s); evicted with fadvise only", exc.strerror)
    return method


_libc = None


def _mincore_lib():
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
        _libc = lib
    return _libc


def resident_fraction(paths: Iterable[Path]) -> float | None:
    """Share of these files' pages in the page cache (``mincore``); None where it cannot be measured."""
    try:
        lib = _mincore_lib()
    except OSError:  # pragma: no cover - no libc
        return None
    page = mmap.PAGESIZE
    total = resident = 0
    for p in paths:
        size = p.stat().st_size
        if size == 0:
            continue
        fd = os.open(p, os.O_RDONLY)
        try:
            addr = lib.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if addr in (None, ctypes.c_void_p(-1).value):
                return None
            try:
                pages = (size + page - 1) // page
                vec = ctypes.create_string_buffer(pages)
                if lib.mincore(addr, size, vec) != 0:
                    return None
                resident += sum(b & 1 for b in vec.raw)
                total += pages
            finally:
                lib.munmap(addr, size)
        finally:
            os.close(fd)
    return resident / total if total else None


# -- a cell ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class IoCell:
    """One data set (``size`` x ``layout``, at ``uri``) read through one input ``mode``."""

    mode: str
    size: str
    layout: str  # "files" (many ~40 KB images) or "shards" (packed RecordIO)
    uri: str
    store: str  # "local" or "s3"
    data_bytes: int
    objects: int
    local_path: str | None = None  # the origin on this machine (page-cache control), if local

    @property
    def key(self) -> str:
        return f"{self.mode}/{self.size}/{self.layout}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EpochResult:
    epoch: int
    seconds: float
    samples: int
    bytes: int
    mb_per_s: float
    samples_per_s: float
    first_batch_s: float
    wait_frac: float
    au: float | None = None
    """with emulated compute: this epoch's accelerator utilisation"""


@dataclass
class IoResult:
    """What one cell measured; one JSON line in ``runs.jsonl`` (``kind == "io"``)."""

    cell: dict[str, Any]
    status: str = "ok"
    error: str | None = None
    stage: str = "read"
    page_cache: str = "warm"
    cache_method: str = ""
    resident_before: float | None = None
    open: dict[str, Any] = field(default_factory=dict)
    startup_s: float = 0.0
    epochs: list[dict[str, Any]] = field(default_factory=list)
    read_mb_per_s: float = 0.0
    samples_per_s: float = 0.0
    total_s: float = 0.0
    disk_used: int = 0
    system: dict[str, Any] = field(default_factory=dict)
    env: dict[str, Any] = field(default_factory=dict)
    command: str = ""
    started_utc: str = ""
    finished_utc: str = ""
    kind: str = "io"
    emulated: dict[str, Any] | None = None
    """with emulated compute: the setting, its text, ms per batch and the cell's AU
    (:class:`~gluonbench.pipeline.emulate.Utilisation`)"""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Counter:
    """Bytes delivered, and how many of them came with the first batch."""

    def __init__(self, batch_size: int) -> None:
        self.batch_size = batch_size
        self.bytes = 0
        self.samples = 0
        self.first_batch_bytes = 0


def _counted(samples: Iterable[tuple[bytes, int]], counter: _Counter) -> Iterator[tuple[bytes, int]]:
    it = iter(samples)
    try:
        for data, label in it:
            counter.bytes += len(data)
            counter.samples += 1
            if counter.samples <= counter.batch_size:
                counter.first_batch_bytes += len(data)
            yield data, label
    finally:
        getattr(it, "close", lambda: None)()


def _sizes_batchify(group: list[tuple[int, int]]) -> tuple[Any, Any]:
    import numpy as np

    from gluonbench._mx import nd

    return (
        nd.array(np.fromiter((n for n, _ in group), np.float32, len(group))),
        nd.array(np.fromiter((lab for _, lab in group), np.float32, len(group))),
    )


def _byte_count(data: bytes, label: int) -> tuple[int, int]:
    """The read stage's stand-in for decode: the sample's byte count (the bytes were read, nothing else)."""
    return len(data), label


def _decode(data: bytes, label: int) -> Any:
    from gluonbench.workloads.source import decode_numpy

    return decode_numpy(data, label)


def _seed_batchify(prepared: list[Any]) -> tuple[Any, Any]:
    from gluonbench.workloads.source import seed_batchify

    return seed_batchify(prepared)


IO_STAGES: dict[str, tuple[Any, Any, bool]] = {
    "read": (_byte_count, _sizes_batchify, False),
    "decode": (_decode, _seed_batchify, True),
}
"""How far an io cell runs the pipeline after its source: per stage, the per-sample work (decode,
or the read's stand-in: the byte count), the batchify, and whether decoder threads run it."""


def run_cell(
    cell: IoCell,
    *,
    epochs: int = 2,
    batch_size: int = 64,
    threads: int = 4,
    stage: str = "read",
    page_cache: str = "warm",
    drop_caches: bool = False,
    shuffle: bool = True,
    seed: int = 0,
    endpoint_url: str | None = None,
    cache_dir: str | None = None,
    timeout_s: float = 600.0,
    preset: str | None = None,
    image_size: int = 224,
    emulate_step_ms: float | str | None = None,
) -> IoResult:
    """Measure one cell; never raises for a failure of the cell itself (status ``failed``).

    ``preset`` (decode stage): decode to RGB and apply that preset's training transforms per sample
    (:mod:`gluonbench.workloads.vision_zoo`), as the vision workloads do; None: the seed's greyscale 28 x 28.
    ``emulate_step_ms``: the step is a timed wait per batch (ms, or a target such as ``resnet50@v100``), and
    the result carries the cell's accelerator utilisation (``emulated``; ``au`` per epoch).
    """
    from gluonbench._mx import mx
    from gluonbench.env import environment
    from gluonbench.pipeline.emulate import describe, emulated_step, seconds_per_batch, step_ms, utilisation
    from gluonbench.sources import make_source
    from gluonbench.workloads.source import stream_batches

    result = IoResult(cell=cell.to_dict(), stage=stage, page_cache=page_cache, env=environment())
    result.started_utc = utc_now()
    origin = files_under(cell.local_path) if cell.local_path else []
    if not origin:
        result.cache_method = "n/a (remote store)"
    elif page_cache == "cold":
        result.cache_method = evict_page_cache(origin, drop_caches)
    else:
        warm_page_cache(origin)
        result.cache_method = "read once before the cell"
    result.resident_before = resident_fraction(origin) if origin else None

    options: dict[str, Any] = {"threads": threads}
    if cell.mode == "file":
        options["cache_dir"] = cache_dir
    if cell.mode == "pipe":
        options.update(
            epochs=epochs, shuffle=shuffle, seed=seed, timeout=timeout_s,
            kind="recordio" if cell.layout == "shards" else "images",
        )  # fmt: skip
    source = None
    monitor = SystemMonitor(interval=0.25).start()
    t0 = perf_counter()
    try:
        source = make_source(cell.mode, cell.uri, endpoint_url, **options)
        stats = source.open()
        open_s = perf_counter() - t0
        result.open = stats.to_dict()
        result.disk_used = stats.disk_used
        counters: list[_Counter] = []

        def counted(samples: Iterable[tuple[bytes, int]], epoch: int) -> Iterator[tuple[bytes, int]]:
            counters.append(_Counter(batch_size))
            return _counted(samples, counters[-1])

        # the pipeline: this cell's source, the stage's per-sample work and batching, no model step
        # (or, with emulated compute, the step swapped for a timed wait)
        prepare, batchify, parallel = IO_STAGES[stage]
        if stage == "decode" and preset is not None:
            # the same per-sample preset as training (decode, augment, normalise), stacked
            from gluonbench.workloads.vision_zoo import preset_stage, stack_batch

            prepare, batchify = preset_stage(preset, image_size), stack_batch
        workers = threads if parallel else 0
        # the one assembly: the source stage is this cell's input mode, a stream of batches (the source is
        # closed in the finally below), no model (the step swapped for nothing, or for a timed wait)
        spec = PipelineSpec(
            batches=stream_batches(source, prepare, batchify, counted, shuffle, seed),
            info={"mode": cell.mode, "uri": cell.uri},
            name=f"io-{cell.key}",
        )
        step = emulated_step(emulate_step_ms, batch_size) if emulate_step_ms is not None else None
        pipeline = build_pipeline(spec, ctx=mx.cpu(), step=step, batch_size=batch_size, num_workers=workers)
        record = measure(pipeline, Epochs(epochs)).records["run"]
        for epoch, times in enumerate(record.epochs):
            counter = counters[epoch]
            # epoch 0's first batch is counted in start-up, so its rates leave that batch out
            skip = 1 if epoch == 0 and len(times) > 1 else 0
            split = times.split(skip=skip)
            seconds = split.total_s
            nbytes = counter.bytes - (counter.first_batch_bytes if skip else 0)
            result.epochs.append(
                asdict(
                    EpochResult(
                        epoch=epoch,
                        seconds=seconds,
                        samples=split.samples,
                        bytes=nbytes,
                        mb_per_s=nbytes / 1e6 / seconds if seconds > 0 else 0.0,
                        samples_per_s=split.samples / seconds if seconds > 0 else 0.0,
                        first_batch_s=times.wait[0] if len(times) else 0.0,
                        wait_frac=split.wait_frac,
                        au=utilisation(emulate_step_ms, batch_size, split.samples, seconds).au
                        if emulate_step_ms is not None
                        else None,
                    )
                )
            )
            if epoch == 0:
                result.startup_s = open_s + (times.wait[0] if len(times) else 0.0)
        result.total_s = perf_counter() - t0
        seconds = sum(e["seconds"] for e in result.epochs)
        result.read_mb_per_s = sum(e["bytes"] for e in result.epochs) / 1e6 / seconds if seconds else 0.0
        result.samples_per_s = sum(e["samples"] for e in result.epochs) / seconds if seconds else 0.0
        if not any(e["samples"] for e in result.epochs):
            raise RuntimeError("the source delivered no sample")
        if emulate_step_ms is not None:
            au = utilisation(emulate_step_ms, batch_size, sum(e["samples"] for e in result.epochs), seconds)
            result.emulated = {
                "setting": step_ms(emulate_step_ms),
                "text": describe(emulate_step_ms, batch_size),
                "step_ms": seconds_per_batch(emulate_step_ms, batch_size) * 1000,
                **au.to_dict(),
            }
    except Exception as exc:
        log.warning("%s failed: %s", cell.key, exc)
        result.status, result.error = "failed", f"{type(exc).__name__}: {exc}"[:500]
        result.total_s = perf_counter() - t0
    finally:
        if source is not None:
            source.close()
        result.system = monitor.stop().to_dict()
    result.finished_utc = utc_now()
    return result
