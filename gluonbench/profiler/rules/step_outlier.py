"""StepOutlier: steps longer than mean + stddev * sigma, more than ``n_outliers`` of them."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, ClassVar

import numpy as np

from gluonbench.profiler.rules.base import Rule, quantiles

MIN_STEPS = 101
"""Debugger evaluates a phase once it has more than 100 steps"""


class StepOutlier(Rule):
    name = "StepOutlier"
    description = (
        "Per node and phase (mode: TRAIN, EVAL or all), steps longer than mean + stddev x standard deviation; "
        "fires when there are more than n_outliers of them (evaluated from 101 steps on)."
    )
    recommendation = (
        "Some steps take far longer than the rest: look at what coincides with them in the timelines (worker "
        "restarts at epoch boundaries, garbage collection, checkpointing, other jobs on the machine)."
    )
    defaults: ClassVar[dict[str, Any]] = {"stddev": 3.0, "mode": None, "n_outliers": 10}

    def not_applicable(self, data) -> str:
        return "" if data.steps else "no step events: the script does not use gluonbench.profiler.step()"

    def invoke(self, data, t0: float, t1: float) -> None:
        groups: dict[tuple[str, str], list] = defaultdict(list)
        for s in data.steps:
            if s.start_s < t1 and (self.mode is None or s.phase == str(self.mode).upper()):
                groups[(s.node_id, s.phase)].append(s)
        self.datapoints = sum(len(v) for v in groups.values())
        fired = False
        total = 0
        for (node_id, phase), steps in groups.items():
            if len(steps) < MIN_STEPS:
                continue
            d = np.array([s.dur_s for s in steps])
            limit = float(d.mean() + self.stddev * d.std())
            out = [s.step_num for s, v in zip(steps, d, strict=True) if v > limit]
            total += len(out)
            self.details[f"{node_id}/{phase}"] = {
                "limit_s": round(limit, 6),
                "mean_s": round(float(d.mean()), 6),
                "std_s": round(float(d.std()), 6),
                "outliers": len(out),
                "outlier_steps": out[:100],
                "step_s": quantiles(d),
            }
            if len(out) > self.n_outliers:
                fired = True
        self.violations = total
        if fired:
            self.times_triggered += 1
