"""Loaders that cannot hang a run: a ``/dev/shm`` check before the workers start, a stall watchdog during it.

MXNet's multiprocessing ``DataLoader`` hands every batch from a worker to the
training process through a shared-memory segment in ``/dev/shm``. When that file
system is too small (Docker's default is 64 MB; apache/mxnet #18224, #13792) the
workers block and the training loop waits for a batch that never comes.

* :func:`check_shm` compares the free space of ``/dev/shm`` with what the
  workers will hold at once (batch bytes x batches in flight) before anything
  starts, and refuses with one line naming the fixes.
* :class:`StallWatchdog` watches the loader during a run: when no batch arrives
  for ``factor`` x the normal step time (at least ``floor_s``; the first batch,
  which includes the workers' start-up, gets three floors), it interrupts the
  training thread with :class:`LoaderStalledError`, so the run fails in seconds
  instead of waiting out ``--timeout``.

``GLUONBENCH_STALL_FLOOR_S`` changes the floor (default 10 s);
``GLUONBENCH_SHM_CHECK=0`` skips the up-front check (the watchdog still runs).
"""

from __future__ import annotations

import errno
import logging
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.names import example

log = logging.getLogger(__name__)

SHM = Path("/dev/shm")
FLOOR_ENV = "GLUONBENCH_STALL_FLOOR_S"
CHECK_ENV = "GLUONBENCH_SHM_CHECK"


def shm_fixes() -> str:
    """The fixes for a /dev/shm too small for the loader's workers, the workers named in the caller's terms."""
    return (
        "give the container more shared memory (docker run --shm-size=1g, or --ipc=host), or use "
        f"fewer workers ({example('workers=0 or num_workers=0', '--workers 0')} needs none), or in your own code DataLoader(thread_pool=True, "
        "batchify_fn=default_batchify_fn) (thread_pool=True alone still batches into /dev/shm in MXNet 1.9)"
    )


class LoaderStalledError(GluonbenchError):
    """The loader produced no batch for far longer than a normal step."""


_HANDLER: list[Callable[[str], None]] = []


def on_stall(handler: Callable[[str], None]) -> None:
    """Call ``handler(message)`` when a watched loader stalls, before the process exits (exit code 3)."""
    _HANDLER[:] = [handler]


def shm_full_message(exc: BaseException, path: Path = SHM) -> str | None:
    """The one line for a run that failed because ``/dev/shm`` filled up mid-run, or None if that is not why.

    A full ``/dev/shm`` surfaces as whatever the worker's failure did to the connection to it
    (``ConnectionResetError``, ``BrokenPipeError``, ``EOFError``) or as ``ENOSPC``: name the real cause.
    """
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    nospace = any(isinstance(e, OSError) and e.errno == errno.ENOSPC for e in chain)
    lost = any(isinstance(e, ConnectionError | EOFError) for e in chain)
    if not (nospace or lost):
        return None
    # a worker that died for want of /dev/shm space frees its own segments: what was nearly full a moment
    # ago may have room again, so a lost worker counts /dev/shm under a quarter free as the cause
    full = shm_full(path, LOST_SHARE if lost else FULL_SHARE)
    if full is None:  # ENOSPC of another disk (the output folder's) is not /dev/shm's
        return None
    cause = next((e for e in chain if isinstance(e, OSError | EOFError)), exc)  # what the loader raised
    return shm_full_text(full, path, type(cause).__name__)


FULL_SHARE = 0.05
"""``/dev/shm`` under this share free (or under 256 KiB) is full: no batch fits"""
LOST_SHARE = 0.25
"""a loader worker lost while ``/dev/shm`` has under this share free is blamed on it (see shm_full_message)"""


def shm_full(path: Path = SHM, share: float = FULL_SHARE) -> tuple[int, int] | None:
    """``(free, total)`` bytes of ``path`` when under ``share`` of it (or 256 KiB) is free, else None."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    total, free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    full = free < min(256 << 10, total) or free < total * share
    return (free, total) if total and full else None


def shm_full_text(full: tuple[int, int], path: Path = SHM, how: str = "") -> str:
    """One line: ``path`` is full (``full`` from :func:`shm_full`), why that stops the loader, and the fixes."""
    free, total = full
    state = "full" if free < min(256 << 10, total) or free < total * FULL_SHARE else "nearly full"
    return (
        f"{path} is {state} ({_kib(free)} free of {_kib(total)}): the DataLoader workers hand batches through shared "
        f"memory and one could not{f' ({how})' if how else ''}; {shm_fixes()}"
    )


def shm_free(path: Path = SHM) -> int | None:
    """Free bytes of ``/dev/shm`` (None when there is none)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def _kib(n: float) -> str:
    return f"{n / 1024:.0f} KiB" if n < 10 * 2**20 else f"{n / 2**20:.0f} MiB"


def batches_in_flight(workers: int, prefetch: int | None = None) -> int:
    """Batches a DataLoader holds in shared memory at once: its prefetch (default 2 x workers) plus one per worker."""
    return (2 * workers if prefetch is None else prefetch) + workers


def sample_bytes(options: dict[str, Any] | None = None) -> int:
    """Bytes of one transformed sample (float32 image + label): the seed's 28 x 28 x 1 unless options say more."""
    options = options or {}
    side, channels = options.get("side", 28), options.get("channels", 1)
    if not isinstance(side, int) or not isinstance(channels, int):
        side, channels = 28, 1
    return side * side * channels * 4 + 4


def check_shm(batch_bytes: int, workers: int, thread_pool: bool = False, prefetch: int | None = None) -> None:
    """Refuse to start loader workers that ``/dev/shm`` cannot hold; one line naming ``/dev/shm`` and the fixes.

    ``thread_pool`` workers are checked too: MXNet 1.9's DataLoader batches into
    shared memory (``default_mp_batchify_fn``) whenever ``num_workers > 0``.
    """
    if workers <= 0 or os.environ.get(CHECK_ENV, "1") == "0":
        return
    free = shm_free()
    if free is None:
        raise GluonbenchError(f"{SHM} is missing, and {workers} DataLoader worker process(es) need it: {shm_fixes()}")
    in_flight = batches_in_flight(workers, prefetch)
    need = batch_bytes * in_flight
    if free < need:
        raise GluonbenchError(
            f"{SHM} has {_kib(free)} free but {workers} DataLoader worker(s) need about {_kib(need)} "
            f"({in_flight} batches of {_kib(batch_bytes)} in flight): {shm_fixes()}"
        )


def _nbytes(batch: Any) -> int:
    total = 0
    for part in batch if isinstance(batch, tuple | list) else (batch,):
        try:
            total += int(part.size) * int(getattr(part.dtype, "itemsize", None) or _itemsize(part.dtype))
        except (AttributeError, TypeError, ValueError):
            continue
    return total


def _itemsize(dtype: Any) -> int:
    import numpy as np

    return np.dtype(dtype).itemsize


class StallWatchdog:
    """Fail a run whose loader stops producing batches; armed for process workers only.

    Use :meth:`watch` around each pass over a loader, :meth:`start` before and
    :meth:`stop` after. Time spent outside ``next(loader)`` never counts.
    """

    def __init__(
        self,
        workers: int,
        thread_pool: bool = False,
        floor_s: float | None = None,
        factor: float = 20.0,
        grace_s: float = 5.0,
    ) -> None:
        self.armed = workers > 0 and not thread_pool
        self.workers = workers
        self.floor_s = floor_s if floor_s is not None else float(os.environ.get(FLOOR_ENV, "10"))
        self.factor = factor
        self.grace_s = grace_s
        self.steps: list[float] = []
        self.batch_bytes = 0
        self._waiting_since: float | None = None
        self._first = True
        self._last_beat: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._message: str | None = None

    def limit(self) -> float:
        """Seconds without a batch that count as a stall now."""
        if self._first or not self.steps:
            return 3 * self.floor_s
        return max(self.floor_s, self.factor * statistics.median(self.steps[-50:]))

    def start(self) -> StallWatchdog:
        if not self.armed:
            return self
        self._thread = threading.Thread(target=self._watch, name="gluonbench-stall-watchdog", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def watch(self, batches: Iterable[Any]) -> Iterator[Any]:
        """``batches``, timed: each ``next`` is watched for a stall."""
        it = iter(batches)
        self._first = True  # a pass's first batch may wait for its workers' prefetch: a longer limit
        while True:
            self._waiting_since = time.monotonic()
            try:
                batch = next(it)
            except StopIteration:
                return
            finally:
                now = time.monotonic()
                self._waiting_since = None
            if not self._first and self._last_beat is not None:
                self.steps.append(now - self._last_beat)
            self._first = False
            self._last_beat = now
            if not self.batch_bytes:
                self.batch_bytes = _nbytes(batch)
            yield batch

    def _describe(self, waited: float) -> str:
        free = shm_free()
        normal = f"normal step {statistics.median(self.steps):.3g} s" if self.steps else "before the first batch"
        what = f"the DataLoader's {self.workers} worker process(es) produced no batch for {waited:.0f} s ({normal})"
        need = max(self.batch_bytes, 1) * 2
        if free is not None and free < max(need, 1 << 20):
            return f"{what}: {SHM} is full ({_kib(free)} free); {shm_fixes()}"
        return f"{what}; they are blocked (full {SHM}, a dead worker, a stuck read): {shm_fixes()}"

    def _watch(self) -> None:
        while not self._stop.wait(0.25):
            since = self._waiting_since
            if since is None:
                continue
            waited = time.monotonic() - since
            if waited <= self.limit():
                continue
            self._message = self._describe(waited)
            log.error("%s", self._message)
            for handler in _HANDLER:
                try:
                    handler(self._message)
                except Exception:  # the exit below must happen whatever the handler does
                    log.exception("stall handler failed")
            os.write(2, f"gluonbench: error: {self._message}\n".encode())
            os._exit(3)
