"""``gluonbench tune``: the cheapest DataLoader setting that keeps the model fed, in a fraction of a sweep.

* :mod:`gluonbench.tune.model`: the loader's throughput model and the search logic (pure);
* :mod:`gluonbench.tune.search`: :func:`tune`, :func:`tune_workload` and :func:`head_to_head` (two
  settings confirmed against each other), which measure through
  :func:`gluonbench.engine.measure.measure`;
* :mod:`gluonbench.tune.result`: :class:`TuneResult` (text, JSON, ``tuned.toml``);
* :mod:`gluonbench.pipeline.emulate`: emulated compute (DLIO's method) and accelerator utilisation.
"""

from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["HeadToHead", "TuneResult", "head_to_head", "tune", "tune_workload"]


def __getattr__(name: str) -> Any:
    # the search imports MXNet; the model and emulation modules stay importable without it
    if name in ("tune", "tune_workload", "head_to_head", "HeadToHead"):
        from gluonbench.tune import search

        return getattr(search, name)
    if name == "TuneResult":
        from gluonbench.tune.result import TuneResult

        return TuneResult
    raise AttributeError(f"module 'gluonbench.tune' has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """``gluonbench.tune(...)`` calls :func:`gluonbench.tune.search.tune`, though ``gluonbench.tune`` is this package."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from gluonbench.tune.search import tune

        return tune(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
