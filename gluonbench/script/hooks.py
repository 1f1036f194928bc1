"""The hooks inside the user's script: where the DataLoader hands out batches and where the Trainer steps.

Installed by :mod:`gluonbench.script.boot` before the script's first line (never imported by the script):

* ``DataLoader.__init__`` wraps the loader's dataset in a :class:`Switch`, before the loader forks its workers,
  so the workers themselves can be told (through a small shared file, :data:`FLAGS`) to serve samples from a
  cache: ``no_read`` (``dataset[i]`` and the transform removed: a sample that passed earlier, from the same
  worker's cache) and, where the dataset is a ``.transform()`` / ``.transform_first()`` wrapper,
  ``no_preprocess`` (the base dataset is still read; the transform's output comes from the cache). The loader's
  own sampler, batchify, workers and prefetch queue are kept.
* ``DataLoader.__iter__`` hands out what the mode asks for: the real batch (``full`` and the two above); one
  batch kept from the start, in host memory (``cached_batch``: everything before the script's own copy to its
  contexts removed, the seed's probe); or, for ``loader_only``, it pulls the slice's batches from the loader
  back to back with no step between them, then hands the last one to the script.
  A DataLoader subclass with its own ``__iter__`` has that one wrapped instead (at its first construction), so a
  loader that never calls the base's iterator is hooked too, and one that does is fed through the hooks once.
* ``Trainer.step`` / ``update`` / ``allreduce_grads`` mark the step boundary. The training loader is the first
  whose batches are followed by an update (or the one :data:`~gluonbench.script.channel.LOADER_ENV` names).
  A step runs from the first batch handed out after an update to the next such batch, so several batches
  per update (gradient accumulation) are one step; its samples are all of them.

The batch is timed after ``mx.nd.waitall()`` (the seed's barrier, as :mod:`gluonbench.engine.loop` does), in
every mode, the replayed batch of ``cached_batch`` included: the next batch is fetched while the previous step
computes, then the barrier ends that step. A batch from another loader (an evaluation pass), the end of an
epoch, or a loader-only slice breaks the step in progress and the block it was in: that time is never counted.
After a mode switch with loader workers, the first ``prefetch + 1`` steps are left out (their batches were
prefetched in the mode before); with none, the plan says (``skip``): the first step computes the batch handed out
at the switch (the model's work is the same in every mode) and fetches the next one in the new mode, so a slice
of steps longer than itself counts it.
"""

from __future__ import annotations

import copy
import mmap
import os
import statistics
import sys
import weakref
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from gluonbench.monitor import SystemMonitor
from gluonbench.profiler import hooks as profiler_hooks
from gluonbench.script.channel import Channel

if "mxnet" in sys.modules:
    # the hooks go in as MXNet's import finishes (gluonbench.script.boot), which may be gluonbench._mx's own import
    # of it (a script that imports gluonbench._mx) before that module has its names: take the imported MXNet
    _mxnet: Any = sys.modules["mxnet"]
else:
    from gluonbench._mx import mx as _mxnet
gluon, nd = _mxnet.gluon, _mxnet.nd

Dataset = gluon.data.Dataset
_LazyTransformDataset = gluon.data.dataset._LazyTransformDataset
"""what ``Dataset.transform()`` / ``transform_first()`` return: MXNet has no public name for it, and the probe that
removes the transform alone must recognise it"""

SLOTS = 256
DATASET_MODES = {"full": 0, "no_preprocess": 1, "no_read": 2, "cached_batch": 0, "loader_only": 0}
CACHE_SAMPLES = 256
CACHE_BYTES = 64 << 20
WARMUP_STEPS = 3
WARMUP_S = 1.0
"""warm-up in the script: at least WARMUP_STEPS steps and WARMUP_S seconds of them before the first round (its
first rounds ran slower than the later ones with three steps alone: allocation, the first epoch's caches)"""
ERROR_UPDATES = 3
"""Trainer updates with no Gluon DataLoader batch before them: the script feeds from something else"""
COUNT_BLOCK = 10
"""steps per block of a counted run (a sweep's): the spread of the blocks' samples/s is the run's own noise"""


def _nbytes(item: Any) -> int:
    if isinstance(item, tuple | list):
        return sum(_nbytes(x) for x in item)
    size = getattr(item, "size", None)
    dtype = getattr(item, "dtype", None)
    try:
        import numpy as np

        return int(size) * np.dtype(dtype).itemsize if size is not None and dtype is not None else 64
    except TypeError:
        return 64


class Switch(Dataset):
    """The loader's dataset, with a mode each worker reads from the shared flags file before every sample.

    ``full``: ``data[i]``, and the first samples (at most :data:`CACHE_SAMPLES`, :data:`CACHE_BYTES`) are kept
    in this process's cache as they pass. ``no_read``: a cached sample (``cache[i % n]``): no read, no transform.
    ``no_preprocess``: the base dataset is read (``base[i]``), the transform is not run, a cached sample is
    returned. A process whose cache is still empty reads as ``full`` does.
    """

    def __init__(self, data: Any, flags: str, index: int) -> None:
        self._data = data
        self._base = data._data if isinstance(data, _LazyTransformDataset) else None
        self._flags, self._index = flags, index
        self._pid: int | None = None
        self._map: mmap.mmap | None = None
        self._cache: list[Any] = []
        self._cached_bytes = 0

    def __len__(self) -> int:
        return len(self._data)

    def __getattr__(self, name: str) -> Any:
        data = self.__dict__.get("_data")
        if data is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(data, name)

    def __getstate__(self) -> dict[str, Any]:  # a spawned worker maps the flags itself
        return {**self.__dict__, "_pid": None, "_map": None, "_cache": [], "_cached_bytes": 0}

    @property
    def transforms(self) -> bool:
        """True when the dataset is a lazy ``.transform()`` wrapper (its transform can be removed alone)."""
        return self._base is not None

    def _mode(self) -> int:
        if self._pid != os.getpid():
            # the map first, then the pid: a loader's threads (thread_pool=True) share this object, and one that
            # sees the new pid must find the map there already (else None[...] in the script: a TypeError)
            with open(self._flags, "r+b") as f:
                self._map = mmap.mmap(f.fileno(), SLOTS)
            self._pid = os.getpid()
        return self._map[self._index]  # type: ignore[index]

    def __getitem__(self, idx: int) -> Any:
        mode = self._mode()
        if mode == 0 or not self._cache:
            item = self._data[idx]
            if len(self._cache) < CACHE_SAMPLES and self._cached_bytes < CACHE_BYTES:
                self._cache.append(item)
                self._cached_bytes += _nbytes(item)
            return item
        if mode == 1 and self._base is not None:
            self._base[idx]  # the read stays; the transform does not run
        return self._cache[idx % len(self._cache)]


def _dataset_name(ds: Any) -> str:
    """The loader's dataset in words: its class, and whether a lazy transform wraps it."""
    if isinstance(ds, Switch):
        return f"{type(ds._base).__name__} with a lazy transform" if ds.transforms else type(ds._data).__name__
    return type(ds).__name__


def _samples(batch: Any, fallback: int) -> int:
    first = batch[0] if isinstance(batch, tuple | list) and batch else batch
    if isinstance(first, dict) and first:
        first = next(iter(first.values()))
    shape = getattr(first, "shape", None)
    return int(shape[0]) if shape else fallback


def _host_copy(batch: Any) -> Any:
    """A copy of ``batch`` the script cannot change under us (NDArrays copied, containers rebuilt)."""
    if isinstance(batch, nd.NDArray):
        return batch.copy()
    if isinstance(batch, tuple | list):
        return type(batch)(_host_copy(x) for x in batch)
    return copy.copy(batch)


@dataclass
class Slice:
    """One probe's turn in a round: ``skip`` steps left out, then blocks of ``k`` steps for ``round_s``."""

    probe: str
    round_s: float
    k: int
    skip0: int
    skip: int = 0
    t0: float = 0.0
    """when the slice's first counted step began (0: not yet); an epoch shorter than ``round_s`` does not restart it"""
    block: list[tuple[float, int, float]] = field(default_factory=list)
    blocks: list[list[tuple[float, int, float]]] = field(default_factory=list)


def new_count() -> dict[str, Any]:
    """The totals of a counted run: seconds, samples, steps, input wait, and finished blocks of steps."""
    return {"seconds": 0.0, "samples": 0, "steps": 0, "wait": 0.0, "blocks": [], "block": [0.0, 0, 0]}


class Driver:
    """The state of the hooks in the script's process: the loaders seen, the training one, the schedule."""

    def __init__(self, channel: Channel | None, flags: str | None, wanted: int | None, to_end: bool = False) -> None:
        self.channel, self.flags_path, self.wanted, self.to_end = channel, flags, wanted, to_end
        self.flags: mmap.mmap | None = None
        if flags is not None:
            with open(flags, "r+b") as f:
                self.flags = mmap.mmap(f.fileno(), SLOTS)
        self.loaders: dict[int, Any] = {}
        self.count = 0
        self.training: int | None = None
        self.last_loader: int | None = None
        self.updates_without_batch = 0
        self.contexts: list[str] = []
        self.phase = "find"
        self.mode = "full"
        self.updated = False
        self.t_boundary: float | None = None
        self.pending_samples = 0
        self.pending_wait = 0.0
        self.warm: list[tuple[float, int]] = []
        self.cached: Any = None
        self.plan: list[tuple[str, float, int, int]] = []
        self.round = 0
        self.deadline = 0.0
        self.count_left = 0
        self.counted: dict[str, Any] = {}
        # the whole run (a sweep to the script's end): from the training loader's first iter() to its last update,
        # less the time from another loader's first batch (an evaluation pass) to the next training batch
        self.iter_t: dict[int, float] = {}
        self.last_update_t: float | None = None
        self.eval_since: float | None = None
        self.eval_s = 0.0
        self.train_samples = 0
        self.last_samples = 0
        self.updates = 0
        self.epochs = 0
        self.slice: Slice | None = None
        self.results: dict[str, list[list[tuple[float, int, float]]]] = {}
        self.systems: dict[str, dict[str, Any]] = {}
        self.monitor: SystemMonitor | None = None
        self.memory_due = 0.0
        self.profiling = profiler_hooks.enabled()
        """under ``gluonbench profile``: the training loader's waits and steps are written to the profile"""

    # -- the loaders ------------------------------------------------------------------------------------------
    def new_loader(self) -> int:
        self.count += 1
        return self.count

    def describe(self, loader: Any, index: int) -> dict[str, Any]:
        ds = getattr(loader, "_dataset", None)
        sampler = getattr(loader, "_batch_sampler", None)
        return {
            "index": index,
            "num_workers": int(getattr(loader, "_num_workers", 0)),
            "prefetch": int(getattr(loader, "_prefetch", 0)),
            "thread_pool": bool(getattr(loader, "_thread_pool", False)),
            "pin_memory": bool(getattr(loader, "_pin_memory", False)),
            "transform": bool(isinstance(ds, Switch) and ds.transforms),
            "switch": isinstance(ds, Switch),
            "batch_size": int(getattr(sampler, "_batch_size", 0) or 0),
            "batches": len(sampler) if sampler is not None and hasattr(sampler, "__len__") else None,
            "dataset": _dataset_name(ds),
            "batchify": getattr(getattr(loader, "_batchify_fn", None), "__name__", "?"),
        }

    def next_batch(self, feed: Feed) -> Any:
        if self.training is None or feed.index != self.training:
            if self.training is not None:
                self.break_step()  # an evaluation loader's batch: the step in progress is not counted
                if self.eval_since is None:
                    self.eval_since = perf_counter()
            batch = next(feed.real)
            self.last_loader = feed.index
            if self.training is None:
                self.last_samples = _samples(batch, self.batch_size(feed.loader))
            return batch
        loader = feed.loader
        self.end_eval()
        if self.mode == "cached_batch" and self.cached is not None:
            t0 = perf_counter()
            batch = self.cached
            # the same barrier as below: without it nothing in a script that never reads a value back waits
            # for its step to compute, and the probe would time how fast Python queues the engine's work
            nd.waitall()
            fetch_s = perf_counter() - t0
        elif self.mode == "loader_only" and self.slice is not None:
            batch = self.loader_only(feed)
            self.on_handout(batch, 0.0, loader)
            return batch
        else:
            t0 = perf_counter()
            try:
                batch = next(feed.real)
            except StopIteration:
                self.break_step()
                raise
            nd.waitall()
            fetch_s = perf_counter() - t0
            if self.profiling:
                profiler_hooks.mark_wait(t0, t0 + fetch_s)
        self.on_handout(batch, fetch_s, loader)
        return batch

    def loader_only(self, feed: Feed) -> Any:
        """The loader alone for one slice: batches pulled back to back, no step; the last one goes to the script."""
        s = self.slice
        assert s is not None
        fallback = self.batch_size(feed.loader)
        last = None
        # the script's last step before the switch (left out: the switch broke it) may still be computing in
        # MXNet's engine threads: without this barrier the slice's first batch would wait for it and time the model
        nd.waitall()
        try:
            while True:
                t0 = perf_counter()
                last = next(feed.real)
                nd.waitall()
                dt = perf_counter() - t0
                if s.skip > 0:
                    s.skip -= 1
                    if s.skip == 0 and not s.t0:
                        s.t0 = perf_counter()
                    continue
                s.block.append((dt, _samples(last, fallback), dt))
                if len(s.block) >= s.k:
                    s.blocks.append(s.block)
                    s.block = []
                    if perf_counter() - s.t0 >= s.round_s:
                        break
        except StopIteration:
            self.break_step()
            self.next_slice()
            raise
        self.break_step()
        self.next_slice()
        return last

    def batch_size(self, loader: Any) -> int:
        return int(getattr(getattr(loader, "_batch_sampler", None), "_batch_size", 0) or 1)

    def end_eval(self) -> None:
        if self.eval_since is not None:
            self.eval_s += perf_counter() - self.eval_since
            self.eval_since = None

    def epoch_start(self, feed: Feed) -> None:
        self.iter_t.setdefault(feed.index, perf_counter())
        if self.training is not None and feed.index == self.training:
            self.end_eval()
            self.epochs += 1
            self.break_step()
            if self.slice is not None:
                self.slice.skip = self.slice.skip0  # a new epoch's workers start with an empty queue

    # -- the step boundary ------------------------------------------------------------------------------------
    def on_update(self, trainer: Any) -> None:
        if self.training is None:
            if self.last_loader is None:
                self.updates_without_batch += 1
                if self.updates_without_batch == ERROR_UPDATES:
                    self.send({"ev": "error", "what": "no_loader"})
            elif self.wanted is None or self.last_loader == self.wanted:
                self.identify(self.last_loader, trainer)
        if self.training is not None and self.last_loader == self.training:
            self.updates += 1
            self.last_update_t = perf_counter()
        self.updated = True

    def identify(self, index: int, trainer: Any) -> None:
        self.training = index
        self.phase = "warmup"
        self.epochs = 1
        self.train_samples = self.last_samples  # the batch of the update that identified it
        if self.to_end:  # every step of the run is counted as it comes; the totals are sent when the script ends
            self.phase, self.count_left = "count", -1
            self.counted = new_count()
        self.break_step()
        self.contexts = sorted({str(c) for c in getattr(trainer, "_contexts", []) or []})
        ref = self.loaders.get(index)
        loader = ref() if ref is not None else None
        info = self.describe(loader, index) if loader is not None else {"index": index}
        self.send({"ev": "training", "loader": info, "contexts": self.contexts})

    def on_handout(self, batch: Any, fetch_s: float, loader: Any) -> None:
        n = _samples(batch, self.batch_size(loader))
        self.train_samples += n
        if self.updated and self.t_boundary is not None:
            now = perf_counter()
            if self.profiling:
                profiler_hooks.mark_step(self.t_boundary, now, self.pending_wait + fetch_s)
            self.step_done(now - self.t_boundary, self.pending_samples, self.pending_wait + fetch_s, batch)
        if self.updated or self.t_boundary is None:
            self.updated = False
            self.t_boundary = perf_counter()  # after step_done: its wait for the next round is not a step's
            self.pending_samples, self.pending_wait = 0, 0.0
        else:
            self.pending_wait += fetch_s
        self.pending_samples += n
        if self.phase == "warmup" and self.cached is None and self.mode == "full":
            self.cached = _host_copy(batch)

    def break_step(self) -> None:
        self.t_boundary = None
        self.updated = False
        self.pending_samples, self.pending_wait = 0, 0.0
        if self.slice is not None:
            self.slice.block = []

    def step_done(self, seconds: float, samples: int, wait: float, batch: Any) -> None:
        if samples <= 0:
            return
        if self.phase == "warmup":
            self.warm.append((seconds, samples))
            # the first step found the loader's queue as it was; then WARMUP_STEPS and WARMUP_S of steady steps
            if len(self.warm) >= WARMUP_STEPS + 1 and sum(s for s, _ in self.warm[1:]) >= WARMUP_S:
                steady = self.warm[1:]
                self.phase = "wait"
                self.send(
                    {
                        "ev": "ready",
                        "step_s": statistics.median(s for s, _ in steady),
                        "samples": int(statistics.median(n for _, n in steady)),
                    }
                )
                self.await_round()
            return
        if self.phase == "count":
            self.add_count(seconds, samples, wait)
            self.count_left -= 1
            if self.count_left == 0:
                self.phase = "wait"
                self.send(self.count_message())
                self.await_round()
            return
        s = self.slice
        if self.phase != "slice" or s is None:
            return
        if s.skip > 0:
            s.skip -= 1
            if s.skip == 0 and not s.t0:  # once: a new epoch's skip does not restart the slice's clock
                s.t0 = perf_counter()
            return
        s.block.append((seconds, samples, wait))
        if len(s.block) >= s.k:
            s.blocks.append(s.block)
            s.block = []
            if perf_counter() - s.t0 >= s.round_s:
                self.next_slice()

    def add_count(self, seconds: float, samples: int, wait: float) -> None:
        """One counted step (a sweep's run): the totals, and blocks of :data:`COUNT_BLOCK` steps."""
        c = self.counted
        c["seconds"] += seconds
        c["samples"] += samples
        c["steps"] += 1
        c["wait"] += min(wait, seconds)
        block = c["block"]
        block[0], block[1], block[2] = block[0] + seconds, block[1] + samples, block[2] + 1
        if block[2] >= COUNT_BLOCK:
            c["blocks"].append([block[0], block[1]])
            c["block"] = [0.0, 0, 0]

    def count_message(self) -> dict[str, Any]:
        c = self.counted
        return {"ev": "count", **{k: c[k] for k in ("seconds", "samples", "steps", "wait", "blocks")}}

    def finish(self) -> None:
        """The script ended by itself: with ``to_end``, the whole run's training figures (``end``)."""
        if not self.to_end or self.training is None:
            return
        t0 = self.iter_t.get(self.training)
        train_s = (self.last_update_t - t0 - self.eval_s) if t0 is not None and self.last_update_t else 0.0
        message = self.count_message() if self.counted else {}
        message.update(
            ev="end",
            train_s=max(train_s, 0.0),
            eval_s=self.eval_s,
            train_samples=self.train_samples,
            updates=self.updates,
            epochs=self.epochs,
        )
        try:
            self.send(message)
        except OSError:  # gluonbench is gone: nobody to tell
            pass

    # -- the schedule -----------------------------------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> None:
        if self.channel is not None:
            self.channel.send(message)

    def await_round(self) -> None:
        """Block until the parent sends the next round (or stop: the process ends here, at once)."""
        if self.channel is None:
            return
        message = self.channel.recv()
        if message is not None and message.get("op") == "count":  # a sweep run: time the next N steps as they are
            self.phase, self.count_left = "count", int(message["steps"])
            self.counted = new_count()
            return
        if message is None or message.get("op") != "round":
            os._exit(0)  # the parent stops the run: it ends the process group and cleans up after it
        self.round = int(message["n"])
        self.plan = [tuple(p) for p in message["plan"]]  # type: ignore[misc]
        self.deadline = perf_counter() + float(message.get("left_s", 1e9))
        self.results, self.systems = {}, {}
        self.phase = "slice"
        self.start_slice()

    def start_slice(self) -> None:
        if perf_counter() >= self.deadline:  # the budget is spent: the probes not yet run sit this round out
            self.plan = []
            self.slice = Slice("", 0.0, 1, 0)
            self.next_slice()
            return
        probe, round_s, k, skip = self.plan.pop(0)
        self.slice = Slice(probe, float(round_s), max(1, int(k)), int(skip), skip=int(skip))
        if not skip:  # nothing to leave out: the slice's clock starts now
            self.slice.t0 = perf_counter()
        # psutil evidence of this process tree (the script and its loader workers) over the slice, as Rounds keeps
        self.monitor = SystemMonitor(interval=0.5, memory_due=self.memory_due, edges_only=True).start()
        self.set_mode(probe)
        if probe != "loader_only":
            self.break_step()  # the step in progress ran in the mode before

    def next_slice(self) -> None:
        s = self.slice
        if s is None:
            return
        if s.probe:
            self.results[s.probe] = s.blocks
        if self.monitor is not None:
            self.systems[s.probe] = self.monitor.stop(memory=None).to_dict()
            self.memory_due, self.monitor = self.monitor.memory_due, None
        self.slice = None
        if self.plan:
            self.start_slice()
            return
        self.set_mode("full")
        self.phase = "wait"
        self.send({"ev": "round", "n": self.round, "results": self.results, "systems": self.systems})
        self.await_round()

    def set_mode(self, probe: str) -> None:
        self.mode = probe
        if self.flags is not None and self.training is not None and self.training < SLOTS:
            self.flags[self.training] = DATASET_MODES.get(probe, 0)


class Feed:
    """What ``iter(loader)`` returns in the script: the loader's own iterator, handed out through the driver."""

    def __init__(self, loader: Any, driver: Driver, real: Any) -> None:
        self.loader, self.driver, self.real = loader, driver, real
        self.index = getattr(loader, "_gluonbench_index", -1)
        driver.epoch_start(self)

    def __iter__(self) -> Feed:
        return self

    def __next__(self) -> Any:
        return self.driver.next_batch(self)


KNOB_AT = {"num_workers": 7, "pin_memory": 8, "prefetch": 10, "thread_pool": 11}
"""each overridable knob's place among DataLoader's positional arguments after ``self`` (MXNet 1.9's signature:
dataset, batch_size, shuffle, sampler, last_batch, batch_sampler, batchify_fn, num_workers, pin_memory,
pin_device_id, prefetch, thread_pool, ...). ``batch_size`` is not among them: a script's learning rate, its
``trainer.step(batch_size)``, a ``batch_sampler`` or shapes it assumes depend on it, so it is never overridden."""


def override(args: tuple[Any, ...], kwargs: dict[str, Any], knobs: dict[str, Any]) -> tuple[Any, ...]:
    """``args`` and ``kwargs`` (in place) of a ``DataLoader(...)`` call with ``knobs`` set, wherever the script passed
    them (positionally or by name); the new ``args``."""
    unknown = set(knobs) - set(KNOB_AT)
    if unknown:
        raise ValueError(f"not an overridable DataLoader knob: {', '.join(sorted(unknown))}")
    out = list(args)
    for name, value in knobs.items():
        at = KNOB_AT[name]
        if len(out) > at:
            out[at] = value
        else:
            kwargs[name] = value
    return tuple(out)


def install(
    channel: Channel | None,
    flags: str | None,
    wanted: int | None,
    workers: tuple[int, int] | None = None,
    to_end: bool = False,
    knobs: tuple[int, dict[str, Any]] | None = None,
) -> Driver:
    """Patch ``gluon.data.DataLoader`` and ``gluon.Trainer`` in this process; the driver that the hooks report to.

    ``workers``: ``(N, W)`` makes the N-th DataLoader with ``num_workers=W``, as if the script said so (MXNet
    then picks its batchify and prefetch defaults for W itself). ``knobs``: ``(N, {knob: value})`` makes the N-th
    DataLoader with those knobs (:data:`KNOB_AT`: num_workers, thread_pool, prefetch, pin_memory). ``to_end``: every training step is counted and
    the run's totals are sent when the script ends (:meth:`Driver.finish`), nothing is swapped or waited for.
    """
    driver = Driver(channel, flags, wanted, to_end)
    loader_cls = gluon.data.DataLoader
    trainer_cls = gluon.Trainer
    real_init, real_iter = loader_cls.__init__, loader_cls.__iter__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        index = driver.new_loader()
        if flags is not None and index < SLOTS:
            if args:
                args = (Switch(args[0], flags, index), *args[1:])
            elif "dataset" in kwargs:
                kwargs["dataset"] = Switch(kwargs["dataset"], flags, index)
        if workers is not None and index == workers[0]:
            args = override(args, kwargs, {"num_workers": workers[1]})
        if knobs is not None and index == knobs[0]:
            args = override(args, kwargs, knobs[1])
        real_init(self, *args, **kwargs)
        self._gluonbench_index = index
        driver.loaders[index] = weakref.ref(self)  # never keeps a loader (its workers) alive
        if index <= ERROR_UPDATES:  # what the script reached, for the message of a start that times out
            driver.send({"ev": "loader", "index": index})

    def hook_iter(real: Any) -> Any:
        """``real`` (DataLoader's or a subclass's own ``__iter__``) handing out through the driver; only the
        outermost ``__iter__`` of the loader's class does, so a subclass that calls ``super().__iter__()`` is fed
        once."""

        def iterate(self: Any) -> Any:
            if type(self).__iter__ is not iterate:  # an override of the subclass wraps this call
                return real(self)
            return Feed(self, driver, iter(real(self)))

        iterate.__doc__, iterate.__name__ = real.__doc__, "__iter__"
        iterate._gluonbench_hook = True  # type: ignore[attr-defined]
        return iterate

    def hook_subclass(cls: type) -> None:
        """A DataLoader subclass with its own ``__iter__`` (defined after the hooks): wrap it as the base's is."""
        owner = next(c for c in cls.__mro__ if "__iter__" in c.__dict__)
        if owner is not loader_cls and not getattr(owner.__dict__["__iter__"], "_gluonbench_hook", False):
            owner.__iter__ = hook_iter(owner.__dict__["__iter__"])

    real_init_checked = init

    def init_any(self: Any, *args: Any, **kwargs: Any) -> None:
        if type(self) is not loader_cls:
            hook_subclass(type(self))
        real_init_checked(self, *args, **kwargs)

    init_any.__doc__ = real_init.__doc__
    loader_cls.__init__, loader_cls.__iter__ = init_any, hook_iter(real_iter)

    for name in ("step", "update", "allreduce_grads"):
        real = getattr(trainer_cls, name)

        def hooked(self: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            out = _real(self, *args, **kwargs)
            driver.on_update(self)
            return out

        hooked.__name__, hooked.__doc__ = name, real.__doc__
        setattr(trainer_cls, name, hooked)
    return driver
