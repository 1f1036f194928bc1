"""``gluonbench check [--baseline B | --save-baseline B] -- python train.py ARGS``: the CI gate on the user's script.

The script runs as written, with the hooks (as ``diagnose -- CMD``): its training DataLoader's batches go through
the probes in interleaved rounds (the full pipeline, the transform, ``dataset[i]`` and the whole loader swapped
out in turn, and the loader alone), for the whole budget, with no early stop: a fixed amount of evidence, as
``check --pipeline`` measures. After every round, while the script waits for the next, gluonbench measures its
ruler (the fixed reference pipeline of :mod:`gluonbench.check.ruler`) in its own process, so every figure is
relative to the ruler in the same round: a slower runner or a noisy neighbour is not a regression. The result
is the same :class:`~gluonbench.check.gate.Snapshot` a ``--pipeline`` check makes, judged by the same rule.

A script's probes are timed inside it by wall clock only: their CPU figures are their wall figures (and the
ruler's too), so a comparison across core counts compares wall time relative to the ruler, and says so.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path
from time import perf_counter
from typing import Any

from gluonbench.analysis.stats import median
from gluonbench.check.gate import (
    STAGE_MIN_ROUNDS,
    CheckResult,
    Figure,
    Snapshot,
    check_budget,
    cores_here,
    relative_figure,
    stage_figures,
)
from gluonbench.diagnosis.verdict import Thresholds
from gluonbench.engine.measure import Record
from gluonbench.errors import GluonbenchError
from gluonbench.names import param
from gluonbench.script.run import ScriptCommand, ScriptProcess, check_inputs, probe_rounds, until_training
from gluonbench.validate import redact_text

log = logging.getLogger(__name__)

RULER_TIMED_S = 0.25
"""about how long the ruler's timed steps take before the script's first round and after each round: their number is fixed for the whole
check from the warm-up's step time, within :data:`RULER_STEPS` (its figure: their median time per sample)"""
RULER_STEPS = (4, 32)
"""the fewest and the most ruler steps timed a round"""
RULER_WARMUP_STEPS = 3
"""the ruler's steps run once, before the script starts (allocation, the first passes), not timed"""
WALL_ONLY_NOTE = (
    "the script's probes are timed by wall clock inside it: its CPU figures are its wall figures, relative to the "
    "ruler's wall time"
)


def script_identity(command: ScriptCommand, loader: int | None = None) -> str:
    """What a script's baseline is tied to: the command as written (the interpreter by its name, credentials in it
    redacted), and the loader picked with ``--loader``."""
    text = redact_text(" ".join(command.words()))
    return f"{text} (loader {loader})" if loader is not None else text


def measure_script(
    cmd: list[str] | ScriptCommand,
    budget_s: float,
    *,
    loader: int | None = None,
    start_timeout_s: float = 120.0,
    on_progress: Callable[[float, float], None] | None = None,
) -> Snapshot:
    """Measure the user's training command beside the ruler for ``budget_s`` seconds (see the module docstring).
    ``cmd``: the command as given, or the :class:`~gluonbench.script.run.ScriptCommand` that
    :func:`~gluonbench.script.run.check_inputs` made of it (not checked again)."""
    from gluonbench.env import environment, utc_now

    budget_s = check_budget(budget_s)
    command = check_inputs(cmd, budget_s, loader, start_timeout_s, "check")
    identity = script_identity(command, loader)
    started = utc_now()
    ruler = RulerSteps()
    raw: dict[int, float] = {}
    """the ruler's seconds per sample after round n (0: before the first)"""
    kept: dict[str, dict[str, Record]] = {}

    def ruler_round(n: int, records: dict[str, Record]) -> None:
        kept["records"] = records
        value = ruler.time_round()
        if value > 0:
            raw[n] = value

    proc = ScriptProcess(command, loader)
    t_launch = perf_counter()
    try:
        proc.start()
        found, ready = until_training(proc, start_timeout_s)
        info = found.get("loader") or {}
        ruler_round(0, {})  # before the first round, while the script waits: each round has the ruler on both sides
        probes = probe_rounds(
            proc,
            info,
            ready,
            budget_s,
            Thresholds(),
            perf_counter() - t_launch,
            on_progress,
            after_round=ruler_round,
            stop_early=False,
        )
    finally:
        proc.stop()
        ruler.close()
    rw = bracketed(raw)
    records = kept.get("records") or {}
    if "full" not in records or not records["full"].per_round:
        raise GluonbenchError(
            f"no round of the script came back within the budget {budget_s:g} s: raise --budget (e.g. --budget "
            f"{max(60, int(2 * budget_s))})"
        )
    return script_snapshot(
        identity,
        records,
        found,
        int(ready.get("samples") or 0),
        rw,
        budget_s=budget_s,
        elapsed_s=probes.elapsed_s,
        rounds=probes.rounds,
        env=environment(),
        started_utc=started,
        background=None,
    )


def bracketed(raw: dict[int, float]) -> dict[int, float]:
    """Each round's ruler figure from the ruler's passes around it (``raw[n]``: after round ``n``, ``raw[0]``
    before the first): the mean of the one before and the one after, or the one there is. A load that comes or
    goes while the script measures then moves the ruler's figure for that round too, not only the next round's."""
    out = {}
    for n in sorted(k for k in raw if k > 0):
        sides = [raw[k] for k in (n - 1, n) if k in raw]
        out[n] = sum(sides) / len(sides)
    return out


def script_snapshot(
    identity: str,
    records: dict[str, Record],
    found: dict[str, Any],
    batch_size: int,
    reference: dict[int, float],
    **fields: Any,
) -> Snapshot:
    """One script's measured rounds as a :class:`~gluonbench.check.gate.Snapshot` whose figures are relative to
    ``reference`` (per round: the ruler's seconds per sample, or the baseline script's full pipeline). The
    probes are timed by wall clock inside the script: their CPU figures are their wall figures."""
    info = found.get("loader") or {}
    contexts = found.get("contexts") or []
    for rec in records.values():
        rec.cpu_per_round = dict(rec.per_round)
    full = records["full"].per_round
    ceiling = records.get("loader_only")
    return Snapshot(
        identity=identity,
        pipeline={
            "script": identity,
            "loader": f"DataLoader #{info.get('index')} of the script: {info.get('dataset')}, "
            f"{info.get('num_workers')} worker(s), batchify {info.get('batchify')}",
            "step": f"the script's own (gluon.Trainer on {', '.join(contexts) or '?'})",
        },
        setting={
            "batch_size": int(batch_size or info.get("batch_size") or 1),
            "num_workers": int(info.get("num_workers", 0)),
            "ctx": ", ".join(contexts) or "cpu",
            "timed": "wall",
        },
        cores=cores_here(),
        total=relative_figure(full, full, reference, reference),
        stages=stage_figures(records, reference, reference, True),
        ceiling=(
            relative_figure(ceiling.per_round, ceiling.per_round, reference, reference, STAGE_MIN_ROUNDS)
            if ceiling is not None
            else Figure()
        ),
        ruler=relative_figure(reference, reference, reference, reference),
        **fields,
    )


class RulerSteps:
    """The ruler's pipeline, open for the whole check: warmed up once, then a fixed number of its steps (``steps``;
    by default what takes about :data:`RULER_TIMED_S` at the warm-up's pace, within :data:`RULER_STEPS`) timed by
    the engine's step timer (:func:`~gluonbench.engine.loop.run_steps`) before the script's first round and after
    each round (:func:`bracketed` gives each round the mean of the passes on its two sides).

    One pass a round, as the pipelines' own rounds run: the steps after the pause that still find a prefetched
    batch are left out (the ruler has no workers: the first step, whose fetch waited on nothing), and the pass ends
    at the barrier of its last timed step, with the next batch fetched and no step run on it.
    """

    def __init__(self, steps: int | None = None, warmup_steps: int = RULER_WARMUP_STEPS) -> None:
        from gluonbench._mx import mx
        from gluonbench.check.ruler import ruler_pipeline
        from gluonbench.engine.loop import run_steps

        self.running = ruler_pipeline(mx.cpu()).open()
        pipeline = self.running.pipeline
        warm = run_steps(self.running.cycle(), pipeline.copy_stage, pipeline.step, max_steps=warmup_steps)
        if steps is None:
            step_s = median(warm.steps(1)) if len(warm) > 1 else 0.0
            fewest, most = RULER_STEPS
            steps = min(most, max(fewest, math.ceil(RULER_TIMED_S / step_s) if step_s > 0 else most))
        self.steps = steps

    def time_round(self) -> float:
        """Seconds per sample of this round: the median over its timed steps (0.0 when none was timed)."""
        from gluonbench.engine.loop import run_steps

        skip, pipeline = self.running.skip, self.running.pipeline
        times = run_steps(
            self.running.cycle(), pipeline.copy_stage, pipeline.step, last=lambda n: n >= skip + self.steps
        )
        timed = times.part(skip, skip + self.steps)
        per_sample = [timed.step(i) / timed.samples[i] for i in range(len(timed)) if timed.samples[i]]
        return median(per_sample) if per_sample else 0.0

    def close(self) -> None:
        self.running.close()


def check_script(
    script: list[str],
    baseline: str | Path | None,
    save: str | Path | None,
    against: str | Path | None,
    max_slowdown: float | str,
    budget_s: float,
    loader: int | None,
    start_timeout_s: float,
    on_progress: Callable[[float, float], None] | None,
) -> CheckResult | Snapshot:
    """``check -- python train.py ARGS`` against a ``baseline``, or saving one to ``save`` (exactly one): the
    :class:`~gluonbench.check.CheckResult` or the saved :class:`~gluonbench.check.Snapshot`, as
    :func:`gluonbench.check.run_check` gives for a pipeline. Bad input raises before the script starts."""
    from gluonbench.check import decide, load_baseline, parse_fraction, save_baseline
    from gluonbench.report.store import check_writable_file

    if against is None and sum(x is not None for x in (baseline, save)) != 1:
        raise GluonbenchError(f"give one of {param('baseline')} FILE or {param('save', '--save-baseline')} FILE")
    threshold = parse_fraction(max_slowdown)
    budget_s = check_budget(budget_s)
    command = check_inputs(script, budget_s, loader, start_timeout_s, "check")  # once: the ScriptCommand goes on
    if against is not None:
        from gluonbench.script.against import check_script_against

        return check_script_against(
            command,
            str(against),
            max_slowdown=threshold,
            budget_s=budget_s,
            loader=loader,
            start_timeout_s=start_timeout_s,
            on_progress=on_progress,
        )
    base = load_baseline(baseline, script_identity(command, loader)) if baseline is not None else None
    if save is not None:
        check_writable_file(save, "--save-baseline")
    snap = measure_script(command, budget_s, loader=loader, start_timeout_s=start_timeout_s, on_progress=on_progress)
    if save is not None:
        save_baseline(snap, save)
        return snap
    assert base is not None
    result = decide(snap, base, threshold, str(baseline))
    result.notes.append(WALL_ONLY_NOTE)
    return result
