"""LoadBalancing: the utilisation histograms of two GPUs differ (Jensen-Shannon distance)."""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Any, ClassVar

import numpy as np

from gluonbench.profiler.rules.base import Rule, gpu_nodes


def js_distance(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon distance (natural log) between two histograms, each normalised to sum 1."""
    p = p / max(p.sum(), 1e-12)
    q = q / max(q.sum(), 1e-12)
    m = (p + q) / 2

    def kl(a: np.ndarray, b: np.ndarray) -> float:
        mask = a > 0
        return float(np.sum(a[mask] * np.log(a[mask] / b[mask])))

    return float(np.sqrt(max((kl(p, m) + kl(q, m)) / 2, 0.0)))


class LoadBalancing(Rule):
    name = "LoadBalancing"
    description = (
        "Histograms (2 % bins) of each GPU's utilisation, once more than patience values were seen; fires "
        "when the Jensen-Shannon distance between two GPUs' histograms exceeds threshold."
    )
    recommendation = (
        "The GPUs carry unequal work: check the data sharding (equal batches per device), the kvstore "
        "(device vs local), and that no GPU also hosts extra work (evaluation, logging)."
    )
    defaults: ClassVar[dict[str, Any]] = {"threshold": 0.5, "patience": 1000}

    def not_applicable(self, data) -> str:
        gpus = sum(len(n.gpus) for n in gpu_nodes(data))
        return "" if gpus >= 2 else f"needs two or more GPUs (this profile has {gpus})"

    def invoke(self, data, t0: float, t1: float) -> None:
        if not hasattr(self, "_values"):
            self._values: dict[tuple[str, str], list[float]] = defaultdict(list)
        for node in gpu_nodes(data):
            for gpu, s in node.by_dimension("GPUUtilization").items():
                self._values[(node.node_id, gpu)].extend(s.between(t0, t1).values.tolist())
        bins = np.arange(0, 102, 2)
        hists = {
            k: np.histogram(v, bins=bins)[0].astype(float) for k, v in self._values.items() if len(v) > self.patience
        }
        self.datapoints = max((len(v) for v in self._values.values()), default=0)
        fired = False
        for a, b in combinations(sorted(hists), 2):
            d = js_distance(hists[a], hists[b])
            if d > self.threshold:
                self.violations += 1
                fired = True
                self.details[f"{a[0]}/{a[1]} vs {b[0]}/{b[1]}"] = round(d, 4)
        if fired:
            self.times_triggered += 1
