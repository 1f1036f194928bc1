"""End to end: the real CLI on the real MNIST, with crashes, hangs, resume and leak checks."""

import csv
import json
import math
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import leak_check, run_cli

from gluonbench.sweeprun.run import FAULT_ENV


def _run_dir(out: Path) -> Path:
    (run_dir,) = list(out.iterdir())
    return run_dir


@pytest.fixture(scope="module")
def sweeps(mnist_dir, tmp_path_factory):
    """Two sweeps at once (the suite's time: the faulty one's hung run waits out its timeout while the other
    measures). ``every``: workers 0..2, every output. ``faulty``: two faults, the 2-worker run aborts after its
    first step with its workers alive, then the 1-worker run hangs there until the timeout; the 0-worker run
    comes after both. Returns {name: (proc, run folder)}."""
    base = tmp_path_factory.mktemp("sweeps")
    every, faulty = base / "every", base / "faulty"
    with leak_check(), ThreadPoolExecutor(max_workers=2) as pool:
        every_call = pool.submit(
            run_cli, "sweep", "--workers", "0..2", "--max-batches", "30", "--data-dir", str(mnist_dir), "--out", str(every)
        )  # fmt: skip
        faulty_call = pool.submit(
            run_cli, "sweep", "--workers", "2,1,0", "--max-batches", "12", "--timeout", "25", "--data-dir",
            str(mnist_dir), "--out", str(faulty), env={FAULT_ENV: "crash@2,hang@1"},
        )  # fmt: skip
        procs = {"every": every_call.result(), "faulty": faulty_call.result()}
    return {name: (proc, _run_dir(base / name)) for name, proc in procs.items()}


def test_sweep_0_to_2_writes_every_output(sweeps):
    proc, run_dir = sweeps["every"]
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert run_dir.name.endswith("-sweep-mnist-cpu")
    for name in ("runs.jsonl", "sweep.json", "summary.csv", "summary.md", "summary.json", "sweep.png", "report.html"):
        assert (run_dir / name).stat().st_size > 0, name
    runs = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert [r["spec"]["workers"] for r in runs] == [0, 1, 2]
    for r in runs:
        assert r["status"] == "ok"
        assert r["accuracy"] > 0.3, "30 steps of the seed's CNN must beat chance (0.1) by far"
        assert r["train_samples"] == 30 * 64 and r["eval_samples"] == 30 * 64
        assert r["train_s"] > 0 and r["eval_s"] > 0 and r["samples_per_s"] > 0
        steady = r["steady"]
        assert steady["steps"] == 29
        assert math.isclose(steady["wait_s"] + steady["copy_s"] + steady["compute_s"], steady["total_s"], rel_tol=1e-9)
        assert r["system"]["peak_mem_bytes"] > 50 * 2**20 and r["system"]["cpu_util_pct"] > 0
        env = r["env"]
        for key in ("gluonbench", "mxnet", "numpy", "python", "cpu", "cores_logical", "gpus", "os"):
            assert key in env
        assert env["mxnet"] == "1.9.1"
        assert "sweep --workers 0..2" in r["command"]
    # workers really ran: the 2-worker run's process tree had the main process + 2 + eval workers
    assert runs[2]["system"]["peak_processes"] >= 3
    assert runs[0]["system"]["peak_processes"] == 1
    rows = list(csv.DictReader((run_dir / "summary.csv").open()))
    assert [int(r["workers"]) for r in rows] == [0, 1, 2]
    md = (run_dir / "summary.md").read_text()
    assert "| workers | train duration (s) | eval duration (s) | test accuracy | samples/s" in md
    assert "Best worker count" in md
    # the console: one seed-style line per run as it finishes (stderr, once), then the table (stdout)
    assert "0 workers: train duration" in proc.stderr and "2 workers: train duration" in proc.stderr
    assert (proc.stdout + proc.stderr).count("2 workers: train duration") == 1
    assert "Best worker count" in proc.stdout


def _runs(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]


def test_crashing_run_is_recorded_and_the_sweep_goes_on(sweeps):
    proc, run_dir = sweeps["faulty"]
    runs = _runs(run_dir)
    assert proc.returncode == 1, "a failed run makes the exit status 1"
    assert "Traceback" not in proc.stderr
    status = {r["spec"]["workers"]: r["status"] for r in runs}
    assert status[2] == "failed" and status[0] == "ok"
    failed = next(r for r in runs if r["status"] == "failed")
    assert "SIGABRT" in failed["error"]
    assert "failed" in (run_dir / "summary.md").read_text()


def test_hanging_run_times_out(sweeps):
    proc, run_dir = sweeps["faulty"]
    runs = _runs(run_dir)
    assert proc.returncode == 1
    assert [(r["spec"]["workers"], r["status"]) for r in runs] == [(2, "failed"), (1, "timeout"), (0, "ok")]


@pytest.fixture(scope="module")
def thread_sweep(mnist_dir, tmp_path_factory):
    """One sweep of two repeats, loading in threads with fixed eval workers: test_thread_pool_and_fixed_eval_workers
    reads it, test_resume_finishes_an_interrupted_sweep resumes a copy of it (one sweep for both: the suite's time)."""
    out = tmp_path_factory.mktemp("threads") / "results"
    with leak_check():
        proc = run_cli(
            "sweep", "--workers", "2", "--thread-pool", "--eval-workers", "0", "--repeat", "2", "--max-batches", "10",
            "--data-dir", str(mnist_dir), "--out", str(out),
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return _run_dir(out)


def test_resume_finishes_an_interrupted_sweep(thread_sweep, tmp_path, no_leaks):
    run_dir = tmp_path / thread_sweep.name
    shutil.copytree(thread_sweep, run_dir)
    lines = (run_dir / "runs.jsonl").read_text().splitlines()
    assert len(lines) == 2
    # drop the last run as if the sweep had been stopped after one
    (run_dir / "runs.jsonl").write_text(lines[0] + "\n")
    proc = run_cli("sweep", "--resume", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    runs = _runs(run_dir)
    assert sorted((r["spec"]["workers"], r["spec"]["repeat"]) for r in runs) == [(2, 0), (2, 1)]
    assert runs[0] == json.loads(lines[0]), "the finished run is kept as it was"
    assert runs[1]["status"] == "ok" and runs[1]["spec"]["thread_pool"] is True, "resumed with the sweep's settings"
    assert "[" in (run_dir / "summary.md").read_text(), "repeats show min-max"


@pytest.mark.slow
def test_fashion_mnist_from_debian(cli, fashion_dir, tmp_path, no_leaks):
    proc = cli(
        "sweep",
        "--dataset",
        "fashion-mnist",
        "--workers",
        "0",
        "--max-batches",
        "20",
        "--out",
        str(tmp_path),
        env={"MXNET_HOME": str(tmp_path / "mx"), "GLUONBENCH_DATA": str(tmp_path / "none")},
    )
    assert proc.returncode == 0, proc.stderr
    (run,) = [json.loads(line) for line in (_run_dir(tmp_path) / "runs.jsonl").read_text().splitlines()]
    assert run["spec"]["workload"] == "fashion-mnist" and run["accuracy"] > 0.2


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_interrupt_keeps_finished_runs(mnist_dir, tmp_path, no_leaks, sig):
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    out = tmp_path / "results"
    # the first run (0 workers) is short; the second (2 workers) stops after its first step with its
    # workers alive (the hang fault), so the signal always lands mid-run, however loaded the machine is
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gluonbench",
            "sweep",
            "--workers",
            "0,2,1,2",
            "--max-batches",
            "6",
            "--data-dir",
            str(mnist_dir),
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, **{FAULT_ENV: "hang@2"}),
        cwd=Path(__file__).resolve().parents[1],
    )

    def loader_workers_alive() -> bool:
        """The run child of the sweep has its DataLoader workers (2) as children."""
        try:
            return any(len(child.children()) >= 2 for child in psutil.Process(proc.pid).children())
        except psutil.Error:
            return False

    deadline = time.monotonic() + 300
    runs_path = None
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            found = list(out.glob("*/runs.jsonl")) if out.exists() else []
            if found and found[0].read_text().count("\n") >= 1:
                runs_path = found[0]
                break
            time.sleep(0.2)
        assert runs_path is not None, "the first run never finished"
        while time.monotonic() < deadline and proc.poll() is None and not loader_workers_alive():
            time.sleep(0.1)
        assert loader_workers_alive(), "the second run (2 workers) never started its workers"
        proc.send_signal(getattr(signal, sig))
        _stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # a failed assertion above: the run children die with the sweep
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "every finished run is kept" in stderr
    lines = runs_path.read_text().splitlines()
    assert len(lines) == 1, "only the first run finished"
    assert json.loads(lines[0])["spec"]["workers"] == 0
    assert (runs_path.parent / "summary.md").is_file(), "the report is rebuilt from what finished"


def test_shipped_configs_load():
    from gluonbench.config import SweepSettings, coerce, load_toml

    configs = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.toml"))
    assert configs
    for path in configs:
        settings = coerce(SweepSettings(), load_toml(path), source=str(path)).check()
        assert settings.workers and settings.batch_size >= 1


def test_thread_pool_and_fixed_eval_workers(thread_sweep):
    runs = _runs(thread_sweep)
    assert [r["spec"]["repeat"] for r in runs] == [0, 1]
    for run in runs:
        assert run["spec"]["thread_pool"] is True and run["spec"]["eval_workers"] == 0
        assert run["system"]["peak_processes"] == 1, "thread_pool loads in threads, not processes"
        assert run["accuracy"] > 0.2
