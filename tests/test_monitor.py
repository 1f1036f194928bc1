"""The system monitor of the timed windows (diagnose's rounds): what it reads, and when."""

from __future__ import annotations


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
