"""The stages of the training pipeline and the ready-made stand-ins that replace them.

A real stage does work; a stand-in hands on what the real stage would have handed
on (same shapes, dtypes and array types, built from the real stage's output for
the first sample or batch), so a measurement with a stand-in differs from the full
pipeline only by the work of the stages it replaced.

=============  ===========================================  =================================
stage          real                                         stand-in
=============  ===========================================  =================================
``source``     :class:`Source`: where the samples come      (not swapped by the probes; an io
               from (memory, a local folder, File/FastFile  cell or ``--source`` swaps it:
               over S3: a data set; Pipe: a stream of       :meth:`Pipeline.with_source`)
               batches), its start-up figures, its close
``read``       ``dataset[i]`` of the source's data set      :class:`CachedSample`
``decode``     bytes -> array (JPEG, PNG), when separate    ``None`` (with a ready sample)
``transform``  the per-sample preprocessing                 :class:`ReadySample`
``loader``     :class:`Loader`: DataLoader knobs, batchify  :class:`HostBatch`, :class:`DeviceBatch`
               (or a :class:`Stream` of batches, Pipe)
``copy``       :class:`Copy`: ``as_in_context(ctx)``, host  :class:`NoCopy` (the batch is
               to device; :class:`Split` for a data-        already on the device)
               parallel step, which splits the batch
``step``       forward, backward, update (kvstore)          ``None`` (no model step), or
                                                            :class:`EmulatedStep` (a timed wait)
=============  ===========================================  =================================

The real step is a :class:`ModelStep` (:class:`EvalStep` for the evaluation pass), or the data-parallel step
of :mod:`gluonbench.pipeline.scale`.

The copy stage is called by the one timer (:func:`gluonbench.engine.loop.run_steps`) between its
``wait`` and ``compute`` timestamps: what it does is the step's ``copy`` time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gluonbench.knobs import knob_default
from gluonbench.workloads.spec import apply_sample

STAGES = ("source", "read", "decode", "transform", "loader", "copy", "step")
"""The pipeline's stages, in the order a sample goes through them."""

SampleFn = Callable[..., Any]


class Compose:
    """``decode`` then ``transform``, as one per-sample function for ``dataset.transform(fn)`` (picklable)."""

    def __init__(self, *fns: SampleFn) -> None:
        self.fns = tuple(f for f in fns if f is not None)

    def __call__(self, *sample: Any) -> Any:
        item: Any = sample if len(sample) != 1 else sample[0]  # as dataset.transform(fn) calls fn
        for fn in self.fns:
            item = apply_sample(fn, item)
        return item

    def __bool__(self) -> bool:
        return bool(self.fns)


class ReadySample:
    """Stand-in for decode + transform: ignores the raw sample and returns a ready one.

    The ready sample is the real stages' output for ``dataset[0]``, so batching
    and everything after it cost what they cost in the full pipeline.
    """

    def __init__(self, sample: Any) -> None:
        self.sample = sample

    def __call__(self, *raw: Any) -> Any:
        return self.sample


class CachedSample:
    """Stand-in for the read stage: a data set of the same length whose ``[i]`` is one cached sample.

    ``len()`` is the real data set's, so the loader's epochs, shuffling and
    worker hand-off are unchanged; only the work of ``dataset[i]`` is gone.
    Sub-classes MXNet's ``Dataset`` lazily (see :func:`cached_sample`).
    """


def cached_sample(sample: Any, length: int) -> Any:
    """A ``gluon.data.Dataset`` of ``length`` items, each ``sample`` (the read stage's stand-in)."""
    from gluonbench._mx import gluon

    class _Cached(gluon.data.Dataset, CachedSample):
        def __init__(self) -> None:
            self.sample = sample
            self.length = length

        def __getitem__(self, idx: int) -> Any:
            return self.sample

        def __len__(self) -> int:
            return self.length

    return _Cached()


@dataclass(frozen=True)
class Loader:
    """The loader stage: a ``gluon.data.DataLoader`` with these knobs over ``read -> decode -> transform``.

    The knobs and their defaults are declared once in :data:`gluonbench.knobs.KNOBS`.
    """

    batch_size: int = knob_default("batch_size")
    num_workers: int = knob_default("num_workers")
    thread_pool: bool = knob_default("thread_pool")
    prefetch: int | None = knob_default("prefetch")
    """batches prepared ahead by the workers; MXNet's default is 2 x num_workers"""
    shuffle: bool = True
    pin_memory: bool = knob_default("pin_memory")
    """batches in page-locked memory (GPU only): faster host-to-device copies"""
    timeout: int | None = None
    """seconds a worker's batch may take before the loader raises (MXNet's default: 120)"""
    pin_device_id: int = 0
    """the GPU whose copies the pinned batches serve (:func:`pin_device_id`: the pipeline's context)"""
    batchify_fn: Any = None
    """the DataLoader's ``batchify_fn`` (None: MXNet's default): a batch's items -> ``(data, label)``"""

    def make(self, dataset: Any, fn: SampleFn | None) -> Any:
        """The DataLoader the seed builds: ``DataLoader(dataset.transform(fn), ...)``."""
        from gluonbench._mx import gluon

        source = dataset.transform(fn) if fn else dataset
        extra: dict[str, Any] = {} if self.prefetch is None else {"prefetch": self.prefetch}
        if self.pin_memory:
            extra["pin_memory"] = True
            extra["pin_device_id"] = self.pin_device_id
        if self.timeout is not None:
            extra["timeout"] = self.timeout
        if self.batchify_fn is not None:
            extra["batchify_fn"] = self.batchify_fn
        if self.num_workers > 0 and not self.thread_pool:
            from gluonbench.scratch import own_multiprocessing_tempdir

            own_multiprocessing_tempdir()  # the workers' sockets in a folder that goes with this process
        return gluon.data.DataLoader(
            source,
            self.batch_size,
            shuffle=self.shuffle,
            num_workers=self.num_workers,
            thread_pool=self.thread_pool,
            **extra,
        )


def pin_device_id(ctx: Any) -> int:
    """The ``pin_device_id`` of a loader feeding ``ctx`` (G7): its GPU's index, 0 on a CPU context.

    MXNet allocates a pinned batch for one GPU's copy engine; ``DataLoader``'s default 0 makes the batches
    of a run on ``gpu(3)`` pinned for GPU 0.
    """
    return int(getattr(ctx, "device_id", 0) or 0) if getattr(ctx, "device_type", "cpu") == "gpu" else 0


def host_memory(pin_memory: bool, ctx: Any) -> Any:
    """The host memory a loader with ``pin_memory`` hands its batches over in: ``cpu_pinned(id)`` or ``cpu()``.

    The ``cached_batch`` stand-in keeps its batch in the same kind of memory (G7), so a pinned setting is
    judged against a pinned ceiling and its copy is the copy the loader's batches get.
    """
    from gluonbench._mx import mx

    return mx.cpu_pinned(pin_device_id(ctx)) if pin_memory else mx.cpu()


@dataclass(frozen=True)
class Stream:
    """The loader stage of a streamed source (Pipe mode): ``batches(batch_size, workers, epoch)`` per epoch."""

    batches: Callable[[int, int, int], Any]
    batch_size: int = 64
    num_workers: int = 0


@dataclass(frozen=True)
class HostBatch:
    """Stand-in for everything before the copy: one ready batch in host memory, handed on every step.

    The seed's "reload the same batch onto the GPU": the copy and the step still run.
    """

    data: Any
    label: Any

    @property
    def batch_size(self) -> int:
        return int(self.data.shape[0])


@dataclass(frozen=True)
class DeviceBatch:
    """Stand-in for everything before the step: one batch already on the device; no copy is left."""

    data: Any
    label: Any

    @property
    def batch_size(self) -> int:
        return int(self.data.shape[0])


class EmulatedStep:
    """Stand-in for the model step: a timed wait of ``seconds_per_batch`` per batch (DLIO's emulated compute).

    DLIO and MLPerf Storage replace the accelerator's work with a sleep of the measured
    per-batch compute time, so a machine without the target GPU can answer "would this
    input pipeline keep that GPU fed?". The wait scales with the batch it is given
    (``seconds_per_batch * len(batch) / batch_size``), so a smaller last batch or another
    batch size costs proportionally. The wait is synchronous, as DLIO's is: it does not
    overlap with a zero-worker loader's work in the main thread (a real GPU step would,
    by one batch), so at 0 workers it is conservative.
    """

    def __init__(self, seconds_per_batch: float, batch_size: int) -> None:
        if not (seconds_per_batch >= 0 and batch_size >= 1):
            raise ValueError("EmulatedStep needs seconds_per_batch >= 0 and batch_size >= 1")
        self.seconds_per_batch = float(seconds_per_batch)
        self.batch_size = int(batch_size)
        self.__name__ = f"emulated step ({self.seconds_per_batch * 1000:g} ms per batch of {self.batch_size})"

    def seconds_for(self, samples: int) -> float:
        """The wait for a batch of ``samples``."""
        return self.seconds_per_batch * samples / self.batch_size

    def __call__(self, data: Any, label: Any) -> None:
        import time

        end = time.perf_counter() + self.seconds_for(int(data.shape[0]))
        # sleep most of it, then spin the last fraction of a millisecond for precision
        while (left := end - time.perf_counter()) > 0:
            time.sleep(left - 0.0002 if left > 0.0005 else 0)


class ModelStep:
    """Forward, loss, backward and update of one batch, dispatched asynchronously."""

    def __init__(self, net: Any, loss: Any, trainer: Any) -> None:
        self.net = net
        self.loss = loss
        self.trainer = trainer

    def __call__(self, data: Any, label: Any) -> Any:
        from gluonbench._mx import autograd

        with autograd.record():
            output = self.net(data)
            loss = self.loss(output, label)
        loss.backward()
        self.trainer.step(data.shape[0])
        return loss


class EvalStep:
    """The evaluation pass's step stage: the seed's argmax accuracy, accumulated over the batches it is given.

    Run through :func:`gluonbench.engine.measure.measure` like any other step (the batches are already on
    the net's context); :attr:`accuracy` and :attr:`seen` read the result.
    """

    def __init__(self, net: Any) -> None:
        from gluonbench._mx import mx

        self.net = net
        self.metric = mx.metric.Accuracy()
        self.seen = 0
        self.__name__ = "evaluation (argmax accuracy)"

    def __call__(self, data: Any, label: Any) -> None:
        from gluonbench._mx import nd

        self.metric.update(preds=nd.argmax(self.net(data), axis=1), labels=label)
        self.seen += int(data.shape[0])

    @property
    def accuracy(self) -> float:
        return float(self.metric.get()[1]) if self.seen else float("nan")


# -- the source stage ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """The source stage: where the samples come from, what opening it reported, and how to let go of it.

    A random-access source hands on ``dataset`` (the read stage reads ``dataset[i]``); a streamed one
    (Pipe mode, an io cell) hands on ``batches(batch_size, workers, epoch)``, the batches of one epoch,
    which a :class:`Stream` loader stage iterates. ``mode`` names it (``memory`` for a data set in this
    process; ``in place``, ``file``, ``fastfile``, ``pipe``); ``info`` is what it reports (uri, start-up
    seconds, bytes copied, records read), stored with each run. ``closer`` releases what opening it took
    (a file cache, producer processes): :meth:`close` calls it. A pipeline and its swaps share one source,
    so closing a running pipeline leaves the source open; whoever opened it (the run, a check) closes it.
    """

    mode: str = "memory"
    dataset: Any = None
    batches: Callable[[int, int, int], Iterable[Any]] | None = None
    info: Mapping[str, Any] = field(default_factory=dict)
    closer: Callable[[], None] | None = None

    @property
    def streams(self) -> bool:
        """True for a stream of batches (no ``dataset[i]``)."""
        return self.dataset is None and self.batches is not None

    def close(self) -> None:
        """Release what opening the source took (nothing for a data set in memory)."""
        if self.closer is not None:
            self.closer()

    @classmethod
    def of(cls, given: Source | Mapping[str, Any] | None, dataset: Any = None, batches: Any = None) -> Source:
        """``given`` as a :class:`Source` over ``dataset`` or ``batches``: a Source as it is (its data kept where
        set), a mapping of what the source reports (``mode`` among it), or None (a data set in memory)."""
        if isinstance(given, Source):
            if given.dataset is None and given.batches is None and (dataset is not None or batches is not None):
                from dataclasses import replace

                return replace(given, dataset=dataset, batches=batches)
            return given
        info = dict(given or {})
        return cls(mode=str(info.get("mode", "memory")), dataset=dataset, batches=batches, info=info)


# -- the copy stage --------------------------------------------------------------------------------


def _waits(ctx: Any, sync: bool | None) -> bool:
    return getattr(ctx, "device_type", "cpu") == "gpu" if sync is None else bool(sync)


@dataclass(frozen=True)
class Copy:
    """The copy stage: each host batch copied to ``ctx`` (``as_in_context``).

    ``sync`` (default: on a GPU) waits for the copy (``wait_to_read``) so the step's ``copy`` figure is
    the copy's time; on a CPU context it is the dispatch only (see :mod:`gluonbench.engine.loop`).
    ``ctx`` is also the device the step runs on: the timer waits for the host batch apart from the step
    wherever ``ctx`` has its own worker queue (anything but ``cpu(0)``).
    """

    ctx: Any
    sync: bool | None = None

    @property
    def waits(self) -> bool:
        return _waits(self.ctx, self.sync)

    def move(self, data: Any, label: Any) -> tuple[Any, Any]:
        return data.as_in_context(self.ctx), label.as_in_context(self.ctx)

    def __call__(self, data: Any, label: Any) -> tuple[Any, Any]:
        data, label = self.move(data, label)
        if self.waits:
            data.wait_to_read()
            label.wait_to_read()
        return data, label

    def describe(self) -> str:
        """What runs in this stage, for :meth:`Pipeline.stages`."""
        return str(self.ctx)


@dataclass(frozen=True)
class NoCopy(Copy):
    """Stand-in for the copy: the batch is already on ``ctx`` (a :class:`DeviceBatch`), handed on as it is
    (on a GPU still waited for, as :class:`Copy` waits, so only the copy's work is gone)."""

    def move(self, data: Any, label: Any) -> tuple[Any, Any]:
        return data, label

    def describe(self) -> str:
        return f"none (the batch is on {self.ctx})"


@dataclass(frozen=True)
class Split(Copy):
    """The copy stage of a data-parallel step: the batch is split onto ``contexts`` by the step itself.

    The batch is left where the loader put it (shared or pinned memory), with no host copy first (G4);
    the step's ``split_and_load`` runs after the timer's barrier, as users run it, and is timed by the step
    (``DataParallelStep.copy``) and moved into the ``copy`` figure afterwards
    (:meth:`gluonbench.pipeline.scale.ScaleOut.finish`). ``ctx`` is the timer's context (the host with several
    devices).
    """

    contexts: tuple[Any, ...] = ()

    def move(self, data: Any, label: Any) -> tuple[Any, Any]:
        return data, label

    def describe(self) -> str:
        return f"split onto {', '.join(map(str, self.contexts))} by the step"


def copy_stage(ctx: Any, step: Any = None, sync: bool | None = None) -> Copy:
    """The copy stage for a batch going to ``ctx``: :class:`Split` when ``step`` splits the batch itself (it
    declares ``splits_batch``, e.g. the data-parallel step), else :class:`Copy`; ``ctx`` may already be one."""
    if isinstance(ctx, Copy):
        if sync is None or sync == ctx.sync:
            return ctx
        from dataclasses import replace

        return replace(ctx, sync=sync)
    if getattr(step, "splits_batch", False):
        return Split(ctx, sync, tuple(getattr(step, "contexts", ()) or ()))
    return Copy(ctx, sync)
