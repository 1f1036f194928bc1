"""The system monitor of the timed windows (diagnose's rounds): what it reads, and when."""

from __future__ import annotations

import pytest


def test_a_monitor_of_timed_windows_reads_memory_at_their_edges_only(monkeypatch):
    # a PSS reading keeps a core busy for milliseconds: inside a timed window it slows a pipeline that uses every
    # core more than one that leaves a core idle, so the rounds' monitors read memory at start and stop only
    import time

    from gluonbench.monitor import system
    from gluonbench.monitor.system import SystemMonitor

    monkeypatch.setattr(system, "MEMORY_BUDGET", 1.0)  # memory due at every sample: only edges_only holds it back

    def window(edges_only: bool, due: float):
        mon = SystemMonitor(interval=0.02, memory_due=due, edges_only=edges_only).start()
        time.sleep(0.3)
        return mon.stop(memory=None), mon

    summary, _ = window(True, 0.0)
    assert summary.samples >= 4, "the sampler thread ran"
    assert 1 <= summary.memory_samples <= 2 and summary.peak_mem_bytes > 0, "read at the start and the stop only"
    summary, _ = window(False, 0.0)
    assert summary.memory_samples >= 4, "a plain monitor's thread reads memory whenever it is due"
    summary, _ = window(True, time.perf_counter() + 60)
    assert summary.memory_samples == 0, "not due: not read at all"


@pytest.fixture
def hog(tmp_path):
    """A busy loop that is not this process's descendant (double fork), as another job's process would be."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "hog.pid"
    code = (
        "import os, sys, time\n"
        "if os.fork(): os._exit(0)\n"
        "os.setsid()\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "end = time.monotonic() + 120\n"
        "while time.monotonic() < end: pass\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.05)
    yield int(pid_file.read_text())
    try:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_background_load_sees_another_process_and_not_its_own_children(hog):
    from gluonbench.monitor.load import background_load

    load = background_load(1.0)
    assert load.other_cores >= 0.4 and load.busy, load
    assert "other processes kept" in load.text() and "check --against" in load.effect()


def test_a_diagnosis_beside_a_busy_process_says_so_once(hog, tmp_path):
    from conftest import run_cli

    proc = run_cli("diagnose", "--dataset", "synthetic", "--samples", "512", "--budget", "6", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("gluonbench: warning: during this diagnosis other processes kept") == 1, proc.stderr


def test_the_warning_is_only_for_a_load_that_matters():
    from gluonbench.monitor.load import BackgroundLoad, warning

    assert warning(BackgroundLoad(30.0, 2, 0.1, 0.0), "tune") is None
    line = warning(BackgroundLoad(30.0, 2, 1.2, 0.0), "tune")
    assert line and line.startswith("gluonbench: warning: during this tune other processes kept 1.2 of 2 cores")


def test_background_load_of_a_summary():
    from gluonbench.monitor.load import BackgroundLoad, from_summary

    load = from_summary({"per_core_pct": [90.0, 70.0], "cpu_util_pct": 30.0, "cores": 2, "duration_s": 4.0})
    assert load is not None and load.other_cores == pytest.approx(1.0) and load.busy
    assert from_summary({}) is None
    assert not BackgroundLoad(1.0, 16, 1.0, 0.0).busy  # 1 of 16 cores: under 10 %
    assert BackgroundLoad(1.0, 16, 0.0, 8.0).busy  # steal
