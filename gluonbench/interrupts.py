"""A stop asked for by a signal (SIGTERM, SIGHUP), remembered until the command has stopped.

The command line turns SIGTERM and SIGHUP into ``KeyboardInterrupt``, as Ctrl-C is. Python raises it wherever the
main thread happens to be, and code that runs from C (an import a C extension starts, a callback) can print it
and go on instead of stopping. So the signal is also remembered here: the command's progress checks it
(:func:`raise_if_pending`), and a command that finishes with a stop pending still ends as interrupted. Code that
handles the interrupt itself (``profile -- CMD`` stops the program and writes what it recorded) calls
:func:`handled`.
"""

from __future__ import annotations

import threading

_pending: int | None = None


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
