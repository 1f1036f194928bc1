"""``measure(pipelines, schedule)``: the one way gluonbench runs a pipeline and times it.

A sweep run, every diagnose probe and every io cell is a :class:`~gluonbench.pipeline.Pipeline`
(with some stages swapped) handed to :func:`measure` with a schedule:

* :class:`Epochs` runs one pipeline for whole epochs (or ``max_steps``), as training does: a sweep
  run, an io cell;
* :class:`Rounds` runs several pipelines in *interleaved rounds* until each one's median (or each of
  ``converge_on``'s) is known within ``rel_ci`` and the caller's checks hold, or the budget is spent: the
  diagnose probes.

Every step of every schedule is timed by :func:`gluonbench.engine.loop.run_steps`, the one timer.
Every pipeline opened here is closed before :func:`measure` returns, whatever happens.

**Rounds: steady state.** Each pipeline first runs a few warm-up steps (worker start-up,
memory allocation, hybridization), which are left out. Pipelines then take turns (the order
rotates each round; ``Rounds(order="pairs")`` keeps ``full`` beside ``cached_batch`` instead), so a change in the machine's background load hits every pipeline alike. A
loader keeps its workers between rounds; when a round resumes, the first ``prefetch + 1`` steps
are dropped (they find batches prefetched while the pipeline was paused), and after a round the
pipeline waits until its loader's prefetched batches are done, so no worker keeps computing into
the next pipeline's round. A round is one continuous pass of the timer, so loading the next batch
overlaps the current step's compute as in training; the pass ends at the barrier that ends its last
measured step, once the next batch is fetched, and runs no step on that batch (a step run there
would end with nothing fetched beside it, which training never does). Timing each block
in a pass of its own loses that overlap and adds the loading time to every step: the diagnose
probes then found one reused batch up to 1.28x faster on the seed's MNIST where a plain training
loop found 1.10x (issue 17).

**Rounds: statistic.** A round's steady steps are cut into *blocks* of consecutive steps: at least
``workers`` steps (batches from parallel workers arrive in bursts) and at least ``block_s``
seconds. A block's value is its seconds per sample. A pipeline's figure is the median over blocks
with the distribution-free 95 % CI of that median (:func:`gluonbench.analysis.stats.median_ci`).
Each pipeline's throughput in each round is kept too (``Record.per_round``: the round's steady step
seconds over its samples, so a slow step counts as it does in training): pipelines compared
round by round see the same background load, which is how the diagnose shares are computed
(:func:`gluonbench.diagnosis.verdict.paired_timings`).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from gluonbench.analysis.stats import median, median_ci
from gluonbench.engine.deadline import BudgetExceededError, pipeline_fault
from gluonbench.engine.loop import StepTimes, run_steps
from gluonbench.errors import GluonbenchError
from gluonbench.monitor import SystemMonitor, SystemSummary, TreeUsage, merge_summaries, tree_usage
from gluonbench.monitor.system import delay_accounting
from gluonbench.pipeline import Pipeline, Running

log = logging.getLogger(__name__)


@dataclass
class Record:
    """What :func:`measure` found for one pipeline."""

    name: str
    times: StepTimes = field(default_factory=StepTimes)
    """every measured step (warm-up and dropped steps excluded)"""
    epochs: list[StepTimes] = field(default_factory=list)
    """per epoch (:class:`Epochs`)"""
    blocks: list[float] = field(default_factory=list)
    """seconds per sample of each block (:class:`Rounds`)"""
    per_round: dict[int, float] = field(default_factory=dict)
    """:class:`Rounds`: round number -> median seconds per sample of this pipeline's blocks in that round"""
    cpu_per_round: dict[int, float] = field(default_factory=dict)
    """:class:`Rounds`: round number -> CPU seconds per sample of the process tree (this process and its
    loader workers) over this pipeline's blocks in that round; less sensitive to neighbours than wall time"""
    usage_per_round: dict[int, Window] = field(default_factory=dict)
    """:class:`Rounds`: round number -> what the process tree used over this pipeline's measured steps in that
    round (:class:`Window`: CPU user and system, storage bytes read, time blocked on I/O, wall time, samples)"""
    block_steps: int = 0
    rounds: int = 0
    open_s: float = 0.0
    """seconds to start the loader stage (worker pool, stream)"""
    systems: list[SystemSummary] = field(default_factory=list)
    est_step_s: float = math.nan
    memory_due: float = 0.0
    """:class:`Rounds`: when the next memory (PSS) sample of this pipeline's rounds is due (it costs milliseconds a
    process: two at every round took a sixth of a diagnosis)"""

    @property
    def s_per_sample(self) -> float:
        return median(self.blocks)  # nan when there is no block

    @property
    def s_per_sample_ci(self) -> tuple[float, float]:
        return median_ci(self.blocks) if self.blocks else (math.nan, math.nan)

    @property
    def rel_half_width(self) -> float:
        lo, hi = self.s_per_sample_ci
        m = self.s_per_sample
        return (hi - lo) / 2 / m if m > 0 else math.inf

    @property
    def system(self) -> SystemSummary:
        return merge_summaries(self.systems)

    @property
    def usage(self) -> Window:
        """What the process tree used over every measured round of this pipeline, added up."""
        total = Window(TreeUsage(blkio_reported=bool(self.usage_per_round)))
        for w in self.usage_per_round.values():
            total = total + w
        return total


@dataclass(frozen=True)
class Window:
    """The process tree's :class:`~gluonbench.monitor.TreeUsage` over a measured window, its wall time and the
    samples it trained on: the evidence that names what a stage spends its time on."""

    used: TreeUsage
    wall_s: float = 0.0
    samples: int = 0

    def __add__(self, other: Window) -> Window:
        return Window(self.used + other.used, self.wall_s + other.wall_s, self.samples + other.samples)

    def per_sample(self) -> dict[str, Any]:
        """Each figure per sample trained on (seconds, bytes); ``blkio_s`` None where the kernel does not report it."""
        n = self.samples
        u = self.used
        if n <= 0:
            return {}
        return {
            "samples": n,
            "wall_s": self.wall_s / n,
            "cpu_s": u.cpu_s / n,
            "user_s": u.user_s / n,
            "system_s": u.system_s / n,
            "runq_s": u.runq_s / n,
            "read_bytes": u.read_bytes / n,
            "blkio_s": u.blkio_s / n if u.blkio_reported else None,
            "processes": u.processes,
        }


@dataclass
class Measurement:
    """The records of one :func:`measure` call and how it ended."""

    records: dict[str, Record]
    elapsed_s: float = 0.0
    stop_reason: str = "done"
    """``done`` (Epochs), ``converged``, ``budget``, ``stalled in <stage>`` or ``failed in <stage>`` (Rounds; the last
    two only on a :class:`~gluonbench.engine.deadline.BudgetExceededError` or its
    :class:`~gluonbench.engine.deadline.PipelineFaultError`, which carry this measurement)"""
    rounds: int = 0
    startup_s: float = 0.0
    settled_s: float | None = None
    """Rounds: elapsed seconds from which the caller's ``settled`` check held to the end"""


@dataclass(frozen=True)
class Epochs:
    """Run one pipeline for ``epochs`` epochs, at most ``max_steps`` steps in all (training, an io cell)."""

    epochs: int = 1
    max_steps: int | None = None
    on_step: Callable[[int], None] | None = None
    """called with the number of steps done so far, after each step"""
    wrap: Callable[[Any], Any] | None = None
    """wraps each epoch's batches (e.g. a stall watchdog's ``watch``); the epoch itself is still closed"""

    def run(self, opened: Mapping[str, Running], **_: Any) -> Measurement:
        t0 = perf_counter()
        records = {}
        for name, running in opened.items():
            rec = Record(name, open_s=running.open_s)
            for epoch in range(self.epochs):
                left = None if self.max_steps is None else self.max_steps - len(rec.times)
                if left is not None and left <= 0:
                    break
                done = len(rec.times)
                on_step = None if self.on_step is None else (lambda n, done=done: self.on_step(done + n))
                batches = running.epoch(epoch)
                if running.repeats and left is None:
                    raise ValueError(f"{name}: a repeated batch has no epoch end; give max_steps")
                fed = batches if self.wrap is None else self.wrap(batches)
                try:
                    copy, step = running.pipeline.copy_stage, running.pipeline.step
                    times = run_steps(fed, copy, step, max_steps=left, on_step=on_step)
                finally:
                    getattr(batches, "close", lambda: None)()  # a stream stopped early lets go of its input
                rec.epochs.append(times)
                rec.times.extend(times)
            records[name] = rec
        return Measurement(records, perf_counter() - t0, "done")


ROUND_ORDERS = ("rotate", "pairs")
HEADLINE_PAIR = ("full", "cached_batch")
"""the two pipelines whose ratio is the diagnosis's headline (one reused batch against the pipeline as given)"""


def paired_order(names: Sequence[str], pair: tuple[str, str] = HEADLINE_PAIR) -> list[str]:
    """``names`` (in chain order) rearranged so that ``pair`` runs side by side and each chain neighbour of its
    first member stays beside it: the names between the two go before the first, nearest first.

    ``full, no_preprocess, no_read, cached_batch, loader_only`` becomes ``no_read, no_preprocess, full,
    cached_batch, loader_only``: full beside no_preprocess (the preprocessing pair) and beside cached_batch (the
    headline), cached_batch beside loader_only (the loader's bound). Names without both of ``pair`` keep their
    order.
    """
    first, second = pair
    if first not in names or second not in names or names.index(first) > names.index(second):
        return list(names)
    a, b = names.index(first), names.index(second)
    return [*names[:a], *reversed(names[a + 1 : b]), first, second, *names[b + 1 :]]


def round_order(base: Sequence[str], number: int, order: str = "rotate") -> list[str]:
    """The pipelines' order in round ``number`` (from 1).

    ``rotate``: ``base`` rotated by ``number`` places, so each pipeline goes first in turn (two pipelines then run
    at every distance from each other over the rounds). ``pairs``: ``base`` (already :func:`paired_order`) forward
    in odd rounds and reversed in even ones, so neighbours stay neighbours while no pipeline always runs first.
    """
    if order == "pairs":
        return list(base) if number % 2 else list(reversed(base))
    shift = number % len(base) if base else 0
    return [*base[shift:], *base[:shift]]


@dataclass(frozen=True)
class Rounds:
    """Interleaved rounds of several pipelines until each median (each of ``converge_on``'s) is known within
    ``rel_ci`` and the caller's checks hold, or the budget is spent."""

    budget_s: float = 60.0
    """wall-clock budget of the whole measurement (loader start-up and warm-up included)"""
    rel_ci: float = 0.05
    """stop when every pipeline's (every one of ``converge_on``'s) 95 % CI of the median is within +-rel_ci of it"""
    min_blocks: int = 6
    """blocks per pipeline before the CI is trusted"""
    block_s: float = 0.05
    """a block lasts at least this long"""
    round_s: float | None = None
    """measured time per pipeline per round (0: one block); default: budget / 240, at most 0.25 s. Short rounds
    give many rounds, each pairing the pipelines under the same background load; but each round also costs its
    pipeline the steps left out around its blocks (the loader's prefetched batches, a step in flight, one step
    after), and the figure of a round of one or two steps is mostly those edges' noise"""
    warmup_steps: int = 3
    """steps left out at the start of each pipeline (plus the loader's prefetch depth)"""
    monitor_interval: float = 0.5
    converge_on: frozenset[str] | None = None
    """the pipelines whose median must be known within ``rel_ci`` before the rounds stop early (None: every one);
    the others run in every round all the same"""
    order: str = "rotate"
    """the order of the pipelines within a round: ``rotate`` (each round starts one pipeline later than the one
    before) or ``pairs`` (``full`` right beside ``cached_batch`` and the chain's neighbours beside each other in
    every round, the rounds alternately forward and reversed): see :func:`round_order`"""

    def __post_init__(self) -> None:
        if self.order not in ROUND_ORDERS:
            raise GluonbenchError(f"Rounds order must be one of {', '.join(ROUND_ORDERS)} (got {self.order!r})")

    def round_seconds(self) -> float:
        """:attr:`round_s`, or its default for this budget."""
        return self.round_s if self.round_s is not None else min(0.25, self.budget_s / 240.0)

    def converged(self, records: Mapping[str, Record]) -> bool:
        """Every pipeline of :attr:`converge_on` has ``min_blocks`` blocks and its median within ``rel_ci``."""
        return all(
            len(r.blocks) >= self.min_blocks and r.rel_half_width <= self.rel_ci
            for name, r in records.items()
            if self.converge_on is None or name in self.converge_on
        )

    def run(
        self,
        opened: Mapping[str, Running],
        *,
        t_start: float,
        settled: Callable[[Measurement], bool] | None = None,
        on_progress: Callable[[float, float], None] | None = None,
        done: Callable[[Measurement], bool] | None = None,
    ) -> Measurement:
        """Run the rounds; stop when ``settled`` holds, every record converged and ``done`` agrees."""
        budget_end = t_start + self.budget_s
        records = {name: Record(name, open_s=r.open_s) for name, r in opened.items()}
        skips = {name: (r.skip if not r.repeats else 1) for name, r in opened.items()}
        min_steps = {name: max(1, r.pipeline.num_workers) if not r.repeats else 1 for name, r in opened.items()}
        startup_s = perf_counter() - t_start

        # warm-up: worker start-up, allocation, hybridization; then a first estimate of each step time
        # from the steps after the loader's prefetched batches are used up
        for name, r in opened.items():
            rec = records[name]
            skip, warmup = skips[name], max(self.warmup_steps, min_steps[name])
            t_warm: list[float] = []

            def warmed(n: int, skip: int = skip, warmup: int = warmup, t_warm: list[float] = t_warm) -> bool:
                if n == skip:
                    t_warm.append(perf_counter())
                now = perf_counter()
                return (n >= skip + warmup and now - t_warm[0] >= self.block_s) or (n > skip and now >= budget_end)

            times = run_steps(r.cycle(), r.pipeline.copy_stage, r.pipeline.step, until=warmed)
            warm = times.part(skip, len(times))
            rec.est_step_s = warm.total() / max(len(warm), 1)
            r.settle(max(1.0, 20 * rec.est_step_s))
        log.info(
            "warmed up in %.1f s; step estimates %s",
            perf_counter() - t_start,
            {k: f"{r.est_step_s * 1000:.1f} ms" for k, r in records.items()},
        )

        order = list(opened)
        base = paired_order(order) if self.order == "pairs" else order
        rounds = 0
        stop_reason = "budget"
        settled_s: float | None = None
        # each round gives every pipeline a slice of round_s (at least one block), small enough that two
        # rounds fit in the budget left after the warm-up
        left = budget_end - perf_counter()
        slice_s = min(self.round_seconds(), left / (2 * len(order)))
        measurement = Measurement(records, 0.0, "", 0, startup_s)
        kept = _sizes(records)  # also here: the alarm can fire before the loop's first statement
        try:
            while perf_counter() < budget_end:
                kept = _sizes(records)  # what the complete rounds hold, should this one stall
                rounds += 1
                for name in round_order(base, rounds, self.order):
                    if perf_counter() >= budget_end:
                        break
                    self._round(opened[name], records[name], skips[name], min_steps[name], slice_s, budget_end, rounds)
                    if on_progress is not None:
                        on_progress(perf_counter() - t_start, self.budget_s)
                measurement.elapsed_s, measurement.rounds = perf_counter() - t_start, rounds
                ok = settled is None or settled(measurement)
                settled_s = (settled_s if settled_s is not None else measurement.elapsed_s) if ok else None
                if ok and self.converged(records) and (done is None or done(measurement)):
                    stop_reason = "converged"
                    break
        except BudgetExceededError as exc:
            # a stage blocked past the deadline: the complete rounds go with the error, elapsed_s at the end of the
            # last of them; what the stalled round added (the pipelines that ran in it before the stall, the stalled
            # one's monitor window over the stall) is dropped. measure() closes the stalled loaders
            _cut(records, kept, rounds)
            measurement.stop_reason, measurement.settled_s = f"stalled in {exc.stage}", settled_s
            exc.measurement = measurement
            raise
        except Exception as exc:
            fault = pipeline_fault(exc)  # the user's code raised mid-run: one line, the complete rounds kept with it
            if fault is None:
                raise
            _cut(records, kept, rounds)
            measurement.stop_reason, measurement.settled_s = f"failed in {fault.stage}", settled_s
            fault.measurement = measurement
            raise fault from exc
        measurement.stop_reason, measurement.settled_s = stop_reason, settled_s
        measurement.elapsed_s = perf_counter() - t_start
        log.info("%d rounds in %.1f s, stopped on %s", rounds, measurement.elapsed_s, stop_reason)
        return measurement

    def _round(
        self, r: Running, rec: Record, skip: int, min_steps: int, round_s: float, deadline: float, number: int
    ) -> None:
        """One round of one pipeline: one pass of ``skip`` steps, then blocks of ``k`` steps for ``round_s``.

        The pass is continuous, so loading the next batch overlaps the current step's compute as in training.
        The ``skip`` steps (prefetched batches after a pause, and a step in flight) are left out. A step's time
        runs to the barrier that ends it, which comes after the next batch is fetched: the pass ends at the barrier
        of its last measured step, with the next batch fetched and no step run on it (``last`` of
        :func:`~gluonbench.engine.loop.run_steps`; a step run there would be waited for with nothing fetched
        beside it, which training never does, and was left out at the cost of a step a round).
        """
        k = max(min_steps, math.ceil(self.block_s / max(rec.est_step_s, 1e-6)))
        rec.block_steps = k
        monitor = SystemMonitor(interval=self.monitor_interval, memory_due=rec.memory_due, edges_only=True).start()
        cpu: dict[str, float] = {}
        end: dict[str, int] = {}
        used: dict[str, TreeUsage] = {}
        reported = delay_accounting()

        # the loader's workers as the monitor found them: tree_usage() reads their threads' clocks without a scan
        # of every process for descendants (milliseconds, twice a round)
        workers = [p for p in monitor.members if p.pid != os.getpid()]

        def mark(n: int) -> None:
            if n == skip:
                used["start"] = tree_usage(workers, reported)
                cpu["start"], cpu["t"] = used["start"].cpu_s, perf_counter()

        def last(n: int) -> bool:
            measured = n - skip
            if measured > 0 and measured % k == 0:
                now = perf_counter()
                if now - cpu["t"] >= round_s or now >= deadline:  # mark(skip) set it: measured > 0
                    end["n"] = n
                    used["end"] = tree_usage(workers, reported)
                    cpu["end"], cpu["t_end"] = used["end"].cpu_s, perf_counter()
                    return True
            return False

        try:
            times = run_steps(r.cycle(), r.pipeline.copy_stage, r.pipeline.step, on_step=mark, last=last)
        finally:
            rec.systems.append(monitor.stop(memory=None))
            rec.memory_due = monitor.memory_due
        # steps 1..end were each ended by the next batch's barrier; a pass stopped otherwise (the data ran out)
        # ended its last step with nothing fetched beside it
        measured = times.part(skip, end.get("n", len(times) - 1))
        blocks = [measured.part(i, i + k) for i in range(0, len(measured) - k + 1, k)]
        samples_done = sum(sum(b.samples) for b in blocks)
        round_total = sum(b.total() for b in blocks)
        for b in blocks:
            rec.times.extend(b)
            if sum(b.samples):
                rec.blocks.append(b.total() / sum(b.samples))
        if blocks and samples_done:
            # the round's throughput: all its steps' time over its samples (slow steps count, as in training)
            rec.per_round[number] = round_total / samples_done
            cpu_s = cpu.get("end", 0.0) - cpu.get("start", 0.0)
            if "start" in cpu and "end" in cpu and cpu_s > 0:
                rec.cpu_per_round[number] = cpu_s / samples_done
            if "start" in used and "end" in used:
                window_samples = int(sum(measured.samples))
                rec.usage_per_round[number] = Window(
                    used["end"] - used["start"], cpu["t_end"] - cpu["t"], window_samples
                )
        # bounded: past the deadline no further round of this loader follows
        limit = min(max(1.0, 20 * rec.est_step_s * k), max(0.5, deadline - perf_counter()))
        r.settle(limit)
        rec.rounds += 1
        if rec.blocks:
            rec.est_step_s = rec.s_per_sample * r.pipeline.batch_size


Schedule = Epochs | Rounds


def _sizes(records: Mapping[str, Record]) -> dict[str, tuple[int, int, int, int]]:
    """How much each record holds: steps, blocks, monitor windows, rounds (what :func:`_cut` goes back to)."""
    return {name: (len(r.times), len(r.blocks), len(r.systems), r.rounds) for name, r in records.items()}


def _cut(records: Mapping[str, Record], sizes: Mapping[str, tuple[int, int, int, int]], number: int) -> None:
    """Drop what round ``number`` added to each record, back to ``sizes`` (:func:`_sizes` before it began)."""
    for name, rec in records.items():
        steps, blocks, windows, rounds = sizes[name]
        rec.times = rec.times.part(0, steps)
        del rec.blocks[blocks:], rec.systems[windows:]
        rec.rounds = rounds
        rec.per_round.pop(number, None)
        rec.cpu_per_round.pop(number, None)
        rec.usage_per_round.pop(number, None)


def measure(
    pipelines: Pipeline | Running | Mapping[str, Pipeline | Running],
    schedule: Schedule,
    *,
    settled: Callable[[Measurement], bool] | None = None,
    on_progress: Callable[[float, float], None] | None = None,
    done: Callable[[Measurement], bool] | None = None,
    on_open: Callable[[], None] | None = None,
) -> Measurement:
    """Open ``pipelines``, run them on ``schedule``, close them; the records per pipeline name.

    A single pipeline is measured under the name ``"run"``. ``settled``, ``done`` and
    ``on_progress(elapsed_s, budget_s)`` apply to :class:`Rounds`; ``on_open()`` is called once
    every pipeline is open (its worker processes exist). A pipeline already opened by the caller
    (a :class:`Running`, e.g. the evaluation loader the seed builds before training) is run as it is
    and left open for the caller to close.
    """
    named = {"run": pipelines} if isinstance(pipelines, Pipeline | Running) else dict(pipelines)
    t_start = perf_counter()
    opened: dict[str, Running] = {}
    ours: list[Running] = []
    try:
        for name, p in named.items():
            if isinstance(p, Running):
                opened[name] = p
                continue
            opened[name] = p.open()
            ours.append(opened[name])
        if on_open is not None:
            on_open()
        if isinstance(schedule, Rounds):
            return schedule.run(opened, t_start=t_start, settled=settled, on_progress=on_progress, done=done)
        return schedule.run(opened)
    except Exception as exc:  # ConnectionResetError, BrokenPipeError, ENOSPC from the loader: a full /dev/shm?
        from gluonbench.engine.watchdog import shm_full_message

        why = shm_full_message(exc)
        if why is not None:
            raise GluonbenchError(why) from exc  # one line naming /dev/shm and the fixes, not a reset connection
        fault = pipeline_fault(exc)  # the user's code raised mid-run (a transform, dataset[i], the net): one line
        if fault is None:
            raise
        raise fault from exc
    finally:
        for r in ours:
            r.close()
