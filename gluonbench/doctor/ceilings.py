"""Measured ceilings of this machine: what the disk, one core's decoder, memory and the PCIe link can do.

Each ceiling is measured on the real hardware and cached per host (and per data folder for the
read and decode ceilings) in ``$GLUONBENCH_CACHE`` (default ``~/.cache/gluonbench``)/``ceilings-HOST.json``;
``refresh=True`` measures again. Methods (also in README "Doctor"):

* **read MB/s**: sequential 1 MiB reads of a scratch file written in the data folder (removed
  afterwards) with ``O_DIRECT``, so the page cache is bypassed; where the file system refuses
  ``O_DIRECT`` (tmpfs, some FUSE), ``fsync`` + ``posix_fadvise(DONTNEED)`` then buffered reads; on a
  read-only folder the data files themselves after ``fadvise(DONTNEED)``. The method used is stored.
* **decode img/s per core**: ``mx.image.imdecode`` of the data set's own images (bytes read into
  memory first, their real size) in one thread, for about a second; IDX data sets have no decode.
* **memcpy GB/s per core**: ``numpy.copyto`` of a 64 MiB buffer in one thread, best of several.
* **H2D GB/s** (GPU only): ``NDArray.copyto(gpu)`` of 64 MiB from pageable and from pinned
  (``cpu_pinned``) host memory, best of several, synchronised.
"""

from __future__ import annotations

import fcntl
import json
import logging
import mmap
import os
import platform
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gluonbench.doctor.checks import fs_kind, image_files, mount_of
from gluonbench.errors import GluonbenchError
from gluonbench.files import atomic_write_text, cache_folder, load_json

log = logging.getLogger(__name__)

READ_BYTES = 128 * 2**20
BLOCK = 2**20
COPY_BYTES = 64 * 2**20
DECODE_SECONDS = 1.0


@dataclass
class Ceiling:
    """One measured limit: ``value`` in ``unit`` and how it was measured (``method``); ``None`` with a ``note``."""

    name: str
    value: float | None
    unit: str
    method: str
    note: str = ""
    measured_utc: str = ""

    def text(self) -> str:
        if self.value is None:
            return f"{self.name}: not applicable ({self.note})"
        fmt = f"{self.value:,.0f}" if self.value >= 100 else f"{self.value:.2f}"
        return f"{self.name}: {fmt} {self.unit} ({self.method})" + (f"; {self.note}" if self.note else "")


@dataclass
class Ceilings:
    """This host's ceilings; ``read`` and ``decode`` belong to ``data_dir``."""

    host: str
    data_dir: str | None
    read: Ceiling | None = None
    decode: Ceiling | None = None
    memcpy: Ceiling | None = None
    h2d_pageable: Ceiling | None = None
    h2d_pinned: Ceiling | None = None
    cached: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def items(self) -> list[Ceiling]:
        return [c for c in (self.read, self.decode, self.memcpy, self.h2d_pageable, self.h2d_pinned) if c is not None]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ceilings:
        kw = {k: d.get(k) for k in ("host", "data_dir")}
        for k in ("read", "decode", "memcpy", "h2d_pageable", "h2d_pinned"):
            kw[k] = Ceiling(**d[k]) if d.get(k) else None
        return cls(**kw, cached=True, extra=d.get("extra") or {})


def cache_file() -> Path:
    """``$GLUONBENCH_CACHE/ceilings-HOST.json`` (default ``~/.cache/gluonbench``)."""
    return cache_folder() / f"ceilings-{platform.node() or 'host'}.json"


def _now() -> str:
    from gluonbench.env import utc_now

    return utc_now()


def _aligned(size: int) -> mmap.mmap:
    return mmap.mmap(-1, size)  # page-aligned, as O_DIRECT needs


def _read_direct(path: Path) -> tuple[float, int]:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = _aligned(BLOCK)
    total = 0
    try:
        start = time.perf_counter()
        while True:
            n = os.readv(fd, [buf])
            total += n
            if n < BLOCK:
                break
        return time.perf_counter() - start, total
    finally:
        os.close(fd)
        buf.close()


def _read_after_fadvise(paths: list[Path]) -> tuple[float, int]:
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    total = 0
    start = time.perf_counter()
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while chunk := f.read(BLOCK):
                total += len(chunk)
    return time.perf_counter() - start, total


def measure_read(data_dir: str) -> Ceiling:
    """Sequential read MB/s of the data folder's device with the page cache bypassed (see the module doc)."""
    mnt, fstype, _dev = mount_of(data_dir)
    kind = fs_kind(fstype)
    note = f"{fstype} at {mnt}" + (": RAM, not a disk" if kind == "memory" else "")
    folder = Path(data_dir)
    if os.access(folder, os.W_OK):
        fd, name = tempfile.mkstemp(prefix=".gluonbench-read-ceiling-", dir=folder)
        scratch = Path(name)
        try:
            block = os.urandom(BLOCK)
            with os.fdopen(fd, "wb") as f:
                for _ in range(READ_BYTES // BLOCK):
                    f.write(block)
                f.flush()
                os.fsync(f.fileno())
            try:
                seconds, total = _read_direct(scratch)
                method = f"O_DIRECT sequential 1 MiB reads of a {READ_BYTES >> 20} MiB scratch file"
            except OSError:
                seconds, total = _read_after_fadvise([scratch])
                method = (
                    f"fsync + fadvise(DONTNEED), then sequential reads of a {READ_BYTES >> 20} MiB scratch file"
                    + (" (tmpfs keeps it in RAM whatever fadvise says)" if kind == "memory" else "")
                )
        finally:
            scratch.unlink(missing_ok=True)
    else:
        files, size = [], 0
        for root, _dirs, names in os.walk(folder):
            for n in sorted(names):
                p = Path(root) / n
                if p.is_file() and os.access(p, os.R_OK):
                    files.append(p)
                    size += p.stat().st_size
                if size >= READ_BYTES:
                    break
            if size >= READ_BYTES:
                break
        if not files or size < BLOCK:
            return Ceiling(
                "read", None, "MB/s", "none", f"{data_dir} is read-only and holds under 1 MiB to read", _now()
            )
        seconds, total = _read_after_fadvise(files)
        method = f"fadvise(DONTNEED), then reads of the data set's own files ({len(files)} files; folder read-only)"
    return Ceiling("read", total / seconds / 1e6, "MB/s", method, note, _now())


def measure_decode(data_dir: str, seconds: float = DECODE_SECONDS) -> Ceiling:
    """Images decoded per second by one core: ``mx.image.imdecode`` of the data set's own images."""
    images = image_files(data_dir, limit=64)
    if not images:
        return Ceiling(
            "decode",
            None,
            "img/s per core",
            "none",
            "no JPEG/PNG/BMP files in the data folder (IDX or packed data: decode does not apply)",
            _now(),
        )
    from gluonbench._mx import mx

    blobs = [p.read_bytes() for p in images]
    mx.image.imdecode(blobs[0]).wait_to_read()  # warm-up: loads OpenCV's codec
    n = 0
    start = time.perf_counter()
    while True:
        for b in blobs:
            mx.image.imdecode(b).wait_to_read()
            n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    shape = mx.image.imdecode(blobs[0]).shape
    mean_kb = sum(map(len, blobs)) / len(blobs) / 1024
    return Ceiling(
        "decode",
        n / elapsed,
        "img/s per core",
        f"mx.image.imdecode in one thread, {len(blobs)} of the data set's images ({mean_kb:.0f} KB, "
        f"{shape[1]}x{shape[0]}) for {elapsed:.1f} s",
        "",
        _now(),
    )


def measure_memcpy() -> Ceiling:
    """GB/s one core copies: ``numpy.copyto`` of 64 MiB, best of 8."""
    import numpy as np

    src = np.ones(COPY_BYTES, dtype=np.uint8)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = float("inf")
    for _ in range(8):
        t = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t)
    return Ceiling(
        "memcpy",
        COPY_BYTES / best / 1e9,
        "GB/s per core",
        "numpy.copyto of 64 MiB in one thread, best of 8",
        "",
        _now(),
    )


def measure_h2d(gpu: int = 0) -> tuple[Ceiling, Ceiling]:
    """Host-to-device GB/s from pageable and from pinned memory (64 MiB, best of 8, synchronised)."""
    from gluonbench._mx import mx

    if mx.context.num_gpus() <= gpu:
        raise GluonbenchError(f"gpu:{gpu} is not visible to MXNet: no host-to-device ceiling to measure")
    dev = mx.gpu(gpu)
    out = []
    for name, host in (("h2d_pageable", mx.cpu()), ("h2d_pinned", mx.cpu_pinned(0))):
        src = mx.nd.ones((COPY_BYTES // 4,), ctx=host, dtype="float32")
        dst = mx.nd.empty((COPY_BYTES // 4,), ctx=dev, dtype="float32")
        src.copyto(dst).wait_to_read()
        best = float("inf")
        for _ in range(8):
            t = time.perf_counter()
            src.copyto(dst)
            dst.wait_to_read()
            best = min(best, time.perf_counter() - t)
        assert dst.context == dev
        out.append(
            Ceiling(
                name,
                COPY_BYTES / best / 1e9,
                "GB/s",
                f"NDArray.copyto(gpu({gpu})) of 64 MiB from {host}, best of 8",
                "",
                _now(),
            )
        )
    return out[0], out[1]


CACHE_MAX_BYTES = 1 << 20
"""The ceilings cache holds a few entries of a few hundred bytes."""


def _load_cache() -> dict[str, Any]:
    """The cache's content; a cache that is not a small regular JSON file of objects (hand-edited, damaged, a FIFO)
    is ignored with a warning naming it, and measured again (it is only a cache)."""
    path = cache_file()
    if not path.exists():
        return {}
    try:
        data = load_json(path, "ceilings cache", CACHE_MAX_BYTES, "it is measured again")
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise GluonbenchError(f"ceilings cache {path} is not an object of cached ceilings; it is measured again")
    except GluonbenchError as exc:
        log.warning("%s", exc)
        return {}
    return data


def _save_entry(key: str, entry: dict[str, Any]) -> None:
    """Store one data folder's ceilings in the cache, keeping every other entry.

    The read-modify-write holds an exclusive lock on a sibling ``.lock`` file, so two doctors finishing at once
    both keep their entry, and the file is replaced through the one atomic writer (a unique temporary name), so a
    reader never sees half of it.
    """
    path = cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        log.warning("could not cache the ceilings in %s: %s", path, exc)
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = _load_cache()
        data[key] = entry
        atomic_write_text(path, json.dumps(data, indent=1))
    except (OSError, GluonbenchError) as exc:
        log.warning("could not cache the ceilings in %s: %s", path, exc)
    finally:
        os.close(fd)  # releases the lock


def cached_ceilings(data_dir: str | None) -> Ceilings | None:
    """The ceilings cached for this host and data folder, or None (nothing is measured)."""
    key = os.path.realpath(data_dir) if data_dir else ""
    entry = _load_cache().get(key)
    if not entry:
        return None
    why = _invalid_entry(entry)
    if why:
        log.warning("ceilings cache %s: the entry for %r %s; it is measured again", cache_file(), key or "(none)", why)
        return None
    return Ceilings.from_dict(entry)


def _invalid_entry(entry: dict[str, Any]) -> str | None:
    """Why a cached entry cannot be a :class:`Ceilings` (a hand-edited or older cache), or None."""
    names = set(Ceiling.__dataclass_fields__)
    for k in ("read", "decode", "memcpy", "h2d_pageable", "h2d_pinned"):
        c = entry.get(k)
        if not c:
            continue
        if not isinstance(c, dict) or not set(c) <= names or not {"name", "value", "unit", "method"} <= set(c):
            return f"has a field {k} that is not a ceiling"
        if not all(isinstance(c.get(f, ""), str) for f in ("name", "unit", "method", "note", "measured_utc")):
            return f"has a field {k} with a name, unit or method that is not text"
        v = c["value"]
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1e18):
            return f"has a field {k}.value that is not a number from 0 to 1e18"
    if not isinstance(entry.get("extra") or {}, dict):
        return "has a field extra that is not an object"
    return None


def measure_ceilings(
    data_dir: str | None, gpu: int | None = None, refresh: bool = False, read: bool = True
) -> Ceilings:
    """This host's ceilings for ``data_dir``: from the cache unless ``refresh``; else measured and cached.

    ``read=False`` skips the read ceiling (it writes a scratch file in ``data_dir``): the reports
    measure only memcpy and decode on their own and leave the disk to ``gluonbench doctor``.
    """
    key = os.path.realpath(data_dir) if data_dir else ""
    if not refresh:
        cached = cached_ceilings(data_dir)
        if (
            cached is not None
            and (gpu is None or cached.h2d_pinned is not None)
            and (not read or not data_dir or cached.read is not None)
        ):
            return cached
    c = Ceilings(host=platform.node(), data_dir=key or None)
    c.memcpy = measure_memcpy()
    if data_dir:
        c.read = measure_read(data_dir) if read else None
        c.decode = measure_decode(data_dir)
    if gpu is not None:
        c.h2d_pageable, c.h2d_pinned = measure_h2d(gpu)
    _save_entry(key, c.to_dict())
    return c
