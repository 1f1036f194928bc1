"""The child side of :func:`gluonbench.engine.isolation.run_child`: what every isolated child does first.

A child entry module (``python -m gluonbench.sweeprun.child SPEC RESULT [LIFELINE_FD]``, or
:mod:`gluonbench.diagnosis.sweep` for ``sweep --diagnose``) starts with :func:`enter` and reports its steps
with a :class:`ProgressFile`; what it runs and the result it writes are its own.

The child dies with its parent, even when the parent is killed with ``kill -9``:

* ``PR_SET_PDEATHSIG`` (``prctl``) makes the kernel send it SIGKILL when the
  parent dies, and every process it forks afterwards (DataLoader workers) gets
  the same, so workers die with the child;
* a watchdog process, forked first, blocks on ``LIFELINE_FD``, the read end of
  a pipe whose only write end the parent holds. When the parent dies the read
  returns end-of-file and the watchdog removes the run's temporary folder
  (``/tmp/gluonbench-run-*``), kills the run's whole process group (the
  child, its workers, a pipe producer), removes the MXNet shared-memory
  segments they made, and ends itself.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
from pathlib import Path
from time import perf_counter

from gluonbench.scratch import PREFIX

PR_SET_PDEATHSIG = 1
PARENT_ENV = "GLUONBENCH_PARENT_PID"
PROGRESS_ENV = "GLUONBENCH_PROGRESS_FILE"
"""The file a child writes its steps done to (set by :func:`gluonbench.engine.isolation.run_child`)."""


class ProgressFile:
    """Lets a parent process follow the steps of a child (at most 4 writes a second); a no-op without
    :data:`PROGRESS_ENV`."""

    def __init__(self) -> None:
        self.path = os.environ.get(PROGRESS_ENV)
        self.last = 0.0

    def __call__(self, steps: int, force: bool = False) -> None:
        now = perf_counter()
        if self.path and (force or now - self.last >= 0.25):
            self.last = now
            with open(self.path, "w") as f:
                f.write(str(steps))


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux); True if set."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return False


def start_watchdog(lifeline_fd: int, tmp_dir: Path) -> None:
    """Fork the watchdog that outlives a dead parent just long enough to clean up.

    It is forked twice, so it is not this process's child: the run's process tree,
    whose memory and CPU the monitor measures, holds only the run's own processes.
    It stays in the run's process group, which the parent kills after the run.
    """
    pid = os.fork()
    if pid:
        os.close(lifeline_fd)
        os.waitpid(pid, 0)
        return
    if os.fork():
        os._exit(0)
    # the watchdog: nothing but a blocking read; end-of-file means the parent is gone
    try:
        while os.read(lifeline_fd, 1):
            pass
    except OSError:
        pass
    end_run_group()  # first: no process of the run writes into the folders below once they are removed
    shutil.rmtree(tmp_dir, ignore_errors=True)
    own_tmp = os.environ.get("TMPDIR")  # the run's TMPDIR (engine.isolation.child_tmpdir): its sockets, pymp-*
    if own_tmp and Path(own_tmp).name.startswith(f"{PREFIX}tmp-"):  # child_tmpdir's owned_tempdir("tmp")
        shutil.rmtree(own_tmp, ignore_errors=True)
    os.killpg(os.getpgrp(), signal.SIGKILL)  # anything left in the group, and this watchdog
    os._exit(0)  # pragma: no cover - the line above killed us


def end_run_group() -> None:
    """With the parent gone: kill the run's process group (the child, its workers, a producer) but this
    process, then remove the MXNet shared-memory segments (``/dev/shm/mx_<pid hex>_*``) they made, which
    the parent would have removed after the run."""
    import time

    from gluonbench.engine.isolation import group_members
    from gluonbench.scratch import clean_shm

    me = os.getpid()
    pids = set(group_members(os.getpgrp())) - {me}
    for _ in range(2):  # twice: a process forked while the first round ran is killed by the second
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.2)
        pids |= set(group_members(os.getpgrp())) - {me}
    clean_shm(set(), pids)


def enter(argv: list[str]) -> tuple[Path, Path] | None:
    """Start an isolated child (``argv``: SPEC RESULT [LIFELINE_FD]): fork the watchdog on the lifeline, die with
    the parent, make every later fork (DataLoader workers) die with this process, log to stderr (the run's log).

    Returns the spec and result paths, or None when the parent died before ``prctl`` took effect (nobody would
    read the result: the child exits at once, with code 3).
    """
    spec_path, result_path = Path(argv[0]), Path(argv[1])
    if len(argv) > 2:
        start_watchdog(int(argv[2]), spec_path.parent)
    die_with_parent()
    parent = os.environ.get(PARENT_ENV)
    if parent and os.getppid() != int(parent):
        return None
    os.register_at_fork(after_in_child=die_with_parent)  # DataLoader workers die with this process
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    return spec_path, result_path
