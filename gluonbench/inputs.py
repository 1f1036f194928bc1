"""The checks a command makes of its inputs before it measures: the context, the data set, a ``--pipeline``
factory (called once, its spec kept for the command), ``/dev/shm`` for the loader's workers, and the rest of what
can be checked before a command's first line (:func:`check_before_start`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gluonbench.config import SweepSettings, resolve_batch_size
from gluonbench.errors import DataError, GluonbenchError
from gluonbench.names import arg
from gluonbench.outdir import check_out, make_out, probe_mkdir
from gluonbench.report.store import check_free_space
from gluonbench.workloads.spec import check_pipeline, take_spec


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
        probe_mkdir(check_out(work_dir, "work_dir"), "work_dir")
    if out is not None and create:
        make_out(out)
    elif out is not None:
        from gluonbench.report.store import RESERVE_PER_RECORD

        check_free_space(check_out(out), arg("out"), need=RESERVE_PER_RECORD)  # room for one run's record
