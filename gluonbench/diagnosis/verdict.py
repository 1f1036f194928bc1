"""From probe timings to a verdict: which stage of the pipeline costs the step time.

The seed's method (SEEDS.md, 001) made quantitative. The shares: with ``t_full``,
``t_no_preprocess`` and ``t_cached_batch`` the probes' median seconds per sample:

* ``preprocessing = t_full - t_no_preprocess``  (what removing the transform gains)
* ``disk_io       = t_no_preprocess - t_cached_batch``  (what removing reading,
  batching and the host-to-device copy gains)
* ``gpu_io        = t_cached_batch``  (device-bound: compute, or the copy at peak
  for this batch size; on a CPU context, the CPU compute)

each clipped at zero and divided by their sum (``t_full`` when nothing is
clipped), so the shares sum to 1.

**Verdict: the seed's rule, as speed-ups with intervals.** The seed removes preprocessing, then
reading, and reloads one batch: "if performance does not improve, the bottleneck is GPU I/O ... if it
improves, disk I/O". MXNet overlaps loading the next batch with the current step, so the largest
*share* above is not what limits training: a stage can cost time that overlaps compute. The verdict
therefore reads the speed-ups (:func:`probe_gains`), each a ratio of seconds per sample with its
95 % CI, paired round by round where the probes ran in rounds:

* ``input``         = full / cached_batch: how much faster training runs with a perfect input pipeline;
* ``preprocessing`` = full / no_preprocess: what removing preprocessing gains;
* ``disk_io``       = no_preprocess / cached_batch: what removing the rest of the input gains
  (reading ``read`` = no_preprocess / no_read, and the loader ``loader`` = no_read / cached_batch).

With ``line = 1 / (1 - input_gain)`` (a perfect input pipeline saving ``input_gain`` of the step,
TF's 5 %): ``gpu_io`` when reusing one batch gains nothing: the input speed-up's CI lies under the
line, or (once the measurement converged) 1 lies within its CI and its gain is under the line.
When the whole CI lies above the line, the verdict is the input stage whose removal saves the most time
(preprocessing or disk I/O: the chain's ratios compound, so the stage times, not the ratios, are
compared). Otherwise ``inconclusive``: a probe has too few blocks for any reading (``short``), the
noise hides the gain, or the gain is beyond the noise but its CI crosses the line (*at the line*, :func:`read_reuse`: the input pipeline costs about
``input_gain`` of the step, and which side it falls on is not known). The other input stage, when its
own gain is beyond the noise and saves at least ``input_gain`` of the step, is named secondary.

**Overlap and contention** (:func:`overlap`): the input pipeline alone (``loader_only``) and the model
alone (the last chain probe, ``cached_batch`` or ``device_batch``) against ``full``. A loop that
overlaps them perfectly runs at the slower of the two; ``full`` clearly slower than that (paired CI
above 1 and above the line) means the two compete for a shared resource (the advice names it from the
CPU evidence: the cores when they were saturated). The two alone within the line of each other are
*balanced*: speeding up either alone gains little; ``full`` within the line of their sum is *serial*.

**The shares** stay, for what they are: the time each stage's removal saves, over ``full``'s time
(``preprocessing = t_full - t_no_preprocess``, ``disk_io = t_no_preprocess - t_cached_batch``,
``gpu_io = t_cached_batch``, clipped at zero, summing to 1), each with an interval: the sum of the
CI half-widths of the probes behind it. A stage is *present* when its time exceeds that uncertainty.

**Sub-stages.** The diagnose probes form a chain (:mod:`gluonbench.diagnosis.probes`): full ->
no_preprocess -> no_read -> cached_batch -> device_batch. Each difference along the chain is the
cost of one sub-stage (preprocessing, read, loader, copy) and the last probe's time is the model
compute; each headline's time is split between its sub-stages in proportion to their (clipped)
differences, so sub-stage shares add up to their headline's share. :func:`attribute` takes the chain.

**The read sub-stage, named by its evidence** (:func:`read_evidence`). ``dataset[i]`` may read files or
compute: gluon's ``ImageFolderDataset`` decodes JPEGs there, ``gluon.data.vision.MNIST(transform=...)`` runs the
transform there. What the process tree spends per sample over each probe's measured steps (CPU user and system
apart, every thread and worker; time ready but waiting for a core; bytes read from storage; time blocked on
storage where the kernel reports it: :attr:`ProbeResult.evidence`) is compared between ``no_preprocess`` and
``no_read``, whose difference is the read's cost. Only per-process counters count: system-wide iowait is mostly
other programs' I/O on a shared machine, and a page-cache hit reads 0 bytes from storage. The read is

* ``storage`` (disk_io) when it made the kernel read from storage (at least :data:`STORAGE_BYTES_PER_S` of its
  time) or blocked on storage for :data:`BLOCKED_SHARE` of its time;
* ``cpu_work`` when its CPU time is at least :data:`CPU_BOUND_SHARE` of its wall time (times the ``dataset[i]``
  calls that run at once: the workers, at most the cores): work inside ``dataset[i]``, named "decode/transform
  inside dataset[i]". The time its threads waited for a core is recorded and cited but not credited: summed over
  every thread (MXNet's engine and OpenMP threads wake and wait too) it cannot be told apart from a read that
  sleeps and then waits for a core. Mostly system time (:data:`SYSTEM_SHARE`) is ``file_system`` work
  (opening and reading many small files: disk_io); otherwise it is *preprocessing*: the read's time then counts
  toward the preprocessing headline (its speed-up: full / no_read) and the loader alone stays disk_io;
* ``waiting`` (disk_io) when it takes wall time with little CPU: latency (a network file system, an object store);
* ``unknown`` without evidence (a stored diagnosis from before it was recorded), ``none`` when the read costs no
  time: the read stays disk_io as the seed's rule has it.

The evidence names the read only where it matters (:func:`material_read`): removing ``dataset[i]`` gains beyond
the noise and saves at least ``input_gain`` of the step. Below that (an in-memory data set's indexing, the
workers' hand-off) it is ``none``, its evidence kept as ``evidence_kind``. Where the read counts as
preprocessing, the reported speed-ups are the ones the verdict compares: ``preprocessing`` is full / no_read and
``disk_io`` the loader alone (no_read / cached_batch).

**Bounds** (:func:`bound`). At 0 workers the loader runs in the training loop's own thread, so a perfect input
pipeline saves at most the loader's own time: when ``loader_only``'s time per batch, paired round by round with
the model step (``cached_batch``), is under ``input_gain`` of it (its CI's upper end), the verdict is ``gpu_io``
even where the reused batch's speed-up alone is inconclusive. With workers the same bound holds only where the
evidence shows the cores were not shared during ``full`` (this run's threads waited for a core under
:data:`FREE_RUNQ_SHARE` of the time, or a whole core stood idle): the verdict's notes say which.

**Paired rounds.** The probes take turns in rounds, and the shares compare them round by round
(:func:`paired_timings`): each probe's time is its ratio to ``full`` in the same round (median over
rounds, with its CI), so load that changes between rounds, or between two diagnoses, cancels.

**Confidence intervals of the shares.** A share's interval is (its time -+ its uncertainty) over
the total, clipped to [0, 1]: every share comes with the precision its probes reached.

**Input-bound label** (TF Profiler's input-pipeline analyzer's labels): on the same reading as the
verdict, the share of ``full``'s step time a perfect input pipeline saves, ``1 - 1 / input``: at
least ``highly_input_bound`` is *highly*, else *moderately*, when the verdict is an input stage;
*not* when it is ``gpu_io``; *unknown* when inconclusive. The loop's own wait for the next batch
(``wait_frac``) is kept as evidence: on an overlapped loop it exceeds what the input costs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from gluonbench.analysis.stats import PAIRED_MIN_ROUNDS, paired_ratio
from gluonbench.errors import GluonbenchError
from gluonbench.settings import Setting

STAGES = ("preprocessing", "disk_io", "gpu_io")
CHAIN = ("full", "no_preprocess", "no_read", "cached_batch", "device_batch")
"""The diagnose probes in chain order (see :mod:`gluonbench.diagnosis.probes`)."""
SUBSTAGES = {"no_preprocess": "preprocessing", "no_read": "read", "cached_batch": "loader", "device_batch": "copy"}
"""The sub-stage each chain probe removes, against the probe before it."""
HEADLINE_OF = {
    "preprocessing": "preprocessing",
    "read": "disk_io",
    "loader": "disk_io",
    "copy": "gpu_io",
    "compute": "gpu_io",
}
VERDICTS = (*STAGES, "inconclusive")
READ_WORK = "decode/transform inside dataset[i]"
"""The name of the read sub-stage when its evidence shows CPU work (it then counts as preprocessing)."""
CPU_BOUND_SHARE = 0.5
"""the read's CPU time over its wall time (times the calls that run at once) from which it is CPU work. On
2026-11-27, on a 2-core VM shared by five jobs, a PNG decode inside dataset[i] used 93 % of its time on the CPU;
the ground truth's reads that sleep 1 ms (0 workers) or 3 ms (2 workers) 12-33 % and 15-20 %"""
SYSTEM_SHARE = 0.5
"""the share of that CPU time in the kernel from which the work is the file system's (opening many small files)"""
STORAGE_BYTES_PER_S = 1e6
"""bytes read from storage per second of the read's time from which the read is storage I/O (a page-cache hit
reads 0 bytes; below this, a few metadata blocks)"""
BLOCKED_SHARE = 0.2
"""the share of the read's wall time blocked on storage (where the kernel reports it) from which it is storage I/O"""
FREE_RUNQ_SHARE = 0.05
"""with workers, a bound applies when this run's threads waited for a core under this share of ``full``'s time"""
READ_HEADLINE = {
    "cpu_work": "preprocessing",
    "file_system": "disk_io",
    "storage": "disk_io",
    "waiting": "disk_io",
    "unknown": "disk_io",
    "none": "disk_io",
}
SPEEDUPS = {
    "input": ("full", "cached_batch"),
    "preprocessing": ("full", "no_preprocess"),
    "disk_io": ("no_preprocess", "cached_batch"),
    "read": ("no_preprocess", "no_read"),
    "loader": ("no_read", "cached_batch"),
    "copy": ("cached_batch", "device_batch"),
}
"""Each speed-up as (slower probe, faster probe): how much faster training runs with that stage removed."""
OVERLAP = {
    "full_vs_model": ("full", "model"),
    "full_vs_loader": ("full", "loader_only"),
    "loader_vs_model": ("loader_only", "model"),
}
"""The ratios behind :func:`overlap`; ``model`` is the last measured chain probe (the model alone)."""
REGROUPED = {"through_read": ("full", "no_read")}
"""Speed-ups the verdict needs when the read is CPU work and counts as preprocessing (:func:`read_evidence`)."""


def _share(name: str, default: float, help: str) -> Setting:
    """A threshold that is a share or a fraction: a plain number in (0, 1)."""
    return Setting(name, float, default, 0, 1, exclusive=True, seconds=False, help=help)


THRESHOLDS: dict[str, Setting] = {
    t.name: t
    for t in (
        _share(
            "rel_ci",
            0.05,
            "a probe's median counts as converged when its 95 % CI is within +- this: with 1 inside the reused "
            "batch's interval, gpu_io needs every chain probe converged",
        ),
        Setting("min_blocks", int, 6, 1, 1_000, help="blocks of steps per probe before its CI is trusted"),
        _share("secondary_share", 0.15, "another stage with at least this share of the step is named secondary"),
        _share("highly_input_bound", 0.20, "input wait share of the step for 'highly input-bound'"),
        _share("moderately_input_bound", 0.05, "input wait share of the step for 'moderately input-bound'"),
        _share(
            "share_precision",
            0.05,
            "measure on, within the budget, until every share's 95 % interval is within +- this",
        ),
        _share(
            "input_gain",
            0.05,
            "the share of the step a perfect input pipeline must save to count (under it: gpu_io)",
        ),
        Setting(
            "stop_confidence",
            float,
            0.99,
            0.95,
            0.999,
            seconds=False,
            help="stop before the budget only when the input speed-up's interval at this level is clear of the "
            "line too (a case at the line must not stop on a lucky few rounds)",
            means="at least the verdict's own 0.95",
        ),
    )
}
"""Every threshold of the verdict and of the stopping rule, declared once: its type, range, default and help
(``--threshold KEY=VALUE``, ``diagnose --help`` and :class:`Thresholds` read it)."""


def _threshold(name: str) -> Any:
    return field(default=THRESHOLDS[name].default)


@dataclass(frozen=True)
class Thresholds:
    """Every threshold of the verdict and of the stopping rule (declared in :data:`THRESHOLDS`), configurable."""

    rel_ci: float = _threshold("rel_ci")
    """a probe's median has converged when its 95 % CI is within +-rel_ci: with 1 inside the input speed-up's
    interval (and its estimate under the line), ``gpu_io`` needs every chain probe converged"""
    min_blocks: int = _threshold("min_blocks")
    """blocks (of consecutive steps) per probe before its CI is trusted: from 6 values on, even the
    min-max range covers the median with >= 95 % (1 - 2 x 0.5^6 = 96.9 %)"""
    secondary_share: float = _threshold("secondary_share")
    """other stages with at least this share (and present) are named secondary"""
    highly_input_bound: float = _threshold("highly_input_bound")
    """input wait share of step time for 'highly input-bound' (TF Profiler)"""
    moderately_input_bound: float = _threshold("moderately_input_bound")
    """input wait share of step time for 'moderately input-bound' (TF Profiler)"""
    share_precision: float = _threshold("share_precision")
    """measurement goes on (within the budget) until every share's 95 % interval is within +-this"""
    input_gain: float = _threshold("input_gain")
    """the share of the full pipeline's step time a perfect input pipeline must save (1 - cached_batch/full)
    before reusing one batch counts as a gain (TF's 'moderately input-bound' line; a speed-up of 1/(1-this),
    1.053x); under it the verdict is gpu_io. Checked on the ground-truth cases (benchmarks/ground_truth.py,
    the seed's loop timed in steady state): on 2026-11-25 on a quiet 2-core VM the device-bound cases gained
    1.00-1.02x from one reused batch, every input-bound case 1.44x or more, and the seed's MNIST at 0 workers
    1.06x [1.05, 1.07] (at the line); TF's 5 % separates the two classes"""
    stop_confidence: float = _threshold("stop_confidence")
    """a diagnosis stops before its budget only when the input speed-up's interval at this level (not only the
    verdict's 95 %) lies on one side of the ``input_gain`` line, from the rounds that level needs on (8 for 0.99).
    The verdict is checked after every round, and stopping the first time a 95 % interval clears the line
    turns a case at the line into a verdict now and then (the seed's MNIST at 0 workers, 2026-11-25:
    a run stopped at round 6 on "preprocessing", 1.06x [1.058, 1.091], where four runs to the budget read
    1.04-1.06x, at the line); a wider interval for the stop, as group-sequential tests use, keeps that rare"""

    def __post_init__(self) -> None:
        # validated here, whoever builds it (--threshold, a config, Python), by its declaration; one line, exit 2
        for f in fields(self):
            THRESHOLDS[f.name].check(getattr(self, f.name), f"threshold {f.name}")
        if self.moderately_input_bound > self.highly_input_bound:
            raise GluonbenchError(
                f"threshold moderately_input_bound={self.moderately_input_bound} exceeds "
                f"highly_input_bound={self.highly_input_bound}; make it the smaller of the two"
            )

    @property
    def line(self) -> float:
        """The speed-up of a perfect input pipeline that saves ``input_gain`` of the step: 1 / (1 - input_gain)."""
        return 1.0 / (1.0 - self.input_gain)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ProbeTiming:
    """What the verdict needs of one probe: median seconds per sample and its 95 % CI."""

    median: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


@dataclass
class Verdict:
    verdict: str
    shares: dict[str, float]
    stage_s: dict[str, float]
    """seconds per sample attributed to each stage (clipped at zero)"""
    stage_uncertainty_s: dict[str, float]
    present: dict[str, bool]
    established: dict[str, bool]
    secondary: list[str] = field(default_factory=list)
    input_bound: str = "not"
    wait_frac: float = math.nan
    converged: bool = False
    notes: list[str] = field(default_factory=list)
    share_ci: dict[str, list[float]] = field(default_factory=dict)
    """95 % interval of each headline share"""
    substages: dict[str, float] = field(default_factory=dict)
    """share of step time per sub-stage (preprocessing, read, loader, copy, compute), summing to 1"""
    substage_ci: dict[str, list[float]] = field(default_factory=dict)
    substage_s: dict[str, float] = field(default_factory=dict)
    """seconds per sample per sub-stage (clipped at zero)"""
    measured: dict[str, bool] = field(default_factory=dict)
    """per sub-stage: measured by its own probe (False: its probe did not apply, the cost is 0 by construction)"""
    speedups: dict[str, float] = field(default_factory=dict)
    """how much faster training runs with a stage removed (:func:`probe_gains`): ``input`` (a perfect input
    pipeline: full / cached_batch), ``preprocessing`` (full / no_preprocess), ``disk_io`` (no_preprocess /
    cached_batch), ``read``, ``loader``"""
    speedup_ci: dict[str, list[float]] = field(default_factory=dict)
    """95 % interval of each speed-up (paired round by round where the probes ran in rounds)"""
    input_saved: float = math.nan
    """share of the full pipeline's step time a perfect input pipeline saves: 1 - 1 / speedups['input']"""
    input_saved_ci: list[float] = field(default_factory=list)
    overlap: dict[str, Any] = field(default_factory=dict)
    """the input pipeline alone vs the model alone vs the full pipeline (:func:`overlap`)"""
    reuse: str = "noise"
    """:func:`read_reuse` of the input speed-up: ``nothing``, ``gain``, ``at_line`` or ``noise``; ``short`` when a
    probe has too few blocks for any reading (fewer than ``min_blocks``, or none within the budget)"""
    read: dict[str, Any] = field(default_factory=dict)
    """the read sub-stage named by its evidence (:func:`read_evidence`): ``kind`` (cpu_work, file_system, storage,
    waiting, unknown, none), ``name``, ``headline``, ``why`` and the per-sample differences it was read from"""
    bound: dict[str, Any] = field(default_factory=dict)
    """set when a bound decided the verdict (:func:`bound`): ``loader_vs_model`` (+ ``_ci``), ``workers``,
    ``evidence`` (why the cores were not shared, with workers), ``text``"""
    clear: bool = False
    """the input speed-up's whole CI lies on one side of the ``input_gain`` line (more data would not move the
    verdict across it): what ``diagnose`` needs before it stops early, and the same at ``stop_confidence``
    (:func:`gluonbench.diagnosis.run.clear_to_stop`)"""

    def precise(self, within: float) -> bool:
        """True when every share's (headline and sub-stage) 95 % interval is within +-``within``."""
        intervals = list(self.share_ci.values()) + list(self.substage_ci.values())
        return all((hi - lo) / 2 <= within for lo, hi in intervals)

    @property
    def headline_of(self) -> dict[str, str]:
        """Each sub-stage's headline: :data:`HEADLINE_OF`, with the read under preprocessing where its evidence
        shows CPU work inside ``dataset[i]``."""
        return headline_of(self.read)

    def top_substage(self, headline: str) -> str | None:
        """The sub-stage that costs most of ``headline``'s time, or None when the headline costs nothing."""
        subs = [s for s, h in self.headline_of.items() if h == headline and self.substages.get(s, 0.0) > 0]
        return max(subs, key=lambda s: self.substages[s]) if subs else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def attribute(
    chain: Mapping[str, ProbeTiming | None],
    wait_frac: float = math.nan,
    converged: bool = False,
    thresholds: Thresholds = Thresholds(),
    enough_data: bool = True,
    gains: Mapping[str, tuple[float, float, float]] | None = None,
    read: Mapping[str, Any] | None = None,
    workers: int | None = None,
    full_evidence: Mapping[str, Any] | None = None,
) -> Verdict:
    """The verdict and sub-stage split from the chain probes' timings (see the module docstring).

    ``chain`` maps each name of :data:`CHAIN` to its timing, or to None where the probe did not
    apply (it then equals the probe before it). ``enough_data=False`` (fewer than ``min_blocks``
    blocks in a probe, so its CI means little) makes the verdict ``inconclusive`` whatever the figures.
    ``gains``: the speed-ups ``(ratio, low, high)`` of :func:`probe_gains` (paired round by round); without
    them they are derived from the chain's timings (:func:`timing_gains`). ``read``: the read sub-stage named by
    its evidence (:func:`read_evidence`); where it is CPU work (``cpu_work``) it counts as preprocessing.
    ``workers`` (the loader's num_workers) and ``full_evidence`` (the ``full`` probe's ``evidence`` and ``system``)
    let a bound decide (:func:`bound`) where the seed's rule is inconclusive.
    """
    timing: dict[str, ProbeTiming] = {}
    measured: dict[str, bool] = {}
    unmeasured = [n for n in CHAIN if (t := chain.get(n)) is not None and not math.isfinite(t.median)]
    # a probe without a figure takes the one before it; a full probe without one, the first figure there is
    previous: ProbeTiming | None = next(
        (t for n in CHAIN if (t := chain.get(n)) is not None and math.isfinite(t.median)), ProbeTiming(0.0, 0.0, 0.0)
    )
    for name in CHAIN:
        t = chain.get(name)
        if t is not None and not math.isfinite(t.median):
            t = None  # no block measured (the budget ran out): no figure, and no verdict below
        if name != "full":
            measured[SUBSTAGES[name]] = t is not None
        if t is None:
            t = previous
        timing[name] = previous = t
    gains = dict(gains) if gains is not None else timing_gains({n: chain.get(n) for n in CHAIN})
    read_info = material_read(dict(read) if read else {}, gains.get("read", _NO_GAIN), timing, thresholds)
    heads = headline_of(read_info)
    # the probe that ends preprocessing: no_read where the read is CPU work inside dataset[i]
    cut = "no_read" if heads["read"] == "preprocessing" else "no_preprocess"
    full, no_preprocess, cached_batch = timing["full"], timing[cut], timing["cached_batch"]
    measured["compute"] = True
    raw = {
        "preprocessing": full.median - no_preprocess.median,
        "disk_io": no_preprocess.median - cached_batch.median,
        "gpu_io": cached_batch.median,
    }
    unc = {
        "preprocessing": full.half_width + no_preprocess.half_width,
        "disk_io": no_preprocess.half_width + cached_batch.half_width,
        "gpu_io": cached_batch.half_width,
    }
    stage = {k: max(v, 0.0) for k, v in raw.items()}
    total = sum(stage.values())
    shares = {k: (v / total if total > 0 else 0.0) for k, v in stage.items()}
    present = {k: stage[k] > unc[k] for k in STAGES}
    notes: list[str] = []
    if unmeasured:
        enough_data = False
        notes.append(f"no measurement of {', '.join(unmeasured)} within the budget: raise the budget")
    decided = dict(gains)  # what the verdict compares and reports: the read under preprocessing where it is CPU work
    if cut == "no_read":
        decided["preprocessing"] = gains.get("through_read", _NO_GAIN)
        decided["disk_io"] = gains.get("loader", _NO_GAIN)
        if measured.get("read"):
            read_info["speedup"] = list(decided["preprocessing"])
    line = thresholds.line
    g, g_lo, g_hi = gains.get("input", (math.nan, math.nan, math.nan))
    # an input stage counts when removing it gains beyond the noise and saves at least input_gain of full's step
    t_full = full.median if full.median > 0 else math.inf
    beyond = {
        k: decided[k][1] > 1.0 and stage[k] / t_full >= thresholds.input_gain
        for k in ("preprocessing", "disk_io")
        if k in decided
    }
    reading = read_reuse((g, g_lo, g_hi), line, converged) if enough_data else "short"
    nothing, gain_real = reading == "nothing", reading == "gain"
    established = {
        "preprocessing": beyond.get("preprocessing", False),
        "disk_io": beyond.get("disk_io", False),
        "gpu_io": nothing,
    }
    verdict = "inconclusive"
    if not enough_data:
        notes.append(f"fewer than {thresholds.min_blocks} blocks in a probe: too little data for a verdict")
    elif nothing:
        verdict = "gpu_io"
        if g_hi > line:
            notes.append(
                f"close call: a perfect input pipeline gains {_x(g)} [{_x(g_lo)}, {_x(g_hi)}], within the noise of "
                f"none (the line: a {_x(line)} gain, input_gain={thresholds.input_gain:g}) after the measurement "
                "converged"
            )
    elif reading == "at_line":
        notes.append(
            f"at the line: a perfect input pipeline gains {g:.3f}x [{g_lo:.3f}x, {g_hi:.3f}x], beyond the noise of "
            f"none but across the line (a {line:.3f}x gain, input_gain={thresholds.input_gain:g}): the input pipeline "
            f"costs at most {1 - 1 / g_hi:.0%} of the step"
        )
    elif gain_real:
        # the input stage whose removal saves the most time (the chain's ratios compound, so their sizes do not
        # compare: removing preprocessing first shrinks the step the rest is a ratio of)
        verdict = "preprocessing" if stage["preprocessing"] >= stage["disk_io"] else "disk_io"
        runner = "disk_io" if verdict == "preprocessing" else "preprocessing"
        if stage[verdict] - unc[verdict] <= stage[runner] + unc[runner] and established[runner]:
            notes.append(
                f"close call: removing {verdict} saves {shares[verdict]:.0%} of the step, removing {runner} "
                f"{shares[runner]:.0%}, within the noise of each other; both are worth fixing"
            )
    bounded: dict[str, Any] = {}
    if verdict == "inconclusive" and enough_data:
        bounded = bound(gains, thresholds, workers, full_evidence)
        if bounded:
            verdict = "gpu_io"
            established["gpu_io"] = True
            notes.append(bounded["text"])
    anomalies = {
        "preprocessing": "no_preprocess ran slower than full",
        "disk_io": "cached_batch ran slower than no_preprocess",
    }
    for k, what in anomalies.items():
        if raw[k] < 0 and -raw[k] > unc[k]:
            notes.append(f"{what} ({-raw[k] * 1e6:.1f} us a sample beyond the noise); {k} is taken as 0")
    secondary = (
        [k for k in ("preprocessing", "disk_io") if k != verdict and established[k]]
        if verdict in ("preprocessing", "disk_io")
        else []
    )
    saved = 1.0 - 1.0 / g if math.isfinite(g) and g > 0 else math.nan
    saved_ci = [1.0 - 1.0 / x if math.isfinite(x) and x > 0 else math.nan for x in (g_lo, g_hi)]
    if verdict == "gpu_io":
        label = "not"
    elif verdict == "inconclusive":
        label = "unknown"
    else:
        label = "highly" if saved >= thresholds.highly_input_bound else "moderately"
    share_ci = {k: _interval(stage[k], unc[k], total) for k in STAGES}
    sub_raw: dict[str, float] = {}
    sub_unc: dict[str, float] = {}
    names = list(CHAIN)
    for i, name in enumerate(names[1:], 1):
        sub = SUBSTAGES[name]
        if measured[sub]:
            before = timing[names[i - 1]]
            sub_raw[sub] = before.median - timing[name].median
            sub_unc[sub] = before.half_width + timing[name].half_width
        else:
            sub_raw[sub], sub_unc[sub] = 0.0, 0.0
    last = timing[names[-1]]
    sub_raw["compute"], sub_unc["compute"] = last.median, last.half_width
    sub_s: dict[str, float] = {}
    for head in STAGES:
        members = [s for s, h in heads.items() if h == head]
        clipped = {s: max(sub_raw[s], 0.0) for s in members}
        weight = sum(clipped.values())
        for s in members:
            sub_s[s] = stage[head] * clipped[s] / weight if weight > 0 else (stage[head] if len(members) == 1 else 0.0)
    substages = {s: (v / total if total > 0 else 0.0) for s, v in sub_s.items()}
    substage_ci = {s: _interval(sub_s[s], sub_unc[s], total) for s in sub_s}
    return Verdict(
        verdict=verdict,
        shares=shares,
        stage_s=stage,
        stage_uncertainty_s=unc,
        present=present,
        established=established,
        secondary=secondary,
        input_bound=label,
        wait_frac=wait_frac,
        converged=converged,
        notes=notes,
        share_ci=share_ci,
        substages=substages,
        substage_ci=substage_ci,
        substage_s=sub_s,
        measured=measured,
        speedups={k: v[0] for k, v in decided.items() if k in SPEEDUPS},
        speedup_ci={k: [v[1], v[2]] for k, v in decided.items() if k in SPEEDUPS},
        input_saved=saved,
        input_saved_ci=saved_ci,
        overlap=overlap(gains, thresholds, "device_batch" if measured.get("copy") else "cached_batch"),
        reuse=reading,
        read=read_info,
        bound=bounded,
        clear=clear_of(g_lo, g_hi, line),
    )


def material_read(
    read: dict[str, Any], gain: Gain, timing: Mapping[str, ProbeTiming], thresholds: Thresholds = Thresholds()
) -> dict[str, Any]:
    """``read`` (:func:`read_evidence`) as the verdict names it: its evidence counts only where removing
    ``dataset[i]`` matters, its speed-up ``gain`` (no_preprocess over no_read) beyond the noise and its time at
    least ``input_gain`` of the full step. Otherwise the read is kind ``none`` (its evidence kept as
    ``evidence_kind``): an in-memory data set's indexing, or worker traffic, is not named decode or file-system
    work, and the read stays where the seed's rule puts it (reading and the loader)."""
    kind = read.get("kind")
    if kind in (None, "unknown", "none"):
        return read
    full, before, after = (timing.get(n) for n in ("full", "no_preprocess", "no_read"))
    cost = before.median - after.median if before is not None and after is not None else math.nan
    share = cost / full.median if full is not None and full.median > 0 else math.nan
    if gain[1] > 1.0 and share >= thresholds.input_gain:
        return read
    r, lo, hi = gain
    figure = f"{r:.2f}x [{lo:.2f}, {hi:.2f}]" if all(math.isfinite(x) for x in gain) else "no figure"
    return {
        **read,
        "evidence_kind": kind,
        "kind": "none",
        "name": "reading (dataset[i])",
        "headline": READ_HEADLINE["none"],
        "why": f"removing dataset[i] gains {figure}, "
        + (f"{share:.0%} of the step" if math.isfinite(share) else "no share")
        + f": too little to name what it spends ({read.get('why', '')})",
    }


def headline_of(read: Mapping[str, Any] | None) -> dict[str, str]:
    """Each sub-stage's headline (:data:`HEADLINE_OF`), with the read's from its evidence (``read["kind"]``)."""
    kind = (read or {}).get("kind", "unknown")
    return {**HEADLINE_OF, "read": READ_HEADLINE.get(kind, "disk_io")}


def _fig(e: Mapping[str, Any], key: str) -> float | None:
    v = e.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None


def read_evidence(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None, parallel: int = 1
) -> dict[str, Any]:
    """The read sub-stage named by what it spends: ``before`` and ``after`` are the ``evidence`` (per sample) of
    the probes with and without ``dataset[i]`` (``no_preprocess`` and ``no_read``). ``parallel``: how many
    ``dataset[i]`` calls run at once (the workers, at most the cores; 1 at 0 workers): the read's wall time per
    sample is shared by them, so its CPU time is set against ``parallel`` times it. See the module docstring."""
    if not before or not after:
        return {"kind": "unknown", "name": "reading (dataset[i])", "headline": "disk_io", "why": "no evidence recorded"}
    diff: dict[str, float | None] = {}
    for key in ("wall_s", "cpu_s", "user_s", "system_s", "runq_s", "read_bytes", "blkio_s"):
        a, b = _fig(before, key), _fig(after, key)
        diff[key] = None if a is None or b is None else a - b
    wall = diff["wall_s"] or 0.0
    parallel = max(1, int(parallel))
    capacity = wall * parallel  # thread-seconds the read had per sample
    cpu = max(diff["cpu_s"] or 0.0, 0.0)
    system = max(diff["system_s"] or 0.0, 0.0)
    runq = max(diff["runq_s"] or 0.0, 0.0)
    read_bytes = max(diff["read_bytes"] or 0.0, 0.0)
    blocked = diff["blkio_s"]
    out: dict[str, Any] = {f"{k}_per_sample": v for k, v in diff.items()}
    out["blkio_reported"] = blocked is not None
    us = f"{wall * 1e6:.0f} us a sample"
    if wall <= 0:
        kind, why = "none", f"dataset[i] costs no wall time beyond its stand-in ({us})"
    elif read_bytes / wall >= STORAGE_BYTES_PER_S or (blocked is not None and blocked >= BLOCKED_SHARE * wall):
        kind = "storage"
        why = f"dataset[i] read {read_bytes / wall / 1e6:.1f} MB/s from storage over its {us}" + (
            f", blocked on it {blocked / wall:.0%} of the time" if blocked is not None else ""
        )
    elif cpu >= CPU_BOUND_SHARE * capacity:
        kind = "file_system" if system >= SYSTEM_SHARE * cpu else "cpu_work"
        used = (
            f"kept {cpu / wall:.2f} cores busy over its {us}, its own threads and MXNet's engine threads at once"
            if cpu > 1.05 * capacity
            else f"used {cpu / capacity:.0%} of its {us}{_over(parallel)} on the CPU"
        )
        why = (
            f"dataset[i] {used} "
            f"({system / max(cpu, 1e-12):.0%} of it in the kernel)"
            + (f" and waited for a core {runq / capacity:.0%}" if runq >= 0.05 * capacity else "")
            + f", read {_read_text(read_bytes)} from storage"
            + (
                f", blocked on storage {blocked / wall:.0%}"
                if blocked is not None
                else " (time blocked on storage: not reported by this kernel)"
            )
        )
    else:
        kind = "waiting"
        why = (
            f"dataset[i] used the CPU only {cpu / capacity:.0%} of its {us}{_over(parallel)} and read "
            f"{_read_text(read_bytes)} from "
            "storage: it waits (latency: a network file system, an object store, a lock)"
            + (
                f"; its threads also waited for a core {runq / capacity:.0%}: on a machine this busy CPU work "
                "slowed by other programs looks alike, so diagnose again on a quieter one"
                if runq >= CPU_BOUND_SHARE * capacity - cpu
                else ""
            )
        )
    names = {
        "cpu_work": READ_WORK,
        "file_system": "file-system work in dataset[i] (opening and reading many small files)",
        "storage": "reading from storage (dataset[i])",
        "waiting": "waiting in dataset[i] (latency)",
        "none": "reading (dataset[i])",
    }
    out.update(kind=kind, name=names[kind], headline=READ_HEADLINE[kind], why=why)
    return out


def _over(parallel: int) -> str:
    return f" (x {parallel} in parallel)" if parallel > 1 else ""


def _read_text(n: float) -> str:
    return "0 bytes" if n <= 0 else f"{n / 1e3:.1f} kB a sample"


def bound(
    gains: Mapping[str, Gain],
    thresholds: Thresholds = Thresholds(),
    workers: int | None = None,
    full_evidence: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The model step as the verdict when a bound decides it (see the module docstring); empty otherwise.

    ``gains["loader_vs_model"]``: ``loader_only`` over the model step, paired round by round. ``full_evidence``:
    ``{"evidence": ..., "system": ...}`` of the ``full`` probe, for the cores with workers.
    """
    r, lo, hi = gains.get("loader_vs_model", _NO_GAIN)
    if workers is None or not all(math.isfinite(x) for x in (r, lo, hi)) or hi >= thresholds.input_gain:
        return {}
    fig = f"{r:.1%} [{lo:.1%}, {hi:.1%}]"
    out: dict[str, Any] = {"loader_vs_model": r, "loader_vs_model_ci": [lo, hi], "workers": workers}
    if workers == 0:
        out["evidence"] = "num_workers=0: the loader runs in the training loop's own thread"
        out["text"] = (
            f"the bound decided it: the input pipeline alone (`loader_only`) takes {fig} of the model step's time "
            f"a batch, under input_gain={thresholds.input_gain:g}; with num_workers=0 the loader runs in the loop's "
            "own thread, so a perfect input pipeline could save at most that"
        )
        return out
    free = _cores_free(full_evidence or {})
    if free is None:
        return {}
    out["evidence"] = free
    out["text"] = (
        f"the bound decided it: the input pipeline alone (`loader_only`) takes {fig} of the model step's time a "
        f"batch, under input_gain={thresholds.input_gain:g}, and the cores were not shared ({free}), so the "
        f"{workers} worker(s) load beside the step and a perfect input pipeline could save at most that"
    )
    return out


def _cores_free(full: Mapping[str, Any]) -> str | None:
    """Why the cores were not shared during ``full`` (a sentence), or None when the evidence does not show it."""
    ev = full.get("evidence") or {}
    wall, runq = _fig(ev, "wall_s"), _fig(ev, "runq_s")
    if wall and runq is not None:
        if runq < FREE_RUNQ_SHARE * wall:
            return f"during `full` this run's threads waited for a core {runq / wall:.1%} of the time"
        return None  # the threads did wait for cores: that evidence decides against
    per = (full.get("system") or {}).get("per_core_pct") or []
    if per and sum(per) / 100 <= len(per) - 1:
        return f"during `full` the machine kept {sum(per) / 100:.1f} of its {len(per)} cores busy: one stood idle"
    return None


def clear_of(lo: float, hi: float, line: float) -> bool:
    """True when the interval ``[lo, hi]`` (both ends finite) lies wholly on one side of ``line``."""
    return math.isfinite(lo) and math.isfinite(hi) and (hi <= line or lo > line)


def read_reuse(gain: tuple[float, float, float], line: float, converged: bool = True) -> str:
    """The seed's rule on the speed-up of one reused batch, ``(ratio, 95 % CI low, high)``, against ``line``.

    * ``nothing``: reusing one batch gains nothing (the seed's "performance does not improve", so GPU I/O): the
      whole CI under the line, or, once the measurement ``converged``, 1 within the CI and the gain under the line;
    * ``gain``: the whole CI above the line: the input pipeline limits training;
    * ``at_line``: a gain beyond the noise of none whose CI crosses the line: too close to call;
    * ``noise``: the CI is too wide to tell (or nothing was measured).

    The one rule of ``diagnose``'s verdict, ``tune``'s "model fed" and the ground truth's plain loop
    (``benchmarks/ground_truth.py``).
    """
    g, lo, hi = gain
    if not all(math.isfinite(x) for x in gain):
        return "noise"
    if hi <= line or (converged and lo <= 1.0 and g <= line):
        return "nothing"
    if lo > line:
        return "gain"
    return "at_line" if lo > 1.0 else "noise"


def _x(r: float) -> str:
    return f"{r:.2f}x" if math.isfinite(r) else "?"


Gain = tuple[float, float, float]
"""A speed-up: (ratio, 95 % CI low, 95 % CI high)."""
_NO_GAIN: Gain = (math.nan, math.nan, math.nan)


def overlap(gains: Mapping[str, Gain], thresholds: Thresholds = Thresholds(), model: str = "cached_batch") -> dict:
    """The input pipeline alone, the model alone (``model``, a probe name) and the full pipeline compared.

    Empty when ``loader_only`` was not measured. ``contention``: the full pipeline is clearly slower than
    the slower of the two alone (its paired ratio's CI above 1 and the ratio above the ``input_gain`` line):
    the stages compete for a shared resource instead of overlapping. ``balanced``: the two alone are within the
    line of each other, and 1 lies inside their ratio's CI: speeding up either alone gains little. (A ratio whose
    CI merely contains 1, far from it, is noise, not balance: a 40 ms loader beside a 170 ms model is not.)
    """
    fm, fl, lm = (gains.get(k, _NO_GAIN) for k in OVERLAP)
    if not all(math.isfinite(x) and x > 0 for g in (fm, fl, lm) for x in g):
        return {}
    line = thresholds.line
    loader_slower = lm[0] >= 1.0
    slower = fl if loader_slower else fm
    return {
        "model_probe": model,
        "slower_alone": "loader_only" if loader_slower else model,
        "full_vs_slower": slower[0],
        "full_vs_slower_ci": [slower[1], slower[2]],
        "loader_vs_model": lm[0],
        "loader_vs_model_ci": [lm[1], lm[2]],
        "contention": slower[1] > 1.0 and slower[0] > line,
        "balanced": lm[1] <= 1.0 <= lm[2] and 1.0 / line <= lm[0] <= line,
        # full within the line of loader + model: the two do not overlap at all
        "serial": slower[0] >= (1.0 + min(lm[0], 1.0 / lm[0])) / line,
    }


def _resolve(name: str, present: Mapping[str, Any]) -> str | None:
    """The probe whose figure ``name`` has: itself, or (not measured, or the same as) the chain probe before it."""
    if name in present:
        return name
    if name in CHAIN:
        i = CHAIN.index(name)
        return _resolve(CHAIN[i - 1], present) if i > 0 else None
    return None


def timing_gains(timing: Mapping[str, ProbeTiming | None]) -> dict[str, Gain]:
    """The speed-ups from probe timings alone (each with its own CI; no pairing): :func:`attribute`'s fallback."""
    from gluonbench.analysis.stats import ratio_ci

    present = {n: t for n, t in timing.items() if t is not None and math.isfinite(t.median)}
    out: dict[str, Gain] = {}
    for key, (a, b) in {**SPEEDUPS, **REGROUPED}.items():
        ra, rb = _resolve(a, present), _resolve(b, present)
        if ra is None or rb is None:
            out[key] = _NO_GAIN
        elif ra == rb:
            out[key] = (1.0, 1.0, 1.0)
        else:
            ta, tb = present[ra], present[rb]
            r, (lo, hi) = ratio_ci(ta.median, (ta.low, ta.high), tb.median, (tb.low, tb.high))
            out[key] = (r, lo, hi)
    return out


def probe_gains(probes: Mapping[str, Any], min_rounds: int = PAIRED_MIN_ROUNDS, z: float = 1.96) -> dict[str, Gain]:
    """Every speed-up of :data:`SPEEDUPS` and ratio of :data:`OVERLAP` from probe results (objects or dicts).

    Each is the slower probe's seconds per sample over the faster one's, compared round by round
    (:func:`~gluonbench.analysis.stats.paired_ratio`: the median over rounds of the per-round ratio and that
    median's 95 % CI) where both ran in at least ``min_rounds`` common rounds; otherwise from each probe's
    own median and CI (:func:`~gluonbench.analysis.stats.ratio_ci`). A probe that did not apply takes the
    figure of the chain probe before it, so removing it gains exactly 1x. ``z`` sets the paired intervals'
    level (1.96: 95 %; the early stop asks for :attr:`Thresholds.stop_confidence`).
    """
    from gluonbench.analysis.stats import ratio_ci

    def same_as(p: Any) -> Any:
        return p.get("same_as") if isinstance(p, Mapping) else getattr(p, "same_as", None)

    present = {}
    for n, p in probes.items():
        if same_as(p):
            continue
        t = _timing(p)
        if math.isfinite(t.median) and t.median > 0:
            present[n] = p
    model = _resolve("device_batch", present)
    out: dict[str, Gain] = {}
    for key, (a, b) in {**SPEEDUPS, **OVERLAP, **REGROUPED}.items():
        ra = model if a == "model" else _resolve(a, present)
        rb = model if b == "model" else _resolve(b, present)
        if ra is None or rb is None:
            out[key] = _NO_GAIN
            continue
        if ra == rb:
            out[key] = (1.0, 1.0, 1.0)
            continue
        paired = paired_ratio(_per_round(present[ra]), _per_round(present[rb]), min_rounds, z)
        if paired is not None:
            r, (lo, hi) = paired
        else:
            ta, tb = _timing(present[ra]), _timing(present[rb])
            r, (lo, hi) = ratio_ci(ta.median, (ta.low, ta.high), tb.median, (tb.low, tb.high))
        out[key] = (r, lo, hi)
    return out


def _interval(value: float, uncertainty: float, total: float) -> list[float]:
    if total <= 0:
        return [0.0, 0.0]
    return [max(0.0, (value - uncertainty) / total), min(1.0, (value + uncertainty) / total)]


def _timing(p: Any) -> ProbeTiming:
    if isinstance(p, Mapping):
        med, (lo, hi) = p["s_per_sample"], p["s_per_sample_ci"]
    else:
        med, (lo, hi) = p.s_per_sample, p.s_per_sample_ci
    return ProbeTiming(float(med), float(lo), float(hi))


def timings(probes: Mapping[str, Any]) -> tuple[ProbeTiming, ProbeTiming, ProbeTiming]:
    """:class:`ProbeTiming` of full, no_preprocess and cached_batch from probe results (objects or dicts)."""
    return _timing(probes["full"]), _timing(probes["no_preprocess"]), _timing(probes["cached_batch"])


def chain_timings(probes: Mapping[str, Any]) -> dict[str, ProbeTiming | None]:
    """The chain's timings for :func:`attribute`: None for a probe that did not apply (``same_as``) or is absent."""

    def same_as(p: Any) -> Any:
        return p.get("same_as") if isinstance(p, Mapping) else getattr(p, "same_as", None)

    return {n: (_timing(probes[n]) if n in probes and not same_as(probes[n]) else None) for n in CHAIN}


def paired_timings(probes: Mapping[str, Any], min_rounds: int = PAIRED_MIN_ROUNDS) -> dict[str, ProbeTiming | None]:
    """The chain's timings for :func:`attribute`, each probe compared with ``full`` round by round.

    The probes take turns in rounds; within one round they run seconds apart, under the same background
    load. Probe p's figure is ``median_r(v_r(p) / v_r(full))`` times full's median, with the 95 % CI of
    that median ratio, where ``v_r`` is a probe's seconds per sample in round r (all its steady steps).
    A busier machine in one round slows every probe of that round alike and cancels in the ratio; two
    diagnoses of the same pipeline
    then agree on the shares even when the machine's load differs between them. ``full`` itself keeps
    its median with no width: the shares are fractions of it, and the uncertainty of a difference from it
    is the paired ratio's. Results without per-round values, or fewer than ``min_rounds`` rounds where
    every chain probe ran, get :func:`chain_timings` (each probe's own median and CI).
    """
    unpaired = chain_timings(probes)
    full = unpaired["full"]
    rows = _rows(probes, unpaired)
    if full is None or not math.isfinite(full.median) or "full" not in rows:
        return unpaired
    common = _common(rows)
    out: dict[str, ProbeTiming | None] = {}
    for name, t in unpaired.items():
        if t is None:
            out[name] = None
        elif name == "full":
            out[name] = ProbeTiming(full.median, full.median, full.median)
        else:
            paired = paired_ratio({r: rows[name][r] for r in common}, rows["full"], min_rounds)
            if paired is None:
                return unpaired
            ratio, (lo, hi) = paired
            out[name] = ProbeTiming(ratio * full.median, lo * full.median, hi * full.median)
    return out


def paired_rounds(probes: Mapping[str, Any]) -> set[int]:
    """The rounds in which every measured chain probe has a figure (what :func:`paired_timings` pairs)."""
    return _common(_rows(probes, chain_timings(probes)))


def _rows(probes: Mapping[str, Any], timings: Mapping[str, ProbeTiming | None]) -> dict[str, dict[int, float]]:
    """Per-round figures of each chain probe that was measured (``timings``: :func:`chain_timings`)."""
    return {n: _per_round(probes[n]) for n, t in timings.items() if t is not None}


def _common(rows: Mapping[str, Mapping[int, float]]) -> set[int]:
    return set.intersection(*(set(v) for v in rows.values())) if rows else set()


def _per_round(p: Any) -> dict[int, float]:
    values = p.get("per_round") if isinstance(p, Mapping) else getattr(p, "per_round", None)
    return {i: v for i, v in enumerate(values or [], 1) if v is not None}
