"""Faults, class 3 (hangs): a small /dev/shm fails in seconds with one line, never waits out --timeout."""

from __future__ import annotations

import json
import time

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
