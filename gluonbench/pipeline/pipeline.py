"""A :class:`Pipeline`: the named stages of one training step, and how to run it (:class:`Running`)."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from time import perf_counter
from typing import Any

from gluonbench.pipeline.stages import (
    Compose,
    Copy,
    DeviceBatch,
    HostBatch,
    Loader,
    NoCopy,
    ReadySample,
    SampleFn,
    Source,
    Stream,
    cached_sample,
    copy_stage,
)
from gluonbench.scratch import remove_mx_segments
from gluonbench.workloads.spec import apply_sample

log = logging.getLogger(__name__)

Step = Callable[[Any, Any], Any]
LoaderStage = Loader | Stream | HostBatch | DeviceBatch


@dataclass(frozen=True)
class Pipeline:
    """One training step as named stages (see :mod:`gluonbench.pipeline.stages`).

    ``source`` is the source stage (:class:`Source`: its mode, what it reported, its close; a mapping of
    what it reports is taken as one), ``dataset`` the read stage (``dataset[i]`` returns a raw sample;
    None for a stream), ``decode`` and ``transform`` the per-sample stages (run in the loader's workers),
    ``loader`` the loader stage, ``copy`` the copy stage (None: :class:`Copy` to ``ctx``; a data-parallel
    run declares :class:`Split`), ``ctx`` the device the step runs on and ``step`` the model step (None: no
    step). ``swapped`` records which stages a measurement replaced, and by what.
    """

    dataset: Any | None
    loader: LoaderStage
    ctx: Any
    step: Step | None = None
    decode: SampleFn | None = None
    transform: SampleFn | None = None
    source: Source = field(default_factory=Source)
    swapped: tuple[tuple[str, str], ...] = ()
    copy: Copy | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.source, Source):  # a mapping of what the source reports
            object.__setattr__(self, "source", Source.of(self.source, self.dataset))

    @property
    def copy_stage(self) -> Copy:
        """The copy stage that runs: the declared one, else the copy to ``ctx`` (:class:`Split` when the step
        splits the batch onto its devices itself, :func:`~gluonbench.pipeline.stages.copy_stage`)."""
        return self.copy if self.copy is not None else copy_stage(self.ctx, self.step)

    # -- what it is ----------------------------------------------------------------------

    @property
    def batch_size(self) -> int:
        return int(self.loader.batch_size)

    @property
    def num_workers(self) -> int:
        return int(getattr(self.loader, "num_workers", 0) or 0)

    @property
    def on_gpu(self) -> bool:
        return getattr(self.ctx, "device_type", "cpu") == "gpu"

    @property
    def preprocesses(self) -> bool:
        """True when a decode or transform stage does work (not a stand-in)."""
        return any(f is not None and not isinstance(f, ReadySample) for f in (self.decode, self.transform))

    @property
    def per_sample(self) -> SampleFn | None:
        """``decode`` then ``transform``, as the loader applies them."""
        fn = Compose(self.decode, self.transform)
        return fn if fn else None

    def stages(self) -> dict[str, str]:
        """Each stage and what runs there, e.g. ``{"read": "MNIST", "transform": "stand-in: ready sample"}``."""
        swapped = dict(self.swapped)

        def name(x: Any) -> str:
            if x is None:
                return "none"
            x = getattr(x, "func", x)  # functools.partial
            return getattr(x, "__name__", None) or type(x).__name__

        out = {
            "source": self.source.mode,
            "read": name(self.dataset),
            "decode": name(self.decode),
            "transform": name(self.transform),
            "loader": type(self.loader).__name__
            + (" (pin_memory)" if getattr(self.loader, "pin_memory", False) else ""),
            "copy": self.copy_stage.describe(),
            "step": name(self.step),
        }
        out.update({k: f"stand-in: {v}" for k, v in swapped.items()})
        return out

    # -- swaps ---------------------------------------------------------------------------

    def swap(self, why: str, **stages: Any) -> Pipeline:
        """This pipeline with ``stages`` replaced (``dataset=``, ``decode=``, ``loader=``, ``copy=``, ``step=``...)."""
        names = {"dataset": "read"}
        record = tuple((names.get(k, k), why) for k in stages)
        return replace(self, swapped=self.swapped + record, **stages)

    def with_loader(self, **knobs: Any) -> Pipeline:
        """The same pipeline with other loader knobs (a sweep's variable)."""
        return replace(self, loader=replace(self.loader, **knobs))

    def ready_sample(self) -> Any:
        """What decode + transform make of ``dataset[0]`` (the stand-in's sample)."""
        raw = self.dataset[0]
        fn = self.per_sample
        return apply_sample(fn, raw) if fn else raw

    def without_preprocessing(self) -> Pipeline:
        """decode + transform swapped for the ready sample; ``dataset[i]`` still runs."""
        return self.swap("ready sample", decode=None, transform=ReadySample(self.ready_sample()))

    def without_reading(self) -> Pipeline:
        """The read stage swapped for a cached raw sample (and decode + transform for the ready one)."""
        base = self if isinstance(self.transform, ReadySample) else self.without_preprocessing()
        return base.swap("cached sample", dataset=cached_sample(self.dataset[0], len(self.dataset)))

    def with_host_batch(self, batch: tuple[Any, Any]) -> Pipeline:
        """Everything before the copy swapped for one batch in host memory, of the kind the loader's batches
        are in (pinned with ``pin_memory``)."""
        from gluonbench.pipeline.stages import host_memory

        memory = host_memory(bool(getattr(self.loader, "pin_memory", False)), self.ctx)
        data, label = (x.as_in_context(memory) for x in batch)
        return self.swap("one batch on the host", loader=HostBatch(data, label))

    def with_device_batch(self, batch: tuple[Any, Any]) -> Pipeline:
        """Everything before the step swapped for one batch on the device, and the copy for none."""
        data, label = (x.as_in_context(self.ctx) for x in batch)
        data.wait_to_read()
        label.wait_to_read()
        on_device = self.swap("one batch on the device", loader=DeviceBatch(data, label))
        return on_device.swap("no copy (the batch is on the device)", copy=NoCopy(self.ctx, self.copy_stage.sync))

    def with_source(self, source: Source, why: str = "another source") -> Pipeline:
        """The source stage swapped (an input mode, an io cell): its data set read by the same loader, or its
        stream of batches by a :class:`Stream` loader stage with this pipeline's batch size and workers."""
        if source.streams:
            loader: LoaderStage = Stream(source.batches, self.batch_size, self.num_workers)
            return self.swap(why, source=source, dataset=None, loader=loader)
        if source.dataset is None:
            raise ValueError("a source stage needs a data set or a stream of batches")
        loader = self.loader if isinstance(self.loader, Loader) else Loader(self.batch_size, self.num_workers)
        return self.swap(why, source=source, dataset=source.dataset, loader=loader)

    def without_step(self) -> Pipeline:
        return self.swap("no model step", step=None)

    # -- running -------------------------------------------------------------------------

    def open(self) -> Running:
        """Start the loader stage (worker processes, a stream); close the result when done."""
        return Running(self)


class Running:
    """An opened pipeline: its batches per epoch or endlessly, and the loader's resources.

    ``epoch(e)`` iterates one epoch; ``cycle()`` is an endless iterator over epochs
    whose :meth:`settle` waits until batches the workers prepare ahead are ready
    (so paused probes do not compute into another probe's time). ``skip`` is how
    many steps after a pause still find prefetched batches.
    """

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.loader: Any = None
        t0 = perf_counter()
        stage = pipeline.loader
        if isinstance(stage, Loader):
            if pipeline.dataset is None:
                raise ValueError("a Loader stage needs a data set to read from")
            if stage.pin_memory:
                from gluonbench.pipeline.stages import pin_device_id

                stage = replace(stage, pin_device_id=pin_device_id(pipeline.ctx))
            self.loader = stage.make(pipeline.dataset, pipeline.per_sample)
        self.open_s = perf_counter() - t0
        workers = pipeline.num_workers if isinstance(stage, Loader) else 0
        self.prefetch = int(getattr(self.loader, "_prefetch", 0) or 0) if workers else 0
        self.current: Iterator[Any] | None = None
        self._cycle: Iterator[Any] | None = None

    @property
    def skip(self) -> int:
        """Steps to drop after a pause: the batches prefetched meanwhile, plus one."""
        return self.prefetch + 1

    @property
    def repeats(self) -> bool:
        """True when every step gets the same batch (a host or device batch stand-in)."""
        return isinstance(self.pipeline.loader, HostBatch | DeviceBatch)

    def epoch(self, epoch: int = 0) -> Iterable[tuple[Any, Any]]:
        """The batches of one epoch (endless for a repeated batch: bound it with max_steps)."""
        stage = self.pipeline.loader
        if isinstance(stage, HostBatch | DeviceBatch):
            return itertools.repeat((stage.data, stage.label))
        if isinstance(stage, Stream):
            return stage.batches(stage.batch_size, stage.num_workers, epoch)
        return self._loader_epoch()

    def _loader_epoch(self) -> Iterator[Any]:
        # DataLoader.__iter__ wraps the prefetching iterator in a generator; take the iterator itself,
        # so settle() can see its pending batches (MXNet 1.9's _MultiWorkerIter._data_buffer)
        loader = self.loader
        if hasattr(loader, "refresh") and hasattr(loader, "_iter"):
            if loader._iter is None:
                loader.refresh()
            it, loader._iter = loader._iter, None
            self.current = iter(it)
        else:
            self.current = iter(loader)
        return self.current

    def cycle(self) -> Iterator[tuple[Any, Any]]:
        """One endless iterator over epochs, shared by every caller of this pipeline."""
        if self._cycle is None:
            self._cycle = self._endless()
        return self._cycle

    def _endless(self) -> Iterator[tuple[Any, Any]]:
        for e in itertools.count():
            it = iter(self.epoch(e))
            try:
                yield from it
            finally:
                getattr(it, "close", lambda: None)()

    def settle(self, timeout_s: float) -> float:
        """Wait until the batches the workers are preparing in advance are ready; return seconds waited."""
        pending = getattr(self.current, "_data_buffer", None)
        if not pending:
            return 0.0
        t0 = perf_counter()
        while perf_counter() - t0 < timeout_s:
            if all(r.ready() for r in list(pending.values())):
                break
            time.sleep(0.002)
        return perf_counter() - t0

    def close(self) -> None:
        """Stop the worker pool now rather than at garbage collection; close an open stream."""
        if self._cycle is not None:
            self._cycle.close()
            self._cycle = None
        close_loader(self.loader)
        self.loader = None


CLOSE_WAIT_S = 5.0
"""How long ``Pool.terminate()`` may take before the workers it could not stop are killed."""


def close_loader(loader: Any, wait_s: float = CLOSE_WAIT_S) -> None:
    """Stop a DataLoader's worker pool now rather than at garbage collection, and remove the shared-memory
    segments its workers made that this process does not map (see :func:`drop_stray_segments`).

    ``Pool.terminate()`` sends SIGTERM and then waits for each worker. A worker stuck in native code (MXNet's
    engine waiting on a lock, forked while another thread held it) never gets back to Python to act on the
    signal, and the wait never ends: a 2-worker diagnosis once hung there at the end of its budget. So the
    pool is terminated in a helper thread, and workers still alive after ``wait_s`` are killed with SIGKILL.
    """
    pool = getattr(loader, "_worker_pool", None)
    if pool is None:
        return
    pids = {pid for p in getattr(pool, "_pool", None) or () if (pid := getattr(p, "pid", None))}

    def terminate() -> None:
        pool.terminate()
        pool.join()

    closer = threading.Thread(target=terminate, name="gluonbench-pool-close", daemon=True)
    closer.start()
    closer.join(wait_s)
    if closer.is_alive():
        stuck = sorted(pid for pid in pids if _alive(pid))
        # handled here (killed, reaped, their segments dropped): said at INFO, as it needs nothing from the user and a
        # second stderr line beside a failed run's one error line hid which line mattered (a busy machine's slow exit)
        log.info("loader workers %s did not stop within %.0f s of SIGTERM: killed", stuck, wait_s)
        for pid in stuck:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        closer.join(wait_s)  # the pool reaps its killed workers; a pool left blocked is a daemon thread
    loader._worker_pool = None
    drop_stray_segments(pids)


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, dead but not yet reaped, counts as stopped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def drop_stray_segments(pids: set[int]) -> list[str]:
    """Remove MXNet's ``/dev/shm/mx_<pid hex>_*`` segments made by ``pids`` (stopped loader workers) that this
    process does not map: a batch still in flight when its worker was stopped, which nobody would unlink. A
    segment this process maps (a batch it holds) is left to MXNet. Returns the names removed."""
    return remove_mx_segments(pids, keep_mapped=True)
