"""The one place gluonbench imports MXNet.

MXNet 1.9.1 is retired upstream and needs two shims on current stacks:

* numpy >= 1.24 removed the aliases ``np.bool``, ``np.int``, ``np.float``,
  ``np.complex``, ``np.object`` and ``np.str`` that MXNet's Python code uses;
* Python 3.12 removed ``distutils``, which MXNet imports for ``LooseVersion``;
  setuptools ships a copy that we register under the old name.

Every other module does ``from gluonbench._mx import mx, nd, gluon, autograd``.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import numpy as np

from gluonbench.errors import GluonbenchError

_NUMPY_ALIASES = {
    "bool": bool,
    "int": int,
    "float": float,
    "complex": complex,
    "object": object,
    "str": str,
}


def _shim_numpy() -> None:
    for name, value in _NUMPY_ALIASES.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                getattr(np, name)
            except AttributeError:
                setattr(np, name, value)


def _shim_distutils() -> None:
    try:
        importlib.import_module("distutils.version")
        return
    except ModuleNotFoundError:
        pass
    try:
        # setuptools' own redirect of `distutils` to its vendored copy
        hack = importlib.import_module("_distutils_hack")
        sys.meta_path.insert(0, hack.DistutilsMetaFinder())
        importlib.import_module("distutils.version")
    except (ModuleNotFoundError, AttributeError) as exc:  # pragma: no cover - depends on the interpreter
        raise GluonbenchError("MXNet needs distutils, which Python 3.12 removed: pip install setuptools") from exc


_shim_numpy()
_shim_distutils()

try:
    import mxnet as mx
    from mxnet import autograd, gluon, nd
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise GluonbenchError(
        f"cannot import mxnet ({exc}): pip install 'mxnet==1.9.1' 'numpy<1.27' "
        "(GPU: mxnet-cu112 or another mxnet-cu1xx wheel instead of mxnet)"
    ) from exc

__all__ = ["autograd", "gluon", "mx", "nd", "num_gpus"]


def num_gpus() -> int:
    """GPUs visible to MXNet; 0 on the CPU wheel or without a driver."""
    try:
        return int(mx.context.num_gpus())
    except Exception:
        return 0
