"""The one place gluonbench imports MXNet.

MXNet 1.9.1 is retired upstream and needs two shims on current stacks (numpy's
removed aliases, Python 3.12's removed ``distutils``); they live in
:mod:`gluonbench.compat`, which ``import gluonbench`` applies too, and are applied
again here right before the import.

Every other module does ``from gluonbench._mx import mx, nd, gluon, autograd``.
"""

from __future__ import annotations

from gluonbench import compat, mxops
from gluonbench.errors import GluonbenchError

compat.restore_numpy_aliases()
compat.require_distutils()
compat.defer()  # scipy.stats: imported by MXNet, used by neither it nor gluonbench here
mxops.install()  # MXNet's operator functions kept compiled between processes (GLUONBENCH_MXNET_CACHE)

try:
    import mxnet as mx
    from mxnet import autograd, gluon, nd
except Exception as exc:  # pragma: no cover - depends on the environment
    mxops.finish(keep=False)  # a half-made set of functions is not kept
    # not only ImportError: a dependency MXNet imports can fail in any way (a scipy for numpy 2: AttributeError)
    raise GluonbenchError(compat.mxnet_import_hint(exc)) from exc
mxops.finish()

__all__ = ["autograd", "gluon", "mx", "nd", "num_gpus"]


def num_gpus() -> int:
    """GPUs visible to MXNet; 0 on the CPU wheel or without a driver."""
    try:
        return int(mx.context.num_gpus())
    except Exception:
        return 0
