"""Faults, class 1 (data loss): torn lines, empty records, a full disk, two sweeps on one folder, --json."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import PLAN_LINE, REPO, assert_one_clear_line, make_unwritable, release
from faults import run_in_tmpfs

QUICK = ["--max-batches", "2", "--batch-size", "32"]


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory) -> Path:
    """A real two-run sweep folder (0 and 1 workers), made once; tests copy it."""
    from conftest import run_cli

    out = tmp_path_factory.mktemp("sweeps")
    proc = run_cli("sweep", "--workers", "0,1", *QUICK, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return next(out.iterdir())


def _copy(src: Path, dst: Path) -> Path:
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    return dst


@pytest.mark.slow
def test_resume_after_a_torn_line_keeps_every_record(finished_sweep, tmp_path, cli, no_leaks):
    """A writer killed mid-line: the torn bytes are set aside, the resumed run lands on its own line."""
    run_dir = _copy(finished_sweep, tmp_path / "run")
    lines = (run_dir / "runs.jsonl").read_bytes().splitlines(keepends=True)
    torn = lines[1][: len(lines[1]) // 2]
    (run_dir / "runs.jsonl").write_bytes(lines[0] + torn)  # run 2 was being written when the sweep was killed
    proc = cli("sweep", "--resume", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    assert "torn line" in proc.stderr and "runs.jsonl.torn" in proc.stderr
    assert "Traceback" not in proc.stderr
    records = _records(run_dir)  # every line parses: nothing was appended to the torn line
    assert sorted(r["spec"]["workers"] for r in records) == [0, 1]
    assert (run_dir / "runs.jsonl.torn").read_bytes() == torn + b"\n"


def test_report_refuses_a_runs_file_with_no_valid_record(finished_sweep, tmp_path, cli):
    run_dir = _copy(finished_sweep, tmp_path / "run")
    summaries = {p.name: p.read_bytes() for p in run_dir.glob("summary.*")}
    assert summaries
    (run_dir / "runs.jsonl").write_text('[1, 2]\n"a string"\n42\n{"spec": 3}\n{"torn": ')
    proc = cli("report", str(run_dir))
    assert_one_clear_line(proc, "holds no valid record", "left as they were")
    assert {p.name: p.read_bytes() for p in run_dir.glob("summary.*")} == summaries
    (run_dir / "runs.jsonl").write_text("")
    assert_one_clear_line(cli("report", str(run_dir)), "holds no valid record")
    assert {p.name: p.read_bytes() for p in run_dir.glob("summary.*")} == summaries


def test_records_that_are_not_objects_are_skipped_with_one_warning(finished_sweep, tmp_path, cli):
    run_dir = _copy(finished_sweep, tmp_path / "run")
    with open(run_dir / "runs.jsonl", "a") as f:
        f.write('[1]\n"x"\n{"spec": {"workers": "two"}}\n{"spec": {"workers": 0}, "train_s": "fast"}\n')
    proc = cli("report", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "skipped 4 line(s)" in lines[0], lines
    # the 1-worker row is there, whichever count was fastest ("| 1 **best** |" when it won: timing decides)
    assert re.search(r"^\| 1( \*\*best\*\*)? \|", (run_dir / "summary.md").read_text(), re.M)


@pytest.mark.slow
def test_two_resumes_of_one_folder_do_not_run_twice(tmp_path, no_leaks):
    """The second sweep --resume of a folder in use gets one line; the runs are run once."""
    from gluonbench.config import SweepSettings
    from gluonbench.report.store import RunStore, new_run_dir

    settings = SweepSettings(workers=(0, 1), max_batches=5, batch_size=32)
    store = RunStore(new_run_dir(tmp_path, "locked"))
    store.write_settings({"settings": settings.to_dict(), "command": "test"})
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "gluonbench", "sweep", "--resume", str(store.path)]
    first = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock = store.path / ".lock"
        deadline = time.monotonic() + 60
        while not (lock.exists() and lock.read_text().strip() == str(first.pid)):
            assert time.monotonic() < deadline and first.poll() is None, "the first sweep never locked its folder"
            time.sleep(0.1)
        second = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert_one_clear_line(second, "in use by another gluonbench sweep", f"pid {first.pid}")
        _, err = first.communicate(timeout=300)
        assert first.returncode == 0, err
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert sorted(r["spec"]["workers"] for r in _records(store.path)) == [0, 1]


def test_full_disk_before_the_sweep_is_one_line_and_leaves_no_folder(tmp_path, no_leaks):
    out = "/mnt/gb-full"
    proc = run_in_tmpfs(
        {out: "256k"},
        ["sweep", "--workers", "0", *QUICK, "--out", out],
        before=f"dd if=/dev/zero of={out}/fill bs=1k count=248 2>/dev/null",
    )
    assert_one_clear_line(proc, "disk full at")


def test_disk_filling_during_the_sweep_costs_no_measured_record(tmp_path, no_leaks):
    """The disk fills after the first record: the second run's record still lands (space was reserved)."""
    out = tmp_path / "out"
    out.mkdir()
    saved = tmp_path / "saved.jsonl"
    # in the namespace: fill the tmpfs as soon as the first record is on disk
    filler = (
        f"(while ! [ -s {out}/*/runs.jsonl ] 2>/dev/null; do sleep 0.05; done; "
        f"dd if=/dev/zero of={out}/fill bs=4k 2>/dev/null; true) &"
    )
    proc = run_in_tmpfs(
        {str(out): "2m"},
        ["sweep", "--workers", "0", "--repeat", "3", *QUICK, "--out", str(out)],
        before=filler,
        after=f"cp {out}/*/runs.jsonl {saved}",
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [
        line
        for line in proc.stderr.splitlines()
        if line.strip() and "workers:" not in line and not PLAN_LINE.match(line)
    ]
    assert len(lines) == 1 and "disk full at" in lines[0], proc.stderr
    records = [json.loads(line) for line in saved.read_text().splitlines()]
    # three records of ~2 KB need a second 4 KiB page of the tmpfs, which only the reservation holds
    assert [(r["spec"]["repeat"], r["status"]) for r in records] == [(0, "ok"), (1, "ok"), (2, "ok")]


def test_diagnose_json_to_an_unwritable_place_fails_before_measuring(tmp_path, cli):
    locked = make_unwritable(tmp_path / "locked")
    try:
        for target, needle in [
            (locked / "d.json", "--json"),
            (tmp_path, "is a folder"),
            (tmp_path / "missing" / "d.json", "does not exist"),
        ]:
            t0 = time.monotonic()
            proc = cli("diagnose", "--budget", "120", "--json", str(target))
            assert_one_clear_line(proc, needle)
            # half the budget: a machine busy with other jobs slows the start-up, never to a whole measurement
            assert time.monotonic() - t0 < 60, "checked before the 120 s measurement"
    finally:
        release(tmp_path / "locked")
