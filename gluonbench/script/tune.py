"""``gluonbench tune -- python train.py ARGS``: the loader knobs searched on the user's running script.

Each setting runs in a fresh process of the script, as ``gluonbench sweep -- CMD`` runs one per worker count: its
training DataLoader is made with that setting's knobs (``num_workers``, ``thread_pool``, ``prefetch``,
``pin_memory``: :data:`~gluonbench.script.hooks.KNOB_AT`) as if the script said so. Once it trains, its own
training loop is measured in interleaved rounds inside that process: the full step (``full``), the loader alone
(``loader_only``) and one reused batch (``cached_batch``: the model ceiling, what a perfect loader would give); then
the process is stopped (its group killed, its shared memory removed).

The search is the tune's own, from :mod:`gluonbench.tune.model`: the script's own setting first (the baseline,
nothing overridden), then the worker counts :func:`~gluonbench.tune.model.next_workers` asks for from the loader-alone
figures and the ceiling, the thread pool at :func:`~gluonbench.tune.model.cheapest_near_best`'s count, then the
:func:`~gluonbench.tune.model.candidates` not yet run; :func:`~gluonbench.tune.model.choose` recommends the cheapest
setting within noise of the fastest full step. Every setting recommended was run.

The batch size is not searched: a script's learning rate, its ``trainer.step(batch_size)``, a ``batch_sampler`` and
the shapes it assumes follow it, so changing it under the script would measure another training run.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from gluonbench.budgets import check_budget
from gluonbench.engine.measure import Record, Rounds
from gluonbench.env import environment, usable_cores, utc_now
from gluonbench.errors import GluonbenchError
from gluonbench.monitor import SystemSummary
from gluonbench.script.run import (
    ScriptCommand,
    ScriptEndedError,
    ScriptProcess,
    check_inputs,
    take_blocks,
    until_training,
    wait_for,
)
from gluonbench.tune.model import (
    Confirmed,
    Point,
    Setting,
    candidates,
    cheapest_near_best,
    choose,
    fit,
    gain_over,
    next_workers,
)
from gluonbench.tune.result import BatchSizeResult, Evidence, TuneResult
from gluonbench.units import count

log = logging.getLogger(__name__)

MODES = ("full", "loader_only", "cached_batch")
"""what each run measures in its rounds: the script's step as it is, its loader alone, one reused batch"""
MEASURE_SHARE = 0.15
"""of the budget, the rounds of one run (its start-up and warm-up come on top)"""
MEASURE_S = (2.5, 20.0)
"""the least and the most seconds of rounds one run gets"""
SLICE_S = 0.25
"""the least seconds one mode runs in a round; more where its steps are slow (a switch costs the prefetched steps
left out after it)"""
BATCH_SIZE_NOTE = (
    "not searched in a script: its learning rate, trainer.step(batch_size), a batch_sampler or shapes it assumes "
    "follow the batch size, so changing it under the script would measure another training run; try another batch "
    "size through the script's own arguments"
)
Progress = Callable[[float, float, str], None]
"""``on_progress(elapsed_s, budget_s, current_best_text)``, as :func:`gluonbench.tune.tune`'s"""


@dataclass
class ScriptTrial:
    """One fresh run of the script at one loader setting: what its rounds measured (samples/s by mode)."""

    setting: Setting
    role: str
    """``baseline`` (the script as written), ``search``, ``threads`` or ``candidate``"""
    why: str
    records: dict[str, Record] = field(default_factory=dict, repr=False)
    error: str | None = None
    wall_s: float = 0.0
    startup_s: float = 0.0
    """from the start of its process to its first training steps after warm-up"""
    loader: dict[str, Any] = field(default_factory=dict)
    """the training loader as the script made it in this run (knobs, dataset, batch size)"""
    contexts: list[str] = field(default_factory=list)

    def rate(self, mode: str) -> tuple[float, tuple[float, float]]:
        """samples/s of ``mode`` (median of its blocks) and its 95 % CI; NaN when it has no block."""
        rec = self.records.get(mode)
        if rec is None or not rec.blocks:
            return math.nan, (math.nan, math.nan)
        s = rec.s_per_sample
        lo, hi = rec.s_per_sample_ci
        return (1.0 / s if s > 0 else math.nan), (1.0 / hi if hi > 0 else math.nan, 1.0 / lo if lo > 0 else math.nan)

    def cpu_cores(self, mode: str, cores: int) -> float:
        rec = self.records.get(mode)
        if rec is None or not rec.systems:
            return math.nan
        return rec.system.cpu_util_pct / 100.0 * (rec.system.cores or cores)

    @property
    def ok(self) -> bool:
        return self.error is None and math.isfinite(self.rate("full")[0])


def check_tune(budget_s: Any, max_workers: Any) -> None:
    """The tune's own settings, before anything runs: one clear error naming the flag."""
    check_budget(budget_s, "tune")
    if max_workers is not None and (
        isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 0
    ):
        raise GluonbenchError(f"--max-workers {max_workers!r}: give a whole number >= 0, e.g. 8")


def current_setting(info: dict[str, Any]) -> Setting:
    """The script's own setting, as its training loader was made (prefetch at MXNet's 2 x workers reads as None)."""
    workers = int(info.get("num_workers") or 0)
    prefetch = info.get("prefetch")
    return Setting(
        workers,
        bool(info.get("thread_pool")) and workers > 0,
        None if prefetch is None or int(prefetch) == 2 * workers else int(prefetch),
        bool(info.get("pin_memory")),
    )


def knob_values(setting: Setting) -> dict[str, Any]:
    """The DataLoader arguments a run sets: every knob the tune searches, MXNet's default where the setting has none."""
    return {
        "num_workers": setting.num_workers,
        "thread_pool": bool(setting.thread_pool and setting.num_workers),
        "prefetch": setting.prefetch if setting.num_workers else None,
        "pin_memory": setting.pin_memory,
    }


def script_line(setting: Setting, on_gpu: bool, current: Setting) -> str:
    """The ``DataLoader(...)`` arguments to write into the script: the knobs the tune searched, as values."""
    kw: dict[str, Any] = {"num_workers": setting.num_workers, "thread_pool": bool(setting.thread_pool)}
    if setting.num_workers and (setting.prefetch is not None or current.prefetch is not None):
        kw["prefetch"] = setting.prefetch  # None: MXNet's 2 x num_workers (said where the script set another)
    if on_gpu or setting.pin_memory or current.pin_memory:
        kw["pin_memory"] = setting.pin_memory
    return "DataLoader(..., " + ", ".join(f"{k}={v!r}" for k, v in kw.items()) + ")"


def _measure(proc: ScriptProcess, info: dict[str, Any], ready: dict[str, Any], budget_s: float) -> dict[str, Record]:
    """Interleaved rounds of :data:`MODES` in the running script for ``budget_s`` seconds (or until each mode's median
    is known within 5 %), sent as ``round`` messages as the diagnosis sends them; the records by mode."""
    plan = Rounds(budget_s=budget_s, rel_ci=0.05, min_blocks=6, block_s=0.05)
    est = float(ready.get("step_s") or 0.01)
    records = {m: Record(m, est_step_s=est) for m in MODES}
    min_steps = max(1, int(info.get("num_workers") or 0))
    prefetch = int(info.get("prefetch") or 0)
    cap = budget_s / (2 * len(MODES))  # at least two rounds
    t0 = perf_counter()
    end = t0 + budget_s
    rounds = 0
    batch_size = max(int(ready.get("samples") or 1), 1)
    while perf_counter() < end:
        rounds += 1
        shift = rounds % len(MODES)
        schedule = []
        for mode in MODES[shift:] + MODES[:shift]:
            rec = records[mode]
            k = max(min_steps, math.ceil(plan.block_s / max(rec.est_step_s, 1e-6)))
            rec.block_steps = k
            skip = 1 if mode == "cached_batch" else prefetch + 1
            # long enough for the steps left out after the switch to be a small part of the slice
            slice_s = min(cap, max(SLICE_S, 2 * rec.est_step_s * (skip + k)))
            schedule.append([mode, slice_s, k, skip])
        assert proc.channel is not None
        proc.channel.send({"op": "round", "n": rounds, "plan": schedule, "left_s": end - perf_counter()})
        grace = max(30.0, 20 * sum(r.est_step_s * r.block_steps for r in records.values()))
        try:
            message = wait_for(proc, "round", max(end - perf_counter(), 0.0) + grace)
        except TimeoutError:
            if rounds == 1:
                raise ScriptEndedError(
                    f"the script's first round did not end within {budget_s:.0f} s and {grace:.0f} s more: its training "
                    "steps stalled (or each takes longer than that); give a larger --budget"
                ) from None
            break  # the complete rounds give the figures
        for mode, system in (message.get("systems") or {}).items():
            if mode in records:
                records[mode].systems.append(SystemSummary(**system))
        for mode, blocks in (message.get("results") or {}).items():
            if mode in records:
                take_blocks(records[mode], blocks, rounds)
                rec = records[mode]
                if rec.blocks:
                    rec.est_step_s = sorted(rec.blocks)[len(rec.blocks) // 2] * batch_size
        if rounds >= 3 and plan.converged(records):
            break
    return records


def run_trial(
    command: ScriptCommand,
    setting: Setting | None,
    *,
    index: int | None,
    measure_s: float,
    start_timeout_s: float,
    role: str,
    why: str,
) -> ScriptTrial:
    """One fresh process of the script, its training loader (the ``index``-th it makes; None: the first followed by
    updates) made with ``setting``'s knobs (None: as the script wrote it), measured for ``measure_s`` seconds of rounds
    and stopped. A script that ends or stalls raises :class:`ScriptEndedError` (the caller records or reports it)."""
    knobs = None if setting is None or index is None else (index, knob_values(setting))
    proc = ScriptProcess(command, loader=index, knobs=knobs)
    t0 = perf_counter()
    proc.start()
    try:
        found, ready = until_training(proc, start_timeout_s)
        info = found.get("loader") or {}
        startup = perf_counter() - t0
        made = current_setting(info)
        if setting is not None and made.num_workers != setting.num_workers:
            raise ScriptEndedError(
                f"its training DataLoader was made with {count(made.num_workers, 'worker')}, not the {setting.num_workers} "
                "set: the script's loader class does not take the knobs gluonbench sets"
            )
        records = _measure(proc, info, ready, measure_s)
    finally:
        proc.stop()
    return ScriptTrial(
        setting if setting is not None else made,
        role,
        why,
        records,
        wall_s=perf_counter() - t0,
        startup_s=startup,
        loader=info,
        contexts=list(found.get("contexts") or []),
    )


class _ScriptSearch:
    """The runs of one tune of a script: the baseline, then what the tune's model asks for, within the budget."""

    def __init__(
        self,
        command: ScriptCommand,
        budget_s: float,
        max_workers: int,
        cores: int,
        start_timeout_s: float,
        on_progress: Progress | None,
        on_trial: Callable[[ScriptTrial], None] | None,
    ) -> None:
        self.command, self.budget_s, self.max_workers, self.cores = command, budget_s, max_workers, cores
        self.start_timeout_s = start_timeout_s
        self.on_progress, self.on_trial = on_progress, on_trial
        self.measure_s = min(max(MEASURE_SHARE * budget_s, MEASURE_S[0]), MEASURE_S[1])
        self.t0 = perf_counter()
        self.trials: list[ScriptTrial] = []
        self.tried: list[str] = []
        self.skipped: list[dict[str, str]] = []
        self.index: int | None = None
        self.best_text = "running the script as written"

    def elapsed(self) -> float:
        return perf_counter() - self.t0

    def cost(self) -> float:
        """What one more run is expected to take: the longest run so far (its start-up, warm-up, rounds and stop)."""
        return max((t.wall_s for t in self.trials), default=self.measure_s)

    def fits(self, until: float) -> bool:
        return self.elapsed() + self.cost() <= until

    def ran(self, setting: Setting) -> ScriptTrial | None:
        return next((t for t in self.trials if t.setting == setting), None)

    def progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.elapsed(), self.budget_s, self.best_text)

    def baseline(self, loader: int | None) -> ScriptTrial:
        trial = run_trial(
            self.command,
            None,
            index=loader,
            measure_s=self.measure_s,
            start_timeout_s=self.start_timeout_s,
            role="baseline",
            why="the script as written",
        )
        self.index = int(trial.loader.get("index") or loader or 1)
        self._keep(trial)
        return trial

    def run(self, setting: Setting, role: str, why: str) -> ScriptTrial:
        """A run at ``setting``; a run that fails is recorded with its one line and the search goes on."""
        t0 = perf_counter()
        try:
            trial = run_trial(
                self.command,
                setting,
                index=self.index,
                measure_s=self.measure_s,
                start_timeout_s=self.start_timeout_s,
                role=role,
                why=why,
            )
        except ScriptEndedError as exc:
            trial = ScriptTrial(setting, role, why, error=str(exc), wall_s=perf_counter() - t0)
            log.warning("tune: %s failed: %s", setting.label, exc)
        self._keep(trial)
        return trial

    def _keep(self, trial: ScriptTrial) -> None:
        self.trials.append(trial)
        self.tried.append(f"{trial.setting.label} ({trial.why})")
        best = max((t for t in self.trials if t.ok), key=lambda t: t.rate("full")[0], default=None)
        if best is not None:
            self.best_text = f"best {best.rate('full')[0]:.0f}/s at {best.setting.label}"
        if self.on_trial is not None:
            self.on_trial(trial)
        self.progress()

    def point(self, trial: ScriptTrial) -> Point | None:
        rate, ci = trial.rate("loader_only")
        if trial.error or not math.isfinite(rate):
            return None
        return Point(trial.setting.num_workers, rate, ci, trial.cpu_cores("loader_only", self.cores))

    def points(self) -> list[Point]:
        """The loader alone at each worker count run with processes (the model's input)."""
        out: dict[int, Point] = {}
        for t in self.trials:
            p = self.point(t) if not t.setting.thread_pool else None
            if p is not None:
                out[p.workers] = p
        return list(out.values())

    def ceiling(self) -> float:
        """The model ceiling (one reused batch): the median over the runs so far (each measured its own)."""
        rates = sorted(r for t in self.trials if math.isfinite(r := t.rate("cached_batch")[0]))
        return rates[len(rates) // 2] if rates else math.nan

    def search(self) -> str:
        """Worker counts where :func:`next_workers` asks for them; why the search stopped."""
        failed: set[int] = {t.setting.num_workers for t in self.trials if not t.ok}
        while True:
            ceiling = self.ceiling()
            if not math.isfinite(ceiling):
                return "no model ceiling was measured (the reused batch gave no block)"
            decision = next_workers(
                [p for p in self.points() if p.workers not in failed], ceiling, self.cores, self.max_workers
            )
            if decision.workers is None:
                return decision.reason
            w = decision.workers
            if w in failed or self.ran(Setting(w)) is not None:
                return (
                    f"the loader alone gave no figure at {count(w, 'worker')} (no block in its rounds: epochs of few batches "
                    "end its slices early; a larger budget or longer epochs give it room)"
                )
            if not self.fits(self.budget_s):
                self.skipped.append({"what": f"{count(w, 'worker')}", "reason": "budget: " + decision.reason})
                return "the budget was spent"
            trial = self.run(Setting(w), "search", decision.reason)
            if not trial.ok or self.point(trial) is None:
                failed.add(w)

    def threads(self) -> Point | None:
        """The thread pool at the cheapest worker count predicted within 5 % of the best."""
        w = cheapest_near_best(self.points(), self.ceiling())
        if w == 0:
            self.skipped.append({"what": "thread_pool", "reason": "the best setting has no workers"})
            return None
        s = Setting(w, thread_pool=True)
        trial = self.ran(s)
        if trial is None:
            if not self.fits(self.budget_s):
                self.skipped.append({"what": f"thread_pool at {count(w, 'worker')}", "reason": "budget"})
                return None
            trial = self.run(s, "threads", "threads instead of processes at the cheapest good worker count")
        return self.point(trial)

    def candidates(self, current: Setting, threads: Point | None, on_gpu: bool) -> None:
        """The tune's candidates (:func:`candidates`) not yet run, while the budget lasts."""
        for s, why in candidates(self.points(), self.ceiling(), current, threads=threads, on_gpu=on_gpu):
            if self.ran(s) is not None:
                continue
            if not self.fits(self.budget_s):
                self.skipped.append({"what": s.label, "reason": f"budget ({why})"})
                continue
            self.run(s, "candidate", why)


def _evidence(trial: ScriptTrial, cores: int) -> list[Evidence]:
    label = trial.setting.label
    if trial.error:
        return [Evidence(trial.role, f"full: {label}", trial.setting.to_dict(), status="failed", error=trial.error)]
    out = []
    for mode, what in (("full", "full"), ("loader_only", "loader"), ("cached_batch", "ceiling")):
        rec = trial.records.get(mode)
        rate, ci = trial.rate(mode)
        e = Evidence(
            trial.role,
            f"{what}: {label}",
            trial.setting.to_dict(),
            samples_per_s=rate,
            ci=ci,
            cpu_cores=trial.cpu_cores(mode, cores),
            blocks=len(rec.blocks) if rec else 0,
            steps=len(rec.times) if rec else 0,
            elapsed_s=trial.wall_s,
        )
        if not e.blocks:
            e.status, e.error = "failed", "no block measured in its rounds (raise --budget)"
        out.append(e)
    return out


def _ceiling_gain(trial: ScriptTrial) -> list[float]:
    """One reused batch's speed-up over the run's full step, paired round by round in the run's own rounds."""
    full, ceil = trial.records.get("full"), trial.records.get("cached_batch")
    if full is None or ceil is None or not full.blocks or not ceil.blocks:
        return [math.nan] * 3
    (fr, fci), (cr, cci) = trial.rate("full"), trial.rate("cached_batch")
    return list(gain_over(dict(ceil.per_round), cr, cci, dict(full.per_round), fr, fci))


@dataclass
class ScriptTune:
    """A script's tune: the :class:`~gluonbench.tune.result.TuneResult` (what every tune records), the training
    loader it tuned (the N-th DataLoader the script makes, as the script made it) and every run."""

    result: TuneResult
    loader: int
    loader_info: dict[str, Any]
    trials: list[ScriptTrial]


def tune_script(
    cmd: list[str] | ScriptCommand,
    budget_s: float = 60.0,
    *,
    max_workers: int | None = None,
    loader: int | None = None,
    start_timeout_s: float = 120.0,
    on_progress: Progress | None = None,
    on_trial: Callable[[ScriptTrial], None] | None = None,
) -> ScriptTune:
    """Search the training DataLoader's knobs of the user's command (``python train.py ARGS``, ``python -m pkg.train``)
    on the running script, one fresh process per setting, within ``budget_s`` seconds (start-ups included).

    The baseline is the script as written (nothing overridden); the result's ``dataloader`` is the
    ``DataLoader(...)`` arguments to write into the script; every setting in it was run. ``max_workers``: the most
    workers tried (default ``max(16, 4 x cores)``). ``loader``: the N-th DataLoader the script makes (default: the
    first whose batches are followed by a Trainer update). A script that cannot be run so raises one
    :class:`~gluonbench.errors.GluonbenchError` line before or during its baseline run. ``cmd``: the command as
    given, or the :class:`~gluonbench.script.run.ScriptCommand` that :func:`~gluonbench.script.run.check_inputs`
    made of it.
    """
    check_tune(budget_s, max_workers)
    command = check_inputs(cmd, budget_s, loader, start_timeout_s, "tune")
    cores = usable_cores()
    max_workers = max(16, 4 * cores) if max_workers is None else max_workers
    started = utc_now()
    search = _ScriptSearch(command, float(budget_s), max_workers, cores, start_timeout_s, on_progress, on_trial)
    base = search.baseline(loader)
    current = base.setting
    on_gpu = any(c.startswith("gpu") for c in base.contexts)
    stop = search.search()
    threads = search.threads()
    search.candidates(current, threads, on_gpu)
    if not on_gpu:
        search.skipped.append({"what": "pin_memory", "reason": "a CPU context has no host-to-device copy to speed up"})
    search.skipped.append({"what": "batch_size", "reason": BATCH_SIZE_NOTE})
    measured = [t for t in search.trials if t.ok]
    if not measured:
        raise ScriptEndedError(
            "no run of the script gave a measured training step within the budget (a busy machine or a slow start); "
            f"raise --budget (e.g. --budget {2 * budget_s:g})"
        )
    by_setting = {t.setting: t for t in measured}
    confirmed = [Confirmed(t.setting, *t.rate("full")) for t in measured]
    winner, tied = choose(confirmed)
    best = by_setting[winner.setting]
    base_rate, base_ci = base.rate("full")
    c_rate, c_ci = best.rate("cached_batch")
    gain = _ceiling_gain(best)
    # the best and the baseline ran in different processes: their ratio is of the two medians and their CIs
    speedup = (
        list(gain_over({}, winner.samples_per_s, winner.ci, {}, base_rate, base_ci)) if base.ok else [math.nan] * 3
    )
    batch_size = int(base.loader.get("batch_size") or 0)
    model = fit(search.points(), cores)
    result_batch = BatchSizeResult.chosen(
        batch_size,
        winner,
        tied,
        [(c, _ceiling_gain(t), {"role": t.role}) for c, t in zip(confirmed, measured, strict=True)],
        current=(base_rate, base_ci),
        ceiling=(c_rate, c_ci),
        stop_reason=stop,
        model=model.to_dict(),
        phase_s={"runs": sum(t.wall_s for t in search.trials)},
        ceiling_gain=gain,
        speedup=speedup,
        ceiling_source="confirmation",
        first_ceiling_samples_per_s=base.rate("cached_batch")[0],
        rounds=len(best.records["full"].per_round) if "full" in best.records else 0,
    )
    gpu = [c for c in base.contexts if c.startswith("gpu")]
    result = TuneResult(
        setting=winner.setting.to_dict(),
        batch_size=batch_size,
        dataloader=script_line(winner.setting, on_gpu, current),
        samples_per_s=winner.samples_per_s,
        ci=winner.ci,
        current=current.to_dict(),
        current_batch_size=batch_size,
        current_samples_per_s=base_rate,
        current_ci=base_ci,
        ceiling_samples_per_s=c_rate,
        ceiling_ci=c_ci,
        evidence=[e for t in search.trials for e in _evidence(t, cores)],
        tried=search.tried,
        skipped=search.skipped,
        batch_sizes=[result_batch],
        elapsed_s=search.elapsed(),
        budget_s=float(budget_s),
        cores=cores,
        ctx=("gpu:" + gpu[0][4:-1]) if gpu else "cpu",
        started_utc=started,
        label=command.name,
        env=environment(),
        same_rounds={
            "ceiling_gain": gain,
            "speedup": speedup,
            "ceiling_source": "confirmation",
            "rounds": result_batch.rounds,
        },
    )
    return ScriptTune(result, search.index or 1, dict(base.loader), search.trials)


def save_tune(result: TuneResult, cmd: list[str], out: str | Path, settings: dict[str, Any]) -> Path:
    """The run folder ``OUT/<UTC>-tune-script-<name>/`` of a script's tune: one ``kind == "tune"`` record with the
    tune's exports (``tune.md``, ``tune.csv``, ``tune.json``, ``report.html``), as ``gluonbench tune --out`` writes."""
    from gluonbench.outdir import save_run

    label = "".join(c if c.isalnum() or c in "-_" else "-" for c in Path(result.label).stem)[:48] or "script"
    record = {"settings": {"command": list(cmd), **settings}}
    path = save_run(out, f"tune-script-{label}", record, "tune", result, env=result.env)
    result.run_dir = str(path)
    return path
