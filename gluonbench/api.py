"""The public Python API (re-exported by ``gluonbench``): :func:`sweep`, :func:`run_once`, :func:`diagnose`,
:func:`run_diagnosis` and :func:`io_benchmark`. Each command's settings are validated here, in the library;
the CLI only parses flags into them."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from gluonbench.config import (
    DiagnoseSettings,
    IoSettings,
    SweepSettings,
    TuneSettings,
    check_types,
    resolve_batch_size,
)
from gluonbench.diagnosis import sweep as diagnosis_sweep
from gluonbench.diagnosis.run import Diagnosis, diagnose, diagnose_workload
from gluonbench.distributed import is_dist
from gluonbench.engine.deadline import BudgetExceededError
from gluonbench.env import command_line, environment
from gluonbench.errors import DataError, GluonbenchError
from gluonbench.names import arg
from gluonbench.profiler.session import RunProfile
from gluonbench.report import DEFAULT_OUT
from gluonbench.report.store import NotSavedError, RunStore, atomic_write_text, check_free_space, new_run_dir
from gluonbench.report.summary import SweepSummary
from gluonbench.rundir import load
from gluonbench.sweeprun.child import run_isolated
from gluonbench.sweeprun.run import RunResult, RunSpec, train_and_eval
from gluonbench.units import count
from gluonbench.validate import check_path, redact
from gluonbench.workloads.spec import check_pipeline, release_spec, take_spec

__all__ = [
    "Diagnosis",
    "check",
    "check_inputs",
    "compare",
    "diagnose",
    "diagnose_workload",
    "io_benchmark",
    "run_diagnosis",
    "run_once",
    "sweep",
]

log = logging.getLogger(__name__)

OnResult = Callable[[RunResult], None]
OnProgress = Callable[[int, int | None], None]
"""``on_progress(steps_done, steps_planned)`` over the whole sweep; ``steps_planned`` None if unknown."""


def run_once(spec: RunSpec, workload=None) -> RunResult:
    """One run in this process (no isolation): useful from notebooks."""
    return train_and_eval(spec, workload, diagnose=diagnosis_sweep.diagnose_run)


def check_inputs(settings: SweepSettings, reach: bool = True) -> dict[str, int]:
    """Fail fast, before any run: the context exists and the data set is there and valid.

    Returns the split sizes (samples per split) of the data set. ``reach=False`` (the CLI, before its first
    line) checks everything that neither downloads nor reaches a remote store; the sweep checks again, with
    ``reach=True``, before its first run. A ``--pipeline`` factory is checked by the CLI on its own.
    """
    from gluonbench.contexts import parse_ctx
    from gluonbench.data import vision
    from gluonbench.pipeline.scale import device_contexts
    from gluonbench.workloads import workload_names

    def check_devices() -> None:
        # --gpus names MXNet's GPUs itself (its errors name --gpus, as the user wrote it); else --ctx
        if settings.gpus:
            device_contexts(None, gpus=settings.gpus)
        else:
            parse_ctx(settings.ctx)

    if settings.pipeline:
        check_devices()
        return check_user_pipeline(settings) if reach else {}
    if settings.workload not in workload_names():
        raise GluonbenchError(f"unknown --dataset {settings.workload!r}; choose one of {', '.join(workload_names())}")
    check_devices()
    check_loader_shm(
        settings.options,
        settings.batch_size,
        max((*settings.workers, settings.eval_workers or 0)),
        settings.thread_pool,
    )
    from gluonbench.workloads.vision_zoo import VISION_WORKLOADS, check_options, check_vision

    uri = settings.workload_options().get("uri") or settings.data_dir
    remote = bool(uri and "://" in str(uri))
    if settings.run_workload() in VISION_WORKLOADS:
        if remote and not reach:
            opts = settings.workload_options()
            check_options(
                opts.get("model"), opts.get("preset", "imagenet"), opts.get("image_size"), opts.get("classes")
            )
            return {}
        return check_vision(settings.run_workload(), settings.workload_options(), settings.data_dir)
    if settings.workload in vision.SPECS:
        may_fetch = settings.download and settings.data_dir is None and not os.environ.get("GLUONBENCH_OFFLINE")
        try:
            folder = vision.locate(settings.workload, settings.data_dir, download=settings.download and reach)
        except DataError:
            if may_fetch and not reach:
                return {}  # not here yet: downloaded as the sweep starts
            raise
        return vision.validate(folder)
    if settings.workload == "synthetic":
        from gluonbench.workloads.synthetic import check_options as check_synthetic

        check_synthetic(settings.options)
        return {}
    if settings.workload == "source":
        from gluonbench.workloads.source import check_source

        return check_source(settings.options, settings.data_dir, deep=reach or not remote)
    return {}


def _write_reports(store: RunStore) -> Any:
    """Rebuild every export of ``store``'s folder from its records; the report's summary, or None if none."""
    if not store.runs_path.exists():
        return None
    report = load(store.path)
    report.write(store.path)
    return report.summary


def check_user_pipeline(settings: Any, keep: bool = False) -> dict[str, int]:
    """Check the ``--pipeline`` factory of ``settings`` (sweep, diagnose, tune, profile settings) at the setting
    the command runs (:func:`gluonbench.workloads.spec.check_pipeline`); the split sizes of its data sets.

    The factory is called once in this process: the CLI checks it before its first line with ``keep``, and
    this check, :func:`user_spec` after it, reuse that spec.
    """
    workers = getattr(settings, "workers", None)
    knobs = {
        "batch_size": getattr(settings, "batch_size", None),
        "num_workers": workers if isinstance(workers, int) else None,
        "thread_pool": getattr(settings, "thread_pool", None),
        "prefetch": getattr(settings, "prefetch", None),
    }
    return check_pipeline(
        settings.pipeline,
        settings.pipeline_options,
        getattr(settings, "ctx", None),
        bool(getattr(settings, "pin_memory", False)),
        keep=keep,
        **{k: v for k, v in knobs.items() if v is not None},
    )


def with_pipeline(settings: Any) -> Any:
    """``settings`` with a ``--pipeline`` factory checked (:func:`check_user_pipeline`, its warnings said once, the
    spec kept for the command) and its own ``batch_size`` filled in where none was given
    (:func:`gluonbench.config.resolve_batch_size`); settings without a factory at the seed's batch size."""
    if getattr(settings, "pipeline", None):
        check_user_pipeline(settings, keep=True)
    return resolve_batch_size(settings)


def pipeline_record(settings: Any) -> dict[str, Any]:
    """What a run folder keeps of the pipeline beside its settings: ``{"pipeline": {"identity": ...,
    "unchecked_options": [...]}}``, the second naming the options only the factory's ``**options`` took (its
    signature names none of them); ``{}`` without a pipeline factory."""
    if not getattr(settings, "pipeline", None):
        return {}
    from gluonbench.workloads.spec import unnamed_options

    return {
        "pipeline": {
            "identity": settings.identity(),
            "unchecked_options": unnamed_options(settings.pipeline, settings.pipeline_options),
        }
    }


def user_spec(settings: Any) -> Any:
    """The checked :class:`~gluonbench.PipelineSpec` of ``settings.pipeline`` (None without one), for a command
    that measures it in this process (diagnose, tune); release it with ``release_spec`` when done."""
    if not getattr(settings, "pipeline", None):
        return None
    check_user_pipeline(settings, keep=True)
    return take_spec(settings.pipeline, settings.pipeline_options)


def check_loader_shm(options: dict[str, Any] | None, batch_size: int, workers: int, thread_pool: bool) -> None:
    """Refuse DataLoader worker processes that ``/dev/shm`` is too small for (one line naming the fixes)."""
    from gluonbench.engine.watchdog import check_shm, sample_bytes

    check_shm(sample_bytes(options) * batch_size, workers, thread_pool)


def steps_per_run(settings: SweepSettings, sizes: dict[str, int]) -> int | None:
    train = sizes.get("train")
    if not train:
        return None
    steps = math.ceil(train / settings.batch_size) * settings.epochs
    return min(steps, settings.max_batches) if settings.max_batches else steps


def sweep(
    settings: SweepSettings | None = None,
    out: str | Path = DEFAULT_OUT,
    resume: str | Path | None = None,
    on_result: OnResult | None = None,
    on_progress: OnProgress | None = None,
    profile: bool = False,
) -> tuple[Path, SweepSummary]:
    """Run every (worker count, repeat) in its own child process; return the run folder and summary.

    With a ``dist_*`` kvstore, each setting is a distributed job instead (scheduler, servers and
    ``hosts`` workers, see :mod:`gluonbench.distributed`); the summary is then a ``ScalingSummary``.
    ``profile``: profile each run (system metrics, the profiler rules, a report) into
    ``RUN_DIR/profiles/``; each run's ``extra["profile"]`` names the rules that fired.

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
    elif settings is None:
        raise GluonbenchError("sweep needs settings, or resume= a run folder")
    check_types(settings)
    settings = with_pipeline(settings.check())  # the pipeline's own batch size unless one is given
    if resume is None:
        from gluonbench.workloads.synthetic import is_synthetic, pin_hash_rate

        # one calibration for every run (each its own process), kept in sweep.json for --resume
        if settings.pipeline and is_synthetic(settings.pipeline):
            settings = replace(settings, pipeline_options=pin_hash_rate(settings.pipeline_options))
        elif not settings.pipeline and is_synthetic(settings.workload):
            settings = replace(settings, options=pin_hash_rate(settings.options))
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


def _nearest_existing(path: Path) -> Path | None:
    """``path`` itself or the nearest of its parents that exists (None if none does)."""
    return next((p for p in (path, *path.parents) if p.exists()), None)


def make_out(out: str | Path, what: str = "out") -> Path:
    """Create the output folder ``out`` (``what``: its argument) if needed and prove it writable with room for
    results; one line naming the fix if not. Made before measuring: a result is never measured, then lost."""
    path = check_path(out, arg(what))
    if path.exists() and not path.is_dir():
        raise GluonbenchError(f"{arg(what)} {out} is not a folder; choose a folder for the results")
    above = _nearest_existing(path.parent)
    if above is not None and not above.is_dir():
        raise GluonbenchError(f"{arg(what)} {out}: {above} is a file, not a folder; choose a folder for the results")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GluonbenchError(f"cannot create {arg(what)} {out}: {exc.strerror}; choose a writable folder") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise GluonbenchError(f"cannot write into {arg(what)} {out}; choose a writable folder")
    check_free_space(path, arg(what))
    return path


def check_before_start(settings: Any, out: str | Path | None = None, create: bool = True) -> None:
    """The checks a command makes before its first line: those that need neither the network nor a measurement,
    nor MXNet (seconds to import) unless the run needs it anyway: a local data set that is named but missing,
    an image workload with no data set, the form of ``endpoint_url``, a zoo ``model`` name (gluoncv), a local
    pipe channel with fewer objects than ``hosts``, ``/dev/shm`` too small for the workers, then the output
    folder (made when ``create``, as diagnose and tune make it before measuring; else only checked, with room
    for one run's record, as a sweep makes its run folder once its inputs are checked). Everything is checked
    again, with the rest, before measuring: this only makes bad input one line with nothing printed before
    it. The sweep's CLI then runs :func:`check_inputs` with ``reach=False`` before its first line too."""
    if not getattr(settings, "pipeline", None):  # a factory is checked by check_pipeline
        workload, data_dir = getattr(settings, "workload", None), getattr(settings, "data_dir", None)
        options = getattr(settings, "options", None) or {}
        from gluonbench.data import vision

        if workload in vision.SPECS and data_dir is not None:
            vision.locate(workload, data_dir, download=False)  # a named folder is used alone: no download
        uri = options.get("uri") or data_dir
        if workload == "imagefolder" and not (uri and "://" in str(uri)):
            from gluonbench.workloads.vision_zoo import check_uri

            check_uri(uri)  # a local image folder that is not there
        if workload == "source" and uri and "://" not in str(uri) and not Path(uri).is_dir():
            from gluonbench.data.store import open_store

            open_store(str(uri)).list()  # DataError: the folder is missing, or a file
        if options.get("endpoint_url"):  # its form (credentials, scheme), not whether it answers
            from gluonbench.data.s3 import check_endpoint_url

            check_endpoint_url(options["endpoint_url"])
        model = getattr(settings, "model", None) or options.get("model")
        if model:  # a zoo model needs gluoncv (and so MXNet) anyway: its name is checked before the first line
            from gluonbench.workloads.vision_zoo import check_model

            check_model(str(model))
        hosts = getattr(settings, "hosts", None) or (1,)
        if options.get("mode") == "pipe" and max(hosts) > 1 and uri and "://" not in str(uri):
            from gluonbench.workloads.source import check_pipe_shards  # a local channel: listing it is cheap

            check_pipe_shards(options, max(hosts), data_dir)
    workers = getattr(settings, "workers", 0)
    most = max((*workers,) if isinstance(workers, tuple | list) else (workers or 0,))
    most = max(most, getattr(settings, "max_workers", 0) or 0, getattr(settings, "eval_workers", 0) or 0)
    if hasattr(settings, "thread_pool") and getattr(settings, "batch_size", None):  # a statvfs, no MXNet
        check_loader_shm(getattr(settings, "options", None), settings.batch_size, most, settings.thread_pool)
    hostfile = getattr(settings, "hostfile", None)
    if hostfile:  # a dist sweep's ssh hosts: read and checked line by line, no MXNet
        from gluonbench.distributed.settings import parse_hostfile

        parse_hostfile(hostfile)
    work_dir = getattr(settings, "work_dir", None)
    if work_dir:  # made later, by the command, once the rest is checked: a refusal leaves nothing behind
        _probe_mkdir(check_out(work_dir, "work_dir"), "work_dir")
    if out is not None and create:
        make_out(out)
    elif out is not None:
        from gluonbench.report.store import RESERVE_PER_RECORD

        check_free_space(check_out(out), arg("out"), need=RESERVE_PER_RECORD)  # room for one run's record


def _probe_mkdir(path: Path, what: str) -> None:
    """Prove ``path`` can be made (permissions alone do not tell, e.g. under /proc as root): make the missing
    folders, then remove the ones made here."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    made: list[Path] = []
    try:
        for p in reversed(missing):
            p.mkdir()
            made.append(p)
    except OSError as exc:
        raise GluonbenchError(f"cannot create {arg(what)} {path}: {exc.strerror}; choose a writable folder") from exc
    finally:
        for p in reversed(made):
            with contextlib.suppress(OSError):
                p.rmdir()


def check_out(out: str | Path, what: str = "out") -> Path:
    """``out`` (``what``: its argument) is a folder that exists or can be made, and is writable; checked
    before anything is created."""
    out = check_path(out, arg(what))
    probe = _nearest_existing(out) or out
    if probe.exists() and not probe.is_dir():
        raise GluonbenchError(
            f"{arg(what)} {out}: {probe} is a file, not a folder; choose a folder for the run folders"
        )
    if not os.access(probe, os.W_OK | os.X_OK):
        raise GluonbenchError(
            f"{arg(what)} {out}: cannot write in {probe} (permission denied); choose a writable folder"
        )
    return out


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
                summary = _write_reports(store)
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


def run_diagnosis(
    settings: DiagnoseSettings,
    out: str | Path | None = None,
    on_progress: Callable[[float, float], None] | None = None,
) -> tuple[Path | None, Diagnosis]:
    """Diagnose a registered workload (``gluonbench diagnose``); return the run folder (or None) and the diagnosis.

    With ``out``, the diagnosis is one ``kind == "diagnosis"`` line of ``OUT/<UTC>-diagnose-.../runs.jsonl``,
    and ``diagnosis.md``, ``.csv`` and ``.json`` are exported from it (``gluonbench report`` rebuilds them).
    ``settings.json_path`` also writes the whole diagnosis there, atomically.
    """

    settings = with_pipeline(settings.check())  # the pipeline's own batch size unless one is given
    if out is not None:  # fail before measuring; the run folder itself is made once there is a result
        make_out(out)
    check_loader_shm(settings.options, settings.batch_size, settings.workers, settings.thread_pool)
    workload, options = settings.run_workload()
    spec = user_spec(settings)  # a --pipeline factory, called once here (None: a registered workload)
    try:
        d = diagnose_workload(
            workload,
            settings.batch_size,
            settings.workers,
            settings.ctx,
            settings.budget_s,
            data_dir=settings.data_dir,
            download=settings.download,
            options=options,
            workload=None if spec is None else spec.to_workload(),
            label=settings.identity(),
            thread_pool=settings.thread_pool,
            pin_memory=settings.pin_memory,
            thresholds=settings.thresholds,
            seed=settings.seed,
            on_progress=on_progress,
        )
    except BudgetExceededError as exc:
        _keep_stalled(settings, out, exc)
        raise
    finally:
        if spec is not None:
            release_spec(spec)
    d.analysis["roofline"] = [line.to_dict() for line in roofline_diagnosis(settings, d)]  # doctor (issue 20)
    try:
        return _save_diagnosis(settings, out, d)
    except GluonbenchError as exc:  # measured, then not saved: the one line still gives the result
        from gluonbench.diagnosis.recommend import perfect_input_text

        # the verdict's reading (issue 17): the speed-up with a perfect input pipeline, with its interval
        reading = perfect_input_text(d)  # type: ignore[arg-type]  # a Diagnosis carries the verdict's speed-ups
        raise NotSavedError(f"diagnosis measured (verdict: {d.verdict}; {reading}) but not saved: {exc}", d) from None


def _keep_stalled(settings: DiagnoseSettings, out: str | Path | None, exc: BudgetExceededError) -> None:
    """A diagnosis stopped by a stall: save the rounds measured before it (``exc.partial``) where a finished one
    is saved, and say where in the error's line."""
    if exc.partial is None:
        return
    what = f"{count(exc.partial.rounds, 'round')} measured"
    try:
        run_dir, _ = _save_diagnosis(settings, out, exc.partial, status="stalled")
    except Exception as err:  # the stall's one line must still come out, whatever saving the rest did
        _say_kept(exc, what, exc.partial.rounds, [], err)
        return
    _say_kept(exc, what, exc.partial.rounds, [str(p) for p in (settings.json_path, run_dir) if p])


def _say_kept(exc: BudgetExceededError, what: str, n: int, kept: list[str], err: Exception | None = None) -> None:
    """End the stall's one line with where ``what`` (``n`` of them, e.g. "3 rounds measured") before it is kept, or,
    with ``err``, that saving it failed (naming what was kept before the failure)."""
    where = " and ".join(kept)
    if err is not None:
        exc.args = (f"{exc}; saving the {what} before it failed{f' (kept in {where})' if kept else ''}: {err}",)
    elif kept:
        exc.args = (f"{exc}; the {what} before it {'is' if n == 1 else 'are'} kept in {where}",)


def _save_diagnosis(
    settings: DiagnoseSettings, out: str | Path | None, d: Diagnosis, status: str = "ok"
) -> tuple[Path | None, Diagnosis]:
    """Write ``d`` to ``settings.json_path`` and, with ``out``, a run folder whose record has ``status`` (``ok``,
    or ``stalled`` for the complete rounds of a diagnosis a stall stopped)."""
    from gluonbench.env import utc_now

    if settings.json_path:
        atomic_write_text(settings.json_path, json.dumps(redact(d.to_dict()), indent=2))
    if out is None:
        return None, d
    store = RunStore(new_run_dir(out, settings.label()))
    store.write_settings(
        {
            "settings": settings.to_dict(),
            **pipeline_record(settings),
            "command": command_line(),
            "env": d.env or environment(),
        }
    )
    store.append(
        {
            "kind": "diagnosis",
            "status": status,
            "diagnosis": d.to_dict(),
            "probe_order": list(d.probes),
            "command": command_line(),
            "finished_utc": utc_now(),
        }
    )
    _write_reports(store)
    return store.path, d


def check_script(
    cmd: list[str], budget_s: float, out: str | Path | None, loader: int | None = None, start_timeout_s: float = 120.0
) -> None:
    """What :func:`diagnose_script` checks before it starts the script (the command, its interpreter, ``out``)."""
    from gluonbench.script.run import check_inputs

    check_inputs(cmd, budget_s, loader, start_timeout_s)
    if out is not None:
        make_out(out)


def diagnose_script(
    cmd: list[str],
    budget_s: float = 60.0,
    *,
    out: str | Path | None = None,
    json_path: str | None = None,
    thresholds: Any = None,
    loader: int | None = None,
    start_timeout_s: float = 120.0,
    on_progress: Callable[[float, float], None] | None = None,
) -> tuple[Path | None, Diagnosis]:
    """Diagnose the user's own training command, unmodified (``gluonbench diagnose -- python train.py ARGS``).

    The probes run inside the script's process (:func:`gluonbench.script.run.diagnose_script`); the diagnosis
    is saved as :func:`run_diagnosis` saves one: ``json_path``, and with ``out`` a run folder
    ``OUT/<UTC>-diagnose-script-<name>/`` that ``gluonbench report`` rebuilds.
    """
    from gluonbench.env import utc_now
    from gluonbench.script.run import diagnose_script as run_script

    if out is not None:  # fail before starting the script
        make_out(out)
    d = run_script(
        cmd, budget_s, thresholds=thresholds, loader=loader, start_timeout_s=start_timeout_s, on_progress=on_progress
    )
    if json_path:
        atomic_write_text(json_path, json.dumps(d.to_dict(), indent=2))
    if out is None:
        return None, d
    name = "".join(c if c.isalnum() or c in "-_" else "-" for c in Path(d.label).stem)[:48] or "script"
    store = RunStore(new_run_dir(out, f"diagnose-script-{name}"))
    settings = {"command": list(cmd), "budget_s": budget_s, "loader": loader, "thresholds": d.thresholds}
    store.write_settings({"settings": settings, "command": command_line(), "env": d.env or environment()})
    store.append(
        {
            "kind": "diagnosis",
            "status": "ok",
            "diagnosis": d.to_dict(),
            "probe_order": list(d.probes),
            "command": command_line(),
            "finished_utc": utc_now(),
        }
    )
    _write_reports(store)
    return store.path, d


def sweep_script(cmd: list[str], workers: list[int], max_batches: int = 100, **kwargs: Any) -> Any:
    """The user's training command once per worker count, a fresh process each, its training DataLoader made with
    that ``num_workers`` (``gluonbench sweep -- python train.py ARGS``); with ``out=`` a sweep run folder. See
    :func:`gluonbench.script.sweep.sweep_script` for the options."""
    from gluonbench.script.sweep import sweep_script as run_sweep

    return run_sweep(cmd, workers, max_batches, **kwargs)


# -- input modes (gluonbench io) ----------------------------------------------------------------


def io_benchmark(
    settings: IoSettings,
    out: str | Path = DEFAULT_OUT,
    on_result: Callable[[Any], None] | None = None,
) -> tuple[Path, Any]:
    """Run the input-mode matrix; one ``runs.jsonl`` line per cell, then io.csv/md/json/png.

    Returns the run folder and the :class:`~gluonbench.report.iobench.IoSummary`.
    ``KeyboardInterrupt`` rebuilds the reports from the finished cells, then propagates.
    """
    from gluonbench.data.images import image_folder
    from gluonbench.data.store import LocalStore
    from gluonbench.iobench.run import run_cells, stage_io_datasets
    from gluonbench.scratch import owned_tempdir

    settings.check()
    check_out(out)  # before any data set is generated
    if settings.src:
        image_folder(LocalStore(settings.src).list(), settings.src)  # fail fast: a usable image folder
    if settings.s3_uri:
        from gluonbench.data.s3 import S3Store

        S3Store(settings.s3_uri, settings.endpoint_url).ensure_bucket()  # fail fast: endpoint, credentials
    if settings.work_dir:
        work, made = make_out(settings.work_dir, "work_dir"), False
    else:
        work, made = owned_tempdir("io"), True  # swept by the next run if we are killed
    cache_root = work / "file-mode-cache"
    try:
        staged = stage_io_datasets(settings, work)
        note = "; ".join(
            f"{d.size}/{d.layout}: {d.objects} objects, {d.data_bytes / 1e6:.1f} MB"
            + (f" (packed at {d.pack_mb_per_s:.0f} MB/s)" if d.pack_mb_per_s else "")
            for d in staged
        )
        store = RunStore(new_run_dir(out, settings.label()))
        store.write_settings(
            {
                "settings": settings.to_dict(),
                "command": command_line(),
                "env": environment(),
                "datasets": [d.to_dict() for d in staged],
                "datasets_note": note,
            }
        )
        try:
            run_cells(settings, staged, store, cache_root, on_result)
        finally:
            summary = _write_reports(store)
    finally:
        shutil.rmtree(cache_root, ignore_errors=True)
        if made:
            shutil.rmtree(work, ignore_errors=True)
    if summary is None:
        raise GluonbenchError(f"no cell finished; see {store.path}")
    return store.path, summary


# -- tune ----------------------------------------------------------------------------------------


def run_tune(
    settings: TuneSettings,
    on_progress: Callable[[float, float, str], None] | None = None,
    out: str | Path | None = None,
) -> Any:
    """Tune a registered workload (``gluonbench tune``); write ``json_path``/``toml_path``; the ``TuneResult``.

    With ``out``, the result is also one ``kind == "tune"`` line of ``OUT/<UTC>-tune-.../runs.jsonl`` with
    ``tune.md``, ``tune.csv``, ``tune.json`` and ``report.html`` exported from it (``gluonbench report``
    rebuilds them); the run folder is ``result.run_dir`` (None without ``out``).
    """
    from gluonbench.env import utc_now
    from gluonbench.pipeline.emulate import step_ms
    from gluonbench.tune import tune_workload

    settings = with_pipeline(settings.check())  # the pipeline's own batch size unless one is given
    if out is not None:  # fail before measuring; the run folder itself is made once there is a result
        make_out(out)
    check_loader_shm(settings.options, settings.batch_size, settings.max_workers or 0, settings.thread_pool)
    workload, options = settings.run_workload()
    spec = user_spec(settings)  # a --pipeline factory, called once here (None: a registered workload)
    try:
        result = tune_workload(
            workload,
            settings.batch_size,
            settings.ctx,
            settings.budget_s,
            data_dir=settings.data_dir,
            download=settings.download,
            options=options,
            workload=None if spec is None else spec.to_workload(),
            label=settings.identity(),
            num_workers=settings.workers,
            thread_pool=settings.thread_pool,
            prefetch=settings.prefetch,
            pin_memory=settings.pin_memory,
            max_workers=settings.max_workers,
            batch_sizes=list(settings.batch_sizes) if settings.batch_sizes else None,
            emulate_step_ms=None if settings.emulate_step_ms is None else step_ms(settings.emulate_step_ms),
            seed=settings.seed,
            on_progress=on_progress,
        )
    except BudgetExceededError as exc:
        _keep_stalled_tune(settings, out, exc)
        raise
    finally:
        if spec is not None:
            release_spec(spec)
    try:
        if settings.json_path:
            atomic_write_text(settings.json_path, json.dumps(redact(result.to_dict()), indent=2))
        if settings.toml_path:
            atomic_write_text(settings.toml_path, result.to_toml())
    except GluonbenchError as exc:  # measured, then not saved: the one line still gives the result
        raise NotSavedError(f"tune measured (recommended: {result.dataloader}) but not saved: {exc}", result) from None
    if out is not None:
        store = RunStore(new_run_dir(out, settings.label(result.ctx)))
        store.write_settings(
            {"settings": settings.to_dict(), **pipeline_record(settings), "command": command_line(), "env": result.env}
        )
        store.append(
            {
                "kind": "tune",
                "status": "ok",
                "tune": result.to_dict(),
                "command": command_line(),
                "finished_utc": utc_now(),
            }
        )
        _write_reports(store)
        result.run_dir = str(store.path)
    return result


def _keep_stalled_tune(settings: TuneSettings, out: str | Path | None, exc: BudgetExceededError) -> None:
    """A tune stopped by a stall: save its evidence (``exc.partial``, a :class:`~gluonbench.tune.result.StalledTune`)
    to ``--json`` and, with ``out``, to ``tune.json`` of a run folder (no report: there is no recommendation), and
    say where in the error's line. No ``--toml``: it would hold a recommendation the search never confirmed."""
    partial = exc.partial
    if partial is None or not partial.measured:
        return
    kept: list[str] = []
    try:
        text = json.dumps(redact(partial.to_dict()), indent=2)
        if settings.json_path:
            atomic_write_text(settings.json_path, text)
            kept.append(str(settings.json_path))
        if out is not None:
            store = RunStore(new_run_dir(out, f"{settings.label(partial.ctx)}-stalled"))
            store.write_settings({"settings": settings.to_dict(), "command": command_line(), "env": environment()})
            atomic_write_text(store.path / "tune.json", text)
            kept.append(str(store.path / "tune.json"))
    except Exception as err:  # the stall's one line must still come out, whatever saving the rest did
        _say_kept(exc, f"{count(partial.measured, 'measurement')} made", partial.measured, kept, err)
        return
    _say_kept(exc, f"{count(partial.measured, 'measurement')} made", partial.measured, kept)


# -- doctor: preflight checks, ceilings, roofline (issue #20) --


def run_doctor(settings: Any) -> Any:
    """``gluonbench doctor``: every check and this host's ceilings (a :class:`~gluonbench.doctor.DoctorReport`)."""
    from gluonbench.doctor import doctor

    return doctor(settings)


def preflight(
    data_dir: str | None,
    ctx: str | None,
    workers: int,
    batch_size: int | None,
    options: dict[str, Any] | None = None,
    explore: bool = False,
) -> list[Any]:
    """The cheap doctor checks run before sweep, diagnose and tune; the caller prints any ``fail`` as a warning.

    ``explore``: the worker count is the largest of a sweep, which goes past the cores on purpose: the
    cores check then judges affinity and quota only, and ``/dev/shm`` is checked for that largest count.
    """
    from gluonbench.doctor import preflight as cheap
    from gluonbench.engine.watchdog import sample_bytes
    from gluonbench.knobs import knob_default

    if batch_size is None:  # a pipeline's own, not read yet (its factory is not called for these cheap checks)
        batch_size = knob_default("batch_size")

    folder = data_dir if data_dir and os.path.isdir(data_dir) else None
    checks = cheap(
        folder,
        ctx if ctx and ctx.split(":")[0] in ("cpu", "gpu") else "cpu",
        workers,
        batch_size,
        sample_bytes=sample_bytes(options),
    )
    if explore:
        from gluonbench.doctor.checks import DoctorSettings, check_cores

        checks = [check_cores(DoctorSettings(workers=0)) if c.name == "cores" else c for c in checks]
    return checks


def _image_folder(data_dir: str | None, options: dict[str, Any] | None) -> str | None:
    """The local folder a run reads its data from, where the settings name one."""
    for cand in (data_dir, (options or {}).get("uri")):
        if isinstance(cand, str) and "://" not in cand and os.path.isdir(cand):
            return cand
    return None


def _no_folder(settings: Any, folder: str | None) -> str:
    """Why no decode ceiling applies when the run names no local image folder ("" when it does)."""
    if folder:
        return ""
    if getattr(settings, "pipeline", None):
        return f"the local folder of {settings.identity()}'s data set is not known here"
    workload = settings.workload
    if str(workload) in ("mnist", "fashion-mnist", "synthetic"):
        return f"{workload}'s samples are not decoded images"
    return f"the data set's local folder is not known here: pass {arg('data_dir')}"


def _ceilings_for(folder: str | None, ctx: str | None) -> Any:
    from gluonbench.doctor.ceilings import cached_ceilings, measure_ceilings

    try:
        cached = cached_ceilings(folder)
        if cached is not None:
            return cached
        return measure_ceilings(folder, read=False)  # the disk's ceiling is doctor's (it writes a scratch file)
    except GluonbenchError:
        raise
    except Exception as exc:
        log.warning("could not measure this machine's ceilings: %s", exc)
        return None


def roofline_diagnosis(settings: DiagnoseSettings, d: Diagnosis) -> list[Any]:
    """Each stage of a diagnosis against this machine's ceilings (:mod:`gluonbench.doctor.roofline`)."""
    from gluonbench.doctor.roofline import for_diagnosis
    from gluonbench.engine.watchdog import sample_bytes

    folder = _image_folder(settings.data_dir, settings.options)
    return for_diagnosis(d, _ceilings_for(folder, settings.ctx), sample_bytes(settings.options))


def roofline_sweep(settings: SweepSettings | None, summary: Any) -> list[Any]:
    """The best worker count's throughput against the decode ceiling of the cores it used."""
    from gluonbench.doctor.checks import usable_cores
    from gluonbench.doctor.roofline import for_throughput

    rows = [r for r in getattr(summary, "rows", []) if r.workers == getattr(summary, "best_workers", None)]
    if settings is None or not rows:
        return []
    folder = _image_folder(settings.data_dir, settings.options)
    return for_throughput(
        rows[0].samples_per_s,
        rows[0].workers,
        usable_cores()[0],
        _ceilings_for(folder, settings.ctx) if folder else None,
        f"training at the best worker count ({rows[0].workers}):",
        _no_folder(settings, folder),
    )


def roofline_tune(settings: TuneSettings, result: Any) -> list[Any]:
    """The recommended setting's throughput against the decode ceiling of the cores it uses."""
    from gluonbench.doctor.roofline import for_throughput

    folder = _image_folder(settings.data_dir, settings.options)
    workers = int((result.setting or {}).get("num_workers", 0))
    return for_throughput(
        result.samples_per_s,
        workers,
        result.cores or 1,
        _ceilings_for(folder, settings.ctx) if folder else None,
        "the recommendation:",
        _no_folder(settings, folder),
    )


def check(
    pipeline: Any,
    *,
    baseline: str | Path | None = None,
    save: str | Path | None = None,
    max_slowdown: float | str = 0.05,
    budget_s: float = 60.0,
    json_path: str | Path | None = None,
    junit_path: str | Path | None = None,
    summary_path: str | Path | None = None,
    on_progress: Callable[[float, float], None] | None = None,
    **kwargs: Any,
) -> Any:
    """``gluonbench check``: save a baseline of ``pipeline`` (``save=``) or judge it against one (``baseline=``).

    See :func:`gluonbench.check.run_check` for ``pipeline`` and ``kwargs``. Checking also writes the
    result as JSON (``json_path``), JUnit XML (``junit_path``) and appends a Markdown summary to
    ``summary_path`` (``$GITHUB_STEP_SUMMARY``); those paths are checked before anything is measured.
    Returns the :class:`~gluonbench.check.CheckResult` (its ``exit_code``: 0 pass, 1 regression,
    3 inconclusive) or, when saving, the :class:`~gluonbench.check.Snapshot`.
    """
    from gluonbench.check import render, run_check
    from gluonbench.report.store import check_append_file, check_writable_file, refuse_overwriting_inputs, write_error

    outputs = {arg("json_path", "--json"): json_path, arg("junit_path", "--junit"): junit_path}
    if summary_path is not None:
        outputs["GITHUB_STEP_SUMMARY"] = summary_path
    refuse_overwriting_inputs(outputs, [p for p in (baseline, save) if p is not None])
    for what, path in outputs.items():
        if path is not None and what != "GITHUB_STEP_SUMMARY":
            check_writable_file(path, what)
    if summary_path is not None:
        check_append_file(summary_path, "GITHUB_STEP_SUMMARY")
    result = run_check(
        pipeline,
        baseline=baseline,
        save=save,
        max_slowdown=max_slowdown,
        budget_s=budget_s,
        on_progress=on_progress,
        **kwargs,
    )
    if save is not None:
        if json_path is not None:
            atomic_write_text(json_path, json.dumps(redact(result.to_dict()), indent=1) + "\n")
        return result
    if json_path is not None:
        atomic_write_text(json_path, json.dumps(redact(result.to_dict()), indent=1) + "\n")
    if junit_path is not None:
        atomic_write_text(junit_path, render.to_junit(result))
    if summary_path is not None:
        try:
            with open(summary_path, "a", encoding="utf-8") as f:
                f.write(render.to_markdown(result))
        except OSError as exc:
            raise write_error(summary_path, exc) from exc
    return result


def compare(
    run_a: str | Path,
    run_b: str | Path,
    *,
    markdown: str | Path | None = None,
    json_path: str | Path | None = None,
    html: str | Path | None = None,
    fail_on_slowdown: float | str | None = None,
    force: bool = False,
) -> Any:
    """``gluonbench compare``: diff two run folders of the same kind; write the requested exports.

    Results of different pipelines (factory or script, its options, its data) are refused unless ``force``.

    Returns a :class:`~gluonbench.check.compare.Comparison` (its ``exit_code``: 1 when a row is
    significantly slower by more than ``fail_on_slowdown``, else 0).
    """
    from gluonbench.check.compare import compare_runs, to_html, to_json, to_markdown
    from gluonbench.report.store import check_writable_file

    outputs = (
        (markdown, arg("markdown"), to_markdown),
        (json_path, arg("json_path", "--json"), to_json),
        (html, arg("html"), to_html),
    )
    from gluonbench.report.store import refuse_overwriting_inputs

    refuse_overwriting_inputs({what: path for path, what, _ in outputs}, [run_a, run_b])
    for path, what, _ in outputs:
        if path is not None:
            check_writable_file(path, what)
    cmp = compare_runs(run_a, run_b, fail_on_slowdown=fail_on_slowdown, force=force)
    for path, _, render in outputs:
        if path is not None:
            atomic_write_text(path, render(cmp))
    return cmp
