"""Build recorded profiles (real files in SageMaker Debugger's layout) for the rule tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gluonbench.monitor.node import MetricRow
from gluonbench.profiler.formats import SystemWriter, TraceWriter

T0 = 1_700_000_000.0


def write_system(
    root: Path,
    n: int,
    values: Callable[[int], dict[tuple[str, str, str], float]],
    interval: float = 0.5,
    node_id: str = "algo-1",
    end: float | None = None,
) -> Path:
    """``n`` snapshots; ``values(i)`` maps (type, name, dimension) to the value at snapshot ``i``."""
    out = root / "profiler-output"
    w = SystemWriter(out, node_id, flush_s=1e9)
    for i in range(n):
        ts = T0 + i * interval
        w.add([MetricRow(ts, t, name, dim, float(v)) for (t, name, dim), v in values(i).items()])
    w.close(end if end is not None else T0 + n * interval)
    return root


def cpu_gpu(cpu: float, gpu: float, iowait: float = 0.0, gpu_mem: float = 50.0, cores: int = 2, gpus: int = 1):
    row = {}
    for c in range(cores):
        row[("cpu", f"cpu{c}", "CPUUtilization")] = cpu
        row[("cpu", f"cpu{c}", "I/OWaitPercentage")] = iowait
    for g in range(gpus):
        row[("gpu", f"gpu{g}", "GPUUtilization")] = gpu
        row[("gpu", f"gpu{g}", "GPUMemoryUtilization")] = gpu_mem
    row[("memory", "MemoryUsedPercent", "")] = 40.0
    return row


def write_steps(
    root: Path,
    durations: list[float],
    waits: list[float] | None = None,
    start: float = T0 + 1.0,
    phase: str = "TRAIN",
    hooks: bool = True,
) -> Path:
    """Step events as the hooks write them (Chrome trace, microseconds since the epoch)."""
    path = root / "profiler-output" / "framework" / "pevents" / "2023111422" / "1_1-algo-1_gluonbench_timeline.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tw = TraceWriter(path)
    events = []
    if hooks:
        events.append({"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "gluonbench hooks"}})
    t = start
    for i, d in enumerate(durations):
        w = waits[i] if waits else 0.0
        t += w
        events.append(
            {
                "name": f"Step:ModeKeys.{phase}",
                "cat": "step",
                "ph": "X",
                "ts": t * 1e6,
                "dur": d * 1e6,
                "pid": 1,
                "tid": 0,
                "args": {"step_num": i, "data_wait_us": w * 1e6},
            }
        )
        t += d
    tw.write(events)
    return root
