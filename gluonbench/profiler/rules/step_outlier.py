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

    def _groups(self, data) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per (node, phase): start times, durations and step numbers as arrays, in start order."""
        if not hasattr(self, "_arrays"):
            groups: dict[tuple[str, str], list] = defaultdict(list)
            for st in data.steps:
                if self.mode is None or st.phase == str(self.mode).upper():
                    groups[(st.node_id, st.phase)].append((st.start_s, st.dur_s, st.step_num))
            self._arrays = {k: tuple(np.array(c) for c in zip(*v, strict=True)) for k, v in groups.items()}
        return self._arrays

    def invoke(self, data, t0: float, t1: float) -> None:
        # the steps seen by the end of this window, as Debugger evaluates a live job
        fired = False
        total = seen = 0
        for (node_id, phase), (starts, durs, nums) in self._groups(data).items():
            n = int(np.searchsorted(starts, t1, side="left"))
            seen += n
            if n < MIN_STEPS:
                continue
            d = durs[:n]
            limit = float(d.mean() + self.stddev * d.std())
            out = nums[:n][d > limit].astype(int).tolist()
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
        self.datapoints = seen
        self.violations = total
        if fired:
            self.times_triggered += 1
