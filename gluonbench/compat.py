"""Shims that MXNet 1.9.1 needs on current stacks, applied without importing MXNet.

* numpy >= 1.24 removed the aliases ``np.bool``, ``np.int``, ``np.float``,
  ``np.complex``, ``np.object`` and ``np.str`` that MXNet's Python code uses;
  :func:`restore_numpy_aliases` puts them back (a no-op where numpy still has them).
* Python 3.12 removed ``distutils``, which MXNet imports for ``LooseVersion``;
  :func:`provide_distutils` registers setuptools' copy under the old name.

Two more make the MXNet import about 30 % cheaper in CPU (every sweep run and probe is a process that imports it):
:func:`require_distutils` takes the standard library's ``distutils`` where there is one, and :func:`defer` leaves
``scipy.stats``, which MXNet imports and nothing here uses, unloaded until something reads from it.

``import gluonbench`` calls :func:`apply` (cheap: numpy is imported, MXNet is not),
so a user's ``import gluonbench`` followed by ``from mxnet import gluon`` works;
:mod:`gluonbench._mx` calls it again before the one MXNet import.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import types
import warnings
from typing import Any

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
    """:func:`provide_distutils`, and import ``distutils.version``; raise a one-line fix where impossible.

    Where the standard library still has ``distutils`` (Python < 3.12), that one is imported, not the copy that
    setuptools' import redirect would load: the redirect imports setuptools itself first, about 0.4 s of CPU in
    every process that imports MXNet (each sweep run, each probe), for one ``LooseVersion``.
    """
    if "distutils" not in sys.modules and sys.version_info < (3, 12) and _findable_in_stdlib("distutils"):
        redirects = [f for f in sys.meta_path if type(f).__name__ == "DistutilsMetaFinder"]
        try:
            for finder in redirects:
                sys.meta_path.remove(finder)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # "distutils ... slated for removal in 3.12"
                importlib.import_module("distutils.version")
        except ImportError:
            pass  # the redirect's copy, below
        finally:
            for finder in reversed(redirects):
                if finder not in sys.meta_path:
                    sys.meta_path.insert(0, finder)
    provide_distutils()
    try:
        importlib.import_module("distutils.version")
    except ModuleNotFoundError as exc:  # pragma: no cover - depends on the interpreter
        raise GluonbenchError(DISTUTILS_HINT) from exc


def _findable_in_stdlib(name: str) -> bool:
    """Whether the standard library itself has module ``name`` (not a redirect installed on ``sys.meta_path``)."""
    import sysconfig

    return os.path.exists(os.path.join(sysconfig.get_paths()["stdlib"], name, "__init__.py"))


DEFERRED = ("scipy.stats",)
"""modules MXNet imports at start-up and gluonbench never uses (MXNet's quantization and test helpers do):
:func:`defer` leaves each unloaded until something reads from it, about 0.5 s of CPU less per MXNet import"""


class _Deferred(types.ModuleType):
    """A module left unloaded: the first name read from it loads the real one (:func:`defer`)."""

    def __getattr__(self, attr: str) -> Any:
        return getattr(_load_deferred(self), attr)


_DEFER_LOCK = threading.RLock()


def _load_deferred(stub: _Deferred) -> types.ModuleType:
    """The real module behind ``stub``, imported now (once); ``stub`` takes its names, so that every holder of the
    stub (``from scipy import stats`` in MXNet) reads the real module's."""
    name = stub.__name__
    with _DEFER_LOCK:
        if sys.modules.get(name) is stub:
            del sys.modules[name]
            try:
                real = importlib.import_module(name)
            except BaseException:
                sys.modules.setdefault(name, stub)  # the next read tries again, and raises the same error
                raise
            stub.__dict__.update(real.__dict__)
            _bind(name, real)
        return sys.modules[name]


def _bind(name: str, module: types.ModuleType) -> None:
    """``module`` as its parent package's attribute (``scipy.stats``), as an import leaves it."""
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, module)


def defer(names: tuple[str, ...] = DEFERRED) -> None:
    """Put a stub in ``sys.modules`` for each of ``names`` that is installed and not imported yet: ``import`` of
    it finds the stub, and the first name read from it imports the real module (a user's ``scipy.stats.norm``
    works as ever). Finding the module imports its parent package only (``scipy``, cheap)."""
    for name in names:
        if name in sys.modules:
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        stub = _Deferred(name)
        stub.__spec__ = spec
        stub.__loader__ = spec.loader
        stub.__file__ = spec.origin  # read by tools that walk sys.modules: not a reason to load it
        stub.__package__ = name if spec.submodule_search_locations is not None else name.rpartition(".")[0]
        sys.modules[name] = stub
        _bind(name, stub)


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
