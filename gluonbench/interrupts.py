"""A stop asked for by a signal (SIGINT, SIGTERM, SIGHUP), remembered until the command has stopped.

The command line turns SIGTERM and SIGHUP into ``KeyboardInterrupt``, as Ctrl-C (SIGINT) is. Python raises it wherever the
main thread happens to be, and code that runs from C (an import a C extension starts, a callback) can print it
and go on instead of stopping. So the signal is also remembered here: the command's progress checks it
(:func:`raise_if_pending`), and a command that finishes with a stop pending still ends as interrupted. Code that
handles the interrupt itself (``profile -- CMD`` stops the program and writes what it recorded) calls
:func:`handled`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

_pending: int | None = None
_main_pid = os.getpid()


def on_signal(signum: int, frame: Any) -> None:
    """The command line's handler of SIGINT, SIGTERM and SIGHUP: remember the stop and raise ``KeyboardInterrupt``.

    In a process forked from the command's (a DataLoader worker inherits the handler), die of the signal instead:
    ``Pool.terminate()`` must kill a worker, not make it unwind (an interrupted worker can block on the pool's queue
    lock and hang terminate's join for ever)."""
    if os.getpid() != _main_pid:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    note(signum)  # raised below; remembered in case code running from C prints it and goes on
    raise KeyboardInterrupt


def install() -> None:
    """The command line's signal handling, in its main thread: SIGTERM and SIGHUP stop as Ctrl-C does, and each of
    the three is remembered (:func:`on_signal`). Where SIGINT is ignored (a job a shell started in the background)
    or has a handler of a caller's own, SIGINT is left as it is. A stop asked of an earlier command in this
    process is forgotten."""
    global _main_pid
    _main_pid = os.getpid()
    handled()
    sys.unraisablehook = quiet_interrupt
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)  # a closed terminal or ssh session: the same clean stop
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        # raised inside code that runs from C (a __del__, an import a C extension starts), Python prints a
        # KeyboardInterrupt and goes on: remembered, the command stops at its next progress tick all the same
        signal.signal(signal.SIGINT, on_signal)


def quiet_interrupt(unraisable: Any) -> None:
    """``sys.unraisablehook`` of the command line: a stop raised where Python cannot raise it (inside a ``__del__``,
    such as an NDArray's freeing its memory, or a callback from C) is remembered already, and the command stops at its
    next progress tick; Python's own hook would print it with a traceback. Anything else goes to Python's hook."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _pending is not None:
        return
    sys.__unraisablehook__(unraisable)


def note(signum: int) -> None:
    """Remember that signal ``signum`` asked this process to stop."""
    global _pending
    _pending = signum


def handled() -> None:
    """The stop was acted on (by code that catches ``KeyboardInterrupt`` on purpose): forget it."""
    global _pending
    _pending = None


def pending() -> int | None:
    """The signal that asked for a stop not yet acted on, or None."""
    return _pending


def raise_if_pending() -> None:
    """Raise ``KeyboardInterrupt`` again when a stop is pending (in the main thread only, as Python does)."""
    if _pending is not None and threading.current_thread() is threading.main_thread():
        raise KeyboardInterrupt
