"""``diagnose()``: probes, verdict, evidence and recommendations for any Gluon input pipeline.

Runs in the calling process (a user's data set cannot be shipped to a child
process); every DataLoader it creates is closed before it returns, so no worker
process or shared-memory segment outlives it. The net's weights are restored
after the probes (they train it for a few hundred steps).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from time import perf_counter
from typing import Any

from gluonbench.analysis.stats import PAIRED_MIN_ROUNDS, fewest_for, z_of
from gluonbench.budgets import check_budget
from gluonbench.contexts import ctx_text, resolve_ctx
from gluonbench.diagnosis.facts import facts
from gluonbench.diagnosis.measure import PROBE_NAMES, ProbeResult, ProbeSet, measure_probes
from gluonbench.diagnosis.probes import SUBSTAGES
from gluonbench.diagnosis.recommend import Recommendation, Setting, advise, evidence, render
from gluonbench.diagnosis.verdict import (
    STAGES,
    Thresholds,
    Verdict,
    attribute,
    clear_of,
    paired_rounds,
    paired_timings,
    probe_gains,
    read_evidence,
)
from gluonbench.engine.deadline import BudgetExceededError, PipelineFaultError, with_deadline
from gluonbench.engine.measure import Rounds
from gluonbench.errors import GluonbenchError
from gluonbench.names import arg
from gluonbench.pipeline import build_pipeline
from gluonbench.pipeline.net import prepare_net, restore_net
from gluonbench.pipeline.samples import as_dataset, check_labels, check_loss, check_samples, checked_step
from gluonbench.report import versions
from gluonbench.units import count
from gluonbench.workloads.base import opened_workload

log = logging.getLogger(__name__)


@dataclass
class Diagnosis:
    """The result of :func:`diagnose`; ``to_dict()`` is JSON-serialisable."""

    verdict: str
    """``preprocessing``, ``disk_io``, ``gpu_io`` or ``inconclusive``"""
    shares: dict[str, float]
    """share of step time per stage (the seed's three: preprocessing, disk_io, gpu_io), summing to 1"""
    probes: dict[str, ProbeResult]
    """per probe: samples/s with CI, step-time split, system evidence"""
    recommendations: list[str]
    """the advice as text (:func:`gluonbench.diagnosis.recommend.render` of ``advice``)"""
    evidence: list[str]
    secondary: list[str] = field(default_factory=list)
    input_bound: str = "unknown"
    """TF Profiler's label from the full pipeline's input wait: ``highly``, ``moderately``, ``not``"""
    wait_frac: float = math.nan
    notes: list[str] = field(default_factory=list)
    analysis: dict[str, Any] = field(default_factory=dict)
    """the verdict's workings: stage seconds per sample, uncertainties, present/established flags"""
    setting: dict[str, Any] = field(default_factory=dict)
    thresholds: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0
    settled_s: float | None = None
    """seconds until the verdict was reached (and held to the end)"""
    stop_reason: str = ""
    rounds: int = 0
    env: dict[str, Any] = field(default_factory=dict)
    started_utc: str = ""
    label: str = ""
    stages: dict[str, float] = field(default_factory=dict)
    """share of step time per sub-stage, measured by its own probe: preprocessing (decode + transform),
    read (dataset[i]), loader (batchify, worker hand-off), copy (host to device), compute; summing to 1"""
    stage_ci: dict[str, list[float]] = field(default_factory=dict)
    """95 % interval of each sub-stage's share"""
    share_ci: dict[str, list[float]] = field(default_factory=dict)
    """95 % interval of each headline share"""
    pipeline: dict[str, str] = field(default_factory=dict)
    """what ran in each stage of the full pipeline"""
    advice: list[dict[str, Any]] = field(default_factory=list)
    """the recommendations as records: stage, sub-stage, finding or fix, the knob, the text"""
    speedups: dict[str, float] = field(default_factory=dict)
    """what the verdict is read from (the seed's rule): how much faster training runs with a stage removed:
    ``input`` (one batch reused: full / cached_batch), ``preprocessing`` (full / no_preprocess), ``disk_io``
    (no_preprocess / cached_batch), ``read``, ``loader``, ``copy``"""
    speedup_ci: dict[str, list[float]] = field(default_factory=dict)
    """95 % interval of each speed-up, paired round by round"""
    input_saved: float = math.nan
    """share of the full pipeline's step time a perfect input pipeline saves (1 - 1/speedups['input']);
    ``input_bound`` labels it"""
    input_saved_ci: list[float] = field(default_factory=list)
    overlap: dict[str, Any] = field(default_factory=dict)
    """the input pipeline alone vs the model alone vs both: ``contention``, ``balanced``, ``full_vs_slower``
    (+ ``_ci``), ``loader_vs_model`` (+ ``_ci``), ``slower_alone``, ``model_probe``"""

    @property
    def at_line(self) -> bool:
        """An inconclusive verdict at the line: reusing one batch gains beyond the noise, its CI across the line."""
        return self.verdict == "inconclusive" and (self.analysis or {}).get("reuse") == "at_line"

    def to_dict(self) -> dict[str, Any]:
        from gluonbench.report.store import json_safe

        d = asdict(self)
        d["probes"] = {k: p.to_dict() for k, p in self.probes.items()}
        d["facts"] = facts(self).to_dict()  # what every report of it states (diagnosis/facts.py)
        return json_safe(versions.stamp("diagnosis", d))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnosis:
        names = set(cls.__dataclass_fields__)
        d = {k: v for k, v in data.items() if k in names}
        probes = data.get("probes") or {}
        # pipeline order, whatever order the JSON was written in
        d["probes"] = {k: ProbeResult.from_dict(probes[k]) for k in PROBE_NAMES if k in probes}
        shares = d.get("shares") or {}
        d["shares"] = {k: shares[k] for k in STAGES if k in shares}
        for key in ("stages", "stage_ci"):
            given = d.get(key) or {}
            d[key] = {k: given[k] for k in SUBSTAGES if k in given}
        share_ci = d.get("share_ci") or {}
        d["share_ci"] = {k: share_ci[k] for k in STAGES if k in share_ci}
        for key in ("wait_frac", "input_saved"):
            if d.get(key) is None:
                d[key] = math.nan
        return cls(**d)


@with_deadline("diagnose")
def diagnose(
    dataset: Any,
    transform: Callable[..., Any] | None = None,
    net: Any = None,
    loss: Any = None,
    batch_size: int = 64,
    num_workers: int = 0,
    ctx: Any = None,
    budget_s: float = 60.0,
    *,
    decode: Callable[..., Any] | None = None,
    batchify_fn: Callable[[list[Any]], Any] | None = None,
    thread_pool: bool = False,
    prefetch: int | None = None,
    pin_memory: bool = False,
    thresholds: Thresholds | None = None,
    learning_rate: float = 0.1,
    seed: int | None = None,
    label: str = "",
    source: dict[str, Any] | None = None,
    on_progress: Callable[[float, float], None] | None = None,
) -> Diagnosis:
    """Find the stage that limits training speed: preprocessing, disk I/O or GPU I/O.

    ``dataset``: a gluon ``Dataset`` whose ``__getitem__`` returns a raw
    ``(data, label)`` sample (reading happens there). ``transform``: per-sample
    ``(data, label) -> (data, label)``, applied in the loader as
    ``dataset.transform(fn)`` does. ``net``: any Block producing
    ``(batch, classes)`` (default: the seed's CNN, 10 classes); parameters not
    yet initialised are (Xavier, magnitude 2.24), and trained weights are put
    back afterwards. ``loss``: default softmax cross-entropy. ``ctx``: default
    GPU 0 if MXNet sees one, else CPU. ``budget_s``: wall-clock budget of the
    measurement; it stops earlier once the verdict is settled and clear of the
    ``input_gain`` line at 95 and 99 % (``stop_confidence``) and every share is known within
    ``thresholds.share_precision``. ``decode``: a per-sample
    ``(raw, label) -> (array, label)`` applied before ``transform`` (counted as
    preprocessing, never as reading). ``batchify_fn``: the DataLoader's, a batch's items -> ``(data, label)``
    arrays (e.g. token lists padded to one length); any item the transform and the batchify turn into arrays is
    accepted. ``pin_memory``: the loader hands batches over in page-locked
    memory pinned for ``ctx``'s GPU (``pin_device_id``), and the ``cached_batch`` ceiling keeps its batch
    in the same kind of memory.

    A stage that blocks past ``budget_s`` plus a bounded grace raises
    :class:`~gluonbench.engine.deadline.BudgetExceededError` naming it; its ``partial`` is the diagnosis of the
    rounds measured before the stall (None when no round paired every probe).
    """
    from gluonbench._mx import gluon, mx, nd
    from gluonbench.env import utc_now
    from gluonbench.pipeline.stages import ModelStep
    from gluonbench.workloads.mnist import seed_loss, seed_net

    thresholds = Thresholds() if thresholds is None else thresholds
    if not isinstance(batch_size, int) or batch_size < 1:
        raise GluonbenchError(f"batch_size must be a whole number >= 1 (got {batch_size!r})")
    if not isinstance(num_workers, int) or num_workers < 0:
        raise GluonbenchError(f"num_workers must be a whole number >= 0 (got {num_workers!r})")
    check_budget(budget_s, "diagnose")
    if transform is not None and not callable(transform):
        raise GluonbenchError(f"transform must be callable (data, label) -> (data, label); got {transform!r}")
    if decode is not None and not callable(decode):
        raise GluonbenchError(f"decode must be callable (raw, label) -> (data, label); got {decode!r}")
    if prefetch is not None and (isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0):
        raise GluonbenchError(f"prefetch must be a whole number >= 0 (got {prefetch!r})")
    if not isinstance(pin_memory, bool):
        raise GluonbenchError(f"pin_memory must be True or False (got {pin_memory!r})")
    if not isinstance(thresholds, Thresholds):
        raise GluonbenchError(f"thresholds must be a gluonbench Thresholds(...) (got {type(thresholds).__name__})")
    ctx = resolve_ctx(ctx)
    dataset = as_dataset(dataset)
    n = len(dataset)
    if n < batch_size:
        raise GluonbenchError(f"the dataset has {n} samples, fewer than batch_size={batch_size}; lower the batch size")
    # the loader's first batch must be (data, label) arrays: blame dataset[i], the transform or the batchify
    check_samples(dataset, decode, transform, batch_size, batchify_fn)
    first = dataset[0]  # what an item is (bytes to decode, an image array): the roofline's decode ceiling
    sample_type = type(first[0] if isinstance(first, tuple | list) and first else first).__name__
    check_loss(loss)
    started = utc_now()
    if seed is not None:
        import numpy as np

        mx.random.seed(seed)
        np.random.seed(seed)
    net = net if net is not None else seed_net()
    loss = loss if loss is not None else seed_loss()
    # outside the net's classes: MXNet would clip them silently
    check_labels(dataset, net, loss, decode, transform, batch_size, batchify_fn)
    saved = prepare_net(net, ctx)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": learning_rate})
    step = ModelStep(net, loss, trainer)
    # the early stop is the verdict's own (done=_finished): the paired input speed-up clear of the line at 95 and
    # 99 % and every share within share_precision; a probe's own block-median CI (the probe table's) is not waited
    # for: at 2 workers the blocks of a loader-bound probe arrive in bursts and kept clear cases to their budget
    plan = Rounds(
        budget_s=float(budget_s),
        rel_ci=thresholds.rel_ci,
        min_blocks=thresholds.min_blocks,
        converge_on=frozenset(),
    )
    pipeline = build_pipeline(
        {"dataset": dataset, "net": net, "decode": decode, "transform": transform, "batchify_fn": batchify_fn},
        ctx=ctx,
        step=checked_step(step, net),
        source=source,
        batch_size=batch_size,
        num_workers=num_workers,
        thread_pool=thread_pool,
        prefetch=prefetch,
        pin_memory=pin_memory,
    )

    def settled(ps: ProbeSet) -> bool:
        return verdict_settled(ps, thresholds, num_workers)

    def reading_of(probes: ProbeSet, elapsed_s: float) -> Diagnosis:
        setting = Setting(
            batch_size=batch_size,
            num_workers=num_workers,
            cores=os.cpu_count() or 1,
            ctx=ctx_text(ctx),
            thread_pool=thread_pool,
            transform=pipeline.preprocesses,
            hybridized=bool(getattr(net, "_active", False)) if isinstance(net, gluon.HybridBlock) else None,
            budget_s=float(budget_s),
            sample_type=sample_type,
            dataset_type=_innermost(dataset),
        )
        return read_probes(probes, setting, thresholds, pipeline.stages(), elapsed_s, started, label)

    t0 = perf_counter()
    try:
        probes = measure_probes(
            pipeline,
            plan,
            settled=settled,
            on_progress=on_progress,
            # stop early only on shares paired over enough rounds (blocks of one round are not independent;
            # clear_to_stop asks for them), and only once the input speed-up's CI lies on one side of the line,
            # at 95 % and at stop_confidence (99 %): a close call uses the budget
            done=lambda ps: _finished(ps, thresholds, num_workers),
        )
    except BudgetExceededError as exc:
        exc.partial = _stalled(exc, reading_of)  # nothing already measured is lost
        raise
    finally:
        nd.waitall()
        restore_net(net, saved)
    result = reading_of(probes, perf_counter() - t0)
    elapsed = result.elapsed_s
    log.info("diagnosis: %s %s in %.1f s", result.verdict, {k: round(v, 3) for k, v in result.shares.items()}, elapsed)
    return result


def read_probes(
    probes: ProbeSet,
    setting: Setting,
    thresholds: Thresholds,
    pipeline: dict[str, str],
    elapsed_s: float,
    started_utc: str,
    label: str = "",
) -> Diagnosis:
    """The diagnosis that ``probes`` (measured however: :func:`diagnose`'s pipelines, a user's running script)
    read by the verdict rule: verdict, shares, intervals, evidence and advice."""
    from gluonbench.env import environment

    verdict = _classify(probes.probes, thresholds, setting.num_workers)
    return Diagnosis(
        **_reading(verdict, probes.probes, setting),
        pipeline=pipeline,
        probes=probes.probes,
        evidence=evidence({k: p.to_dict() for k, p in probes.probes.items()}, setting),
        setting=setting.to_dict(),
        thresholds=thresholds.to_dict(),
        elapsed_s=elapsed_s,
        settled_s=probes.settled_s,
        stop_reason=probes.stop_reason,
        rounds=probes.rounds,
        env=environment(),
        started_utc=started_utc,
        label=label,
    )


def verdict_settled(ps: ProbeSet, thresholds: Thresholds, workers: int | None = None) -> bool:
    """True when the probes so far give a verdict (not inconclusive): the ``settled`` check of the rounds.
    ``workers``: the loader's num_workers, where known (a bound may decide, :func:`_classify`)."""
    return _classify(ps.probes, thresholds, workers).verdict != "inconclusive"


def verdict_finished(ps: ProbeSet, thresholds: Thresholds, workers: int | None = None) -> bool:
    """True when the rounds may stop early: the verdict clear of the line at 95 % and ``stop_confidence``,
    every share within ``share_precision``, or the bound deciding it at ``stop_confidence`` (the ``done`` check of
    :func:`diagnose`). ``workers``: the loader's num_workers, where known."""
    return _finished(ps, thresholds, workers)


def _stalled(exc: BudgetExceededError, reading_of: Callable[[ProbeSet, float], Diagnosis]) -> Diagnosis | None:
    """The rounds measured before a stall (``exc.partial``, a :class:`ProbeSet`) read as a diagnosis, with a
    note and a first recommendation naming the stall; None when no round paired every probe, or when they cannot
    be read (the stall's error is what the caller must see, whatever happens here)."""
    probes = exc.partial
    try:
        if not isinstance(probes, ProbeSet) or not paired_rounds(probes.probes):
            return None
        d = reading_of(probes, probes.elapsed_s)  # the rounds' own time, to the end of the last complete one
    except Exception as err:  # a half-measured probe must not hide the stall
        log.info("the rounds before the stall could not be read as a diagnosis: %r", err)
        return None
    rounds = count(probes.rounds, "complete round")
    failed = isinstance(exc, PipelineFaultError)  # the pipeline's code raised, rather than blocked
    d.notes.append(
        f"the pipeline {'failed' if failed else 'stalled'} in {exc.stage} in round {probes.rounds + 1}: these figures "
        f"are from the {rounds} before it ({probes.elapsed_s:.1f} s of rounds), and the "
        f"{'failure' if failed else 'stall'} itself is not in them"
    )
    fix = Recommendation(
        "inconclusive" if d.verdict == "inconclusive" else d.verdict,
        "fix",
        (
            f"In round {probes.rounds + 1}, {exc}"
            if failed
            else f"The pipeline stalled in {exc.stage} in round {probes.rounds + 1} and never came back within the "
            "budget and its grace: fix that stage"
        )
        + f", then diagnose again; the figures above are the {rounds} before it.",
    )
    # an inconclusive reading's advice (a larger budget) does not help a stage that blocks: the stall's fix replaces it
    kept = [] if d.verdict == "inconclusive" else [Recommendation(**r) for r in d.advice]
    d.advice = [r.to_dict() for r in (fix, *kept)]
    d.recommendations = render([fix, *kept])  # the text from the records, in the one place advice is rendered
    return d


def _innermost(dataset: Any) -> str:
    """The class name of the data set under gluon's wrappers (``transform``/``transform_first``, ``take``,
    ``filter``: each keeps the one it wraps as ``_data`` or ``_dataset``)."""
    for _ in range(16):
        # a gluon Dataset (it has transform_first), not the arrays an ArrayDataset or MNIST keeps as _data
        inner = next(
            (x for x in (getattr(dataset, k, None) for k in ("_data", "_dataset")) if hasattr(x, "transform_first")),
            None,
        )
        if inner is None or inner is dataset:
            break
        dataset = inner
    return type(dataset).__name__


def _finished(ps: ProbeSet, thresholds: Thresholds, workers: int | None = None) -> bool:
    """Every share known to ``share_precision`` and the verdict clear of the ``input_gain`` line, at the
    verdict's 95 % and at ``stop_confidence`` (:func:`clear_to_stop`); or a verdict the bound decided
    (:func:`~gluonbench.diagnosis.verdict.bound`: the loader alone under ``input_gain`` of the model step), the
    bound holding at ``stop_confidence`` too (:func:`bound_to_stop`): more rounds would narrow the input speed-up's
    interval, not change a verdict that the loader's own time already caps."""
    if clear_to_stop(ps.probes, thresholds):  # also: enough paired rounds
        v = _classify(ps.probes, thresholds, workers)
        return v.clear and v.precise(thresholds.share_precision)
    return bound_to_stop(ps.probes, thresholds, workers)


def bound_to_stop(probes: dict[str, ProbeResult], thresholds: Thresholds, workers: int | None) -> bool:
    """True when the bound decides the verdict at 95 % and at ``thresholds.stop_confidence``, over at least the
    rounds that level needs: the loader alone's paired share of the model step under ``input_gain`` at both."""
    level = thresholds.stop_confidence
    if workers is None or len(paired_rounds(probes)) < max(PAIRED_MIN_ROUNDS, fewest_for(level)):
        return False
    if not _classify(probes, thresholds, workers).bound:
        return False
    _, _, hi = probe_gains(probes, z=z_of(level)).get("loader_vs_model", (math.nan, math.nan, math.nan))
    return math.isfinite(hi) and hi < thresholds.input_gain


def clear_to_stop(probes: dict[str, ProbeResult], thresholds: Thresholds) -> bool:
    """True when the input speed-up's paired interval at ``thresholds.stop_confidence`` lies on one side of the
    line, over at least the rounds that level needs (:func:`~gluonbench.analysis.stats.fewest_for`).

    The verdict is read after every round; stopping the first time its 95 % interval clears the line would
    end a diagnosis of a case at the line on whichever side the noise of a few rounds put it.
    """
    level = thresholds.stop_confidence
    if len(paired_rounds(probes)) < max(PAIRED_MIN_ROUNDS, fewest_for(level)):
        return False
    _, lo, hi = probe_gains(probes, z=z_of(level))["input"]
    return clear_of(lo, hi, thresholds.line)


def _classify(probes: dict[str, ProbeResult], thresholds: Thresholds, workers: int | None = None) -> Verdict:
    """The verdict from probe results, while measuring (no step split yet) or from stored records.

    ``workers``: the loader's num_workers (a bound decides only where it is known, :func:`bound`)."""
    full = probes["full"]
    # the read named by what it spends: the probe with dataset[i] (no_preprocess, or full when it is the same)
    # against the one without it (no_read)
    before = probes.get("no_preprocess", full)
    after = probes.get("no_read")
    # dataset[i] runs in this many processes at once: the workers (at most the cores), or the loop's own thread
    seen = int(before.evidence.get("processes", 1) or 1) - 1 if before.evidence else 0
    cores = int((before.system or {}).get("cores") or os.cpu_count() or 1)
    parallel = max(1, min(workers if workers is not None else seen, cores))
    read = read_evidence(before.evidence, after.evidence, parallel) if after is not None and not after.same_as else {}
    wait = full.split.get("wait_frac", math.nan) if full.split else math.nan
    measured = {n: p for n, p in probes.items() if p.same_as is None}
    return attribute(
        paired_timings(probes),
        wait_frac=math.nan if wait is None else wait,
        converged=all(
            len(p.blocks) >= thresholds.min_blocks and p.rel_half_width <= thresholds.rel_ci
            for n, p in measured.items()
            if n != "loader_only"
        ),
        thresholds=thresholds,
        enough_data=all(len(p.blocks) >= thresholds.min_blocks for p in measured.values()),
        gains=probe_gains(probes),
        read=read,
        workers=workers,
        full_evidence={"evidence": full.evidence, "system": full.system},
    )


def _reading(v: Verdict, probes: dict[str, ProbeResult], setting: Setting) -> dict[str, Any]:
    """The :class:`Diagnosis` fields that are read from the verdict: one reading for diagnose and reassess."""
    advice = advise(v, {k: p.to_dict() for k, p in probes.items()}, setting)
    return {
        "verdict": v.verdict,
        "shares": v.shares,
        "stages": v.substages,
        "stage_ci": v.substage_ci,
        "share_ci": v.share_ci,
        "speedups": v.speedups,
        "speedup_ci": v.speedup_ci,
        "input_saved": v.input_saved,
        "input_saved_ci": v.input_saved_ci,
        "overlap": v.overlap,
        "secondary": v.secondary,
        "input_bound": v.input_bound,
        "wait_frac": v.wait_frac,
        "notes": v.notes,
        "analysis": v.to_dict(),
        "recommendations": render(advice),
        "advice": [r.to_dict() for r in advice],
    }


def reassess(d: Diagnosis, thresholds: Thresholds | None = None) -> Diagnosis:
    """A stored diagnosis re-read by the current verdict rule from its own probe records (nothing is measured).

    The verdict, speed-ups, shares, labels, overlap and advice are pure functions of the probes' records
    (per-round figures, blocks, splits, psutil evidence), so a diagnosis made under an earlier rule can be
    brought up to date; ``thresholds`` default to the ones it was made with.
    """
    if thresholds is None:
        names = {f for f in Thresholds.__dataclass_fields__}
        thresholds = Thresholds(**{k: v for k, v in (d.thresholds or {}).items() if k in names})
    workers = (d.setting or {}).get("num_workers")
    reading = _reading(_classify(d.probes, thresholds, workers), d.probes, Setting(**d.setting))
    # when the verdict held is known for the verdict measured; another verdict read now has no such time, and
    # an inconclusive one never has one (as when measured: no verdict held to the end)
    kept = reading["verdict"] == d.verdict and reading["verdict"] != "inconclusive"
    settled_s = d.settled_s if kept else None
    return replace(d, **reading, thresholds=thresholds.to_dict(), settled_s=settled_s)


def diagnose_workload(
    name: str,
    batch_size: int = 64,
    num_workers: int = 0,
    ctx: Any = None,
    budget_s: float = 60.0,
    *,
    data_dir: str | None = None,
    download: bool = True,
    options: dict[str, Any] | None = None,
    workload: Any = None,
    **kwargs: Any,
) -> Diagnosis:
    """:func:`diagnose` on a registered workload (``mnist``, ``fashion-mnist``, ``synthetic``)."""
    ctx = resolve_ctx(ctx)  # before reading the data: a missing GPU fails fast
    hint = (
        f"but the probes need dataset[i]; diagnose the same data through {arg('mode', '--source')} file or "
        "fastfile, or time the stream with sweep --source pipe"
    )
    with opened_workload(
        name, ctx, data_dir=data_dir, download=download, options=options, workload=workload, stream_hint=hint
    ) as (w, net):
        return diagnose(
            w.dataset,
            w.transform,
            net,
            w.make_loss(),
            batch_size,
            num_workers,
            ctx,
            budget_s,
            learning_rate=w.learning_rate,
            decode=w.decode,
            batchify_fn=w.batchify_fn,
            source=w.info,
            label=kwargs.pop("label", None) or name,
            **kwargs,
        )
