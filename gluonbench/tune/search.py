"""``tune()``: find the cheapest DataLoader setting that keeps the model fed, in a fraction of a sweep.

Every figure comes from :func:`gluonbench.engine.measure.measure` on a
:class:`~gluonbench.pipeline.Pipeline`, in short steady-state :class:`~gluonbench.engine.measure.Rounds`:

1. **ceiling** (once): the ``cached_batch`` probe's pipeline, one batch in host memory copied and
   stepped every step, measured together with the loader alone (``pipeline.without_step()``) at
   zero workers and at one worker;
2. **search**: the loader alone at the worker counts :func:`gluonbench.tune.model.next_workers`
   asks for (the model's prediction where it is uncertain), until the loader clearly outruns the
   ceiling, the model says no further count pays, or the search's share of the budget is spent;
   then the thread-pool version of the best count;
3. **confirmation**: the full pipelines of the candidates (:func:`~gluonbench.tune.model.candidates`,
   the current setting among them) in interleaved rounds with 95 % CIs; the cheapest within noise
   of the best wins (:func:`~gluonbench.tune.model.choose`).

A setting that fails or hangs (the loader's ``timeout`` bounds every wait) is recorded as failed
and the search goes on.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from time import perf_counter
from typing import Any

from gluonbench.budgets import check_budget
from gluonbench.engine.deadline import BudgetExceededError, PipelineFaultError, grace_s, with_deadline
from gluonbench.engine.measure import Measurement, Record, Rounds, measure
from gluonbench.errors import GluonbenchError
from gluonbench.names import arg, param, param_example
from gluonbench.pipeline import Pipeline, build_pipeline
from gluonbench.pipeline.samples import check_labels, check_loss, check_samples
from gluonbench.tune.model import (
    Confirmed,
    Point,
    Setting,
    candidates,
    cheapest_near_best,
    choose,
    epoch_rate,
    fit,
    gain_over,
    next_workers,
    pipeline_rate,
)
from gluonbench.tune.result import BatchSizeResult, Evidence, StalledTune, TuneResult, dataloader_line, lr_note
from gluonbench.units import count

log = logging.getLogger(__name__)

Progress = Callable[[float, float, str], None]
"""``on_progress(elapsed_s, budget_s, current_best_text)``"""

NO_BLOCK = "no block measured within the budget (slow start-up?)"

CEILING = "ceiling (same rounds)"
"""the confirmation's ceiling: one reused batch, measured in the rounds of the settings it is compared with"""
"""the error of a setting that ran but never got past its warm-up to a measured block"""

SHARES = {"first": 0.2, "search": 0.35}
"""budget shares: ceiling and first loaders; the search (thread pool included) up to 55 % in all; the
rest (at least 45 %) confirms"""


def _rate(rec: Record) -> tuple[float, tuple[float, float]]:
    s = rec.s_per_sample
    lo, hi = rec.s_per_sample_ci
    rate = 1.0 / s if s > 0 else math.nan
    return rate, (1.0 / hi if hi > 0 else math.nan, 1.0 / lo if lo > 0 else math.nan)


def _cpu_cores(rec: Record) -> float:
    system = rec.system
    return system.cpu_util_pct / 100.0 * (system.cores or os.cpu_count() or 1) if rec.systems else math.nan


class _Search:
    """One batch size's search (state shared by the phases)."""

    def __init__(
        self,
        pipeline: Pipeline,
        current: Setting,
        budget_s: float,
        max_workers: int,
        cores: int,
        timeout_s: float,
        on_progress: Progress | None,
        t_start: float,
        total_budget_s: float,
    ) -> None:
        self.pipeline = pipeline
        self.current = current
        self.budget_s = budget_s
        self.max_workers = max_workers
        self.cores = cores
        self.timeout_s = timeout_s
        self.on_progress = on_progress
        self.t_start = t_start
        self.total_budget_s = total_budget_s
        self.t0 = perf_counter()
        self.evidence: list[Evidence] = []
        self.points: list[Point] = []
        self.tried: list[str] = []
        self.skipped: list[dict[str, str]] = []
        self.failed: set[int] = set()
        self.best_text = "measuring the model ceiling"
        self.phase_s: dict[str, float] = {}
        self.ceiling_pipeline: Pipeline | None = None
        """the ceiling (one reused batch): measured again in the confirmation's rounds, beside the candidates"""
        self.ceiling_record: Record | None = None
        """the ceiling's record from the confirmation rounds (None: not measured there)"""

    # -- helpers -------------------------------------------------------------------------

    def elapsed(self) -> float:
        return perf_counter() - self.t0

    def left(self) -> float:
        return self.budget_s - self.elapsed()

    def progress(self, *_: Any) -> None:
        if self.on_progress is not None:
            self.on_progress(perf_counter() - self.t_start, self.total_budget_s, self.best_text)

    def loader_pipeline(self, s: Setting) -> Pipeline:
        timeout = max(1, math.ceil(self.timeout_s))
        return self.pipeline.with_loader(
            num_workers=s.num_workers,
            thread_pool=s.thread_pool,
            prefetch=s.prefetch,
            pin_memory=s.pin_memory,
            timeout=timeout,
        )

    def run(self, phase: str, named: dict[str, tuple[Setting | None, Pipeline]], schedule: Rounds) -> dict[str, Record]:
        """Measure ``named`` pipelines together; on failure, measure each alone so one bad setting fails alone."""
        t0 = perf_counter()
        try:
            m = measure({k: p for k, (_, p) in named.items()}, schedule, on_progress=self.progress)
        except BudgetExceededError as exc:
            try:  # the complete rounds before a stall are evidence too; a pipeline with no block there is no finding
                if exc.measurement is not None:
                    kept = {k: r for k, r in exc.measurement.records.items() if r.blocks}
                    self.record(phase, named, replace(exc.measurement, records=kept))
            except Exception as err:  # the stall's one line must still come out
                log.info("the rounds before the stall could not be kept: %r", err)
            raise
        except GluonbenchError:
            raise
        except Exception as exc:
            if len(named) == 1:
                ((name, (setting, _)),) = named.items()
                self._failed(phase, name, setting, exc, perf_counter() - t0)
                return {}
            log.warning("%s: a setting failed (%s); measuring each alone", phase, exc)
            out = {}
            for name, item in named.items():
                out.update(self.run(phase, {name: item}, schedule))
            return out
        return self.record(phase, named, m)

    def record(
        self, phase: str, named: dict[str, tuple[Setting | None, Pipeline]], m: Measurement
    ) -> dict[str, Record]:
        """Keep ``m``'s records as evidence; the records with a measured block."""
        out = m.records
        for name, rec in out.items():
            setting = named[name][0]
            rate, ci = _rate(rec)
            self.evidence.append(
                Evidence(
                    phase=phase,
                    label=name,
                    setting=setting.to_dict() if setting is not None else None,
                    samples_per_s=rate,
                    ci=ci,
                    cpu_cores=_cpu_cores(rec),
                    blocks=len(rec.blocks),
                    steps=len(rec.times),
                    elapsed_s=m.elapsed_s,
                )
            )
            if not rec.blocks:
                self.evidence[-1].status = "failed"
                self.evidence[-1].error = NO_BLOCK
                if setting is not None:
                    self.failed.add(setting.num_workers)
                    self.skipped.append({"what": name, "reason": "no block measured within its budget"})
        return {k: r for k, r in out.items() if r.blocks}

    def _failed(self, phase: str, name: str, setting: Setting | None, exc: BaseException, elapsed: float) -> None:
        text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]
        log.warning("%s %s failed: %s", phase, name, text)
        self.evidence.append(
            Evidence(
                phase, name, setting.to_dict() if setting else None, status="failed", error=text, elapsed_s=elapsed
            )
        )
        if setting is not None:
            self.failed.add(setting.num_workers)
            self.skipped.append({"what": name, "reason": f"failed ({text}); recorded, the search went on"})

    def schedule(self, budget: float, rel_ci: float = 0.05) -> Rounds:
        return Rounds(budget_s=max(2.5, budget), rel_ci=rel_ci, min_blocks=6, block_s=0.05)

    def add_point(self, workers: int, rec: Record) -> Point:
        rate, ci = _rate(rec)
        p = Point(workers, rate, ci, _cpu_cores(rec))
        self.points = [q for q in self.points if q.workers != workers] + [p]
        return p

    # -- phases --------------------------------------------------------------------------

    def first(self, ceiling_pipeline: Pipeline) -> float:
        """The model ceiling, and the loader alone at 0 and 1 workers, in one interleaved measurement."""
        t0 = perf_counter()
        self.ceiling_pipeline = ceiling_pipeline
        first_ws = [0] + ([1] if self.max_workers >= 1 else [])
        named: dict[str, tuple[Setting | None, Pipeline]] = {}
        for w in first_ws:
            s = Setting(w)
            named[f"loader: {s.label}"] = (s, self.loader_pipeline(s).without_step())
            if w == 0:
                # second in order: the rounds rotate, so the first round starts with it (a slow loader
                # cannot use up a small budget before the ceiling gets a turn)
                named["ceiling"] = (None, ceiling_pipeline)
        recs = self.run("ceiling + loader", named, self.schedule(max(SHARES["first"] * self.budget_s, 5.0)))
        if "ceiling" not in recs:
            # a slow model step: measure it alone, with a longer slice
            log.info("the model ceiling gave no block alongside the loaders; measuring it alone")
            recs.update(
                self.run("ceiling", {"ceiling": named["ceiling"]}, self.schedule(max(0.15 * self.budget_s, 5.0)))
            )
        if "ceiling" not in recs:
            raise GluonbenchError(
                "the model ceiling could not be measured: the model step yielded no block in time; raise the budget"
            )
        ceiling, _ = _rate(recs["ceiling"])
        for w in first_ws:
            name = f"loader: {Setting(w).label}"
            if name in recs:
                self.add_point(w, recs[name])
                self.tried.append(f"loader alone at {Setting(w).label}")
        self.phase_s["first"] = perf_counter() - t0
        self.best_text = f"ceiling {ceiling:.0f}/s"
        return ceiling

    def search(self, ceiling: float) -> str:
        """Loader-only measurements where the model asks for them; returns why the search stopped."""
        t0 = perf_counter()
        # a slow first phase (slow reads) still leaves the search a share; the confirmation keeps the rest
        end = min(
            max((SHARES["first"] + SHARES["search"]) * self.budget_s, self.elapsed() + 0.3 * self.budget_s),
            0.7 * self.budget_s,
        )
        reason = "the search's share of the budget was spent"
        while True:
            ok = [p for p in self.points if p.workers not in self.failed]
            decision = next_workers(ok, ceiling, self.cores, self.max_workers)
            if decision.workers is None:
                reason = decision.reason
                break
            w = decision.workers
            if w in self.failed:
                reason = f"{count(w, 'worker')} failed"
                break
            # worker start-up grows with the count (fork, import): the slice grows with it
            budget = max(0.1 * self.budget_s, 2.0 + 0.3 * w)
            # a predicted large gain is worth more than a long confirmation: the search may then use up
            # to 80 % of the budget
            model = fit(ok, self.cores)
            best_now = max((pipeline_rate(p.samples_per_s, ceiling, p.workers) for p in ok), default=0.0)
            gain = pipeline_rate(model.predict(w), ceiling, w) / best_now if best_now > 0 else math.inf
            limit = 0.8 * self.budget_s if gain >= 1.5 else end
            if self.elapsed() + budget > limit:
                self.skipped.append(
                    {"what": f"loader alone at {count(w, 'worker')}", "reason": "budget: " + decision.reason}
                )
                break
            s = Setting(w)
            log.info("measuring the loader at %d workers: %s", w, decision.reason)
            recs = self.run(
                "loader", {f"loader: {s.label}": (s, self.loader_pipeline(s).without_step())}, self.schedule(budget)
            )
            self.tried.append(f"loader alone at {s.label} ({decision.reason})")
            if recs:
                p = self.add_point(w, next(iter(recs.values())))
                best = max(self.points, key=lambda q: pipeline_rate(q.samples_per_s, ceiling, q.workers))
                self.best_text = f"best ~{pipeline_rate(best.samples_per_s, ceiling, best.workers):.0f}/s at {count(best.workers, 'worker')}"
                log.info("loader at %d workers: %.0f samples/s", w, p.samples_per_s)
            self.progress()
        self.phase_s["search"] = perf_counter() - t0
        return reason

    def threads(self, ceiling: float, workers: int) -> Point | None:
        """The loader alone with a thread pool at ``workers``."""
        if workers == 0:
            self.skipped.append({"what": "thread_pool", "reason": "the best setting has no workers"})
            return None
        budget = max(0.08 * self.budget_s, 2.0 + 0.2 * workers)
        if self.left() - budget < 0.4 * self.budget_s:
            self.skipped.append(
                {"what": f"thread_pool at {count(workers, 'worker')}", "reason": "budget (kept for the confirmation)"}
            )
            return None
        s = Setting(workers, thread_pool=True)
        recs = self.run(
            "loader", {f"loader: {s.label}": (s, self.loader_pipeline(s).without_step())}, self.schedule(budget)
        )
        self.tried.append(f"loader alone at {s.label}")
        if not recs:
            return None
        rate, ci = _rate(next(iter(recs.values())))
        return Point(workers, rate, ci, _cpu_cores(next(iter(recs.values()))))

    def confirm_floor(self, n: int) -> float:
        """The least the confirmation of ``n`` settings gets: each opens its workers, warms up over a few model
        steps and needs a round of blocks; a small budget's share alone may not fit that. The overrun is
        bounded by half the deadline's grace, so the whole call still ends within budget + grace."""
        ceiling = next((e.samples_per_s for e in self.evidence if e.label == "ceiling" and e.samples_per_s), 0.0)
        step_s = self.pipeline.batch_size / ceiling if ceiling and math.isfinite(ceiling) else 0.0
        floor = n * (0.5 + 10 * step_s)
        return max(3.0, min(floor, self.left() + 0.5 * grace_s(self.total_budget_s)))

    def confirm(self, cands: Sequence[tuple[Setting, str]]) -> list[Confirmed]:
        """The full pipelines of ``cands`` in interleaved rounds, with the ceiling (one reused batch) in the same
        rounds: every speed-up and "fed" statement is a paired ratio of figures measured side by side."""
        t0 = perf_counter()
        named = {f"full: {s.label}": (s, self.loader_pipeline(s)) for s, _ in cands}
        for s, why in cands:
            self.tried.append(f"full pipeline at {s.label} ({why})")
        if self.ceiling_pipeline is not None:
            named[CEILING] = (None, self.ceiling_pipeline)
            self.tried.append("the ceiling again, in the confirmation's rounds (what its figures are compared with)")
        budget = max(self.confirm_floor(len(named)), self.left())
        recs = self.run("confirm", named, self.schedule(budget, rel_ci=0.03))
        self.ceiling_record = recs.pop(CEILING, None)
        named.pop(CEILING, None)
        failed = [e for e in self.evidence if e.phase == "confirm" and e.status == "failed"]
        if named and not recs and all(e.error == NO_BLOCK for e in failed):
            # every setting opened and ran, but none got past its warm-up to a measured block: a busy
            # machine or slow worker start-ups used the confirmation's time (failures raise their own line)
            raise GluonbenchError(
                f"no setting gave a measured block in the confirmation ({budget:.0f} s for {len(named)} "
                f"setting{'s' if len(named) != 1 else ''}: a busy machine or slow worker start-up used it up); raise {param('budget_s')} (e.g. "
                + param_example(f"budget_s={2 * self.total_budget_s:g}", f"--budget {2 * self.total_budget_s:g}")
                + ")"
            )
        out = []
        for name, rec in recs.items():
            rate, ci = _rate(rec)
            out.append(Confirmed(named[name][0], rate, ci, dict(rec.per_round)))
        self.phase_s["confirm"] = perf_counter() - t0
        return out


def _check_inputs(
    dataset: Any, transform: Any, decode: Any, batch_size: Any, budget_s: Any, max_workers: Any, batchify_fn: Any = None
) -> Any:
    from gluonbench.pipeline.samples import as_dataset

    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise GluonbenchError(f"batch_size must be a whole number >= 1 (got {batch_size!r})")
    check_budget(budget_s, "tune")
    if max_workers is not None and (
        isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 0
    ):
        raise GluonbenchError(f"max_workers must be a whole number >= 0 (got {max_workers!r})")
    for what, fn in (("transform", transform), ("decode", decode)):
        if fn is not None and not callable(fn):
            raise GluonbenchError(f"{what} must be callable (data, label) -> (data, label); got {fn!r}")
    dataset = as_dataset(dataset)
    if len(dataset) < batch_size:
        raise GluonbenchError(f"the dataset has {len(dataset)} samples, fewer than batch_size={batch_size}; lower it")
    # the loader's first batch must be (data, label) arrays: blame dataset[i], the transform or the batchify
    check_samples(dataset, decode, transform, batch_size, batchify_fn)
    return dataset


@with_deadline("tune")
def tune(
    dataset: Any,
    transform: Callable[..., Any] | None = None,
    net: Any = None,
    loss: Any = None,
    batch_size: int = 64,
    ctx: Any = None,
    budget_s: float = 60.0,
    *,
    decode: Callable[..., Any] | None = None,
    batchify_fn: Callable[[list[Any]], Any] | None = None,
    num_workers: int = 0,
    thread_pool: bool = False,
    prefetch: int | None = None,
    pin_memory: bool = False,
    max_workers: int | None = None,
    batch_sizes: Sequence[int] | None = None,
    emulate_step_ms: float | str | None = None,
    learning_rate: float = 0.1,
    seed: int | None = None,
    label: str = "",
    source: dict[str, Any] | None = None,
    on_progress: Progress | None = None,
) -> TuneResult:
    """Find the cheapest DataLoader setting within noise of the fastest, for this training pipeline.

    Arguments as :func:`gluonbench.diagnose` (``batchify_fn`` too); ``num_workers``, ``thread_pool`` and ``prefetch`` are
    the current setting (the baseline the result is compared with). ``budget_s``: wall-clock
    budget of the whole search (at least 10 s); it ends earlier when the answer is clear.
    ``max_workers``: the most workers tried (default ``max(16, 4 x cores)``; more than the cores
    pay only when reads wait on latency, which the loader model detects from CPU use).
    ``batch_sizes``: also tune these batch sizes (each gets a share of the budget; the result notes
    the learning-rate scaling a change needs). ``emulate_step_ms``: swap the model step for a timed
    wait per batch (ms, or a named target such as ``"resnet50@v100"``; see
    :mod:`gluonbench.pipeline.emulate`): "would this input pipeline keep that GPU fed?", with the
    accelerator utilisation (AU) of the result.

    A stage that blocks past the budget and its grace raises
    :class:`~gluonbench.engine.deadline.BudgetExceededError` naming it; its ``.partial`` is a
    :class:`~gluonbench.tune.result.StalledTune` with every measurement made before the stall (no recommendation).
    """
    from gluonbench._mx import gluon, mx, nd
    from gluonbench.contexts import resolve_ctx
    from gluonbench.diagnosis.measure import measure_first_batch
    from gluonbench.diagnosis.probes import Context, by_name
    from gluonbench.env import environment, usable_cores, utc_now
    from gluonbench.pipeline.emulate import describe, emulated_step, seconds_per_batch, step_ms
    from gluonbench.pipeline.net import prepare_net, restore_net
    from gluonbench.pipeline.samples import checked_step
    from gluonbench.pipeline.stages import ModelStep
    from gluonbench.workloads.mnist import seed_loss, seed_net

    dataset = _check_inputs(dataset, transform, decode, batch_size, budget_s, max_workers, batchify_fn)
    check_loss(loss)
    for what, value in (("num_workers", num_workers), ("prefetch", prefetch)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise GluonbenchError(f"{what} must be a whole number >= 0 (got {value!r})")
    sizes = [batch_size]
    for b in batch_sizes or ():
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise GluonbenchError(
                f"batch sizes must be whole numbers >= 1 (got {b!r}); e.g. "
                + param_example("batch_sizes=(64, 128, 256)", "--batch-sizes 64,128,256")
            )
        if b > len(dataset):
            raise GluonbenchError(f"batch size {b} is larger than the dataset ({len(dataset)} samples); drop it")
        if b not in sizes:
            sizes.append(b)
    emulation = step_ms(emulate_step_ms) if emulate_step_ms is not None else None
    ctx = resolve_ctx(ctx)
    cores = usable_cores()  # affinity and cgroup quota: the cores this process may use
    max_workers = max(16, 4 * cores) if max_workers is None else max_workers
    if not isinstance(pin_memory, bool):
        raise GluonbenchError(f"pin_memory must be True or False (got {pin_memory!r})")
    current = Setting(num_workers, thread_pool, prefetch, pin_memory=pin_memory)
    started = utc_now()
    if seed is not None:
        import numpy as np

        mx.random.seed(seed)
        np.random.seed(seed)
    saved: dict[str, Any] = {}
    step: Any = None
    if emulation is None:
        net = net if net is not None else seed_net()
        loss = loss if loss is not None else seed_loss()
        # outside the net's classes: MXNet would clip them
        check_labels(dataset, net, loss, decode, transform, batch_size, batchify_fn)
        saved = prepare_net(net, ctx)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": learning_rate})
        step = checked_step(ModelStep(net, loss, trainer), net)
    on_gpu = getattr(ctx, "device_type", "cpu") == "gpu"
    t_start = perf_counter()
    per_size: list[BatchSizeResult] = []
    searches: list[_Search] = []
    try:
        for i, bs in enumerate(sizes):
            share = budget_s / len(sizes)
            this_step = emulated_step(emulation, bs) if emulation is not None else step
            pipeline = build_pipeline(
                {"dataset": dataset, "net": net, "decode": decode, "transform": transform, "batchify_fn": batchify_fn},
                ctx=ctx,
                step=this_step,
                source=source,
                batch_size=bs,
                num_workers=num_workers,
                thread_pool=thread_pool,
                prefetch=prefetch,
                pin_memory=pin_memory,
            )
            search = _Search(
                pipeline,
                current,
                share,
                max_workers,
                cores,
                max(5.0, min(60.0, share / 3)),
                on_progress,
                t_start,
                budget_s,
            )
            searches.append(search)
            ceiling_pipeline = by_name("cached_batch").build(pipeline, Context(measure_first_batch(pipeline)))
            ceiling = search.first(ceiling_pipeline)
            stop = search.search(ceiling)
            model = fit([p for p in search.points if p.workers not in search.failed], cores)
            _note_skips(search, model, ceiling, max_workers, cores, on_gpu)
            threads = search.threads(ceiling, cheapest_near_best(search.points, ceiling))
            cands = candidates(search.points, ceiling, current, threads=threads, on_gpu=on_gpu)
            confirmed = search.confirm(cands)
            if not confirmed:
                why = next((e.error for e in search.evidence if e.phase == "confirm" and e.error), "no error recorded")
                raise GluonbenchError(f"no candidate setting ran in the confirmation; the first failure: {why}")
            winner, tied = choose(confirmed)
            base = next((c for c in confirmed if c.setting == current), None)
            ceiling_ev = next(e for e in search.evidence if e.label == "ceiling")
            # the ceiling and every ratio to it from the confirmation's own rounds (the first phase's ceiling ran
            # at another moment, under other load: it steers the search only)
            same = search.ceiling_record
            c_rate, c_ci = _rate(same) if same is not None else (ceiling, ceiling_ev.ci)
            c_rounds = dict(same.per_round) if same is not None else {}

            def over_ceiling(
                c: Confirmed, rounds: dict[int, float] = c_rounds, rate: float = c_rate, ci: Any = c_ci
            ) -> list[float]:
                return list(gain_over(rounds, rate, ci, c.per_round, c.samples_per_s, c.ci))

            speedup = (
                list(
                    gain_over(
                        winner.per_round, winner.samples_per_s, winner.ci, base.per_round, base.samples_per_s, base.ci
                    )
                )
                if base
                else [math.nan] * 3
            )
            per_size.append(
                BatchSizeResult.chosen(
                    bs,
                    winner,
                    tied,
                    [(c, over_ceiling(c), {}) for c in confirmed],
                    current=(base.samples_per_s, base.ci) if base else (math.nan, (math.nan, math.nan)),
                    ceiling=(c_rate, c_ci),
                    ceiling_gain=over_ceiling(winner),
                    speedup=speedup,
                    ceiling_source="confirmation" if same is not None else "first",
                    first_ceiling_samples_per_s=ceiling,
                    rounds=len(winner.per_round),
                    epoch=_epoch_estimate(search, winner, len(dataset)),
                    stop_reason=stop,
                    model=model.to_dict(),
                    phase_s=dict(search.phase_s),
                )
            )
            search.best_text = f"best {winner.samples_per_s:.0f}/s at {winner.setting.label}"
            search.progress()
            log.info("batch size %d: %s at %.0f samples/s", bs, winner.setting.label, winner.samples_per_s)
            if i + 1 < len(sizes):
                nd.waitall()
    except BudgetExceededError as exc:  # nothing already measured is lost: the evidence goes with the error
        try:
            several = len(sizes) > 1
            exc.partial = StalledTune(
                stage=exc.stage,
                error=str(exc),
                evidence=[
                    replace(e, label=f"batch {s.pipeline.batch_size}: {e.label}") if several else e
                    for s in searches
                    for e in s.evidence
                ],
                batch_sizes=per_size,
                budget_s=float(budget_s),
                elapsed_s=perf_counter() - t_start,
                cores=cores,
                ctx="cpu" if not on_gpu else f"gpu:{ctx.device_id}",
                started_utc=started,
                label=label,
                event="failure" if isinstance(exc, PipelineFaultError) else "stall",
            )
        except Exception as err:  # the stall's one line must still come out
            log.info("the evidence before the stall could not be kept: %r", err)
        raise
    finally:
        nd.waitall()
        if saved:
            restore_net(net, saved)
    elapsed = perf_counter() - t_start
    best = max(per_size, key=lambda r: r.samples_per_s)
    chosen = per_size[0] if best.samples_per_s < 1.05 * per_size[0].samples_per_s else best
    result = TuneResult(
        setting=chosen.setting,
        batch_size=chosen.batch_size,
        dataloader=dataloader_line(Setting.from_dict(chosen.setting), chosen.batch_size),
        samples_per_s=chosen.samples_per_s,
        ci=chosen.ci,
        current=current.to_dict(),
        current_batch_size=batch_size,
        current_samples_per_s=per_size[0].current_samples_per_s,
        current_ci=per_size[0].current_ci,
        ceiling_samples_per_s=chosen.ceiling_samples_per_s,
        ceiling_ci=chosen.ceiling_ci,
        same_rounds={
            "ceiling_gain": list(chosen.ceiling_gain),
            "speedup": list(per_size[0].speedup) if chosen is per_size[0] else [math.nan] * 3,
            "ceiling_source": chosen.ceiling_source,
            "rounds": chosen.rounds,
        },
        epoch=dict(chosen.epoch),
        evidence=[e for s in searches for e in s.evidence],
        tried=[f"batch {s.pipeline.batch_size}: {t}" if len(sizes) > 1 else t for s in searches for t in s.tried],
        skipped=[dict(d, batch_size=s.pipeline.batch_size) for s in searches for d in s.skipped],
        batch_sizes=per_size,
        lr_note=lr_note(batch_size, chosen.batch_size, learning_rate) if len(sizes) > 1 else "",
        elapsed_s=elapsed,
        budget_s=float(budget_s),
        cores=cores,
        ctx="cpu" if not on_gpu else f"gpu:{ctx.device_id}",
        started_utc=started,
        label=label,
        env=environment(),
    )
    if emulation is not None:
        from gluonbench.pipeline.emulate import utilisation

        per_batch = seconds_per_batch(emulation, chosen.batch_size)
        # a throughput is the samples of one second
        au = utilisation(emulation, chosen.batch_size, result.samples_per_s, 1.0)
        au_current = utilisation(emulation, batch_size, result.current_samples_per_s, 1.0)
        result.emulated = {
            "setting": emulation,
            "text": describe(emulation, chosen.batch_size),
            "step_ms": per_batch * 1000,
            "au": au.au,
            "passes": au.passes,
            "au_current": au_current.au,
            "passes_current": au_current.passes,
            "pass_line": au.pass_line,
        }
    return result


@dataclass(frozen=True)
class HeadToHead:
    """Two loader settings of one pipeline measured against each other (:func:`head_to_head`)."""

    a: Confirmed | None
    b: Confirmed | None
    ratio: float
    """a's samples/s / b's (NaN when either failed)"""
    ci: tuple[float, float]
    """95 % CI of ``ratio``: of the median ratio over the rounds (:func:`~gluonbench.analysis.stats.paired_ratio`),
    or, with fewer than 6 rounds of both, from the two CIs (:func:`~gluonbench.analysis.stats.ratio_ci`)"""
    elapsed_s: float
    evidence: list[Evidence] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def head_to_head(pipeline: Pipeline, a: Setting, b: Setting, budget_s: float = 20.0) -> HeadToHead:
    """Measure the full ``pipeline`` at loader settings ``a`` and ``b`` in interleaved rounds; ``a / b``.

    The tuner's own confirmation (the same rounds, CI target and failure handling), for two settings
    only: a setting measured minutes apart from another, or picked as the best of many noisy runs,
    is compared here under the same background load, with a confidence interval.
    """
    from gluonbench.analysis.stats import paired_ratio, ratio_ci

    if a == b:
        raise GluonbenchError(f"head_to_head needs two different settings (got {a.label} twice)")
    check_budget(budget_s, "head_to_head")
    t0 = perf_counter()
    search = _Search(
        pipeline,
        a,
        budget_s,
        max(a.num_workers, b.num_workers),
        os.cpu_count() or 1,
        max(5.0, min(60.0, budget_s / 3)),
        None,
        t0,
        budget_s,
    )
    confirmed = {c.setting: c for c in search.confirm([(a, "a"), (b, "b")])}
    ca, cb = confirmed.get(a), confirmed.get(b)
    ratio, ci = math.nan, (math.nan, math.nan)
    if ca and cb:
        # round by round (a's samples/s over b's is b's seconds per sample over a's); too few rounds: the two CIs
        paired = paired_ratio(cb.per_round, ca.per_round)
        ratio, ci = paired if paired is not None else ratio_ci(ca.samples_per_s, ca.ci, cb.samples_per_s, cb.ci)
    return HeadToHead(ca, cb, ratio, ci, perf_counter() - t0, search.evidence)


def _epoch_estimate(search: _Search, winner: Confirmed, samples: int) -> dict[str, Any]:
    """What a sweep of whole epochs at the winner's setting should read, by this tune's own figures
    (:func:`~gluonbench.tune.model.epoch_rate`): the steady rate, less each epoch's start (the loader's first batch,
    before the workers overlap the step)."""
    bs = search.pipeline.batch_size
    w = winner.setting.num_workers
    point = next((p for p in search.points if p.workers == w), None)
    per_worker = point.samples_per_s / w if point is not None and w > 0 else math.nan
    if w == 0:  # no overlap to fill: each batch is read, then stepped; the steady rate is the epoch's
        per_worker = math.inf
    batches = max(1, samples // bs)
    rate = epoch_rate(winner.samples_per_s, bs, batches, per_worker)
    return {
        "samples_per_s": rate,
        "batches": batches,
        "batch_size": bs,
        "first_batch_s": bs / per_worker if per_worker else math.nan,
    }


def _note_skips(search: _Search, model: Any, ceiling: float, max_workers: int, cores: int, on_gpu: bool) -> None:
    """Record what the search left out, and why (the model's view)."""
    measured = sorted(p.workers for p in search.points)
    top = max(measured, default=0)
    if top < max_workers:
        pred = model.predict(max_workers)
        why = (
            f"the loader alone already outruns the model (the first phase's ceiling, {ceiling:.0f} samples/s) at fewer "
            "workers"
            if any(p.low >= ceiling * 1.2 for p in search.points)
            else (
                f"predicted no faster than measured: the model gives {pred:.0f} samples/s at {count(max_workers, 'worker')}"
                if math.isfinite(pred)
                else "the search stopped"
            )
        )
        what = (
            f"{count(top + 1, 'worker')}" if top + 1 == max_workers else f"{top + 1} to {count(max_workers, 'worker')}"
        )
        search.skipped.append({"what": what, "reason": why})
    if not on_gpu:
        search.skipped.append({"what": "pin_memory", "reason": "a CPU context has no host-to-device copy to speed up"})


def tune_workload(
    name: str,
    batch_size: int = 64,
    ctx: Any = None,
    budget_s: float = 60.0,
    *,
    data_dir: str | None = None,
    download: bool = True,
    options: dict[str, Any] | None = None,
    workload: Any = None,
    **kwargs: Any,
) -> TuneResult:
    """:func:`tune` on a registered workload (``mnist``, ``synthetic``, ``source``...); fills ``result.sweep``.

    ``workload``: the workload already opened (e.g. a ``--pipeline`` spec's), left open for its owner."""
    from gluonbench.contexts import ctx_text, resolve_ctx
    from gluonbench.workloads.base import opened_workload

    ctx = resolve_ctx(ctx)  # before reading the data: a missing GPU fails fast
    hint = f"whose workers are not DataLoader workers; tune the same data through {arg('mode', '--source')} file or fastfile"
    emulated = kwargs.get("emulate_step_ms") is not None
    with opened_workload(
        name,
        ctx,
        data_dir=data_dir,
        download=download,
        options=options,
        workload=workload,
        stream_hint=hint,
        with_net=not emulated,
    ) as (w, net):
        loss = None if emulated else w.make_loss()
        result = tune(
            w.dataset,
            w.transform,
            net,
            loss,
            batch_size,
            ctx,
            budget_s,
            decode=w.decode,
            batchify_fn=w.batchify_fn,
            learning_rate=w.learning_rate,
            source=w.info,
            label=kwargs.pop("label", None) or name,
            **kwargs,
        )
    from pathlib import Path

    result.sweep = {
        "workload": name,
        "data_dir": str(Path(data_dir).resolve()) if data_dir else None,
        "download": None if download else False,
        "ctx": ctx_text(ctx),
        "options": dict(options or {}),
    }
    if name == "pipeline":  # a user's factory: the sweep config names it as `pipeline = "..."`
        opts = dict(options or {})
        result.sweep = {
            "pipeline": opts.get("pipeline"),
            "ctx": ctx_text(ctx),
            "pipeline_options": dict(opts.get("pipeline_options") or {}),
        }
    return result
