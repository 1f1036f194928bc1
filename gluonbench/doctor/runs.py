"""A command's result against this machine's ceilings (:mod:`gluonbench.doctor.roofline`): each stage of a
diagnosis, the best worker count of a sweep, tune's recommendation; the ceilings cached or measured once."""

from __future__ import annotations

import logging
import os
from typing import Any

from gluonbench.config import DiagnoseSettings, SweepSettings, TuneSettings
from gluonbench.diagnosis.run import Diagnosis
from gluonbench.errors import GluonbenchError
from gluonbench.names import arg

log = logging.getLogger(__name__)


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
