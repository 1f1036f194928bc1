"""Entry point of a run's child process: ``python -m gluonbench.engine.child SPEC RESULT [LIFELINE_FD]``.

Reads a :class:`RunSpec` JSON, runs :func:`train_and_eval`, and writes the
:class:`RunResult` JSON atomically. Any exception is written as a failed result
(exit 1), so the parent records it; a hard crash leaves no result file and the
parent records the exit signal.

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
import json
import logging
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gluonbench.report.store import atomic_write_text

if TYPE_CHECKING:
    from gluonbench.engine.run import DiagnoseRun

PR_SET_PDEATHSIG = 1
PARENT_ENV = "GLUONBENCH_PARENT_PID"


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
    shutil.rmtree(tmp_dir, ignore_errors=True)
    end_run_group()
    os.killpg(os.getpgrp(), signal.SIGKILL)  # anything left in the group, and this watchdog
    os._exit(0)  # pragma: no cover - the line above killed us


def end_run_group() -> None:
    """With the parent gone: kill the run's process group (the child, its workers, a producer) but this
    process, then remove the MXNet shared-memory segments (``/dev/shm/mx_<pid hex>_*``) they made, which
    the parent would have removed after the run."""
    import time

    from gluonbench.engine.isolation import clean_shm, group_members

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


def main(argv: list[str], diagnose: DiagnoseRun | None = None) -> int:
    """Run the spec at ``argv[0]``, write its result to ``argv[1]``; ``diagnose``: the hook a spec with
    ``diagnose`` needs (:mod:`gluonbench.diagnosis.sweep` starts this with it)."""
    spec_path, result_path = Path(argv[0]), Path(argv[1])
    if len(argv) > 2:
        start_watchdog(int(argv[2]), spec_path.parent)
    die_with_parent()
    parent = os.environ.get(PARENT_ENV)
    if parent and os.getppid() != int(parent):
        return 3  # the parent died before prctl took effect: nobody would read the result
    os.register_at_fork(after_in_child=die_with_parent)  # DataLoader workers die with this process
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from gluonbench.engine.run import RunResult, RunSpec, train_or_fail, utc_now
    from gluonbench.engine.watchdog import LoaderStalledError, on_stall

    spec = RunSpec.from_dict(json.loads(spec_path.read_text()))

    def stalled(message: str) -> None:
        """A stalled loader ends this process (see watchdog); its result says why."""
        failed = RunResult(
            spec=spec.to_dict(),
            status="failed",
            error=f"{LoaderStalledError.__name__}: {message}"[:500],
            finished_utc=utc_now(),
        )
        atomic_write_text(result_path, json.dumps(failed.to_dict()))

    on_stall(stalled)
    result, code = train_or_fail(spec, diagnose)
    atomic_write_text(result_path, json.dumps(result.to_dict()))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
