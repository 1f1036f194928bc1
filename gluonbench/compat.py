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
import os
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


SCIPY_FOR_NUMPY_1 = "scipy<1.16"
"""the newest scipy line that still takes numpy 1.x (1.15: numpy >= 1.23.5, < 2.5), which MXNet 1.9.1 needs"""


def mxnet_import_hint(exc: BaseException) -> str:
    """One line naming why ``import mxnet`` failed and the fix.

    MXNet imports scipy when it finds one; a scipy built for numpy 2 fails inside that import under the
    numpy 1.x that MXNet needs (seen on a GPU machine whose image has scipy 1.18: "module 'numpy' has no
    attribute 'long'"), which no pin of mxnet or numpy fixes.
    """
    import traceback

    import numpy as np

    files = [frame.filename for frame in traceback.extract_tb(exc.__traceback__)]
    in_scipy = any(f"{os.sep}scipy{os.sep}" in f for f in files)
    if in_scipy and int(np.__version__.split(".")[0]) < 2:
        try:
            from importlib.metadata import version

            scipy = f"scipy {version('scipy')}"
        except Exception:
            scipy = "the installed scipy"
        return (
            f"cannot import mxnet: MXNet imports scipy, and {scipy} needs numpy >= 2, which MXNet 1.9.1 cannot "
            f"use (numpy {np.__version__} here; {type(exc).__name__}: {exc}): pip install '{SCIPY_FOR_NUMPY_1}', "
            "or install gluonbench in a fresh virtual environment"
        )
    return (
        f"cannot import mxnet ({type(exc).__name__}: {exc}): pip install 'mxnet==1.9.1' 'numpy<1.27' "
        "(GPU: mxnet-cu112 or another mxnet-cu1xx wheel instead of mxnet)"
    )
