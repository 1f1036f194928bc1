"""InputBound (gluonbench): the share of step time spent waiting for input, TF Profiler's way.

A profile observes the loop; it removes nothing. The wait it sees is TF's measure, but on MXNet's
overlapped loop (the engine computes one step while the loop fetches the next batch) the wait can
overlap compute, and the loader and the model can compete for the same cores, so the wait alone is not
what a faster input pipeline gains. The verdict by the seed's rule (does one reused batch train
faster?) is ``gluonbench diagnose``'s; this rule's advice points there instead of claiming a stage.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gluonbench.profiler.rules.base import Rule, quantiles


class InputBound(Rule):
    name = "InputBound"
    description = (
        "Share of training-step time (data wait + step) spent waiting for the next batch, the first skip "
        "steps left out: highly at high %, moderately at moderate % (TF Profiler's 20 % / 5 %). On an overlapped "
        "loop the wait is not the gain of a faster input pipeline: gluonbench diagnose measures that (the seed's rule)."
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
        share = self.details.get("input_share_pct")
        seed = (
            "On MXNet's overlapped loop part of that wait can overlap compute, so it is not yet what a faster input "
            "pipeline gains: run gluonbench diagnose on the same pipeline, which measures how much faster one reused "
            "batch trains (the seed's rule) and names the stage to fix"
        )
        if level == "high":
            return (
                f"The loop waits for data {share} % of step time (TF's 'highly input-bound' wait). {seed}; "
                "if it confirms, add DataLoader workers or make preprocessing cheaper or move it offline."
            )
        if level == "moderate":
            return (
                f"The loop waits for data {share} % of step time (TF's 'moderately input-bound' wait). {seed}; "
                "a few more workers or a deeper prefetch may hide the rest."
            )
        return (
            f"The loop seldom waits for data ({share} % of step time): the loader keeps pace with the steps "
            "(on a CPU context it may still share the cores with the model; gluonbench diagnose measures that)."
        )
