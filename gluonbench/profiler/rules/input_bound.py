"""InputBound (gluonbench): the share of step time spent waiting for input, TF Profiler's way."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gluonbench.profiler.rules.base import Rule, quantiles


class InputBound(Rule):
    name = "InputBound"
    description = (
        "Share of training-step time (data wait + step) spent waiting for the next batch, the first skip "
        "steps left out: highly input-bound at high %, moderately at moderate % (TF Profiler's 20 % / 5 %)."
    )
    defaults: ClassVar[dict[str, Any]] = {"moderate": 5.0, "high": 20.0, "skip": 1}

    def not_applicable(self, data) -> str:
        if not any(s.wait_s is not None for s in data.train_steps()):
            return "no data-wait figures: the script does not wrap its loader with gluonbench.profiler.wrap()"
        return ""

    def finish(self, data) -> None:
        steps = [s for s in data.train_steps() if s.wait_s is not None][self.skip :]
        self.datapoints = len(steps)
        if not steps:
            return
        wait = np.array([s.wait_s for s in steps])
        busy = np.array([s.dur_s for s in steps])
        share = 100.0 * wait.sum() / max(wait.sum() + busy.sum(), 1e-12)
        self.details = {
            "input_share_pct": round(float(share), 2),
            "wait_s": quantiles(wait),
            "step_s": quantiles(busy),
            "level": "high" if share >= self.high else "moderate" if share >= self.moderate else "low",
        }
        # steps where waiting was the larger part
        self.violations = int(np.count_nonzero(wait > busy))
        if share >= self.moderate:
            self.times_triggered = 1

    def advice(self) -> str:
        level = self.details.get("level")
        if level == "high":
            return (
                f"Highly input-bound ({self.details['input_share_pct']} % of step time waiting for data): add "
                "DataLoader workers, make preprocessing cheaper or move it offline, and run gluonbench diagnose "
                "to see whether reading or preprocessing is the limit."
            )
        if level == "moderate":
            return (
                f"Moderately input-bound ({self.details['input_share_pct']} % of step time waiting for data): "
                "a few more workers or a deeper prefetch should hide the rest."
            )
        return "The input pipeline keeps up with the steps."
