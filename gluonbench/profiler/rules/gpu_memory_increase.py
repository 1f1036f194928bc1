"""GPUMemoryIncrease: the moving average of a GPU's memory use jumps by more than ``increase`` points."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, ClassVar

import numpy as np

from gluonbench.profiler.rules.base import NO_GPU, Rule, gpu_nodes, quantiles


class GPUMemoryIncrease(Rule):
    name = "GPUMemoryIncrease"
    description = (
        "Per GPU and per new value: the mean of the last window values minus the mean of the window before "
        "(shifted by one) exceeds increase percentage points, once more than patience values were seen."
    )
    recommendation = (
        "GPU memory keeps growing: look for tensors kept across steps (losses appended without asscalar(), "
        "growing caches), or a batch size near the memory limit; out-of-memory may follow."
    )
    defaults: ClassVar[dict[str, Any]] = {"increase": 5.0, "patience": 1000, "window": 10}

    def not_applicable(self, data) -> str:
        return "" if gpu_nodes(data) else NO_GPU

    def invoke(self, data, t0: float, t1: float) -> None:
        if not hasattr(self, "_values"):
            self._values: dict[tuple[str, str], list[float]] = defaultdict(list)
        fired = False
        w = self.window
        for node in gpu_nodes(data):
            for gpu, s in node.by_dimension("GPUMemoryUtilization").items():
                values = self._values[(node.node_id, gpu)]
                for v in s.between(t0, t1).values.tolist():
                    values.append(v)
                    self.datapoints = max(self.datapoints, len(values))
                    if len(values) > w + 1 and len(values) > self.patience:
                        diff = float(np.mean(values[-w:]) - np.mean(values[-w - 1 : -2]))
                        if diff > self.increase:
                            self.violations += 1
                            fired = True
                            self.details.setdefault(node.node_id, {})[gpu] = {
                                "increase": round(diff, 3),
                                **quantiles(values),
                            }
        if fired:
            self.times_triggered += 1
