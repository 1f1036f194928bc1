"""BatchSize: CPU, GPU and GPU memory all lightly used: a larger batch (or a smaller instance) fits."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, ClassVar

import numpy as np

from gluonbench.profiler.rules.base import NO_GPU, Rule, gpu_nodes, quantiles


class BatchSize(Rule):
    name = "BatchSize"
    description = (
        "Over the last window snapshots: p95 of the mean CPU utilisation below cpu_threshold_p95 and, for a "
        "GPU, p95 utilisation below gpu_threshold_p95 and p95 memory below gpu_memory_threshold_p95; "
        "checked once more than patience and window values were seen."
    )
    recommendation = (
        "CPU, GPU and GPU memory are all lightly used: raise the batch size (scale the learning rate with it) "
        "or run on a smaller instance; watch that a larger batch does not make the input pipeline the limit."
    )
    defaults: ClassVar[dict[str, Any]] = {
        "cpu_threshold_p95": 70.0,
        "gpu_threshold_p95": 70.0,
        "gpu_memory_threshold_p95": 70.0,
        "patience": 1000,
        "window": 500,
    }

    def not_applicable(self, data) -> str:
        return "" if gpu_nodes(data) else NO_GPU

    def invoke(self, data, t0: float, t1: float) -> None:
        if not hasattr(self, "_cpu"):
            self._cpu: dict[str, list[float]] = defaultdict(list)
            self._gpu: dict[tuple[str, str], list[float]] = defaultdict(list)
            self._mem: dict[tuple[str, str], list[float]] = defaultdict(list)
        fired = False
        for node in gpu_nodes(data):
            cores = [s.between(t0, t1).values for s in node.by_dimension("CPUUtilization").values()]
            n = min((len(c) for c in cores), default=0)
            if n:
                self._cpu[node.node_id].extend(np.mean([c[:n] for c in cores], axis=0).tolist())
            for gpu, s in node.by_dimension("GPUUtilization").items():
                self._gpu[(node.node_id, gpu)].extend(s.between(t0, t1).values.tolist())
            for gpu, s in node.by_dimension("GPUMemoryUtilization").items():
                self._mem[(node.node_id, gpu)].extend(s.between(t0, t1).values.tolist())
            cpu = self._cpu[node.node_id]
            self.datapoints = max(self.datapoints, len(cpu))
            if len(cpu) <= max(self.window, self.patience):
                continue
            cpu_p95 = float(np.quantile(cpu[-self.window :], 0.95))
            if cpu_p95 >= self.cpu_threshold_p95:
                continue
            for gpu in node.gpus:
                util, mem = self._gpu[(node.node_id, gpu)], self._mem[(node.node_id, gpu)]
                if len(util) <= self.window or not mem:
                    continue
                gpu_p95 = float(np.quantile(util[-self.window :], 0.95))
                mem_p95 = float(np.quantile(mem[-self.window :], 0.95))
                if gpu_p95 < self.gpu_threshold_p95 and mem_p95 < self.gpu_memory_threshold_p95:
                    self.violations += 1
                    fired = True
                    self.details.setdefault(node.node_id, {})[gpu] = {
                        "cpu": quantiles(cpu),
                        "gpu": quantiles(util),
                        "gpu_memory": quantiles(mem),
                    }
        if fired:
            self.times_triggered += 1
