"""The rule base class: parameters with Debugger's defaults, windowed evaluation, a report."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

from gluonbench.errors import GluonbenchError
from gluonbench.names import example, param_example
from gluonbench.profiler.data import NodeMetrics, ProfileData
from gluonbench.settings import BOOL_TEXTS


@dataclass
class RuleReport:
    """What one rule found: Debugger's report fields, plus why it could not run."""

    rule: str
    description: str
    triggered: bool
    violations: int
    datapoints: int
    parameters: dict[str, Any]
    recommendation: str
    applicable: bool = True
    reason: str = ""
    """why the rule is not applicable (e.g. no GPU metrics); empty when it ran"""
    times_triggered: int = 0
    """evaluation windows in which the rule's condition held (Debugger's RuleTriggered)"""
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


RULE_PARAM_MAX = 1e9
"""The largest value a rule parameter takes (percentages, steps, windows, standard deviations)."""


def _rule_value(rule: str, key: str, value: Any, default: Any) -> Any:
    """``value`` as the type of ``default``: a finite number in 0 .. 1e9 (``nan`` and ``inf`` are refused,
    as a threshold of nan would never fire), or true/false for a switch."""
    label = example(f"rules[{rule!r}][{key!r}]={value!r}", f"--rule {rule}.{key}={value!r}")
    if default is None:
        return value
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in BOOL_TEXTS:
            return BOOL_TEXTS[text]
        raise GluonbenchError(f"{label} must be true or false")
    if isinstance(default, int | float):
        want = "a whole number" if isinstance(default, int) else "a number"
        if isinstance(value, bool):
            raise GluonbenchError(f"{label} must be {want} from 0 to {RULE_PARAM_MAX:g}")
        try:
            number = float(value) if isinstance(value, str | int | float) and len(str(value)) <= 40 else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or not 0 <= number <= RULE_PARAM_MAX:
            raise GluonbenchError(f"{label} must be {want} from 0 to {RULE_PARAM_MAX:g}")
        if isinstance(default, int):
            if number != int(number):
                raise GluonbenchError(f"{label} must be a whole number from 0 to {RULE_PARAM_MAX:g}")
            return int(number)
        return number
    if not isinstance(value, type(default)):
        try:
            return type(default)(value)
        except (TypeError, ValueError):
            raise GluonbenchError(f"{label} must be a {type(default).__name__}") from None
    return value


class Rule:
    """One rule. Subclasses declare ``name``, ``description``, ``recommendation`` and ``defaults``
    (Debugger's parameters and default values) and implement :meth:`invoke`; :meth:`evaluate`
    walks the profile in ``scan_interval_s`` windows (Debugger scans every 60 s), so a rule keeps
    state across windows exactly as it would on a live job."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    recommendation: ClassVar[str] = ""
    defaults: ClassVar[dict[str, Any]] = {}
    scan_interval_s: ClassVar[float] = 60.0

    def __init__(self, **params: Any) -> None:
        unknown = set(params) - set(self.defaults)
        if unknown:
            raise GluonbenchError(
                f"{param_example(f'rules[{self.name!r}][{sorted(unknown)[0]!r}]', f'--rule {self.name}.{sorted(unknown)[0]}')}: "
                "unknown parameter; "
                f"{self.name} takes {', '.join(self.defaults) or 'no parameters'}"
            )
        self.params: dict[str, Any] = {}
        for key, default in self.defaults.items():
            value = params.get(key, default)
            if key in params:
                value = _rule_value(self.name, key, value, default)
            self.params[key] = value
            setattr(self, key, value)
        self.violations = 0
        self.datapoints = 0
        self.times_triggered = 0
        self.details: dict[str, Any] = {}

    # -- what subclasses implement -----------------------------------------------------------
    def not_applicable(self, data: ProfileData) -> str:
        """The reason the rule cannot run on ``data``, or an empty string."""
        return ""

    def invoke(self, data: ProfileData, t0: float, t1: float) -> None:
        """Take in the window ``[t0, t1)``; count datapoints, violations and ``times_triggered``."""

    def finish(self, data: ProfileData) -> None:
        """After the last window (statistics for the report)."""

    def advice(self) -> str:
        """The recommendation; subclasses may tailor it to what they found."""
        return self.recommendation

    def passed(self) -> str:
        """What the report says when the rule ran and did not fire: no advice to act on (a rule whose
        :meth:`advice` is tailored to its findings says what it found; the others a plain line)."""
        if type(self).advice is not Rule.advice:
            return self.advice()
        return f"Passed: {self.violations} violation(s) in {self.datapoints} datapoints, below what fires the rule."

    # -- the driver ---------------------------------------------------------------------------
    def evaluate(self, data: ProfileData) -> RuleReport:
        reason = self.not_applicable(data)
        if not reason:
            t = data.start
            end = data.end + 1e-6
            while t < end:
                self.invoke(data, t, min(t + self.scan_interval_s, end))
                t += self.scan_interval_s
            self.finish(data)
        return RuleReport(
            rule=self.name,
            description=self.description,
            triggered=not reason and self.times_triggered > 0,
            violations=self.violations,
            datapoints=self.datapoints,
            parameters=dict(self.params),
            recommendation="" if reason else self.advice() if self.times_triggered > 0 else self.passed(),
            applicable=not reason,
            reason=reason,
            times_triggered=self.times_triggered,
            details=self.details,
        )


def gpu_nodes(data: ProfileData) -> list[NodeMetrics]:
    return [n for n in data.nodes.values() if n.gpus]


NO_GPU = "no GPU metrics in this profile (no GPU, no NVIDIA driver, or NVML unavailable)"


def flagged_snapshots(
    node: NodeMetrics, dimension: str, t0: float, t1: float, above: float | None = None, below: float | None = None
) -> set[int]:
    """Snapshots in ``[t0, t1)`` where any series of ``dimension`` is above/below a value."""
    out: set[int] = set()
    for s in node.by_dimension(dimension).values():
        w = s.between(t0, t1)
        if not len(w):
            continue
        m = (w.values > above) if above is not None else (w.values < below)
        out.update(node.snapshot_index(w.ts[m]).tolist())
    return out


def snapshots_in(node: NodeMetrics, t0: float, t1: float) -> int:
    return int(np.count_nonzero((node.snapshots >= t0) & (node.snapshots < t1)))


def quantiles(values: Any) -> dict[str, float]:
    v = np.asarray(values, dtype=float)
    if not len(v):
        return {}
    return {
        "min": round(float(v.min()), 6),
        "p50": round(float(np.quantile(v, 0.5)), 6),
        "p95": round(float(np.quantile(v, 0.95)), 6),
        "p99": round(float(np.quantile(v, 0.99)), 6),
        "max": round(float(v.max()), 6),
    }


class SnapshotBottleneck(Rule):
    """Debugger's CPUBottleneck/IOBottleneck shape: a snapshot is a bottleneck when some GPU is
    below ``gpu_threshold`` while some core's ``high_dimension`` is above ``high_param``; the rule
    fires once more than ``patience`` snapshots were seen and bottlenecks exceed ``threshold`` %."""

    high_dimension: ClassVar[str] = ""
    high_param: ClassVar[str] = ""

    def not_applicable(self, data: ProfileData) -> str:
        return "" if gpu_nodes(data) else NO_GPU

    def invoke(self, data: ProfileData, t0: float, t1: float) -> None:
        for node in gpu_nodes(data):
            low_gpu = flagged_snapshots(node, "GPUUtilization", t0, t1, below=self.gpu_threshold)
            high = flagged_snapshots(node, self.high_dimension, t0, t1, above=getattr(self, self.high_param))
            self.datapoints += snapshots_in(node, t0, t1)
            self.violations += len(low_gpu & high)
            self.details["low_gpu_utilization"] = self.details.get("low_gpu_utilization", 0) + len(low_gpu)
        if self.datapoints > self.patience and 100.0 * self.violations / self.datapoints > self.threshold:
            self.times_triggered += 1

    def finish(self, data: ProfileData) -> None:
        if self.datapoints:
            self.details["bottleneck_pct"] = round(100.0 * self.violations / self.datapoints, 2)
