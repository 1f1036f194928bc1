"""The sweep's loop: every (worker count, repeat) in its own child process, each result appended to the run
folder at once, the reports rebuilt from what finished (also on Ctrl-C); :func:`gluonbench.api.sweep` is its
public entry."""

from __future__ import annotations

import logging
import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from gluonbench.config import SweepSettings, check_types
from gluonbench.diagnosis import sweep as diagnosis_sweep
from gluonbench.distributed import is_dist
from gluonbench.env import command_line, environment
from gluonbench.errors import GluonbenchError
from gluonbench.inputs import check_before_start, check_inputs
from gluonbench.outdir import check_out, pipeline_record, write_reports
from gluonbench.profiler.session import RunProfile
from gluonbench.report.store import RunStore, new_run_dir
from gluonbench.report.summary import SweepSummary
from gluonbench.sweeprun.child import run_isolated
from gluonbench.sweeprun.run import RunResult

log = logging.getLogger(__name__)

OnResult = Callable[[RunResult], None]
OnProgress = Callable[[int, int | None], None]
"""``on_progress(steps_done, steps_planned)`` over the whole sweep; ``steps_planned`` None if unknown."""


def steps_per_run(settings: SweepSettings, sizes: dict[str, int]) -> int | None:
    train = sizes.get("train")
    if not train:
        return None
    steps = math.ceil(train / settings.batch_size) * settings.epochs
    return min(steps, settings.max_batches) if settings.max_batches else steps


def run_sweep(
    settings: SweepSettings,
    out: str | Path,
    resume: str | Path | None,
    on_result: OnResult | None = None,
    on_progress: OnProgress | None = None,
    profile: bool = False,
) -> tuple[Path, SweepSummary]:
    """The sweep of checked ``settings`` (:func:`gluonbench.api.sweep` checks them): a new run folder under ``out``,
    or the folder ``resume`` with its finished runs skipped; a ``dist_*`` kvstore runs distributed jobs instead."""
    if is_dist(settings.kvstore):
        return _dist_sweep(settings, out, resume, on_result, on_progress)
    sizes = check_inputs(settings)
    cores = os.cpu_count() or 1
    over = [w for w in settings.workers if w > cores]
    if over:
        log.warning("worker counts %s exceed the %d logical cores here; expect no gain past %d", over, cores, cores)
    if resume is None:
        check_out(out)
        store = RunStore(new_run_dir(out, settings.label()))
        try:
            store.reserve(len(settings.specs()))
            store.write_settings(
                {
                    "settings": settings.to_dict(),
                    **pipeline_record(settings),
                    "command": command_line(),
                    "env": environment(),
                }
            )
        except BaseException:
            shutil.rmtree(store.path, ignore_errors=True)  # a folder this call made and nothing was measured in
            raise
    else:
        store = RunStore(resume)
    with store.lock():
        return _sweep_locked(store, settings, sizes, resume is not None, on_result, on_progress, profile)


def check_resume(resume: str | Path) -> SweepSettings:
    """The checks of ``sweep(resume=...)`` that need no MXNet, for a command's first line to come after them: the
    folder's ``sweep.json`` is there and valid, no file gluonbench writes there is a link, no other sweep holds
    the folder, and :func:`check_before_start` on its settings. Returns the saved settings; :func:`sweep`
    reads and checks them again."""
    store = RunStore(resume)
    settings = SweepSettings.from_dict(store.read_settings()["settings"])
    check_types(settings)
    settings.check()
    store.refuse_links()
    store.check_unlocked()
    check_before_start(settings)
    return settings


def _sweep_locked(
    store: RunStore,
    settings: SweepSettings,
    sizes: dict[str, int],
    resuming: bool,
    on_result: OnResult | None,
    on_progress: OnProgress | None,
    profile: bool = False,
) -> tuple[Path, SweepSummary]:
    done: set[tuple[int, int]] = set()
    if resuming:
        store.recover_tail()
        done = {
            (int(r["spec"]["workers"]), int(r["spec"]["repeat"]))
            for r in store.records()
            if r.get("kind", "run") == "run"
        }
    todo = [s for s in settings.specs() if s.key not in done]
    if done:
        log.info("resuming %s: %d run(s) done, %d to go", store.path, len(done), len(todo))
    store.reserve(len(todo))
    total_steps = steps_per_run(settings, sizes)
    planned = total_steps * len(todo) if total_steps else None
    finished = False
    summary = None
    try:
        for n, spec in enumerate(todo):
            base = n * (total_steps or 0)
            with RunProfile(store.path / "profiles" if profile else None, f"w{spec.workers}-r{spec.repeat}") as prof:
                result = run_isolated(
                    spec,
                    log_path=store.path / "logs" / f"w{spec.workers}-r{spec.repeat}.log",
                    timeout_s=settings.timeout_s,
                    child=diagnosis_sweep if spec.diagnose else None,
                    progress=prof.progress(
                        None if on_progress is None else lambda steps, base=base: on_progress(base + steps, planned)
                    ),
                )
                prof.attach(result)
            result.command = command_line()
            if total_steps:
                result.spec["steps_planned"] = total_steps
            store.append(result)
            if on_result is not None:
                on_result(result)
        finished = True
    finally:
        if store.runs_path.exists() and store.runs_path.stat().st_size:
            try:
                summary = write_reports(store)
            except GluonbenchError:
                if finished:
                    raise
                # the error already on its way (disk full, Ctrl-C) is the one to report
                log.info("reports of %s not rebuilt", store.path, exc_info=True)
    if summary is None:
        raise GluonbenchError(f"no run finished; see the logs under {store.path / 'logs'}")
    return store.path, summary


def _dist_sweep(settings, out, resume, on_result, on_progress):
    """Scale-out: one distributed job per (kvstore workers, loader workers, repeat); see gluonbench.distributed."""
    from gluonbench.distributed.sweep import dist_sweep

    settings.check()
    sizes = check_inputs(settings)
    from gluonbench.workloads.source import check_pipe_shards

    check_pipe_shards(settings.workload_options(), max(settings.hosts), settings.data_dir)
    return dist_sweep(settings, out, resume, on_result, on_progress, train_samples=sizes.get("train"))


# -- diagnose ------------------------------------------------------------------------------------
