"""MaxInitializationTime: no training step within ``threshold`` minutes of the job's start."""

from __future__ import annotations

from typing import Any, ClassVar

from gluonbench.profiler.rules.base import Rule


class MaxInitializationTime(Rule):
    name = "MaxInitializationTime"
    description = "Fires when threshold minutes have passed since the job started and no step has begun."
    recommendation = (
        "Initialisation takes long: download or copy the data set before the job (or stream it: FastFile/Pipe), "
        "build the data index once and cache it, and check for slow imports or model loading."
    )
    defaults: ClassVar[dict[str, Any]] = {"threshold": 20.0}
    scan_interval_s = 60.0

    def not_applicable(self, data) -> str:
        if not data.hooks_seen:
            return "no framework events: the script does not use gluonbench.profiler.step()"
        return ""

    def invoke(self, data, t0: float, t1: float) -> None:
        first = data.first_step
        started = first is not None and first < t1
        if not started and t1 - data.start > self.threshold * 60:
            self.violations += 1
            self.times_triggered += 1

    def finish(self, data) -> None:
        self.datapoints = len(data.steps)
        first = data.first_step
        self.details["initialization_s"] = round((first if first is not None else data.end) - data.start, 3)
