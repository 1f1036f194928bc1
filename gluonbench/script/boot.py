"""The bootstrap: ``python -m gluonbench.script.boot SCRIPT ARGS`` or ``... boot -m MODULE ARGS``.

Runs the user's script or module as ``python SCRIPT ARGS`` / ``python -m MODULE ARGS`` would (``__main__``,
``sys.argv``, ``sys.path[0]``, the working folder untouched), after installing the hooks of
:mod:`gluonbench.script.hooks`. The process dies with gluonbench (``PR_SET_PDEATHSIG``), and so does every
process it forks (its DataLoader workers). Without :data:`~gluonbench.script.channel.FD_ENV` the hooks only
watch (nothing is swapped, nothing reported).
"""

from __future__ import annotations

import os
import runpy
import socket
import sys

from gluonbench.engine.child import die_with_parent
from gluonbench.script.channel import DIR_ENV, FD_ENV, LOADER_ENV, TO_END_ENV, WORKERS_ENV, Channel


def main(argv: list[str]) -> None:
    """Install the hooks, then run ``argv`` (``SCRIPT ARGS`` or ``-m MODULE ARGS``) as its own ``__main__``."""
    die_with_parent()
    os.register_at_fork(after_in_child=die_with_parent)
    fd = os.environ.pop(FD_ENV, None)
    folder = os.environ.pop(DIR_ENV, None)
    wanted = os.environ.pop(LOADER_ENV, "")
    index, _, count = os.environ.pop(WORKERS_ENV, "").partition(":")
    workers = (int(index), int(count)) if count else None
    to_end = os.environ.pop(TO_END_ENV, "") == "1"
    channel = Channel(socket.socket(fileno=int(fd))) if fd else None
    if channel is not None:
        os.set_inheritable(channel.sock.fileno(), False)  # the script's own subprocesses do not get it
    from gluonbench.script.hooks import FLAGS, install

    driver = install(
        channel, os.path.join(folder, FLAGS) if folder else None, int(wanted) if wanted else None, workers, to_end
    )
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    finally:
        driver.finish()  # with to_end: the whole run's figures, however the script ended


if __name__ == "__main__":
    main(sys.argv[1:])
