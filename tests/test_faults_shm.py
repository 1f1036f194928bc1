"""Faults, class 3 (hangs): a small /dev/shm fails in seconds with one line, never waits out --timeout."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import assert_one_clear_line
from faults import run_in_tmpfs

FIXES = ("/dev/shm", "--shm-size", "--ipc=host", "thread_pool=True")


def test_sweep_refuses_workers_that_a_64k_shm_cannot_hold(tmp_path, no_leaks):
    t0 = time.monotonic()
    proc = run_in_tmpfs({"/dev/shm": "64k"}, ["sweep", "--workers", "2", "--max-batches", "5", "--out", str(tmp_path)])
    assert_one_clear_line(proc, *FIXES)
    assert time.monotonic() - t0 < 60
    assert not list(tmp_path.iterdir()), "no run folder is made for a sweep that cannot start"


def test_diagnose_refuses_before_measuring(tmp_path, no_leaks):
    t0 = time.monotonic()
    proc = run_in_tmpfs({"/dev/shm": "64k"}, ["diagnose", "--workers", "2", "--budget", "10"])
    assert_one_clear_line(proc, *FIXES)
    assert time.monotonic() - t0 < 60


def test_zero_workers_need_no_shm_and_a_thread_pool_is_checked_too(tmp_path, no_leaks):
    proc = run_in_tmpfs(
        {"/dev/shm": "64k"},
        ["sweep", "--workers", "0", "--max-batches", "3", "--out", str(tmp_path)],
    )
    assert proc.returncode == 0, proc.stderr
    # MXNet 1.9 batches into /dev/shm with thread_pool=True too (default_mp_batchify_fn): without the check
    # this run dies of SIGBUS
    proc = run_in_tmpfs(
        {"/dev/shm": "64k"},
        ["sweep", "--workers", "2", "--thread-pool", "--max-batches", "3", "--out", str(tmp_path), "--name", "tp"],
    )
    assert_one_clear_line(proc, *FIXES)


def test_a_stalled_loader_fails_the_run_in_seconds(tmp_path, no_leaks):
    """The up-front check skipped: the stall watchdog sees no batch and fails the run, not the --timeout."""
    t0 = time.monotonic()
    proc = run_in_tmpfs(
        {"/dev/shm": "64k"},
        ["sweep", "--workers", "2", "--max-batches", "5", "--timeout", "600", "--out", str(tmp_path)],
        env={"GLUONBENCH_SHM_CHECK": "0", "GLUONBENCH_STALL_FLOOR_S": "2"},
    )
    elapsed = time.monotonic() - t0
    assert proc.returncode == 1, proc.stderr  # a failed run: documented exit code 1
    assert "Traceback" not in proc.stderr
    assert elapsed < 120, elapsed
    (run,) = [json.loads(line) for line in next(tmp_path.glob("*/runs.jsonl")).read_text().splitlines()]
    assert run["status"] == "failed"
    assert "LoaderStalledError" in run["error"]
    for needle in FIXES:
        assert needle in run["error"], (needle, run["error"])


FILL_MID_RUN = """
import os, sys, threading, time
import psutil
import gluonbench
from gluonbench.data import vision
from gluonbench.errors import GluonbenchError


def transform(data, label):
    return data.astype("float32").transpose((2, 0, 1)) / 255, label


def fill_once_the_workers_run():
    me = psutil.Process()
    while not me.children(recursive=True):  # a loader's worker process: the measurement is on
        time.sleep(0.1)
    time.sleep(1.0)
    # keep /dev/shm (a tmpfs of this mount namespace only) full for the rest of the run: ENOSPC, even on open
    # (the loader's batches filled it first), means try again, so what the loader frees is taken at once.
    # Giving up at the first ENOSPC let the loader free its space and finish the run (2 in 15 runs, quiet)
    fd = None
    while True:
        try:
            if fd is None:
                fd = os.open("/dev/shm/gb-test-fill", os.O_WRONLY | os.O_CREAT, 0o600)
            os.write(fd, b"x" * 65536)
        except OSError:
            time.sleep(0.01)


threading.Thread(target=fill_once_the_workers_run, daemon=True).start()
dataset = vision.dataset("mnist", train=True)
call = gluonbench.diagnose if sys.argv[1] == "diagnose" else gluonbench.tune
workers = {"num_workers": 2} if sys.argv[1] == "diagnose" else {"max_workers": 2}
try:
    # a small budget: where the workers block instead of failing (a busy machine), the deadline ends the run
    call(dataset, transform=transform, batch_size=64, budget_s=8 if sys.argv[1] == "diagnose" else 10, **workers)
    print("no error")
except GluonbenchError as exc:
    print("GluonbenchError:", exc)
"""


@pytest.mark.parametrize("command", ["diagnose", pytest.param("tune", marks=pytest.mark.slow)])
def test_dev_shm_filling_up_mid_run_is_one_line_from_python(command, tmp_path):
    """#21: /dev/shm full while in-process diagnose/tune measure (from Python): one GluonbenchError naming
    /dev/shm, how full it is and the fixes, not a ConnectionResetError (or an ENOSPC traceback)."""
    from faults import need_mount_ns

    need_mount_ns()
    script = tmp_path / "fill.py"
    script.write_text(FILL_MID_RUN)
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            f"mount -t tmpfs -o size=8m tmpfs /dev/shm && exec {sys.executable} {script} {command}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    # MXNet's DataLoader prints its own "Worker timed out" note to stdout; ours is the one result line
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith(("GluonbenchError:", "no error"))]
    assert line.startswith("GluonbenchError:"), line
    assert re.search(r"/dev/shm is (nearly )?full \(\d+ KiB free of 8192 KiB\)", line), line
    for needle in ("--shm-size", "thread_pool=True", "num_workers=0"):
        assert needle in line, (needle, line)
    assert "--workers" not in line  # from Python: the argument, not the flag
    assert time.monotonic() - t0 < 20 + 30 + 60  # within the budget + grace (+ start-up), never waiting it out


def test_a_stopped_workers_unmapped_segment_is_removed_and_a_mapped_one_kept():
    """close_loader's clean-up: a segment a stopped worker left (a batch in flight) goes; one this process maps
    (a batch it still holds) stays for MXNet to free. Found beside a CPU hog: one mx_ segment outlived a run."""
    import mmap

    from gluonbench.pipeline.pipeline import drop_stray_segments

    pid = 0x3FFFFFF0  # above Linux's pid_max: no live process owns these names
    stray, held = Path(f"/dev/shm/mx_{pid:x}_a1"), Path(f"/dev/shm/mx_{pid:x}_b2")
    other = Path(f"/dev/shm/mx_{pid + 1:x}_c3")
    for p in (stray, held, other):
        p.write_bytes(b"\0" * 4096)
    try:
        with open(held, "r+b") as f, mmap.mmap(f.fileno(), 4096) as mapping:
            assert drop_stray_segments({pid}) == [stray.name]
            assert mapping[0] == 0
        assert not stray.exists() and held.exists() and other.exists()
    finally:
        for p in (stray, held, other):
            p.unlink(missing_ok=True)
