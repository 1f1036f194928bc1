"""Machine-wide metrics for a profile: the process-tree sampler plus per-core CPU and iowait,
memory, disk, network, GPUs (NVML) and per-process CPU and PSS.

:class:`NodeMonitor` extends :class:`~gluonbench.monitor.system.SystemMonitor` (same thread,
same per-process bookkeeping) and hands each sample to a callback as rows named as SageMaker
Debugger names them (``Type``/``Name``/``Dimension``/``Value``). It never imports MXNet.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from gluonbench.monitor.gpu import GpuSampler
from gluonbench.monitor.system import SystemMonitor


@dataclass(frozen=True)
class MetricRow:
    """One value of one sample, in Debugger's vocabulary."""

    timestamp: float
    type: str
    name: str
    dimension: str
    value: float


RowSink = Callable[[list[MetricRow]], None]


def _disk() -> tuple[int, int, int]:
    c = psutil.disk_io_counters(perdisk=False)
    return (c.read_bytes, c.write_bytes, c.read_count + c.write_count) if c else (0, 0, 0)


def _net() -> tuple[int, int]:
    rx = tx = 0
    for nic, c in psutil.net_io_counters(pernic=True).items():
        if nic != "lo":
            rx += c.bytes_recv
            tx += c.bytes_sent
    return rx, tx


class NodeMonitor(SystemMonitor):
    """Sample the machine and the process tree rooted at ``pid`` every ``interval`` seconds.

    The root is the training process; every other process of its tree counts as a DataLoader
    worker (``WorkerCount``). ``sink(rows)`` is called from the sampling thread.
    """

    def __init__(
        self, pid: int, interval: float, sink: RowSink, gpus: GpuSampler | None = None, worker_depth: int = 1
    ) -> None:
        """``worker_depth=2`` when ``pid`` is an orchestrator (a sweep) whose children train: then only
        their descendants count as DataLoader workers."""
        super().__init__(pid=pid, interval=interval)
        self.worker_depth = worker_depth
        self.sink = sink
        self.gpus = gpus if gpus is not None else GpuSampler.open()
        self._prev: tuple | None = None
        self._prev_cpu_pid: dict[int, float] = {}

    def _sample_locked(self, memory: bool | None) -> None:
        before = getattr(self, "_last_cpu", None)
        mem_samples = self.summary.memory_samples
        super()._sample_locked(memory)
        now_cpu = self._last_cpu
        ts = time.time()
        mono = time.perf_counter()
        disk, net = _disk(), _net()
        rows: list[MetricRow] = []
        add = rows.append
        if self._prev is not None and before is not None:
            t0, disk0, net0 = self._prev
            dt = max(mono - t0, 1e-6)
            for i, ((b, w, t), (b0, w0, tt0)) in enumerate(zip(now_cpu, before, strict=False)):
                span = max(t - tt0, 1e-9)
                add(MetricRow(ts, "cpu", f"cpu{i}", "CPUUtilization", round(100.0 * (b - b0) / span, 2)))
                add(MetricRow(ts, "cpu", f"cpu{i}", "I/OWaitPercentage", round(100.0 * (w - w0) / span, 2)))
            add(MetricRow(ts, "i/o", "ReadThroughputInBytesPerSecond", "", round((disk[0] - disk0[0]) / dt, 2)))
            add(MetricRow(ts, "i/o", "WriteThroughputInBytesPerSecond", "", round((disk[1] - disk0[1]) / dt, 2)))
            add(MetricRow(ts, "i/o", "IOPS", "", round((disk[2] - disk0[2]) / dt, 2)))
            add(MetricRow(ts, "network", "ReceiveBytesPerSecond", "Algorithm", round((net[0] - net0[0]) / dt, 2)))
            add(MetricRow(ts, "network", "TransmitBytesPerSecond", "Algorithm", round((net[1] - net0[1]) / dt, 2)))
            for pid in self.last_pids:
                cpu = self._cpu_by_pid.get(pid)
                prev = self._prev_cpu_pid.get(pid)
                if cpu is not None and prev is not None:
                    add(MetricRow(ts, "process", f"pid{pid}", "ProcessCPUPercent", round(100.0 * (cpu - prev) / dt, 2)))
        add(MetricRow(ts, "memory", "MemoryUsedPercent", "", psutil.virtual_memory().percent))
        add(MetricRow(ts, "process", "ProcessCount", "Training", float(len(self.last_pids))))
        add(MetricRow(ts, "process", "WorkerCount", "Training", float(self._workers())))
        if self.summary.memory_samples > mem_samples:
            for pid in self.last_pids:
                if pid in self.mem_by_pid:
                    add(MetricRow(ts, "process", f"pid{pid}", "ProcessPSSBytes", float(self.mem_by_pid[pid])))
        for g in self.gpus.read(self.last_pids):
            add(MetricRow(ts, "gpu", f"gpu{g.index}", "GPUUtilization", g.utilization_pct))
            add(MetricRow(ts, "gpu", f"gpu{g.index}", "GPUMemoryUtilization", round(g.memory_utilization_pct, 2)))
            if g.power_w is not None:
                add(MetricRow(ts, "gpu", f"gpu{g.index}", "GPUPowerWatts", round(g.power_w, 2)))
        self._prev = (mono, disk, net)
        self._prev_cpu_pid = {pid: self._cpu_by_pid[pid] for pid in self.last_pids if pid in self._cpu_by_pid}
        self.sink(rows)

    def _workers(self) -> int:
        if self.worker_depth <= 1:
            return max(len(self.last_pids) - 1, 0)
        trainers = 0
        for pid in self.last_pids[1:]:
            try:
                trainers += self._procs[pid].ppid() == self.pid
            except (KeyError, psutil.Error):
                continue
        return max(len(self.last_pids) - 1 - trainers, 0)

    def stop(self):  # type: ignore[override]
        summary = super().stop()
        self.gpus.close()
        return summary
