"""Shims that MXNet 1.9.1 needs on current stacks, applied without importing MXNet.

* numpy >= 1.24 removed the aliases ``np.bool``, ``np.int``, ``np.float``,
  ``np.complex``, ``np.object`` and ``np.str`` that MXNet's Python code uses;
  :func:`restore_numpy_aliases` puts them back (a no-op where numpy still has them).
* Python 3.12 removed ``distutils``, which MXNet imports for ``LooseVersion``;
  :func:`provide_distutils` registers setuptools' copy under the old name.

``import gluonbench`` calls :func:`apply` (cheap: numpy is imported, MXNet is not),
so a user's ``import gluonbench`` followed by ``from mxnet import gluon`` works;
:mod:`gluonbench._mx` calls it again before the one MXNet import.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings

from gluonbench.errors import GluonbenchError

NUMPY_ALIASES = {
    "bool": bool,
    "int": int,
    "float": float,
    "complex": complex,
    "object": object,
    "str": str,
}
"""The aliases numpy 1.24 removed, and the builtins they stood for."""

DISTUTILS_HINT = "MXNet needs distutils, which Python 3.12 removed: pip install setuptools"


def restore_numpy_aliases() -> None:
    """Give numpy back ``np.bool`` & co. where it removed them (numpy >= 1.24)."""
    import numpy as np

    for name, value in NUMPY_ALIASES.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                getattr(np, name)
            except AttributeError:
                setattr(np, name, value)


def provide_distutils() -> bool:
    """Make ``import distutils`` work where Python lacks it (3.12); True if it should now import.

    Installs setuptools' own import redirect (``_distutils_hack``) unless it is in place already;
    imports neither distutils nor setuptools, so it is cheap.
    """
    if "distutils" in sys.modules or any(type(f).__name__ == "DistutilsMetaFinder" for f in sys.meta_path):
        return True
    if sys.version_info < (3, 12) and _findable("distutils"):  # the standard library's own
        return True
    try:
        hack = importlib.import_module("_distutils_hack")
        sys.meta_path.insert(0, hack.DistutilsMetaFinder())
    except (ModuleNotFoundError, AttributeError):  # pragma: no cover - depends on the interpreter
        return False
    return True


def _findable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def require_distutils() -> None:
    """:func:`provide_distutils`, and import ``distutils.version``; raise a one-line fix where impossible."""
    provide_distutils()
    try:
        importlib.import_module("distutils.version")
    except ModuleNotFoundError as exc:  # pragma: no cover - depends on the interpreter
        raise GluonbenchError(DISTUTILS_HINT) from exc


def apply() -> None:
    """Both shims, cheaply: nothing here imports MXNet or distutils itself."""
    restore_numpy_aliases()
    provide_distutils()
