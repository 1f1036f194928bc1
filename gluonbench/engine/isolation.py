"""Run one job in its own child process (``python -m CHILD SPEC RESULT LIFELINE_FD``), with a timeout.

The engine knows how to start, watch and end a child process, not what it runs: the caller names the child's
entry module and hands the spec as a JSON-able dict (:mod:`gluonbench.sweeprun.child` runs one sweep run this way),
and gets back a :class:`ChildRun`, the result JSON the child wrote or why there is none.

The child starts a new session (its own process group), so its DataLoader
workers share its group. After the child ends, for whatever reason, the whole
group is killed: a crash, hang or leak in one run cannot leave processes behind
or stop the sweep. MXNet shared-memory segments (``/dev/shm/mx_*``) that the
run's processes left are removed too.

If the parent itself dies (``kill -9``), the child and its workers die with it
(see :mod:`gluonbench.engine.child`: ``PR_SET_PDEATHSIG`` and a watchdog on a
pipe whose write end only the parent holds), and the run's temporary folder
``/tmp/gluonbench-run-*`` is removed by that watchdog.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from gluonbench import mxops
from gluonbench.engine.child import PARENT_ENV, PROGRESS_ENV
from gluonbench.engine.watchdog import shm_fixes
from gluonbench.env import utc_now
from gluonbench.files import open_nofollow
from gluonbench.names import arg
from gluonbench.scratch import SHORT_ROOT, clean_shm, owned_tempdir, shm_entries, sockets_fit

log = logging.getLogger(__name__)


def _read_progress(path: Path) -> int:
    try:
        return int(path.read_text() or 0)
    except (OSError, ValueError):
        return 0


def kill_group(pgid: int, wait_s: float = 5.0) -> set[int]:
    """SIGKILL process group ``pgid`` and wait (at most ``wait_s``) until its members other than the leader are gone.

    A SIGKILL is delivered when the process is next scheduled: on a busy machine a DataLoader worker orphaned by
    its leader's death can still be running for a moment after ``killpg`` returns, so a caller that returned
    then would outlive nothing but leave a process behind for that moment. The leader (pid ``pgid``) is not
    waited for here: it is the caller's child, reaped by the caller's ``Popen.wait`` (which keeps its exit code).
    Returns the pids the group had.
    """
    members = []
    for pid in group_members(pgid):
        try:
            members.append(psutil.Process(pid))
        except psutil.Error:
            continue
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    pids = {p.pid for p in members}
    waiting = [p for p in members if p.pid != pgid]
    deadline = time.monotonic() + wait_s
    while waiting and time.monotonic() < deadline:
        waiting = [p for p in waiting if _alive(p)]
        if waiting:
            time.sleep(0.02)
    return pids


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _tree_pids(pid: int) -> set[int]:
    try:
        root = psutil.Process(pid)
        return {pid} | {p.pid for p in root.children(recursive=True)}
    except psutil.Error:
        return set()


def group_members(pgid: int) -> list[int]:
    """The pids of process group ``pgid``."""
    members = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(p.pid) == pgid:
                members.append(p.pid)
        except (ProcessLookupError, PermissionError):
            continue
    return members


def child_tmpdir(run_dir: Path) -> Path:
    """The ``TMPDIR`` of a run's child process, so that nothing its processes put there outlives the run.

    The run's own folder (removed after the run, and by the child's watchdog after a kill -9 of the parent) when
    a worker's socket path under it fits AF_UNIX's limit; else a short private folder under ``/tmp``, removed the
    same ways (and by the next gluonbench start if both were killed); else the run folder all the same.
    """
    if sockets_fit(run_dir):
        return run_dir
    try:
        return owned_tempdir("tmp", root=SHORT_ROOT)
    except OSError:
        return run_dir


def _read_result(path: Path) -> str | None:
    try:
        text = path.read_text()
        json.loads(text)
        return text
    except (OSError, ValueError):
        return None


@dataclass
class ChildRun:
    """What a child process left: its result JSON (``result``, None when it wrote none) or why not.

    ``status`` is ``ok`` (the child ended and wrote a result, which may itself say the job failed),
    ``failed`` (it died without a result: ``error`` names the exit code or signal) or ``timeout``.
    """

    status: str
    error: str | None
    result: dict[str, Any] | None
    started_utc: str
    finished_utc: str
    wall_s: float


def run_child(
    spec: dict[str, Any],
    child: str,
    log_path: Path,
    timeout_s: float,
    progress: Callable[[int], None] | None = None,
) -> ChildRun:
    """Run ``python -m child SPEC RESULT LIFELINE_FD`` on ``spec`` (written as JSON); never raises for a failure
    of the child itself.

    ``child``: the entry module, given by the layer that knows the job (:mod:`gluonbench.sweeprun.child`; with
    ``--diagnose``, :mod:`gluonbench.diagnosis.sweep`); it starts with :func:`gluonbench.engine.child.enter`.
    ``progress(steps_done)`` is called as the child reports steps (its :class:`~gluonbench.engine.child.ProgressFile`).
    The child's output goes to ``log_path``. ``KeyboardInterrupt`` in the parent kills the child's group and
    is re-raised.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    shm_before = shm_entries()
    started = utc_now()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gluonbench-run-", ignore_cleanup_errors=True) as tmp:
        spec_path = Path(tmp) / "spec.json"
        result_path = Path(tmp) / "result.json"
        spec_path.write_text(json.dumps(spec))
        progress_path = Path(tmp) / "progress"
        child_tmp = child_tmpdir(Path(tmp))  # what the run's processes leave in TMPDIR goes with the run
        env = dict(
            os.environ, **{PROGRESS_ENV: str(progress_path), PARENT_ENV: str(os.getpid()), "TMPDIR": str(child_tmp)}
        )
        mxops.handover(env, Path(tmp))  # the child's MXNet import reuses this process's compiled operators
        # the lifeline: the child's watchdog reads end-of-file on it when this process dies, however it dies
        lifeline_r, lifeline_w = os.pipe()
        try:
            with os.fdopen(open_nofollow(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as logf:
                proc = subprocess.Popen(
                    [sys.executable, "-m", child, str(spec_path), str(result_path), str(lifeline_r)],
                    stdin=subprocess.DEVNULL,
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=env,
                    pass_fds=(lifeline_r,),
                )
        except BaseException:
            os.close(lifeline_w)
            raise
        finally:
            os.close(lifeline_r)
        pids = {proc.pid}
        status, error = "ok", None
        try:
            while True:
                try:
                    proc.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    pids |= _tree_pids(proc.pid)
                    if progress is not None:
                        progress(_read_progress(progress_path))
                    if time.monotonic() - t0 > timeout_s:
                        status, error = "timeout", f"run exceeded {arg('timeout_s')} {timeout_s:g} s and was killed"
                        break
        finally:
            # kill the whole group: the child (if still there) and any worker it left
            pids |= kill_group(proc.pid)
            proc.wait()
            if progress is not None:
                progress(_read_progress(progress_path))
            removed = clean_shm(shm_before, pids)
            if removed:
                log.warning("removed %d shared-memory segment(s) left by the run: %s", len(removed), ", ".join(removed))
            result_text = _read_result(result_path) if status == "ok" else None
            if child_tmp != Path(tmp):
                shutil.rmtree(child_tmp, ignore_errors=True)
            os.close(lifeline_w)  # the group is dead already: the watchdog went with it
        result = json.loads(result_text) if result_text is not None else None
        if result is None and status == "ok":
            rc = proc.returncode
            why = f"killed by signal {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
            if rc == -signal.SIGBUS:
                why += f"; SIGBUS is mostly a full /dev/shm: {shm_fixes()}"
            status, error = "failed", f"child process died ({why}) without a result; see {log_path}"
    return ChildRun(status, error, result, started, utc_now(), time.monotonic() - t0)
