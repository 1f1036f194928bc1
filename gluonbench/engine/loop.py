"""The one timer: split each training step's wall time into input wait, copy and compute.

The loop keeps the seed's own synchronisation: fetch the next batch, start the
host-to-device copy, ``nd.waitall()`` (the seed's barrier, which finishes the
previous step), then dispatch forward/backward/update. Timestamps are taken at
those points only, and the overlap MXNet's async engine gives is kept (the
previous step computes while the next batch is fetched). One wait is added: the
host batch itself is waited for before the copy starts (issue #18, G2), because
a zero-worker or thread-pool loader hands over a batch whose NDArray transform
and ``nd.stack`` are still queued (on every device but ``cpu(0)``, see below).

Per step ``i``:

* ``wait``    time blocked in ``next(loader)`` plus the wait for the host batch's
  queued work (input pipeline: read, decode, preprocess, batchify, or waiting
  on workers);
* ``copy``    the host-to-device copy (``as_in_context``); on a GPU context it
  is waited for (``wait_to_read``) so the figure is the real copy time, on CPU
  it is the dispatch only;
* ``compute`` the model step's dispatch plus the barrier at the start of step
  ``i + 1`` (or the final barrier) that waits for it to finish. On ``cpu(0)``,
  where the loader's queued work and the step share MXNet's one CPU worker
  queue and cannot be told apart, the batch is not waited for: async work left
  over from a zero-worker transform finishes in that barrier (before the first
  step, that barrier is counted as the first batch's wait). Diagnose on
  ``cpu(1)`` (``ctx=mx.cpu(1)``, ``--ctx cpu:1``) to separate them on a CPU.

The sum over steps equals the loop's wall time. The same loop serves every
probe: a different ``batches`` iterable swaps the input stages, the pipeline's
declared copy stage (:class:`gluonbench.pipeline.Copy`, ``NoCopy`` for a batch
already on the device, ``Split`` for a data-parallel step) runs between the
``wait`` and ``compute`` timestamps, ``step=None`` swaps out the model.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from time import perf_counter
from typing import Any

Step = Callable[[Any, Any], Any]

BLOCKS = 6
"""The steady steps of a run are cut into this many consecutive blocks for its within-run spread
(:meth:`StepTimes.block_rates`: a sweep's best count, ``gluonbench compare`` of single runs)."""
BLOCK_MIN_STEPS = 2
"""Steps per block at least: a run with fewer steady steps than ``BLOCKS x BLOCK_MIN_STEPS`` gives no blocks."""


@dataclass
class StepTimes:
    """Per-step wall-time split of one pass of :func:`run_steps` (seconds)."""

    wait: list[float] = field(default_factory=list)
    copy: list[float] = field(default_factory=list)
    compute: list[float] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.wait)

    def extend(self, other: StepTimes) -> None:
        self.wait += other.wait
        self.copy += other.copy
        self.compute += other.compute
        self.samples += other.samples

    def part(self, start: int, stop: int) -> StepTimes:
        """Steps ``start`` to ``stop - 1``."""
        return StepTimes(
            self.wait[start:stop], self.copy[start:stop], self.compute[start:stop], self.samples[start:stop]
        )

    def step(self, i: int) -> float:
        return self.wait[i] + self.copy[i] + self.compute[i]

    def steps(self, skip: int = 0) -> list[float]:
        return [self.step(i) for i in range(skip, len(self))]

    def total(self) -> float:
        return sum(self.wait) + sum(self.copy) + sum(self.compute)

    def split(self, skip: int = 1) -> StepSplit:
        """Steady-state summary: the first ``skip`` steps (worker start-up, warm-up) left out."""
        skip = min(skip, max(len(self) - 1, 0))
        steps = self.steps(skip)
        wait, copy, compute = sum(self.wait[skip:]), sum(self.copy[skip:]), sum(self.compute[skip:])
        total = wait + copy + compute
        samples = sum(self.samples[skip:])
        ordered = sorted(steps)
        return StepSplit(
            steps=len(steps),
            samples=samples,
            total_s=total,
            wait_s=wait,
            copy_s=copy,
            compute_s=compute,
            wait_frac=wait / total if total > 0 else 0.0,
            median_step_s=statistics.median(steps) if steps else 0.0,
            p95_step_s=ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0,
            samples_per_s=samples / total if total > 0 else 0.0,
            first_batch_s=self.wait[0] if len(self) else 0.0,
            block_samples_per_s=self.block_rates(skip),
        )

    def block_rates(self, skip: int = 1, blocks: int = BLOCKS, min_steps: int = BLOCK_MIN_STEPS) -> list[float]:
        """Samples/s of each of ``blocks`` consecutive blocks of the steady steps (the first ``skip`` left out): the
        spread within one run. ``[]`` with fewer than ``min_steps`` steps a block."""
        steps, samples = self.steps(skip), self.samples[skip:]
        n = len(steps)
        if n < blocks * min_steps:
            return []
        out: list[float] = []
        for b in range(blocks):
            lo, hi = b * n // blocks, (b + 1) * n // blocks
            t = sum(steps[lo:hi])
            if t > 0:
                out.append(sum(samples[lo:hi]) / t)
        return out


@dataclass
class StepSplit:
    """Steady-state totals and rates of a :class:`StepTimes`."""

    steps: int
    samples: int
    total_s: float
    wait_s: float
    copy_s: float
    compute_s: float
    wait_frac: float
    median_step_s: float
    p95_step_s: float
    samples_per_s: float
    first_batch_s: float
    block_samples_per_s: list[float] = field(default_factory=list)
    """samples/s of each block of consecutive steady steps (:meth:`StepTimes.block_rates`)"""

    def to_dict(self) -> dict:
        return asdict(self)


def run_steps(
    batches: Iterable[tuple[Any, Any]],
    copy: Any,
    step: Step | None,
    max_steps: int | None = None,
    sync_copy: bool | None = None,
    on_step: Callable[[int], None] | None = None,
    until: Callable[[int], bool] | None = None,
    last: Callable[[int], bool] | None = None,
) -> StepTimes:
    """Run up to ``max_steps`` steps of ``step(data, label)`` over ``batches``.

    ``copy`` is the pipeline's copy stage (:class:`gluonbench.pipeline.Copy`, :class:`~gluonbench.pipeline.NoCopy`
    or :class:`~gluonbench.pipeline.Split`), called between the ``wait`` and ``compute`` timestamps; an MXNet
    context stands for ``copy_stage(ctx, step, sync_copy)`` (a plain copy there, or the split of a step that
    splits its batch). ``step=None`` measures the input pipeline alone (loader-only probe); the barrier still
    runs so async loader work is counted. ``sync_copy`` defaults to True on GPU contexts (see module docstring).

    ``until(n)``, asked after each step ``n`` (1, 2, ...), ends the pass when it returns True. A pass ends with a
    barrier that waits for its last step, so the next batch is not fetched while that step computes: measure
    many steps in one pass (and split its :class:`StepTimes` afterwards), not one pass per few steps, or the
    overlap of loading with compute that training has is lost.

    ``last(n)``, asked after each step ``n``, ends the pass at the barrier that ends step ``n`` when it returns
    True: the next batch is fetched (and copied) while step ``n`` computes, as in training, and the pass stops
    there without running a step on it. Step ``n`` is then timed as every other step, where ``until`` would run
    one more step whose time the final barrier distorts.
    """
    from gluonbench._mx import nd
    from gluonbench.pipeline.stages import copy_stage

    copy = copy_stage(copy, step, sync_copy)
    times = StepTimes()
    it = iter(batches)
    n = 0
    # the host batch is waited for where it has its own worker queue (G2); see _shares_queue
    wait_host = not _shares_queue(copy.ctx)
    ending = False
    while max_steps is None or n < max_steps:
        t0 = perf_counter()
        try:
            data, label = next(it)
        except StopIteration:
            if n:
                times.wait[-1] += perf_counter() - t0
            break
        # the host batch itself (a zero-worker or thread-pool loader hands it over with its transform and
        # batchify still queued): waited for before the copy timestamp, so that work is input wait (G2)
        if wait_host:
            _wait_host(data)
            _wait_host(label)
        tb = perf_counter()
        # the copy stage: as_in_context (waited for on a GPU); none for a batch already on the device; the
        # batch left in place for a step that splits it onto its devices after the barrier (G4)
        data, label = copy(data, label)
        t2 = perf_counter()
        nd.waitall()
        t3 = perf_counter()
        barrier = t3 - t2
        if n:
            times.compute[-1] += barrier
        if ending:
            return times  # the barrier ended step n; no step runs on the batch fetched beside it
        if step is not None:
            step(data, label)
        t4 = perf_counter()
        # before the first step the barrier only waits for the first batch's own async work
        times.wait.append(tb - t0 + (0.0 if n else barrier))
        times.copy.append(t2 - tb)
        times.compute.append(t4 - t3)
        times.samples.append(int(data.shape[0]))
        n += 1
        if on_step is not None:
            on_step(n)
        if until is not None and until(n):
            break
        ending = last is not None and last(n)
    t5 = perf_counter()
    nd.waitall()
    if n:
        times.compute[-1] += perf_counter() - t5
    return times


def _wait_host(array: Any) -> None:
    wait = getattr(array, "wait_to_read", None)
    if wait is not None:
        wait()


def _shares_queue(ctx: Any) -> bool:
    """True when ``ctx`` is ``cpu(0)``, the device the loader builds host batches on.

    MXNet runs each CPU device's ops on its own worker queue (one thread by default), and an op enters
    it as soon as its inputs are ready: there the host batch's queued transform and the step's ops are
    interleaved, so waiting for the batch would also wait for part of the step. On ``cpu(0)`` the batch
    is therefore not waited for (its leftover work finishes in the barrier, as before); on any other
    device (a GPU, ``cpu(1)``) the two run side by side and the wait is the batch's own.
    """
    return getattr(ctx, "device_type", "cpu") == "cpu" and getattr(ctx, "device_id", 0) == 0
