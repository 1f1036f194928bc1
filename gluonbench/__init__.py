"""gluonbench: why Gluon/MXNet training is slow, and how to make the data pipeline keep up."""

from __future__ import annotations

from gluonbench import compat as _compat
from gluonbench import settings as _settings  # noqa: F401  the declared settings' flags, for every message
from gluonbench.version import __version__

__all__ = [
    "KNOBS",
    "DiagnoseSettings",
    "Diagnosis",
    "IoSettings",
    "PipelineSpec",
    "SweepSettings",
    "Thresholds",
    "TuneSettings",
    "__version__",
    "build_pipeline",
    "diagnose",
    "io_benchmark",
    "load_spec",
    "profile",
    "run_diagnosis",
    "run_once",
    "sweep",
    "tune",
]

# MXNet 1.9.1 needs numpy's removed aliases and (Python 3.12) distutils: applied here without
# importing MXNet, so a user's `import gluonbench` then `from mxnet import gluon` works
_compat.apply()


_LAZY = {
    # name: module that defines it (imported on first use; none of these import MXNet at import time)
    "PipelineSpec": "gluonbench.workloads.spec",
    "load_spec": "gluonbench.workloads.spec",
    "build_pipeline": "gluonbench.pipeline.build",
    "KNOBS": "gluonbench.knobs",
    "SweepSettings": "gluonbench.config",
    "DiagnoseSettings": "gluonbench.config",
    "TuneSettings": "gluonbench.config",
    "IoSettings": "gluonbench.config",
    # the diagnosis's thresholds (DiagnoseSettings.thresholds, diagnose(thresholds=...))
    "Thresholds": "gluonbench.diagnosis.verdict",
}


def __getattr__(name: str):
    # the API imports MXNet; keep `import gluonbench` (and the CLI's argument errors) fast
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in ("sweep", "run_once", "diagnose", "run_diagnosis", "Diagnosis", "io_benchmark"):
        from gluonbench import api

        return getattr(api, name)
    if name == "profile":  # the profiler never imports MXNet
        from gluonbench.profiler.session import profile

        return profile
    if name == "tune":
        # the package gluonbench.tune is callable: gluonbench.tune(dataset, ...) runs the tuner
        import gluonbench.tune as tune

        return tune
    raise AttributeError(f"module 'gluonbench' has no attribute {name!r}")
