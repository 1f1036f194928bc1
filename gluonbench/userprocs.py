"""Nothing user code starts outlives a command: its child processes, forks and non-daemon threads.

A ``--pipeline`` factory (or the module it lives in) may start a subprocess, ``os.fork()``, or a thread that never
ends. :class:`UserLeftovers` notes the processes that ran before the command; when it ends, every process started
since and still running (a direct child, or a grandchild re-parented to this process, see below) is ended
(SIGTERM, then SIGKILL), with one warning naming them. Where the command owns its process (the console script,
``python -m gluonbench``), this process is made a *child subreaper* (Linux), so a double-forked grandchild whose
parent has exited is re-parented here instead of to init, where it would be out of reach; and a non-daemon thread
still running at the end no longer holds the exit: one warning names it and the process exits with the command's
code.

:func:`own_interrupt` tells a ``KeyboardInterrupt`` that user code raised itself from a stop that was asked for
(Ctrl-C, SIGTERM, SIGHUP): the first is an error that names the code, never "interrupted".
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

import psutil

from gluonbench import interrupts
from gluonbench.errors import GluonbenchError

log = logging.getLogger("gluonbench")

PR_SET_CHILD_SUBREAPER = 36
TERM_WAIT_S = 2.0
"""seconds a leftover process gets to end after SIGTERM before SIGKILL"""


def _become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux ``prctl``); False where that is not possible."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _describe(p: psutil.Process) -> str:
    try:
        cmd = " ".join(p.cmdline())[:80] or p.name()
    except psutil.Error:
        cmd = "?"
    return f"{p.pid} ({cmd})"


class UserLeftovers:
    """The processes and threads a command's user code leaves behind: ended when the command ends."""

    def __init__(self, owns_process: bool) -> None:
        self.owns_process = owns_process
        if owns_process:
            _become_subreaper()
        self._me = psutil.Process()
        self._before = self._descendants()
        self._threads_before = set(threading.enumerate())

    def _descendants(self) -> set[int]:
        try:
            return {p.pid for p in self._me.children(recursive=True)}
        except psutil.Error:
            return set()

    def end(self) -> list[int]:
        """End every process started since and still running; the pids ended (one warning names them)."""
        try:
            new = [p for p in self._me.children(recursive=True) if p.pid not in self._before]
        except psutil.Error:
            return []
        alive = []
        for p in new:
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.Error:
                continue
        if alive:
            log.warning(
                "%d process(es) started during the command were still running at its end: %s; gluonbench ended them "
                "(a factory that starts processes should end them in the spec's close)",
                len(alive),
                ", ".join(_describe(p) for p in alive[:5]),
            )
        for p in alive:
            try:
                p.terminate()
            except psutil.Error:
                pass
        _, still = psutil.wait_procs(alive, timeout=TERM_WAIT_S)
        for p in still:
            try:
                p.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(still, timeout=TERM_WAIT_S)
        # reap the zombies among our own children (re-parented grandchildren included)
        for p in new:
            try:
                if p.ppid() == self._me.pid:
                    p.wait(timeout=0)
            except (psutil.Error, psutil.TimeoutExpired):
                pass
        return [p.pid for p in alive]

    def exit(self, rc: int) -> int:
        """``rc``; where this command owns its process and a non-daemon thread started since still runs (it would
        hold the exit for good), one warning names it and the process exits now with ``rc``."""
        if not self.owns_process:
            return rc
        return exit_despite_threads(rc, self._threads_before)


def exit_despite_threads(rc: int, before: set[threading.Thread]) -> int:
    """``rc``, or where a non-daemon thread started since ``before`` still runs (user code's: it would hold this
    process's exit for good), one warning naming it and an exit of the process now with ``rc``. Only for a process
    gluonbench owns (the command line, a sweep's run)."""
    left = [
        t
        for t in threading.enumerate()
        if t.is_alive() and not t.daemon and t is not threading.main_thread() and t not in before
    ]
    if not left:
        return rc
    log.warning(
        "thread(s) %s started during the command were still running at its end; gluonbench exits without "
        "waiting for them (make them daemon threads, or stop and join them in the spec's close)",
        ", ".join(repr(t.name) for t in left[:5]),
    )
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    logging.shutdown()
    os._exit(rc)


@contextlib.contextmanager
def own_interrupt(what: str, doing: list[str]) -> Iterator[None]:
    """Run user code (``doing[0]`` says what it is doing: importing the module, the factory) and turn a
    ``KeyboardInterrupt`` it raised itself, with no Ctrl-C or signal asking for a stop, into one line naming it:
    a command must not end "interrupted" (exit 130, "run the command again") because a factory raised one.

    A real stop is told apart by the signal being remembered: by the command line's handler
    (:func:`gluonbench.interrupts.on_signal`), or, under Python's default SIGINT handler, by one installed for the
    time the code runs. Where SIGINT has a handler of a caller's own, or outside the main thread, every interrupt
    is left as it is."""
    main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGINT)
    ours = main and handler is signal.default_int_handler
    noted = main and handler is interrupts.on_signal  # the command line's: every stop is remembered already
    asked: list[int] = []

    def on_sigint(signum: int, frame: Any) -> None:
        asked.append(signum)
        raise KeyboardInterrupt

    if ours:
        signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    except KeyboardInterrupt:
        if not (ours or noted) or asked or interrupts.pending() is not None:
            raise
        raise GluonbenchError(
            f"{what}: {doing[0]} raised KeyboardInterrupt, though no Ctrl-C or signal asked the command to stop; "
            "return the pipeline (or raise an ordinary exception) instead: a KeyboardInterrupt reads as a stop"
        ) from None
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)
