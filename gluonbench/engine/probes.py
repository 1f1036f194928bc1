"""The diagnosis probes: the training pipeline with one stage swapped, timed by :func:`run_steps`.

=================  ==========================================================
probe              what it runs
=================  ==========================================================
``full``           the pipeline as given: read, transform, batchify, copy, step
``no_preprocess``  the transform swapped for a stage that returns one ready
                   sample (same shapes and dtypes); ``dataset[i]`` still runs
``cached_batch``   one batch placed on the device once and reused every step:
                   no reading, no preprocessing, no host-to-device copy
``loader_only``    the ``full`` loader with no model step (its own ceiling)
=================  ==========================================================

**Steady state.** Each probe first runs a few warm-up steps (worker start-up,
memory allocation, hybridization), which are left out. The probes are then
measured in *interleaved rounds* (full, no_preprocess, cached_batch,
loader_only, full, ...; the order rotates each round), so a change in the
machine's background load hits every probe alike rather than one of them. A
probe's loader keeps its workers between rounds; when a round resumes, the
first ``prefetch + 1`` steps are dropped (they find batches prefetched while the
probe was paused), and after a round the probe waits until its loader's
prefetched batches are done, so no worker keeps computing into the next probe's
round.

**Statistic.** A round's steady steps are cut into *blocks* of consecutive
steps: at least ``workers`` steps (batches from parallel workers arrive in
bursts, one per worker; ``workers`` consecutive arrivals span one period
whatever the phase) and at least ``block_s`` seconds. A block's value is its seconds per sample (wall time of its steps
over their samples). The probe's figure is the median over blocks, with the
distribution-free 95 % confidence interval of that median
(:func:`gluonbench.analysis.stats.median_ci`). Rounds go on until every probe
has ``min_blocks`` blocks with a confidence interval within ``rel_ci`` of its
median (and the caller's ``settled`` check agrees), or the time budget is
spent.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from time import perf_counter
from typing import Any

from gluonbench.analysis.stats import median_ci
from gluonbench.engine.loop import Step, StepTimes, run_steps
from gluonbench.engine.run import close_loader, make_loader
from gluonbench.monitor import SystemMonitor, SystemSummary, merge_summaries

log = logging.getLogger(__name__)

PROBES = ("full", "no_preprocess", "cached_batch", "loader_only")

REMOVES = {
    "full": "nothing (the pipeline as given)",
    "no_preprocess": "the per-sample transform (reads still happen)",
    "cached_batch": "reading, preprocessing, batching and the host-to-device copy",
    "loader_only": "the model step (input pipeline alone)",
}


@dataclass(frozen=True)
class ProbePlan:
    """How long and how precisely the probes are measured."""

    budget_s: float = 60.0
    """wall-clock budget of the whole measurement (loader start-up and warm-up included)"""
    rel_ci: float = 0.05
    """stop when every probe's 95 % CI of the median is within +-rel_ci of the median"""
    min_blocks: int = 6
    """blocks per probe before the CI is trusted"""
    block_s: float = 0.05
    """a block lasts at least this long"""
    round_s: float | None = None
    """measured time per probe per round; default: budget / 40, between 0.3 and 1.5 s"""
    warmup_steps: int = 3
    """steps left out at the start of each probe (plus the loader's prefetch depth)"""
    monitor_interval: float = 0.5

    def round_seconds(self) -> float:
        if self.round_s is not None:
            return self.round_s
        return min(1.5, max(0.3, self.budget_s / 40.0))


@dataclass
class ProbeResult:
    """One probe's steady-state figures: seconds per sample (median of blocks, CI), rates, split, system."""

    name: str
    removes: str
    batch_size: int
    blocks: list[float] = field(default_factory=list)
    """seconds per sample of each block"""
    steps: int = 0
    samples: int = 0
    rounds: int = 0
    block_steps: int = 0
    s_per_sample: float = math.nan
    s_per_sample_ci: tuple[float, float] = (math.nan, math.nan)
    split: dict[str, Any] = field(default_factory=dict)
    """wait / copy / compute over all measured steps (:class:`StepSplit`)"""
    system: dict[str, Any] = field(default_factory=dict)
    """psutil evidence during this probe's rounds (:class:`SystemSummary`)"""
    same_as: str | None = None
    """set when the probe is identical to another one (no transform given: no_preprocess is full)"""

    @property
    def step_s(self) -> float:
        """Median step time for a full batch."""
        return self.s_per_sample * self.batch_size

    @property
    def step_s_ci(self) -> tuple[float, float]:
        return (self.s_per_sample_ci[0] * self.batch_size, self.s_per_sample_ci[1] * self.batch_size)

    @property
    def samples_per_s(self) -> float:
        return 1.0 / self.s_per_sample if self.s_per_sample > 0 else math.nan

    @property
    def samples_per_s_ci(self) -> tuple[float, float]:
        lo, hi = self.s_per_sample_ci
        return (1.0 / hi if hi > 0 else math.nan, 1.0 / lo if lo > 0 else math.nan)

    @property
    def half_width(self) -> float:
        """Half the CI width, seconds per sample."""
        lo, hi = self.s_per_sample_ci
        return (hi - lo) / 2

    @property
    def rel_half_width(self) -> float:
        return self.half_width / self.s_per_sample if self.s_per_sample > 0 else math.inf

    def update(self) -> None:
        if self.blocks:
            lo, hi = median_ci(self.blocks)
            ordered = sorted(self.blocks)
            n = len(ordered)
            self.s_per_sample = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
            self.s_per_sample_ci = (lo, hi)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["s_per_sample_ci"] = list(self.s_per_sample_ci)
        d.update(
            step_s=self.step_s,
            step_s_ci=list(self.step_s_ci),
            samples_per_s=self.samples_per_s,
            samples_per_s_ci=list(self.samples_per_s_ci),
            rel_half_width=self.rel_half_width,
        )
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeResult:
        names = set(cls.__dataclass_fields__)
        out = cls(**{k: v for k, v in data.items() if k in names})
        out.s_per_sample_ci = tuple(out.s_per_sample_ci)  # type: ignore[assignment]
        return out


@dataclass
class ProbeSet:
    """All probes of one diagnosis, and how the measurement ended."""

    probes: dict[str, ProbeResult]
    elapsed_s: float
    stop_reason: str
    """``converged`` (every CI within rel_ci, verdict settled) or ``budget``"""
    rounds: int
    startup_s: float
    settled_s: float | None = None
    """elapsed seconds at the end of the round from which ``settled`` held to the end (time to verdict)"""

    def converged(self, rel_ci: float, min_blocks: int, names: tuple[str, ...] = PROBES) -> bool:
        return all(
            len(self.probes[n].blocks) >= min_blocks and self.probes[n].rel_half_width <= rel_ci
            for n in names
            if n in self.probes and self.probes[n].same_as is None
        )


class ReadySample:
    """The no-preprocessing stage: ignores the raw sample it gets and returns a ready one.

    The ready sample is the real transform's output for ``dataset[0]``, so shapes,
    dtypes and array types (and with them the batching cost) are those of the
    full pipeline; only the transform's work is gone.
    """

    def __init__(self, sample: Any) -> None:
        self.sample = sample

    def __call__(self, *raw: Any) -> Any:
        return self.sample


class EpochCycle:
    """An endless iterator over a DataLoader's epochs that can tell when its prefetching is done."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.current: Iterator[Any] | None = None
        workers = getattr(loader, "_num_workers", 0) or 0
        self.prefetch = int(getattr(loader, "_prefetch", 0) or 0) if workers else 0

    def __iter__(self) -> EpochCycle:
        return self

    def __next__(self) -> Any:
        while True:
            if self.current is None:
                self.current = self._new_epoch()
            try:
                return next(self.current)
            except StopIteration:
                self.current = None

    def _new_epoch(self) -> Iterator[Any]:
        # DataLoader.__iter__ wraps the prefetching iterator in a generator; take the iterator itself,
        # so settle() can see its pending batches (MXNet 1.9's _MultiWorkerIter._data_buffer)
        if hasattr(self.loader, "refresh") and hasattr(self.loader, "_iter"):
            if self.loader._iter is None:
                self.loader.refresh()
            it, self.loader._iter = self.loader._iter, None
            return iter(it)
        return iter(self.loader)

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


@dataclass
class _Probe:
    result: ProbeResult
    source: Any
    step: Step | None
    skip: int
    est_step_s: float = math.nan
    min_steps: int = 1
    times: StepTimes = field(default_factory=StepTimes)
    systems: list[SystemSummary] = field(default_factory=list)
    settle: Callable[[float], float] | None = None


def _as_ready(batch: Any, ctx: Any) -> tuple[Any, Any]:
    data, label = batch[0], batch[1]
    data, label = data.as_in_context(ctx), label.as_in_context(ctx)
    data.wait_to_read()
    label.wait_to_read()
    return data, label


def measure_probes(
    dataset: Any,
    transform: Callable[..., Any] | None,
    step: Step,
    ctx: Any,
    batch_size: int,
    num_workers: int = 0,
    thread_pool: bool = False,
    plan: ProbePlan | None = None,
    settled: Callable[[ProbeSet], bool] | None = None,
    on_progress: Callable[[float, float], None] | None = None,
) -> ProbeSet:
    """Measure the four probes of ``dataset`` + ``transform`` + ``step`` on ``ctx``.

    ``settled(probes)`` is asked after each round (the caller's verdict check);
    the measurement stops early only when it holds and every probe has
    converged. ``settled_s`` in the result is when it started to hold for good
    (time to verdict). Every loader is closed before this returns, whatever
    happens.
    """
    plan = plan or ProbePlan()
    t_start = perf_counter()
    budget_end = t_start + plan.budget_s
    loaders: list[Any] = []
    try:
        full_loader = make_loader(dataset, transform, batch_size, True, num_workers, thread_pool)
        loaders.append(full_loader)
        full_src = EpochCycle(full_loader)
        first = next(full_src)
        cached = _as_ready(first, ctx)
        probes: dict[str, _Probe] = {}
        skip = full_src.prefetch + 1
        probes["full"] = _Probe(ProbeResult("full", REMOVES["full"], batch_size), full_src, step, skip)
        if transform is not None:
            raw = dataset[0]
            ready = ReadySample(transform(*raw))
            np_loader = make_loader(dataset, ready, batch_size, True, num_workers, thread_pool)
            loaders.append(np_loader)
            np_src = EpochCycle(np_loader)
            probes["no_preprocess"] = _Probe(
                ProbeResult("no_preprocess", REMOVES["no_preprocess"], batch_size), np_src, step, np_src.prefetch + 1
            )
        probes["cached_batch"] = _Probe(
            ProbeResult("cached_batch", REMOVES["cached_batch"], batch_size), itertools.repeat(cached), step, 1
        )
        probes["loader_only"] = _Probe(
            ProbeResult("loader_only", REMOVES["loader_only"], batch_size), full_src, None, skip
        )
        for p in probes.values():
            if isinstance(p.source, EpochCycle):
                p.settle = p.source.settle
        startup_s = perf_counter() - t_start

        # warm-up: worker start-up, allocation, hybridization; then a first estimate of each step time
        # from the steps after the loader's prefetched batches are used up
        for p in probes.values():
            p.min_steps = num_workers if isinstance(p.source, EpochCycle) and num_workers else 1
            run_steps(p.source, ctx, p.step, max_steps=p.skip)
            warm = StepTimes()
            t_warm = perf_counter()
            while len(warm) < plan.warmup_steps or perf_counter() - t_warm < plan.block_s:
                warm.extend(run_steps(p.source, ctx, p.step, max_steps=p.min_steps))
                if perf_counter() >= budget_end:
                    break
            p.est_step_s = warm.total() / max(len(warm), 1)
            if p.settle is not None:
                p.settle(max(1.0, 20 * p.est_step_s))
        log.info(
            "probes warmed up in %.1f s; step estimates %s",
            perf_counter() - t_start,
            {k: f"{p.est_step_s * 1000:.1f} ms" for k, p in probes.items()},
        )

        order = list(probes)
        rounds = 0
        stop_reason = "budget"
        settled_s: float | None = None
        # each round gives every probe a time slice. A loader probe resumes with batches its workers
        # prefetched during the pause, and those skip steps are dropped: its slice is at least 3x the skip
        # (so they cost little), but small enough that two rounds fit in the budget left after the warm-up
        base = plan.round_seconds()
        slices = {k: max(base, 3 * p.skip * p.est_step_s) if p.skip > 1 else base for k, p in probes.items()}
        left = budget_end - perf_counter()
        if 2 * sum(slices.values()) > left:
            scale = left / (2 * sum(slices.values()))
            slices = {k: max(min(base, v), v * scale) for k, v in slices.items()}
        while perf_counter() < budget_end:
            rounds += 1
            shift = rounds % len(order)
            scale = min(1.0, (budget_end - perf_counter()) / sum(slices.values()))
            for name in order[shift:] + order[:shift]:
                if perf_counter() >= budget_end:
                    break
                p = probes[name]
                slice_s = slices[name] * scale
                _measure_round(p, ctx, slice_s, budget_end, plan)
                if on_progress is not None:
                    on_progress(perf_counter() - t_start, plan.budget_s)
            elapsed = perf_counter() - t_start
            current = ProbeSet(_with_alias({k: p.result for k, p in probes.items()}), elapsed, "", rounds, startup_s)
            ok = settled is None or settled(current)
            settled_s = (settled_s if settled_s is not None else elapsed) if ok else None
            if ok and current.converged(plan.rel_ci, plan.min_blocks):
                stop_reason = "converged"
                break
    finally:
        for loader in loaders:
            close_loader(loader)

    for p in probes.values():
        p.result.split = p.times.split(skip=0).to_dict() if len(p.times) else {}
        p.result.system = merge_summaries(p.systems).to_dict()
    results = _with_alias({k: p.result for k, p in probes.items()})
    elapsed = perf_counter() - t_start
    log.info("probes: %d rounds in %.1f s, stopped on %s", rounds, elapsed, stop_reason)
    return ProbeSet(results, elapsed, stop_reason, rounds, startup_s, settled_s)


def _with_alias(results: dict[str, ProbeResult]) -> dict[str, ProbeResult]:
    """Without a transform, ``no_preprocess`` is the ``full`` pipeline: list it as a copy marked ``same_as``."""
    if "no_preprocess" in results:
        return results
    alias = ProbeResult.from_dict(results["full"].to_dict())
    alias.name, alias.removes, alias.same_as = "no_preprocess", "nothing: no transform was given", "full"
    return {"full": results["full"], "no_preprocess": alias, **{k: v for k, v in results.items() if k != "full"}}


def _measure_round(p: _Probe, ctx: Any, round_s: float, deadline: float, plan: ProbePlan) -> None:
    """One round of one probe: drop ``skip`` steps, then blocks of consecutive steps until ``round_s`` is spent."""
    k = max(p.min_steps, math.ceil(plan.block_s / max(p.est_step_s, 1e-6)))
    p.result.block_steps = k
    monitor = SystemMonitor(interval=plan.monitor_interval).start()
    t0 = perf_counter()
    try:
        if p.skip:
            run_steps(p.source, ctx, p.step, max_steps=p.skip)
        while True:
            block = run_steps(p.source, ctx, p.step, max_steps=k)
            p.times.extend(block)
            samples = sum(block.samples)
            if samples:
                p.result.blocks.append(block.total() / samples)
            p.result.steps += len(block)
            p.result.samples += samples
            now = perf_counter()
            if now - t0 >= round_s or now >= deadline:
                break
    finally:
        p.systems.append(monitor.stop())
    t1 = perf_counter()
    # bounded: past the deadline no further round of this loader follows
    limit = min(max(1.0, 20 * p.est_step_s * k), max(0.5, deadline - perf_counter()))
    waited = p.settle(limit) if p.settle is not None else 0.0
    log.debug(
        "%s: round of %.2f s (slice %.2f s), %d blocks so far, settled in %.2f s",
        p.result.name,
        t1 - t0,
        round_s,
        len(p.result.blocks),
        waited,
    )
    p.result.rounds += 1
    p.result.update()
    if p.result.blocks:
        p.est_step_s = p.result.s_per_sample * p.result.batch_size
