"""The public Python API: :func:`sweep`, :func:`run_once` and :func:`diagnose` (re-exported by ``gluonbench``)."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from pathlib import Path

from gluonbench.config import SweepSettings
from gluonbench.engine.diagnosis import Diagnosis, diagnose, diagnose_workload
from gluonbench.engine.isolation import run_isolated
from gluonbench.engine.run import RunResult, RunSpec, train_and_eval
from gluonbench.env import command_line, environment
from gluonbench.errors import GluonbenchError
from gluonbench.report.export import write_reports
from gluonbench.report.store import RunStore, new_run_dir
from gluonbench.report.summary import SweepSummary

__all__ = ["Diagnosis", "check_inputs", "diagnose", "diagnose_workload", "run_once", "sweep"]

log = logging.getLogger(__name__)

OnResult = Callable[[RunResult], None]
OnProgress = Callable[[int, int | None], None]
"""``on_progress(steps_done, steps_planned)`` over the whole sweep; ``steps_planned`` None if unknown."""


def run_once(spec: RunSpec, workload=None) -> RunResult:
    """One run in this process (no isolation): useful from notebooks."""
    return train_and_eval(spec, workload)


def check_inputs(settings: SweepSettings) -> dict[str, int]:
    """Fail fast, before any run: the context exists and the data set is there and valid.

    Returns the split sizes (samples per split) of the data set.
    """
    from gluonbench.data import vision
    from gluonbench.engine.context import parse_ctx
    from gluonbench.workloads import workload_names

    if settings.workload not in workload_names():
        raise GluonbenchError(f"unknown --dataset {settings.workload!r}; choose one of {', '.join(workload_names())}")
    parse_ctx(settings.ctx)
    if settings.workload in vision.SPECS:
        folder = vision.locate(settings.workload, settings.data_dir, download=settings.download)
        return vision.validate(folder)
    return {}


def steps_per_run(settings: SweepSettings, sizes: dict[str, int]) -> int | None:
    train = sizes.get("train")
    if not train:
        return None
    steps = math.ceil(train / settings.batch_size) * settings.epochs
    return min(steps, settings.max_batches) if settings.max_batches else steps


def sweep(
    settings: SweepSettings | None = None,
    out: str | Path = "results",
    resume: str | Path | None = None,
    on_result: OnResult | None = None,
    on_progress: OnProgress | None = None,
) -> tuple[Path, SweepSummary]:
    """Run every (worker count, repeat) in its own child process; return the run folder and summary.

    Each finished run is appended to ``runs.jsonl`` at once. With ``resume``, the
    settings come from that folder's ``sweep.json`` (``settings`` is ignored) and
    finished runs are skipped.
    ``KeyboardInterrupt`` stops the sweep after rebuilding the reports from what
    finished, then propagates.
    """
    if resume is not None:
        store = RunStore(resume)
        saved = store.read_settings()
        settings = SweepSettings.from_dict(saved["settings"])
        done = {
            (int(r["spec"]["workers"]), int(r["spec"]["repeat"]))
            for r in store.records()
            if r.get("kind", "run") == "run"
        }
    elif settings is None:
        raise GluonbenchError("sweep needs settings, or resume= a run folder")
    else:
        done = set()
    settings.check()
    sizes = check_inputs(settings)
    cores = os.cpu_count() or 1
    over = [w for w in settings.workers if w > cores]
    if over:
        log.warning("worker counts %s exceed the %d logical cores here; expect no gain past %d", over, cores, cores)
    if resume is None:
        store = RunStore(new_run_dir(out, settings.label()))
        store.write_settings({"settings": settings.to_dict(), "command": command_line(), "env": environment()})
    todo = [s for s in settings.specs() if s.key not in done]
    if done:
        log.info("resuming %s: %d run(s) done, %d to go", store.path, len(done), len(todo))
    total_steps = steps_per_run(settings, sizes)
    planned = total_steps * len(todo) if total_steps else None
    try:
        for n, spec in enumerate(todo):
            base = n * (total_steps or 0)
            result = run_isolated(
                spec,
                log_path=store.path / "logs" / f"w{spec.workers}-r{spec.repeat}.log",
                timeout_s=settings.timeout_s,
                progress=None if on_progress is None else lambda steps, base=base: on_progress(base + steps, planned),
            )
            result.command = command_line()
            if total_steps:
                result.spec["steps_planned"] = total_steps
            store.append(result)
            if on_result is not None:
                on_result(result)
    finally:
        if store.runs_path.exists():
            summary = write_reports(store.path)
        else:
            summary = None
    if summary is None:
        raise GluonbenchError(f"no run finished; see the logs under {store.path / 'logs'}")
    return store.path, summary
