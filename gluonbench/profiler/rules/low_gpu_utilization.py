"""LowGPUUtilization: a GPU's p95 utilisation is low, or it fluctuates (p95 high, p5 low)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, ClassVar

import numpy as np

from gluonbench.profiler.rules.base import NO_GPU, Rule, gpu_nodes, quantiles


class LowGPUUtilization(Rule):
    name = "LowGPUUtilization"
    description = (
        "Per GPU, over the last window values: p95 below threshold_p95 (underused) or p95 above threshold_p95 "
        "with p5 below threshold_p5 (fluctuating); checked once more than patience values were seen."
    )
    recommendation = (
        "The GPU is underused or idles between bursts: look for input stalls (InputBound, Dataloader), "
        "synchronisation points (asnumpy(), waitall() in the loop), or raise the batch size; a smaller GPU "
        "instance may do the same work."
    )
    defaults: ClassVar[dict[str, Any]] = {"threshold_p95": 70.0, "threshold_p5": 10.0, "window": 500, "patience": 1000}

    def not_applicable(self, data) -> str:
        return "" if gpu_nodes(data) else NO_GPU

    def invoke(self, data, t0: float, t1: float) -> None:
        if not hasattr(self, "_values"):
            self._values: dict[tuple[str, str], list[float]] = defaultdict(list)
        for node in gpu_nodes(data):
            for gpu, s in node.by_dimension("GPUUtilization").items():
                self._values[(node.node_id, gpu)].extend(s.between(t0, t1).values.tolist())
        fired = False
        for (node_id, gpu), values in self._values.items():
            self.datapoints = max(self.datapoints, len(values))
            if len(values) <= self.patience:
                continue
            recent = np.asarray(values[-self.window :])
            p95, p5 = float(np.quantile(recent, 0.95)), float(np.quantile(recent, 0.05))
            kind = None
            if p95 < self.threshold_p95:
                kind = "underutilized"
            elif p95 > self.threshold_p95 and p5 < self.threshold_p5:
                kind = "fluctuating"
            if kind:
                self.violations += 1
                fired = True
                self.details.setdefault(node_id, {})[gpu] = {
                    "kind": kind,
                    "window_p95": p95,
                    "window_p5": p5,
                    **quantiles(values),
                }
        if fired:
            self.times_triggered += 1
