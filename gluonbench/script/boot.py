"""The bootstrap: ``python -m gluonbench.script.boot SCRIPT ARGS`` or ``... boot -m MODULE ARGS``.

Runs the user's script or module as ``python SCRIPT ARGS`` / ``python -m MODULE ARGS`` would (``__main__``,
``sys.argv``, ``sys.path[0]``, the working folder untouched), after installing the hooks of
:mod:`gluonbench.script.hooks`. The process dies with gluonbench (``PR_SET_PDEATHSIG``), and so does every
process it forks (its DataLoader workers). Without :data:`~gluonbench.script.channel.FD_ENV` the hooks only
watch (nothing is swapped, nothing reported).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import runpy
import socket
import sys
from collections.abc import Callable
from typing import Any

from gluonbench.engine.child import die_with_parent
from gluonbench.script.channel import (
    DIR_ENV,
    FD_ENV,
    FLAGS,
    FORKED,
    KNOBS_ENV,
    LOADER_ENV,
    TO_END_ENV,
    WORKERS_ENV,
    Channel,
)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then`` right after the top-level module ``name`` is first imported (once; then it steps aside)."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        real, then = spec.loader, self.then

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return real.create_module(spec)

            def exec_module(self, module: Any) -> None:
                real.exec_module(module)
                then()

        spec.loader = Loader()
        return spec


def note_fork(path: str) -> Callable[[], None]:
    """What a forked process runs first: it dies with its parent and writes its pid into ``path``."""

    def note() -> None:
        die_with_parent()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError:
            return
        try:
            os.write(fd, f"{os.getpid()}\n".encode())  # one short write with O_APPEND: lines never interleave
        finally:
            os.close(fd)

    return note


def main(argv: list[str]) -> None:
    """Install the hooks, then run ``argv`` (``SCRIPT ARGS`` or ``-m MODULE ARGS``) as its own ``__main__``."""
    die_with_parent()
    fd = os.environ.pop(FD_ENV, None)
    folder = os.environ.pop(DIR_ENV, None)
    os.register_at_fork(after_in_child=note_fork(os.path.join(folder, FORKED)) if folder else die_with_parent)
    wanted = os.environ.pop(LOADER_ENV, "")
    index, _, count = os.environ.pop(WORKERS_ENV, "").partition(":")
    workers = (int(index), int(count)) if count else None
    at, _, values = os.environ.pop(KNOBS_ENV, "").partition(":")
    knobs = (int(at), dict(json.loads(values))) if values else None
    to_end = os.environ.pop(TO_END_ENV, "") == "1"
    channel = Channel(socket.socket(fileno=int(fd))) if fd else None
    if channel is not None:
        os.set_inheritable(channel.sock.fileno(), False)  # the script's own subprocesses do not get it
    flags = os.path.join(folder, FLAGS) if folder else None
    state: dict[str, Any] = {}

    def hook() -> None:
        from gluonbench.script.hooks import install

        state["driver"] = install(channel, flags, int(wanted) if wanted else None, workers, to_end, knobs)

    if channel is None and "mxnet" not in sys.modules:
        # only watching (gluonbench profile): the hooks go in once the script imports MXNet itself, so a script
        # that never does runs without it
        sys.meta_path.insert(0, _AfterImport("mxnet", hook))
    else:
        hook()
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    finally:
        if "driver" in state:
            state["driver"].finish()  # with to_end: the whole run's figures, however the script ended


if __name__ == "__main__":
    main(sys.argv[1:])
