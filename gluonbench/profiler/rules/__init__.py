"""The profiler rules: SageMaker Debugger's, with its parameters and defaults, plus gluonbench's
InputBound. One file per rule; :func:`run_rules` evaluates them all on a profile."""

from __future__ import annotations

from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.profiler.rules.base import Rule, RuleReport
from gluonbench.profiler.rules.batch_size import BatchSize
from gluonbench.profiler.rules.cpu_bottleneck import CPUBottleneck
from gluonbench.profiler.rules.dataloader import Dataloader
from gluonbench.profiler.rules.gpu_memory_increase import GPUMemoryIncrease
from gluonbench.profiler.rules.input_bound import InputBound
from gluonbench.profiler.rules.io_bottleneck import IOBottleneck
from gluonbench.profiler.rules.load_balancing import LoadBalancing
from gluonbench.profiler.rules.low_gpu_utilization import LowGPUUtilization
from gluonbench.profiler.rules.max_initialization_time import MaxInitializationTime
from gluonbench.profiler.rules.overall_system_usage import OverallSystemUsage
from gluonbench.profiler.rules.step_outlier import StepOutlier

RULES: dict[str, type[Rule]] = {
    r.name: r
    for r in (
        CPUBottleneck,
        IOBottleneck,
        LowGPUUtilization,
        GPUMemoryIncrease,
        BatchSize,
        Dataloader,
        MaxInitializationTime,
        StepOutlier,
        LoadBalancing,
        OverallSystemUsage,
        InputBound,
    )
}


def parse_overrides(items: list[str] | None) -> dict[str, dict[str, Any]]:
    """``["CPUBottleneck.threshold=30", ...]`` -> ``{"CPUBottleneck": {"threshold": "30"}}`` (checked)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        rule, dot, param = key.strip().partition(".")
        if not sep or not dot or not param or not value.strip():
            raise GluonbenchError(f"--rule {item!r}: expected RULE.PARAM=VALUE, e.g. CPUBottleneck.threshold=30")
        if rule not in RULES:
            raise GluonbenchError(f"--rule {item!r}: unknown rule {rule!r}; known: {', '.join(RULES)}")
        out.setdefault(rule, {})[param] = value.strip()
    for rule, params in out.items():
        RULES[rule](**params)  # validates names and types now, before a job runs
    return out


def run_rules(data: Any, overrides: dict[str, dict[str, Any]] | None = None) -> list[RuleReport]:
    """Every rule on ``data`` (a :class:`~gluonbench.profiler.data.ProfileData`), their advice made consistent
    (:func:`reconcile`)."""
    overrides = overrides or {}
    return reconcile([cls(**overrides.get(name, {})).evaluate(data) for name, cls in RULES.items()])


BATCH_SIZE_WHEN_CPU_BOUND = (
    "GPU and GPU memory are lightly used and so is the CPU on average over its cores, but CPUBottleneck found "
    "a core saturated while the GPU idled: the input pipeline is the limit. Follow CPUBottleneck's advice "
    "first (spread preprocessing over more cores); until then a larger batch only makes each step wait longer "
    "for its input."
)


def reconcile(reports: list[RuleReport]) -> list[RuleReport]:
    """Each rule judges alone, as Debugger's do, and fires as they would; where two that fired read the
    machine differently, the advice of the one that would mislead says so. BatchSize averages the CPU over
    its cores: a single-threaded input pipeline on a 16-core GPU machine reads as an idle CPU (measured on an
    H100 machine: ``results/gpu/gpu_monitor_probe-*.md``), while CPUBottleneck sees the saturated core."""
    by_name = {r.rule: r for r in reports}
    batch, cpu = by_name.get("BatchSize"), by_name.get("CPUBottleneck")
    if batch is not None and cpu is not None and batch.triggered and cpu.triggered:
        batch.recommendation = BATCH_SIZE_WHEN_CPU_BOUND
    return reports


__all__ = ["RULES", "Rule", "RuleReport", "parse_overrides", "reconcile", "run_rules"]
