"""One run = one loader setting: train (timed per step), evaluate, record.

:func:`train_and_eval` runs in the current process; :func:`gluonbench.sweeprun.child.run_isolated` runs it in a
child process with a timeout (through :mod:`gluonbench.engine.isolation`). Both return a :class:`RunResult`.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from time import perf_counter
from typing import Any

import numpy as np

from gluonbench.engine.child import ProgressFile
from gluonbench.engine.measure import Epochs, measure
from gluonbench.engine.watchdog import StallWatchdog
from gluonbench.env import utc_now
from gluonbench.errors import GluonbenchError
from gluonbench.knobs import knob_default
from gluonbench.monitor import SystemMonitor
from gluonbench.pipeline.scale import ScaleOut
from gluonbench.pipeline.stages import EvalStep
from gluonbench.settings import declared
from gluonbench.units import count

log = logging.getLogger(__name__)

FAULT_ENV = "GLUONBENCH_INJECT_FAULT"


@dataclass(frozen=True)
class RunSetting:
    """The settings a sweep and each of its runs share, declared once: :class:`RunSpec` (one run) and
    :class:`gluonbench.config.SweepSettings` (a sweep of them) both derive from it; the loader knobs' defaults
    come from :data:`gluonbench.knobs.KNOBS`."""

    workload: str = declared("workload")
    data_dir: str | None = declared("data_dir")
    eval_workers: int | None = declared("eval_workers")
    batch_size: int = knob_default("batch_size")
    epochs: int = declared("epochs")
    max_batches: int | None = declared("max_batches")
    ctx: str = declared("ctx", "cpu")
    thread_pool: bool = knob_default("thread_pool")
    seed: int = declared("seed")
    download: bool = declared("download")
    diagnose: bool = declared("diagnose")
    """after training, diagnose the bottleneck at this setting; verdict and shares go to ``RunResult.extra``"""
    diagnose_budget_s: float = declared("diagnose_budget_s")
    options: dict[str, Any] = field(default_factory=dict)
    """Keyword options for the workload factory (e.g. a synthetic workload's knobs, a source)."""
    # scale-out (gluonbench.distributed): data-parallel contexts, kvstore, distributed job size
    devices: int = 1
    kvstore: str | None = declared("kvstore")
    servers: int = 1
    diagnose_rank: int = 0
    """with a dist kvstore and ``diagnose``: the worker rank that diagnoses its pipeline after training"""
    prefetch: int | None = knob_default("prefetch")
    """DataLoader(prefetch=...): batches prepared ahead (None: MXNet's 2 x workers)"""
    pin_memory: bool = knob_default("pin_memory")
    """DataLoader(pin_memory=True): page-locked batches (matters only with a GPU context)"""
    emulate_step_ms: float | str | None = None
    """swap the model step for a timed wait of this many ms per batch (DLIO's emulated compute), or a named
    target such as ``resnet50@v100`` (see :mod:`gluonbench.pipeline.emulate`)"""


@dataclass(frozen=True)
class RunSpec(RunSetting):
    """Everything that defines one run: the shared :class:`RunSetting` at one worker count, one repeat;
    JSON-serialisable so a child process can receive it."""

    workers: int = knob_default("num_workers")
    repeat: int = 0
    monitor_interval: float = 0.5
    gpus: list[int] | None = None
    hosts: int = 1

    @property
    def key(self) -> tuple[int, int]:
        """Identity of a run inside a sweep: (workers, repeat)."""
        return (self.workers, self.repeat)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class RunResult:
    """What one run measured. ``status`` is ``ok``, ``failed`` or ``timeout``."""

    spec: dict[str, Any]
    status: str = "ok"
    error: str | None = None
    train_s: float = 0.0
    eval_s: float = 0.0
    accuracy: float = float("nan")
    train_samples: int = 0
    eval_samples: int = 0
    samples_per_s: float = 0.0
    loader_start_s: float = 0.0
    first_batch_s: float = 0.0
    steady: dict[str, Any] = field(default_factory=dict)
    system: dict[str, Any] = field(default_factory=dict)
    started_utc: str = ""
    finished_utc: str = ""
    wall_s: float = 0.0
    env: dict[str, Any] = field(default_factory=dict)
    command: str = ""
    kind: str = "run"
    extra: dict[str, Any] = field(default_factory=dict)
    """Further findings about the run, e.g. ``verdict``, ``shares``, ``diagnosis`` from ``--diagnose``."""
    source: dict[str, Any] = field(default_factory=dict)
    """The input source's start-up (mode, timings, bytes copied, disk used), when the workload has one."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def workload_pipeline(workload: Any, spec: RunSpec, ctx: Any, step: Any = None, batch_size: int | None = None) -> Any:
    """The training pipeline of ``workload`` (a :class:`~gluonbench.PipelineSpec`) at ``spec``'s
    loader setting (:func:`gluonbench.pipeline.build_pipeline`).

    ``batch_size`` overrides the spec's for the loader (data parallel: per device times devices).
    """
    from gluonbench.pipeline import build_pipeline

    size = spec.batch_size if batch_size is None else batch_size
    if spec.emulate_step_ms is not None:
        from gluonbench.pipeline.emulate import emulated_step

        step = emulated_step(spec.emulate_step_ms, size)
    return build_pipeline(
        workload,
        ctx=ctx,
        step=step,
        batch_size=size,
        num_workers=spec.workers,
        thread_pool=spec.thread_pool,
        prefetch=spec.prefetch,
        pin_memory=spec.pin_memory,
    )


def _maybe_inject_fault(spec: RunSpec, phase: str) -> None:
    """Test hook: ``GLUONBENCH_INJECT_FAULT=crash@2`` aborts the run with 2 workers.

    Formats: ``crash@W`` (SIGABRT after the first step, workers alive),
    ``hang@W`` (sleeps forever after the first step), ``raise@W``; several, comma-separated
    (``crash@2,hang@1``), each for its own worker count.
    """
    faults = os.environ.get(FAULT_ENV, "")
    if not faults or phase != "after_first_step":
        return
    for fault in faults.split(","):
        kind, _, workers = fault.strip().partition("@")
        if not workers or int(workers) == spec.workers:
            _inject(kind, fault)
            return


def _inject(kind: str, fault: str) -> None:
    """Do one fault of :func:`_maybe_inject_fault`."""
    if kind == "crash":
        os.abort()
    if kind == "hang":
        import time

        while True:
            time.sleep(3600)
    if kind == "raise":
        raise RuntimeError(f"injected fault ({FAULT_ENV}={fault})")


DiagnoseRun = Callable[["RunSpec", Any, Any], dict[str, Any]]
"""``diagnose(spec, workload, ctx) -> extra``: the diagnosis a spec with ``diagnose`` asks for after training
(:func:`gluonbench.diagnosis.sweep.diagnose_run`). The caller passes it in: the sweep run sits below the diagnosis."""


def train_and_eval(
    spec: RunSpec, workload: Any = None, observe: Any = None, diagnose: DiagnoseRun | None = None
) -> RunResult:
    """Train and evaluate in this process; the seed's loop with per-step timing.

    ``workload`` defaults to the registered workload named by ``spec.workload``. ``observe`` (optional)
    wraps each training epoch's batches, e.g. the profiler's step marks (``gluonbench profile --pipeline``).
    ``diagnose`` runs after training when ``spec.diagnose`` asks for it (required then).
    """
    from gluonbench.contexts import parse_ctx
    from gluonbench.workloads import get_workload

    if spec.diagnose and diagnose is None:
        raise GluonbenchError(
            "spec.diagnose asks for a diagnosis after training but no diagnose= was given; pass "
            "diagnose=gluonbench.diagnosis.sweep.diagnose_run"
        )
    ctx = parse_ctx(spec.ctx)  # before the workload: a source it opens is closed only in the finally below
    # before the workload too: a dist_* kvstore tells this worker its rank, which a pipe channel is sharded by
    scale = ScaleOut.for_spec(spec, ctx)  # plain single-device unless devices/gpus/kvstore ask for more
    try:
        if workload is not None:
            return _train_and_eval(spec, workload, ctx, scale, observe, diagnose)
        options = {**spec.options, **scale.workload_options(spec.options)}
        workload = get_workload(spec.workload, data_dir=spec.data_dir, download=spec.download, **options)
        try:
            return _train_and_eval(spec, workload, ctx, scale, observe, diagnose)
        finally:
            # after training *and* the optional diagnosis, which still reads through the source
            if workload.close is not None:
                workload.close()
    finally:
        scale.close()


def _train_and_eval(
    spec: RunSpec, workload: Any, ctx: Any, scale: ScaleOut, observe: Any = None, diagnose: DiagnoseRun | None = None
) -> RunResult:
    from gluonbench._mx import mx
    from gluonbench.env import environment

    result = RunResult(spec=spec.to_dict(), started_utc=utc_now(), env=environment())
    t_run = perf_counter()
    mx.random.seed(spec.seed)
    # the seed seeds MXNet only; the loader's shuffle draws from numpy, seeded too for repeatability
    np.random.seed(spec.seed)
    eval_workers = spec.workers if spec.eval_workers is None else spec.eval_workers
    monitor = SystemMonitor(interval=spec.monitor_interval).start()
    test: Any = None
    dog: StallWatchdog | None = None
    try:
        net = workload.make_net()
        init = workload.initializer()
        # one device: the seed's step; several devices or a kvstore: the data-parallel step (pipeline/scale.py)
        step = scale.make_step(net, init, workload.make_loss, workload.learning_rate)
        pipeline = workload_pipeline(
            workload, spec, scale.loop_ctx, step, batch_size=scale.loader_batch(spec.batch_size)
        )
        if pipeline.dataset is not None:
            pipeline = replace(pipeline, dataset=scale.shard(pipeline.dataset))  # this worker's shard
        else:
            scale.check_stream(workload.info)  # a stream was sharded at its source (workload_options)
        t0 = perf_counter()
        if workload.test_dataset is not None:
            # the seed builds both loaders up front; the test loader does not shuffle
            # the evaluation pass is the same pipeline: the test set read, no shuffle, the step swapped for
            # the accuracy step on the evaluation context; run by measure() like the training
            evaluation = EvalStep(net)
            test = (
                replace(pipeline, dataset=workload.test_dataset, ctx=scale.eval_ctx, step=evaluation)
                .with_loader(shuffle=False, num_workers=eval_workers, batch_size=spec.batch_size)
                .open()
            )
        report = ProgressFile()

        def after_step(done: int) -> None:
            if done == 1:
                _maybe_inject_fault(spec, "after_first_step")
            report(done)

        train_start = perf_counter()
        # a stalled loader (e.g. /dev/shm too small for the workers) fails the run in seconds
        dog = StallWatchdog(spec.workers, spec.thread_pool).start()
        watch = dog.watch if workload.batches is None else None
        if observe is not None:
            watch = observe if watch is None else (lambda batches, w=watch: observe(w(batches)))
        schedule = Epochs(spec.epochs, spec.max_batches, on_step=after_step, wrap=watch)
        record = measure(pipeline, schedule, on_open=lambda: monitor.sample()).records["run"]
        times = record.times
        # the train loader starts inside measure(): its start-up counts as loader start, not training
        result.loader_start_s = record.open_s + (train_start - t0)
        train_start += record.open_s
        eval_start = perf_counter()
        report(len(times), force=True)
        accuracy, eval_samples = float("nan"), 0
        if test is not None:
            measure(test, Epochs(1, spec.max_batches, wrap=dog.watch))
            accuracy, eval_samples = evaluation.accuracy, evaluation.seen
        eval_end = perf_counter()
        if not scale.plain:
            result.extra.update(scale.finish(times, net))
        else:
            result.extra.update(scale.notes())
        monitor.sample()  # workers still alive: their memory at the end of the run
    finally:
        if dog is not None:
            dog.stop()
        if test is not None:
            test.close()
        system = monitor.stop()

    result.train_s = eval_start - train_start
    result.eval_s = eval_end - eval_start
    result.accuracy = accuracy
    result.train_samples = sum(times.samples)
    result.eval_samples = eval_samples
    result.samples_per_s = result.train_samples / result.train_s if result.train_s > 0 else 0.0
    result.first_batch_s = times.wait[0] if len(times) else 0.0
    result.steady = times.split(skip=1).to_dict()
    result.system = system.to_dict()
    result.source = dict(workload.info)
    if spec.emulate_step_ms is not None and len(times):
        from gluonbench.pipeline.emulate import utilisation

        steady = times.split(skip=1 if len(times) > 1 else 0)  # the first step (loader start-up) left out
        au = utilisation(spec.emulate_step_ms, spec.batch_size, steady.samples, steady.total_s)
        result.extra["emulated"] = au.to_dict()
    if len(times) == 0:
        raise GluonbenchError("the training loader yielded no batch; is the data set empty?")
    if diagnose is not None and spec.diagnose and scale.diagnoses(spec):
        # a failed diagnosis does not void the run's measurements: it is recorded beside them
        if not scale.plain:
            # G10: the probes run one device's pipeline; say so beside the verdict
            result.extra["diagnosis_scope"] = scale.diagnosis_scope(ctx)
        try:
            result.extra.update(diagnose(spec, workload, ctx))
        except Exception as exc:
            log.exception("diagnosis at %d workers failed", spec.workers)
            result.extra["diagnose_error"] = f"{type(exc).__name__}: {exc}"[:500]
    result.finished_utc = utc_now()
    result.wall_s = perf_counter() - t_run
    return result


def train_or_fail(spec: RunSpec, diagnose: DiagnoseRun | None = None) -> tuple[RunResult, int]:
    """:func:`train_and_eval` in a child process: the result and exit code 0, or a failed result
    (the traceback printed to the run's log) and exit code 1."""
    import traceback

    try:
        return train_and_eval(spec, diagnose=diagnose), 0
    except BaseException as exc:
        from gluonbench.engine.deadline import PipelineFaultError
        from gluonbench.engine.watchdog import shm_full_message

        traceback.print_exc()
        # a full /dev/shm, not a reset connection; the user's code failing mid-run: its one line (stage and fix)
        why = shm_full_message(exc) or (
            str(exc) if isinstance(exc, PipelineFaultError) else f"{type(exc).__name__}: {exc}"
        )
        failed = RunResult(spec=spec.to_dict(), status="failed", error=why[:500], finished_utc=utc_now())
        return failed, 1


def seed_line(result: RunResult) -> str:
    """The seed's output line for one run."""
    w = count(result.spec["workers"], "worker")
    if not result.ok:
        return f"{w}: {result.status} ({result.error})"
    accuracy = result.accuracy  # none without a test set: not printed
    return f"{w}: train duration {result.train_s:.4}, eval duration {result.eval_s:.4}" + (
        f", test accuracy {accuracy:.2}" if isinstance(accuracy, int | float) and math.isfinite(accuracy) else ""
    )
