"""The tuner's throughput model and search logic: pure functions of recorded measurements.

Nothing here runs a pipeline; :mod:`gluonbench.tune.search` measures and asks these functions
what to measure next and which settings to confirm. That keeps the logic testable on recorded
figures.

**The loader model.** A DataLoader with ``w`` worker processes delivers about ``w`` times what one
worker delivers (each worker builds whole batches on its own), until something saturates:

* the CPU: each worker keeps ``u`` cores busy (measured, psutil over the process tree), so no more
  than ``cores / u`` workers can run at once. A CPU-bound reader (``u`` near 1) stops growing at
  about the core count; a latency-bound one (reads that wait on a slow file system, ``u`` small)
  keeps growing well past it, which is when more workers than cores pay;
* anything else (memory bandwidth, the main process's hand-off, the storage device): seen as a
  measured point well below the line (less than :data:`SATURATED` of it), after which the model
  predicts the best rate measured so far (a plateau).

``predict(w) = min(per_worker * w, per_worker * cores / u, plateau)``; zero workers is the main
process's own measured rate.

**The full pipeline.** With workers the loader overlaps the model step, so the pipeline runs at
about ``min(loader(w), ceiling)``; with zero workers the main process reads, then steps, so the
two times add: ``1 / (1 / loader(0) + 1 / ceiling)``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gluonbench.analysis.stats import paired_ratio, ratio_ci
from gluonbench.knobs import KNOBS, knob_default
from gluonbench.units import count

SATURATED = 0.85
"""a point below this fraction of the linear model marks saturation"""
OUTRUN_MARGIN = 0.20
"""the loader 'clearly outruns' the model when its CI's lower end is this much above the ceiling"""
NEAR_BEST = 0.95
"""confirmation: a setting reaching this fraction of the best's throughput (paired median ratio) does as
well as the best for the recommendation: a difference under 5 % (TF's "moderately input-bound" line, the
diagnosis's ``input_gain``) is not worth more workers, and which side of it two close settings fall on
changes from one process to the next"""
UNKNOWN_SPREAD_FLOOR = 0.5
"""confirmation: a figure of one block (no spread) under this fraction of the best's is slower, not noise"""
CPU_BOUND = 0.5
"""cores per worker from which the loader counts as CPU-bound (its growth capped at ``cores / u``)"""
DEFAULT_GRID = KNOBS["num_workers"].grid
"""the worker counts the search may visit (declared with the knob)"""


@dataclass(frozen=True, order=True)
class Setting:
    """The DataLoader knobs the tuner searches (declared, with their defaults, in :data:`gluonbench.knobs.KNOBS`:
    whatever the tuner recommends, ``gluonbench sweep`` can run)."""

    num_workers: int = knob_default("num_workers")
    thread_pool: bool = knob_default("thread_pool")
    prefetch: int | None = knob_default("prefetch")
    """batches prepared ahead; None: MXNet's default, 2 x num_workers"""
    pin_memory: bool = knob_default("pin_memory")

    @property
    def prefetch_depth(self) -> int:
        if self.num_workers == 0:
            return 0
        return 2 * self.num_workers if self.prefetch is None else self.prefetch

    def cost(self) -> tuple[int, int, int, int]:
        """Cheapest first: fewest workers, then least memory (threads share one process; a shallower
        prefetch queue holds fewer batches; no page-locked memory)."""
        processes = 1 if self.num_workers and not self.thread_pool else 0
        return (self.num_workers, processes, self.prefetch_depth, int(self.pin_memory))

    @property
    def label(self) -> str:
        parts = [f"{self.num_workers} workers" if self.num_workers != 1 else "1 worker"]
        if self.thread_pool and self.num_workers:
            parts.append("threads")
        if self.prefetch is not None and self.num_workers:
            parts.append(f"prefetch={self.prefetch}")
        if self.pin_memory:
            parts.append("pin_memory")
        return ", ".join(parts)

    def loader_kwargs(self) -> dict[str, Any]:
        """The DataLoader keyword arguments that differ from its defaults."""
        out: dict[str, Any] = {"num_workers": self.num_workers}
        if self.thread_pool and self.num_workers:
            out["thread_pool"] = True
        if self.prefetch is not None and self.num_workers:
            out["prefetch"] = self.prefetch
        if self.pin_memory:
            out["pin_memory"] = True
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Setting:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(frozen=True)
class Point:
    """One loader-only measurement: samples/s (median, 95 % CI) and the CPU cores the process tree used."""

    workers: int
    samples_per_s: float
    ci: tuple[float, float] = (math.nan, math.nan)
    cpu_cores: float = math.nan

    @property
    def low(self) -> float:
        return self.ci[0] if math.isfinite(self.ci[0]) else self.samples_per_s


@dataclass
class LoaderModel:
    """How the loader's throughput grows with worker processes (see the module docstring)."""

    cores: int
    per_worker: float = math.nan
    """samples/s each worker adds while nothing saturates"""
    cpu_per_worker: float = math.nan
    """cores each worker keeps busy (psutil); small when reads wait on latency"""
    plateau: float | None = None
    """the best measured rate once a point fell below the line, else None"""
    main_rate: float | None = None
    """zero workers: the main process's own rate"""
    residual: float = 0.1
    """relative error of the fit on the measured points (at least 5 %)"""
    max_measured: int = 0
    points: list[Point] = field(default_factory=list)

    @property
    def cpu_workers(self) -> float:
        """How many workers the cores can keep running at once (``cores / u``); unbounded when latency-bound.

        At low rates the process tree's CPU includes fixed costs (the main process's hand-off, the
        sampler), so a small ``u`` overstates the CPU a worker needs: below :data:`CPU_BOUND` cores per
        worker the model sets no CPU limit and lets a measured plateau end the growth."""
        u = self.cpu_per_worker
        return self.cores / u if math.isfinite(u) and u >= CPU_BOUND else math.inf

    @property
    def latency_bound(self) -> bool:
        """True when a worker keeps well under a core busy: more workers than cores can pay."""
        return math.isfinite(self.cpu_per_worker) and self.cpu_per_worker < CPU_BOUND

    def predict(self, workers: int) -> float:
        if workers == 0:
            return self.main_rate if self.main_rate is not None else math.nan
        if not math.isfinite(self.per_worker):
            return math.nan
        rate = self.per_worker * min(float(workers), self.cpu_workers)
        return min(rate, self.plateau) if self.plateau is not None else rate

    def uncertainty(self, workers: int) -> float:
        """Relative uncertainty of :meth:`predict`: the fit's error, more when extrapolating."""
        measured = {p.workers for p in self.points}
        if workers in measured:
            return self.residual
        if workers > self.max_measured > 0:
            return self.residual + 0.15 * math.log2(workers / self.max_measured)
        return 2 * self.residual

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cpu_workers"] = self.cpu_workers
        d["latency_bound"] = self.latency_bound
        return d


def fit(points: Iterable[Point], cores: int) -> LoaderModel:
    """Fit :class:`LoaderModel` to loader-only measurements (worker processes and zero workers)."""
    pts = sorted((p for p in points if math.isfinite(p.samples_per_s) and p.samples_per_s > 0), key=lambda p: p.workers)
    model = LoaderModel(cores=max(1, int(cores)), points=list(pts))
    zero = [p for p in pts if p.workers == 0]
    if zero:
        model.main_rate = zero[-1].samples_per_s
    workers = [p for p in pts if p.workers > 0]
    if not workers:
        return model
    model.max_measured = max(p.workers for p in workers)
    # grow the linear regime from the smallest worker count; a point below SATURATED of the line ends it
    linear = [workers[0]]
    for p in workers[1:]:
        slope = _slope(linear)
        if p.samples_per_s >= SATURATED * slope * p.workers:
            linear.append(p)
        else:
            model.plateau = max(q.samples_per_s for q in workers)
            break
    model.per_worker = _slope(linear)
    cpu = [p.cpu_cores / p.workers for p in linear if math.isfinite(p.cpu_cores) and p.cpu_cores > 0]
    if cpu:
        model.cpu_per_worker = max(0.02, statistics.median(cpu))
    errors = [abs(model.predict(p.workers) - p.samples_per_s) / p.samples_per_s for p in workers]
    widths = [(p.ci[1] - p.ci[0]) / 2 / p.samples_per_s for p in workers if all(map(math.isfinite, p.ci))]
    model.residual = max(0.05, max(errors, default=0.0), statistics.median(widths) if widths else 0.0)
    return model


def _slope(points: Sequence[Point]) -> float:
    """Least squares through the origin: samples/s per worker."""
    return sum(p.workers * p.samples_per_s for p in points) / sum(p.workers**2 for p in points)


def pipeline_rate(loader: float, ceiling: float, workers: int) -> float:
    """Predicted full-pipeline samples/s from the loader's and the model's (module docstring)."""
    if not (loader > 0 and ceiling > 0):
        return math.nan
    if workers == 0:
        return 1.0 / (1.0 / loader + 1.0 / ceiling)
    return min(loader, ceiling)


def worker_grid(max_workers: int, cores: int) -> list[int]:
    """The worker counts the search may visit: 0, 1, 2, 3, 4, 6, 8, ... and the core count, up to ``max_workers``."""
    return sorted({w for w in (*DEFAULT_GRID, cores, 2 * cores) if 0 <= w <= max_workers})


def cheapest_near_best(points: Sequence[Point], ceiling: float, near: float = NEAR_BEST) -> int:
    """The fewest workers whose predicted full-pipeline rate (:func:`pipeline_rate` of its loader-only point) is within
    ``near`` of the best predicted: where the search tries the thread pool (0 without points)."""
    ranked = sorted(points, key=lambda p: -pipeline_rate(p.samples_per_s, ceiling, p.workers))
    if not ranked:
        return 0
    top = pipeline_rate(ranked[0].samples_per_s, ceiling, ranked[0].workers)
    return min(
        (p.workers for p in ranked if pipeline_rate(p.samples_per_s, ceiling, p.workers) >= near * top), default=0
    )


@dataclass(frozen=True)
class Decision:
    """What the search does next: measure ``workers`` (None: stop) and why."""

    workers: int | None
    reason: str


def next_workers(
    points: Sequence[Point], ceiling: float, cores: int, max_workers: int, margin: float = OUTRUN_MARGIN
) -> Decision:
    """The next worker count to measure (loader only), or a stop with its reason.

    Stops when a measured setting clearly outruns the model ceiling, when zero workers already
    come within 3 % of it, or when the model says no unmeasured count would beat what was measured.
    Otherwise measures the fewest workers the model predicts to outrun the ceiling; where it
    predicts none, the count at which the loader stops growing.
    """
    measured = {p.workers for p in points}
    target = ceiling * (1 + margin)
    # only workers overlap the model step: at zero workers the main process loads, then steps
    outrun = sorted((p for p in points if p.workers > 0 and p.low >= target), key=lambda p: p.workers)
    if outrun:
        p = outrun[0]
        return Decision(
            None,
            f"the loader outruns the model at {count(p.workers, 'worker')} ({p.low:.0f} >= {target:.0f} samples/s)",
        )
    model = fit(points, cores)
    if model.main_rate is not None and pipeline_rate(model.main_rate, ceiling, 0) >= 0.97 * ceiling:
        return Decision(None, "with zero workers the pipeline already runs within 3 % of the model ceiling")
    grid = [w for w in worker_grid(max_workers, cores) if w > 0]
    if not any(w in measured for w in grid):
        return Decision(grid[0] if grid else None, "first worker count: how much one worker adds")
    unmeasured = [w for w in grid if w not in measured]
    if not unmeasured:
        return Decision(None, "every worker count up to max_workers was measured")
    best_measured = max((p.samples_per_s for p in points), default=0.0)
    # the fewest workers predicted to outrun the model, measured to check the prediction; a
    # prediction far beyond the measured counts is uncertain, so the step is at most 4x the largest
    reach = 4 * max(model.max_measured, 1)
    for w in grid:
        if model.predict(w) >= target:
            if w > reach:
                w = max(v for v in grid if v <= reach)
                if w in measured:
                    break
                return Decision(
                    w, f"the model predicts the loader outruns the model beyond {count(reach, 'worker')}; {w} first"
                )
            if w in measured:
                break  # predicted to outrun but measured short: the refit below decides
            return Decision(
                w, f"the model predicts {model.predict(w):.0f} samples/s at {count(w, 'worker')} (>= {target:.0f})"
            )
    # the loader cannot reach the ceiling: find where it stops growing
    best_pred = max(model.predict(w) for w in unmeasured)
    if best_pred <= best_measured * (1 + model.residual):
        if model.plateau is not None:
            why = f"the loader saturates at about {best_measured:.0f} samples/s"
        elif math.isfinite(model.cpu_workers):
            why = (
                f"CPU-bound: each worker keeps {model.cpu_per_worker:.2f} cores busy, {cores} cores can run "
                f"{model.cpu_workers:.1f} such workers at once"
            )
        else:
            why = f"latency-bound, still growing at {count(model.max_measured, 'worker')}; the counts left are predicted lower"
        return Decision(None, f"no unmeasured worker count is predicted to beat the best measured ({why})")
    knee = next(w for w in unmeasured if model.predict(w) >= best_pred * (1 - model.residual / 2))
    if knee > reach:
        knee = max((v for v in unmeasured if v <= reach), default=knee)
    return Decision(
        knee, f"the loader cannot reach the model; predicted to stop growing at about {count(knee, 'worker')}"
    )


@dataclass(frozen=True)
class Confirmed:
    """A full-pipeline confirmation figure: samples/s median and 95 % CI."""

    setting: Setting
    samples_per_s: float
    ci: tuple[float, float]
    per_round: Mapping[int, float] = field(default_factory=dict, compare=False)
    """seconds per sample in each confirmation round (round number -> the round's steady seconds over its samples)"""


def epoch_rate(steady: float, batch_size: int, batches: int, per_worker: float) -> float:
    """samples/s of one whole epoch of ``batches`` at a ``steady`` rate, when each epoch starts by waiting for one
    worker's first batch (``batch_size / per_worker`` seconds: the loader's pipeline is empty at an epoch's start,
    so nothing overlaps it). NaN where a figure is missing."""
    if not (steady > 0 and batches > 0 and per_worker > 0):
        return math.nan
    steady_s = batches * batch_size / steady
    fill_s = 0.0 if math.isinf(per_worker) else batch_size / per_worker
    return batches * batch_size / (steady_s + fill_s)


Gain = tuple[float, float, float]
"""a speed-up: (ratio, 95 % CI low, high)"""


def gain_over(
    fast: Mapping[int, float],
    fast_rate: float,
    fast_ci: tuple[float, float],
    slow: Mapping[int, float],
    slow_rate: float,
    slow_ci: tuple[float, float],
) -> Gain:
    """How much faster ``fast`` trains than ``slow``: round by round where both ran in the same interleaved rounds
    (``fast``/``slow``: round -> seconds per sample; the median over rounds of ``slow[r] / fast[r]``, background load
    cancelling in each round), else from the two medians and their CIs (:func:`ratio_ci`)."""
    paired = paired_ratio(slow, fast) if fast and slow else None
    if paired is not None:
        g, (lo, hi) = paired
        return g, lo, hi
    g, (lo, hi) = ratio_ci(fast_rate, fast_ci, slow_rate, slow_ci)
    return g, lo, hi


def _unknown_spread(c: Confirmed) -> bool:
    """Too few figures for a spread: a zero-width or missing CI, or fewer than 2 rounds."""
    lo, hi = c.ci
    return not (math.isfinite(lo) and math.isfinite(hi) and hi > lo) or (0 < len(c.per_round) < 2)


def within_noise_of(c: Confirmed, best: Confirmed, near: float = NEAR_BEST) -> bool:
    """Whether ``c`` does as well as ``best`` as far as the measurement can tell.

    Round by round when both ran in at least 6 confirmation rounds (the ratio of their figures in the
    same round, where background load cancels): ``c`` does as well unless the 95 % CI of its throughput
    over the best's lies wholly below 1 (slower beyond the noise), or is practically equal all the same:
    the median ratio at or above ``near`` (within 5 % of the best by default: too small a difference to pay
    for with workers, and one that flips between processes). With fewer rounds: the two CIs overlap or
    ``c``'s median is at least ``near`` of the best's.
    A figure with no spread (one block: a zero-width CI) cannot be told apart from the best (within noise)
    unless it is under half the best's rate.
    """
    if c is best:
        return True
    if _unknown_spread(c) or _unknown_spread(best):
        # one block or round: the spread is unknown, so a difference cannot be told from noise, unless it is
        # too large for any stall of one block to explain (under half the best's rate)
        return c.samples_per_s >= UNKNOWN_SPREAD_FLOOR * best.samples_per_s
    paired = paired_ratio(best.per_round, c.per_round) if c.per_round and best.per_round else None
    if paired is not None:
        ratio, (lo, hi) = paired  # c's samples/s over the best's (the best's seconds per sample over c's)
        if math.isfinite(lo) and math.isfinite(hi):
            return hi >= 1.0 or ratio >= near
    return c.ci[1] >= best.ci[0] or c.samples_per_s >= near * best.samples_per_s


def choose(confirmed: Sequence[Confirmed], near: float = NEAR_BEST) -> tuple[Confirmed, list[Confirmed]]:
    """The cheapest setting within noise of the best (:func:`within_noise_of`), and all those within noise,
    cheapest first: when several do as well, the recommendation is the cheapest of them every time."""
    ok = [c for c in confirmed if math.isfinite(c.samples_per_s) and c.samples_per_s > 0]
    if not ok:
        raise ValueError("no setting was confirmed")
    best = max(ok, key=lambda c: c.samples_per_s)
    tied = [c for c in ok if within_noise_of(c, best, near)]
    tied.sort(key=lambda c: c.setting.cost())
    return tied[0], tied


def candidates(
    points: Sequence[Point],
    ceiling: float,
    current: Setting,
    *,
    threads: Point | None = None,
    on_gpu: bool = False,
    limit: int = 4,
) -> list[tuple[Setting, str]]:
    """The settings to confirm in full-pipeline rounds, each with why it is there.

    The cheapest worker count predicted within 5 % of the best prediction, the one just below it
    (the prediction ignores CPU contention with the model), the best predicted if different, its
    thread-pool version when threads kept up in the loader-only measurement, a shallower prefetch
    queue (less memory), pinned memory on a GPU, and the user's current setting.
    """
    by_w = {p.workers: p for p in points}
    predicted = {w: pipeline_rate(p.samples_per_s, ceiling, w) for w, p in by_w.items()}
    predicted = {w: r for w, r in predicted.items() if math.isfinite(r)}
    out: list[tuple[Setting, str]] = []

    def add(s: Setting, why: str) -> None:
        if all(s != t for t, _ in out) and len(out) < limit:
            out.append((s, why))

    if not predicted:
        add(current, "the current setting")
        return out
    best = max(predicted.values())
    near = sorted(w for w, r in predicted.items() if r >= 0.95 * best)
    cheapest = near[0]
    add(Setting(cheapest, pin_memory=on_gpu and cheapest > 0), "cheapest predicted within 5 % of the best")
    if on_gpu and cheapest > 0:
        add(Setting(cheapest), "without pinned memory (less page-locked memory)")
    if threads is not None and threads.samples_per_s >= 0.95 * by_w.get(cheapest, threads).samples_per_s:
        add(Setting(cheapest, thread_pool=True), "threads kept up with processes in the loader-only measurement")
    lower = [w for w in predicted if w < cheapest and predicted[w] >= 0.80 * best]
    if lower:
        add(Setting(max(lower)), "fewer workers: leaves cores to the model step")
    top = max(predicted, key=lambda w: predicted[w])
    add(Setting(top), "best predicted")
    if cheapest >= 2:
        add(Setting(cheapest, prefetch=cheapest), "a shallower prefetch queue (less memory)")
    add(current, "the current setting")
    if all(s != current for s, _ in out):  # the current setting is always confirmed (the baseline)
        out[-1] = (current, "the current setting")
    return out
