"""OverallSystemUsage: p50/p95/p99/max per metric per node; statistics only, never fires."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gluonbench.profiler.rules.base import Rule, quantiles

# (label, dimension or None, name or None): what the table shows, per node
METRICS = (
    ("CPU %", "CPUUtilization", None),
    ("I/O wait %", "I/OWaitPercentage", None),
    ("GPU %", "GPUUtilization", None),
    ("GPU memory %", "GPUMemoryUtilization", None),
    ("Memory used %", None, "MemoryUsedPercent"),
    ("Disk read B/s", None, "ReadThroughputInBytesPerSecond"),
    ("Disk write B/s", None, "WriteThroughputInBytesPerSecond"),
    ("Disk IOPS", None, "IOPS"),
    ("Network rx B/s", None, "ReceiveBytesPerSecond"),
    ("Network tx B/s", None, "TransmitBytesPerSecond"),
    ("Processes", None, "ProcessCount"),
    ("DataLoader workers", None, "WorkerCount"),
)


def _mean_over(series: list) -> np.ndarray:
    """Per snapshot, the mean over devices (cores, GPUs) of one dimension."""
    n = min(len(s) for s in series)
    return np.mean([s.values[:n] for s in series], axis=0)


def cpu_outside_job(node) -> np.ndarray | None:
    """Per snapshot, the node's CPU busy % (mean over cores) minus the profiled process tree's share:
    what other programs on the machine took. None without gluonbench's per-process rows."""
    procs = list(node.by_dimension("ProcessCPUPercent").values())
    cores = list(node.by_dimension("CPUUtilization").values())
    if not procs or not cores:
        return None
    n = len(node.snapshots)
    busy = np.zeros(n)
    count = np.zeros(n)
    for s in cores:
        i = node.snapshot_index(s.ts)
        np.add.at(busy, i, s.values)
        np.add.at(count, i, 1)
    tree = np.zeros(n)
    for s in procs:
        np.add.at(tree, node.snapshot_index(s.ts), s.values)
    have = count > 0
    return np.clip(busy[have] / count[have] - tree[have] / len(cores), 0.0, 100.0)


class OverallSystemUsage(Rule):
    name = "OverallSystemUsage"
    description = "Statistics of system usage per node (per-device metrics averaged over devices); never fires."
    recommendation = "Statistics only: see the system usage table."
    defaults: ClassVar[dict[str, Any]] = {}

    def not_applicable(self, data) -> str:
        return "" if data.nodes else "no system metrics in this profile"

    def passed(self) -> str:
        return self.recommendation

    def finish(self, data) -> None:
        for node in data.nodes.values():
            self.datapoints = max(self.datapoints, len(node.snapshots))
            table = {}
            for label, dim, name in METRICS:
                if dim:
                    series = list(node.by_dimension(dim).values())
                    if series:
                        table[label] = quantiles(_mean_over(series))
                else:
                    matches = [s for (n, _), s in node.series.items() if n == name]
                    if matches:
                        table[label] = quantiles(matches[0].values)
            outside = cpu_outside_job(node)
            if outside is not None:
                table["CPU % outside the job"] = quantiles(outside)
            for core, s in node.by_dimension("CPUUtilization").items():
                table[f"CPU % {core}"] = quantiles(s.values)
            for gpu, s in node.by_dimension("GPUUtilization").items():
                table[f"GPU % {gpu}"] = quantiles(s.values)
            self.details[node.node_id] = table
