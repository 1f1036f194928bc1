"""The one timer: split each training step's wall time into input wait, copy and compute.

The loop keeps the seed's own synchronisation: fetch the next batch, start the
host-to-device copy, ``nd.waitall()`` (the seed's barrier, which finishes the
previous step), then dispatch forward/backward/update. Timestamps are taken at
those points only, so gluonbench adds no synchronisation the seed's loop lacks
and keeps the overlap MXNet's async engine gives (the previous step computes
while the next batch is fetched).

Per step ``i``:

* ``wait``    time blocked in ``next(loader)`` (input pipeline: read, decode,
  preprocess, batchify, or waiting on workers);
* ``copy``    the host-to-device copy (``as_in_context``); on a GPU context it
  is waited for (``wait_to_read``) so the figure is the real copy time, on CPU
  it is the dispatch only;
* ``compute`` the model step's dispatch plus the barrier at the start of step
  ``i + 1`` (or the final barrier) that waits for it to finish. Async work left
  over from a zero-worker transform also finishes in that barrier (before the
  first step, that barrier is counted as the first batch's wait).

The sum over steps equals the loop's wall time. The same loop serves every
probe: a different ``batches`` iterable swaps the input stages, ``step=None``
swaps out the model.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from time import perf_counter
from typing import Any

Step = Callable[[Any, Any], Any]


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
        )


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

    def to_dict(self) -> dict:
        return asdict(self)


def run_steps(
    batches: Iterable[tuple[Any, Any]],
    ctx: Any,
    step: Step | None,
    max_steps: int | None = None,
    sync_copy: bool | None = None,
    on_step: Callable[[int], None] | None = None,
) -> StepTimes:
    """Run up to ``max_steps`` steps of ``step(data, label)`` over ``batches``.

    ``step=None`` measures the input pipeline alone (loader-only probe); the
    barrier still runs so async loader work is counted. ``sync_copy`` defaults
    to True on GPU contexts (see module docstring).
    """
    from gluonbench._mx import nd

    if sync_copy is None:
        sync_copy = getattr(ctx, "device_type", "cpu") == "gpu"
    times = StepTimes()
    it = iter(batches)
    n = 0
    while max_steps is None or n < max_steps:
        t0 = perf_counter()
        try:
            data, label = next(it)
        except StopIteration:
            if n:
                times.wait[-1] += perf_counter() - t0
            break
        t1 = perf_counter()
        data = data.as_in_context(ctx)
        label = label.as_in_context(ctx)
        if sync_copy:
            data.wait_to_read()
            label.wait_to_read()
        t2 = perf_counter()
        nd.waitall()
        t3 = perf_counter()
        barrier = t3 - t2
        if n:
            times.compute[-1] += barrier
        if step is not None:
            step(data, label)
        t4 = perf_counter()
        # before the first step the barrier only waits for the first batch's own async work
        times.wait.append(t1 - t0 + (0.0 if n else barrier))
        times.copy.append(t2 - t1)
        times.compute.append(t4 - t3)
        times.samples.append(int(data.shape[0]))
        n += 1
        if on_step is not None:
            on_step(n)
    t5 = perf_counter()
    nd.waitall()
    if n:
        times.compute[-1] += perf_counter() - t5
    return times


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


def evaluate_accuracy(
    batches: Iterable[tuple[Any, Any]], net: Any, ctx: Any, max_batches: int | None = None
) -> tuple[float, int]:
    """The seed's evaluation: argmax accuracy; returns (accuracy, samples seen)."""
    step = EvalStep(net)
    for i, (data, label) in enumerate(batches):
        if max_batches is not None and i >= max_batches:
            break
        step(data.as_in_context(ctx), label.as_in_context(ctx))
    return step.accuracy, step.seen
