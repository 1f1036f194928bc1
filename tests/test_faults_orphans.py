"""Faults, class 2 (orphans): nothing outlives a run, even when the parent is killed with SIGKILL."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from conftest import REPO


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.add(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def _running_under(folder: Path) -> list[int]:
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if any(str(folder) in part for part in p.info["cmdline"] or ()):
                out.append(p.pid)
    return out


def test_sweep_killed_with_sigkill_leaves_no_child_worker_or_temp_folder(tmp_path, no_leaks):
    """kill -9 of the sweep: the run's child, its DataLoader workers and /tmp/gluonbench-run-* all go."""
    # a short TMPDIR, so the run's processes use the run's own folder in it as their TMPDIR (a longer one gets a
    # short folder under /tmp instead: test_a_long_tmpdir_still_gives_the_workers_a_socket)
    tmp = Path(tempfile.mkdtemp(prefix="gb-orphans-"))
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONUNBUFFERED="1")
    sweep = subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "sweep", "--workers", "2", "--epochs", "20", "--out", str(tmp_path)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "sweep.err").open("w"),
        start_new_session=True,
    )
    try:
        me = psutil.Process(sweep.pid)
        # the child and the workers of its train and eval loaders, once the loaders have started
        try:
            tree = _wait_for(
                lambda: [p for p in me.children(recursive=True)] if len(me.children(recursive=True)) >= 4 else None,
                120,
                "the run's workers",
            )
        except AssertionError as exc:  # say why: the sweep's exit code and what it printed
            err = (tmp_path / "sweep.err").read_text()[-2000:]
            raise AssertionError(f"{exc}; sweep exit code {sweep.poll()}, stderr: {err}") from None
        pids = {p.pid for p in tree}
        run_dirs = list(tmp.glob("gluonbench-run-*"))
        assert run_dirs, "the run's temporary folder should exist while it runs"
        os.kill(sweep.pid, signal.SIGKILL)
        sweep.wait()
        _wait_for(lambda: not _alive(pids), 10, f"the run's processes {pids} to die with the parent")
        # and any process of the run that was not in the tree when it was read (its cmdline names the folder)
        _wait_for(lambda: not _running_under(tmp), 10, f"every process of the run under {tmp} to die")
        _wait_for(lambda: not list(tmp.glob("gluonbench-run-*")), 10, "the run's temporary folder to be removed")
        # nothing else either: the workers' multiprocessing folders (pymp-*, their sockets) were in the run's
        left = [p.name for p in tmp.iterdir()]
        assert not left, f"left in TMPDIR after kill -9: {left}"
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait()
        with contextlib.suppress(OSError):
            tmp.rmdir()  # empty once the run removed its folder (asserted above)


def test_a_long_tmpdir_still_gives_the_workers_a_socket(tmp_path, no_leaks):
    """A TMPDIR too long for a worker's AF_UNIX socket path (107 bytes): the run's processes get a short private
    one under /tmp instead, removed with the run; the sweep trains at 2 workers and leaves nothing behind."""
    long_tmp = tmp_path / ("t" * 60) / ("u" * 60)
    long_tmp.mkdir(parents=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "sweep", "--workers", "2", "--max-batches", "3", "--out", str(tmp_path / "out")],
        cwd=REPO, env=dict(os.environ, TMPDIR=str(long_tmp)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-2000:]
    assert "AF_UNIX" not in err
    (runs,) = list((tmp_path / "out").glob("*/runs.jsonl"))
    assert all(json.loads(line)["status"] == "ok" for line in runs.read_text().splitlines())
    assert not list(long_tmp.iterdir())
    # the short folder is named after its owner, the sweep: only the sweep's count, as a test running beside this one
    # (another pytest worker) may hold folders of its own in /tmp
    assert not list(Path("/tmp").glob(f"gluonbench-*-{proc.pid}.*"))


BUSY_WORKERS_STOPPED = """
import time
import numpy as np
from gluonbench._mx import gluon
from gluonbench.pipeline.pipeline import close_loader
from gluonbench.pipeline.stages import Loader


class Slow(gluon.data.Dataset):
    # the first two batches are quick (each worker hands one over, through a socket in its temp folder); then
    # every sample takes a second, so the workers are busy when the loader stops them
    def __getitem__(self, i):
        if i >= 64:
            time.sleep(1.0)
        return np.zeros(8, dtype="float32"), np.float32(0)

    def __len__(self):
        return 1024


loader = Loader(batch_size=32, num_workers=2, shuffle=False).make(Slow(), None)
for n, _ in enumerate(loader):
    if n == 1:
        break
close_loader(loader)  # Pool.terminate(): SIGTERM to the busy workers, whose exit handlers never run
print("closed")
"""


def test_loader_workers_stopped_mid_batch_leave_no_multiprocessing_folder(tmp_path):
    """A worker that hands a batch over listens on a socket in its multiprocessing temp folder (``pymp-*``), which
    only a normal exit removes; a worker stopped by ``Pool.terminate()`` left one behind (``gluonbench tune`` left
    1-2 per run in /tmp). The workers now use their parent's owned folder, which goes with the parent."""
    tmp = Path(tempfile.mkdtemp(prefix="gb-mp-"))  # short: a worker's socket path must fit AF_UNIX's 107 bytes
    try:
        script = tmp_path / "busy.py"
        script.write_text(BUSY_WORKERS_STOPPED)
        proc = subprocess.run(
            [sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=120,
            env=dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(REPO)),
        )  # fmt: skip
        assert proc.returncode == 0 and "closed" in proc.stdout, proc.stderr[-2000:]
        assert not list(tmp.iterdir()), f"left in TMPDIR: {[p.name for p in tmp.iterdir()]}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
