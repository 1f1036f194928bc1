"""Dataloader: DataLoader worker processes compared with the cores (below 70 % or above 200 %)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gluonbench.profiler.rules.base import Rule, quantiles


class Dataloader(Rule):
    name = "Dataloader"
    description = (
        "Median number of DataLoader worker processes (the training process's descendants) while the "
        "training loop runs, against the node's cores: fires below min_threshold % or above max_threshold % "
        "of the cores, once more than patience samples were seen."
    )
    defaults: ClassVar[dict[str, Any]] = {"min_threshold": 70.0, "max_threshold": 200.0, "patience": 10}

    def not_applicable(self, data) -> str:
        counts = [n.get("WorkerCount", "Training") for n in data.nodes.values()]
        if all(c is None for c in counts):
            return "no worker counts (gluonbench's process rows; SageMaker Debugger does not record them)"
        has_workers = any(c is not None and c.values.max(initial=0) > 0 for c in counts)
        loader_seen = any(e.get("cat") == "dataloader" or (e.get("args") or {}).get("dataloader") for e in data.events)
        if not has_workers and not loader_seen:
            return "no DataLoader seen: no worker processes and no gluonbench.profiler.wrap() events"
        return ""

    def invoke(self, data, t0: float, t1: float) -> None:
        lo, hi = data.first_step, data.last_step_end
        for node in data.nodes.values():
            s = node.get("WorkerCount", "Training")
            if s is None or not node.cores:
                continue
            if lo is not None and hi is not None:
                t0, t1 = max(t0, lo), min(t1, hi + 1e-6)
            if t1 <= t0:
                continue
            w = s.between(t0, t1)
            counts = self.details.setdefault("_counts", {}).setdefault(node.node_id, [])
            counts.extend(w.values.tolist())
            self.datapoints = max(self.datapoints, len(counts))
            if len(counts) <= self.patience:
                continue
            median = float(np.median(counts))
            cores = node.cores
            info = {"cores": cores, "median_workers": median, "workers": quantiles(counts)}
            if median < cores * self.min_threshold / 100:
                info["finding"] = "too few"
            elif median > cores * self.max_threshold / 100:
                info["finding"] = "too many"
            else:
                info["finding"] = "ok"
            self.details[node.node_id] = info

    def finish(self, data) -> None:
        self.details.pop("_counts", None)
        for info in self.details.values():
            if info.get("finding") in ("too few", "too many"):
                self.violations += 1
        self.times_triggered = self.violations

    def advice(self) -> str:
        findings = {i.get("finding") for i in self.details.values()}
        if "too few" in findings:
            return (
                "Fewer DataLoader workers than cores: raise num_workers towards the core count (gluonbench sweep "
                "--workers 0..N finds the best); with cheap transforms, thread_pool=True avoids process start-up."
            )
        if "too many" in findings:
            return (
                "More DataLoader workers than twice the cores: they compete for the CPU and memory; lower "
                "num_workers to about the core count."
            )
        if not self.details:
            return (
                f"Too few samples while training (need more than patience={self.patience}) to judge the worker count."
            )
        return "The worker count is in proportion to the cores."
