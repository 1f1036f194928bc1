"""A distributed sweep: one job per (kvstore workers, loader workers, repeat), per-worker records.

Each job's worker records are appended to ``runs.jsonl`` as soon as the job ends (a failed job
leaves a record with its one-line error); the scaling reports are rebuilt from the file at the
end, also after Ctrl-C, so every finished job is kept.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gluonbench.distributed.launch import job_records, run_job
from gluonbench.distributed.settings import check_launch
from gluonbench.env import command_line, environment, utc_now
from gluonbench.errors import GluonbenchError
from gluonbench.report import DEFAULT_OUT
from gluonbench.report.scaling import ScalingSummary, write_scaling_reports
from gluonbench.report.store import RunStore, new_run_dir
from gluonbench.sweeprun.run import RunResult

log = logging.getLogger(__name__)


def job_key(spec: dict[str, Any]) -> tuple[int, int, int]:
    """Identity of a job inside a distributed sweep: (kvstore workers, loader workers, repeat)."""
    return int(spec.get("hosts", 1)), int(spec["workers"]), int(spec.get("repeat", 0))


def dist_sweep(
    settings: Any,
    out: str | Path = DEFAULT_OUT,
    resume: str | Path | None = None,
    on_result: Callable[[RunResult], None] | None = None,
    on_progress: Callable[[int, int | None], None] | None = None,
    train_samples: int | None = None,
) -> tuple[Path, ScalingSummary]:
    """Run every job of ``settings`` (a checked SweepSettings with a ``dist_*`` kvstore)."""
    check_launch(settings)
    if resume is not None:
        store = RunStore(resume)
        store.read_settings()  # a folder made by gluonbench, with no link where a file should be
    else:
        store = RunStore(new_run_dir(out, settings.label()))
        store.write_settings({"settings": settings.to_dict(), "command": command_line(), "env": environment()})
    # two --resume of one folder must not run the same job twice: the folder is held for the whole sweep
    with store.lock():
        return _dist_sweep_locked(store, settings, resume is not None, on_result, on_progress, train_samples)


def _dist_sweep_locked(
    store: RunStore,
    settings: Any,
    resuming: bool,
    on_result: Callable[[RunResult], None] | None,
    on_progress: Callable[[int, int | None], None] | None,
    train_samples: int | None,
) -> tuple[Path, ScalingSummary]:
    done = {job_key(r["spec"]) for r in store.records() if r.get("kind") == "dist"} if resuming else set()
    todo = [s for s in settings.specs() if job_key(s.to_dict()) not in done]
    planned_steps = [_steps(settings, s.hosts, train_samples) for s in todo]
    planned = sum(planned_steps) if all(planned_steps) else None
    try:
        base = 0
        for spec, steps in zip(todo, planned_steps, strict=True):
            started = utc_now()
            outcome = run_job(
                spec,
                store.path / "logs",
                settings.timeout_s,
                launcher=settings.launcher,
                hostfile=settings.hostfile,
                port=settings.port,
                progress=None if on_progress is None else lambda n, b=base: on_progress(b + n, planned),
            )
            base += steps or 0
            for record in job_records(outcome, spec, started):
                record.command = command_line()
                if steps:
                    record.spec["steps_planned"] = steps
                store.append(record)
                if on_result is not None:
                    on_result(record)
    finally:
        summary = write_scaling_reports(store.path) if store.runs_path.exists() else None
    if summary is None:
        raise GluonbenchError(f"no distributed job finished; see the logs under {store.path / 'logs'}")
    return store.path, summary


def _steps(settings: Any, hosts: int, train_samples: int | None) -> int | None:
    if not train_samples:
        return None
    devices = len(settings.gpus or []) or settings.devices
    steps = math.ceil(math.ceil(train_samples / hosts) / (settings.batch_size * devices)) * settings.epochs
    return min(steps, settings.max_batches) if settings.max_batches else steps
