"""MXNet's operator functions, kept compiled between processes: an MXNet import at about half the CPU.

At each import MXNet 1.9 asks its library about each of its operators, writes a Python function for each
(``ndarray`` and ``symbol``, plus the numpy namespaces: about 2,500) and compiles them: about half of the import's
CPU time, paid again by every process gluonbench starts (each command, sweep run, probe and node). What MXNet
generates depends only on its library, so the functions can be kept: each one's code object (the operator's
handle, an address in this process, replaced by a placeholder), its defaults and its docstring, in one
``marshal`` file whose header names the Python and the MXNet library it was made with. A function rebuilt from
the file is the one MXNet makes: the same code, constants, defaults, names, docstring and globals.

The file is ``$GLUONBENCH_CACHE/mxnet-ops-TAG.marshal`` (:func:`gluonbench.env.cache_folder`; TAG is the
interpreter's, such as ``cpython-311``), or the file ``GLUONBENCH_MXNET_CACHE`` names; ``GLUONBENCH_MXNET_CACHE=off``
turns it off. It is read when its header matches and written (atomically, about 7 MB) by an import that found
none to use; a folder that cannot be written costs nothing but the saving. A run's child processes are handed the
file (:func:`handover`): where there is none to hand, one in the run's own temporary folder written from what the
parent's import made, removed with the run. A function whose shape is not the one this module knows (a closure,
keyword-only defaults, a default other than ``None`` or MXNet's ``_Null``) is left to MXNet.

Used by :mod:`gluonbench._mx` only: :func:`install` before ``import mxnet``, :func:`finish` after.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import logging
import marshal
import os
import stat
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.files import MXNET_CACHE_ENV, atomic_write_bytes, cache_folder

log = logging.getLogger(__name__)

CACHE_ENV = MXNET_CACHE_ENV
"""the file of compiled operator functions a process reads (or writes when it has none to use); ``off``: none"""

FORMAT = 1
"""the cache file's layout; a file of another one is ignored"""

_PLACEHOLDER = 0x5EED_0F_0BE4A7_0B
"""stands for the operator's handle in a kept code object (the handle is an address, other in each process)"""

Entry = tuple[types.CodeType, tuple[int, ...], str | None]
"""a kept function: its code (handle replaced), its defaults (0: None, 1: MXNet's _Null) and its docstring"""

_lock = threading.Lock()
_kept: dict[tuple[str, str, str], Entry] = {}
"""what this process's import used or made, by (maker's module, operator, function name)"""
_state: dict[str, Any] = {
    "read": 0,
    "reused": 0,
    "made": 0,
    "header": None,
    "from_file": False,
    "loaded": False,
    "path": None,
}


def cache_path() -> Path | None:
    """The file this process reads and writes: ``GLUONBENCH_MXNET_CACHE``, else
    ``$GLUONBENCH_CACHE/mxnet-ops-TAG.marshal``; None when turned off."""
    named = os.environ.get(CACHE_ENV, "")
    if named == "off":
        return None
    if named:
        return Path(named)
    return cache_folder() / f"mxnet-ops-{sys.implementation.cache_tag or 'python'}.marshal"


def _header() -> tuple[Any, ...] | None:
    """What a kept file must have been made with: this Python's bytecode and the MXNet library it describes."""
    spec = importlib.util.find_spec("mxnet")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    lib = folder / "libmxnet.so"
    try:
        st = lib.stat()
    except OSError:
        return None
    return (FORMAT, importlib.util.MAGIC_NUMBER, str(lib.resolve()), st.st_size, st.st_mtime_ns)


def _load(path: Path, header: tuple[Any, ...]) -> None:
    """Read the kept functions from ``path`` when it is a regular file of this user's that nobody else can write
    (its code runs in this process: a file someone else could have changed is not used) and its header matches."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            log.debug("%s is not a private file of this user's; not used", path)
            return
        with os.fdopen(os.dup(fd), "rb") as f:
            data = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return
    finally:
        os.close(fd)
    if not (isinstance(data, tuple) and len(data) == 2 and data[0] == header and isinstance(data[1], dict)):
        log.debug("%s was made for another Python or MXNet; not used", path)
        return
    _kept.update(data[1])
    _state["loaded"] = _state["from_file"] = True


def _swap(code: types.CodeType, old: int, new: int) -> types.CodeType:
    """``code`` with the constant ``old`` replaced by ``new``, nested code objects included."""
    consts = tuple(
        new if type(c) is int and c == old else _swap(c, old, new) if isinstance(c, types.CodeType) else c
        for c in code.co_consts
    )
    return code.replace(co_consts=consts)


def _keep(fn: Callable[..., Any], handle: int, null: object) -> Entry | None:
    """``fn`` as an entry, or None when its shape is not one :func:`_make` rebuilds exactly."""
    if fn.__closure__ or fn.__kwdefaults__ or getattr(fn, "__dict__", None):
        return None
    defaults = []
    for d in fn.__defaults__ or ():
        if d is None:
            defaults.append(0)
        elif d is null:
            defaults.append(1)
        else:
            return None
    return _swap(fn.__code__, handle, _PLACEHOLDER), tuple(defaults), fn.__doc__


def _make(entry: Entry, handle: int, func_name: str, module: str, globs: dict[str, Any], null: object):
    code, defaults, doc = entry
    fn = types.FunctionType(
        _swap(code, _PLACEHOLDER, handle), globs, func_name, tuple(null if d else None for d in defaults) or None
    )
    fn.__doc__ = doc
    fn.__module__ = module
    return fn


def _caching(make_op_func: Callable[..., Any], null: object) -> Callable[..., Any]:
    """``make_op_func`` (MXNet's ``_make_ndarray_function`` or ``_make_symbol_function``) that builds a kept
    function from its entry, and keeps what it makes."""
    maker = make_op_func.__module__

    def make(hdl: Any, name: str, func_name: str) -> Any:
        key = (maker, name, func_name)
        entry = _kept.get(key)
        if entry is not None and hdl.value is not None:
            _state["read" if _state["from_file"] else "reused"] += 1  # reused: an operator registered twice
            probe = make_op_func.__globals__
            return _make(entry, hdl.value, func_name, "mxnet." + maker.split(".")[1], probe, null)
        fn = make_op_func(hdl, name, func_name)
        if hdl.value is not None:
            made = _keep(fn, hdl.value, null)
            if made is not None:
                with _lock:
                    _kept[key] = made
                _state["made"] += 1
        return fn

    return make


def _patch(base: types.ModuleType) -> None:
    """Wrap ``base._init_op_module``/``_init_np_op_module``'s ``make_op_func`` (MXNet's register modules
    import them from ``mxnet.base`` after it is loaded)."""
    null = base._Null
    op, np_op = base._init_op_module, base._init_np_op_module

    def init_op_module(root_namespace, module_name, make_op_func):
        return op(root_namespace, module_name, _caching(make_op_func, null))

    def init_np_op_module(root_module_name, np_module_name, mx_module_name, make_op_func):
        return np_op(root_module_name, np_module_name, mx_module_name, _caching(make_op_func, null))

    base._init_op_module = init_op_module
    base._init_np_op_module = init_np_op_module


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != "mxnet.base":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def install() -> None:
    """Before ``import mxnet``: read the kept functions (:func:`cache_path`) and have MXNet's operator
    registration use them. Nothing happens when MXNet is imported already."""
    if "mxnet.base" in sys.modules or any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    header = _header()
    if header is None:
        return
    _state["header"] = header
    path = cache_path()
    _state["path"] = path
    if path is not None:
        _load(path, header)
    sys.meta_path.insert(0, _Finder())


def finish(keep: bool = True) -> None:
    """After ``import mxnet``: keep what the import made in :func:`cache_path` when there was nothing to use there
    (``keep=False``: the import failed, and what it made is not kept)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]
    path = _state["path"]
    if keep and path is not None and not _state["loaded"] and _state["made"]:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            return
        if write(path, sync=False):
            _state["loaded"] = True  # what the file holds is what this process has: hand it on as it is


def write(path: Path, *, sync: bool = True) -> bool:
    """Write the kept functions to ``path`` (a new file beside it, then renamed over it); False when nothing
    is kept or the file system refuses (a cache: the import works without it)."""
    if _state["header"] is None or not _kept:
        return False
    with _lock:
        data = marshal.dumps((_state["header"], dict(_kept)))
    try:
        atomic_write_bytes(path, data, sync=sync)
    except (OSError, GluonbenchError) as exc:
        log.debug("could not keep MXNet's operator functions in %s: %s", path, exc)
        return False
    return True


HANDED = "mxnet-ops.marshal"
"""the file :func:`handover` writes in a run's temporary folder"""


def handover(env: dict[str, str], folder: Path) -> None:
    """Let a child process start cheaper: ``env`` (the child's environment) names the file this process read or
    wrote; where there is none (a folder that cannot be written), a file in ``folder`` (the run's own temporary
    folder, removed with it) written from what this process's import made. Nothing changes where the user turned
    the cache off or this process has not imported MXNet."""
    if env.get(CACHE_ENV) == "off" or not _kept:
        return
    if _state["loaded"] and _state["path"] is not None:
        env[CACHE_ENV] = str(_state["path"])
        return
    path = Path(folder) / HANDED
    if write(path, sync=False):
        env[CACHE_ENV] = str(path)


def stats() -> dict[str, Any]:
    """How this process's import went: functions rebuilt from the file (``read``), made by MXNet (``made``) and
    made once for an operator registered under two names (``reused``); ``kept``: whether :func:`cache_path` holds
    what this process has (read from it or written to it)."""
    return {k: _state[k] for k in ("read", "reused", "made")} | {"kept": _state["loaded"]}
