"""The diagnose probes measured: each declared probe (:mod:`gluonbench.diagnosis.probes`) built from the
pipeline and all of them run by :func:`~gluonbench.engine.measure.measure` in interleaved
:class:`~gluonbench.engine.measure.Rounds`.

A probe's figure is the median seconds per sample over its blocks with the 95 % CI of that
median; see :mod:`gluonbench.engine.measure` for the steady-state rules.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from gluonbench.analysis.stats import median, median_ci
from gluonbench.diagnosis.probes import NAMES, PROBES, Context
from gluonbench.engine.deadline import BudgetExceededError, pipeline_fault
from gluonbench.engine.measure import Measurement, Record, Rounds, measure
from gluonbench.pipeline import Pipeline

log = logging.getLogger(__name__)

PROBE_NAMES = NAMES


@dataclass
class ProbeResult:
    """One probe's steady-state figures: seconds per sample (median of blocks, CI), rates, split, system."""

    name: str
    removes: str
    batch_size: int
    blocks: list[float] = field(default_factory=list)
    """seconds per sample of each block"""
    per_round: list[float | None] = field(default_factory=list)
    """median seconds per sample of this probe's blocks in round 1, 2, ... (None: no slice in that round);
    the probes are compared round by round (:func:`gluonbench.diagnosis.verdict.paired_timings`)"""
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
    evidence: dict[str, Any] = field(default_factory=dict)
    """what the process tree (this process with all its threads, and the loader's workers) spent per sample over
    this probe's measured steps (:meth:`~gluonbench.engine.measure.Window.per_sample`): ``wall_s``, ``cpu_s``,
    ``user_s``, ``system_s``, ``runq_s`` (ready but waiting for a core), ``read_bytes`` (from storage: a page-cache
    hit reads 0), ``blkio_s`` (blocked on storage; None where the kernel does not report it), ``samples``"""
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
            self.s_per_sample = median(self.blocks)
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
    """``converged`` (the caller's checks held: for diagnose the verdict settled, clear of the line, the shares
    precise), ``budget``, or ``stalled in <stage>`` (a stage blocked past the deadline; the complete rounds only)"""
    rounds: int
    startup_s: float
    settled_s: float | None = None
    """elapsed seconds at the end of the round from which ``settled`` held to the end (time to verdict)"""


def _result(name: str, removes: str, batch_size: int, rec: Record) -> ProbeResult:
    last = max(rec.per_round, default=0)
    per_round = [rec.per_round.get(i) for i in range(1, last + 1)]
    out = ProbeResult(name, removes, batch_size, blocks=list(rec.blocks), per_round=per_round)
    out.steps, out.samples, out.rounds = len(rec.times), sum(rec.times.samples), rec.rounds
    out.block_steps = rec.block_steps
    out.evidence = rec.usage.per_sample()
    out.update()
    return out


def probe_results(
    records: Mapping[str, Record],
    batch_size: int,
    skipped: Mapping[str, str],
    final: bool = True,
    removes: Mapping[str, str] | None = None,
) -> dict[str, ProbeResult]:
    """Probe results in declaration order from the records of their rounds (however measured: :func:`measure_probes`,
    or a user's running script); a skipped probe is a copy of the one before it, marked ``same_as``. ``final``: with
    the step split and the system evidence; ``removes``: what each probe removes, where the caller words it
    otherwise."""
    out: dict[str, ProbeResult] = {}
    previous = None
    for probe in PROBES:
        if probe.name in skipped and previous is not None:
            alias = ProbeResult.from_dict(out[previous].to_dict())
            alias.name, alias.removes, alias.same_as = probe.name, skipped[probe.name], previous
            out[probe.name] = alias
        elif probe.name in records:
            rec = records[probe.name]
            res = _result(probe.name, (removes or {}).get(probe.name, probe.removes), batch_size, rec)
            if final:
                res.split = rec.times.split(skip=0).to_dict() if len(rec.times) else {}
                res.system = rec.system.to_dict() if rec.systems else {}
            out[probe.name] = res
        if probe.in_chain:
            previous = probe.name
    return out


def _results(m: Measurement, pipeline: Pipeline, skipped: dict[str, str], final: bool) -> dict[str, ProbeResult]:
    return probe_results(m.records, pipeline.batch_size, skipped, final)


def measure_probes(
    pipeline: Pipeline,
    plan: Rounds | None = None,
    settled: Callable[[ProbeSet], bool] | None = None,
    on_progress: Callable[[float, float], None] | None = None,
    done: Callable[[ProbeSet], bool] | None = None,
) -> ProbeSet:
    """Measure every declared probe of ``pipeline`` in interleaved rounds.

    ``settled(probes)`` is asked after each round (the caller's verdict check); the measurement
    stops early only when it holds, every probe has converged and ``done(probes)`` (if given) agrees. Every loader
    is closed before this returns, whatever happens. When a stage stalls past the deadline, the
    :class:`~gluonbench.engine.deadline.BudgetExceededError` carries the rounds measured before it as a
    :class:`ProbeSet` (``partial``), whose ``stop_reason`` names the stall.
    """
    plan = plan or Rounds()
    skipped = {p.name: reason for p in PROBES if (reason := p.skip_reason(pipeline)) is not None}
    # the stand-ins are built from the real pipeline's first batch
    first = measure_first_batch(pipeline)
    context = Context(first_batch=first)
    built = {p.name: p.build(pipeline, context) for p in PROBES if p.name not in skipped}

    def check(m: Measurement) -> bool:
        if settled is None:
            return True
        current = _results(m, pipeline, skipped, final=False)
        return settled(ProbeSet(current, m.elapsed_s, "", m.rounds, m.startup_s))

    def enough(m: Measurement) -> bool:
        if done is None:
            return True
        current = _results(m, pipeline, skipped, final=False)
        return done(ProbeSet(current, m.elapsed_s, "", m.rounds, m.startup_s))

    def probe_set(m: Measurement) -> ProbeSet:
        return ProbeSet(
            _results(m, pipeline, skipped, final=True), m.elapsed_s, m.stop_reason, m.rounds, m.startup_s, m.settled_s
        )

    try:
        m = measure(built, plan, settled=check, on_progress=on_progress, done=enough)
    except BudgetExceededError as exc:
        # a stage stalled past the deadline: the rounds before it, as probes, go with the error (the caller keeps them)
        try:
            exc.partial = probe_set(exc.measurement) if exc.measurement is not None else None
        except Exception as err:  # what was measured must not hide the stall itself
            log.info("the rounds before the stall could not be read as probes: %r", err)
            exc.partial = None
        raise
    return probe_set(m)


def measure_first_batch(pipeline: Pipeline) -> tuple[Any, Any]:
    """The first batch the pipeline's loader produces, in host memory (with no worker processes started)."""
    from gluonbench._mx import mx

    single = (
        pipeline.with_loader(num_workers=0, thread_pool=False) if hasattr(pipeline.loader, "thread_pool") else pipeline
    )
    running = single.open()
    try:
        try:
            data, label = next(iter(running.epoch(0)))[:2]
        except Exception as exc:  # a shuffled first batch may hold an item the check before measuring did not try
            fault = pipeline_fault(exc)
            if fault is None:
                raise
            raise fault from exc
        data, label = data.as_in_context(mx.cpu()), label.as_in_context(mx.cpu())
        data.wait_to_read()
        label.wait_to_read()
        return data, label
    finally:
        running.close()
