"""gluonbench: why Gluon/MXNet training is slow, and how to make the data pipeline keep up."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Diagnosis", "__version__", "diagnose", "io_benchmark", "run_once", "sweep", "tune"]


def __getattr__(name: str):
    # the API imports MXNet; keep `import gluonbench` (and the CLI's argument errors) fast
    if name in ("sweep", "run_once", "diagnose", "Diagnosis", "io_benchmark"):
        from gluonbench import api

        return getattr(api, name)
    if name == "tune":
        # the package gluonbench.tune is callable: gluonbench.tune(dataset, ...) runs the tuner
        import gluonbench.tune as tune

        return tune
    raise AttributeError(f"module 'gluonbench' has no attribute {name!r}")
