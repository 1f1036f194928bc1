"""Overhead of ``gluonbench profile``, as ratios measured in one run (targets: both <= 1 %).

1. **Sampler**: the system sampler (``NodeMonitor``: per-core CPU and iowait, memory, disk,
   network, GPUs, the process tree's CPU and PSS, written in Debugger's layout) samples this
   process every ``--interval`` ms while it trains the seed's MNIST model. Its cost is the
   sampling thread's own CPU time (``time.thread_time``) over the wall time: the share of one
   core it takes. Target: <= 1 % at 500 ms.
2. **Step hook**: ``with gluonbench.profiler.step():`` plus ``gluonbench.profiler.wrap(loader)``'s
   per-batch timing, recording into a real profile folder (events written every few seconds),
   timed over ``--hook-steps`` empty steps; divided by the seed's median step time (batch 64,
   0 workers, from ``engine.loop.run_steps``, the one timer) measured in the same run.
   Target: <= 1 %.

Both are ratios of figures taken in the same process minutes apart; on a shared machine the
seed's step time moves with the load (noted in the output as the load average).

    python benchmarks/profile_overhead.py --seconds 30 --json results/benchmarks/profile_overhead.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gluonbench.files import atomic_write_text

TARGET = 0.01


def seed_steps(data_dir: str | None, seconds: float, max_steps: int) -> tuple[list[float], int]:
    """Train the seed's MNIST model (batch 64, 0 workers) for about ``seconds``; per-step seconds."""
    from gluonbench._mx import gluon, mx
    from gluonbench.engine.loop import run_steps
    from gluonbench.pipeline.stages import ModelStep
    from gluonbench.workloads.mnist import mnist

    w = mnist(data_dir, download=False)
    loader = gluon.data.DataLoader(w.dataset.transform(w.transform), 64, shuffle=True, num_workers=0)
    net = w.make_net()
    net.initialize(w.initializer(), ctx=mx.cpu())
    step = ModelStep(net, w.make_loss(), gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}))
    steps: list[float] = []
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end and len(steps) < max_steps:
        times = run_steps(loader, mx.cpu(), step, max_steps=min(50, max_steps - len(steps)))
        steps += times.steps(skip=1)
    return steps, len(steps)


def sampler_cost(interval_ms: int, data_dir: str | None, seconds: float, out: Path) -> dict:
    from gluonbench.monitor.node import NodeMonitor
    from gluonbench.profiler.formats import SystemWriter

    writer = SystemWriter(out / "profiler-output")
    mon = NodeMonitor(os.getpid(), interval_ms / 1000, writer.add)
    mon.start()
    steps, n = seed_steps(data_dir, seconds, 10**9)
    summary = mon.stop()
    writer.close()
    return {
        "interval_ms": interval_ms,
        "wall_s": round(summary.duration_s, 3),
        "samples": summary.samples,
        "rows_written": writer.rows_written,
        "sampler_cpu_s": round(summary.monitor_cpu_s, 4),
        "share_of_one_core": summary.monitor_cpu_s / summary.duration_s,
        "per_sample_ms": 1e3 * summary.monitor_cpu_s / max(summary.samples, 1),
        "seed_steps_meanwhile": n,
        "seed_step_median_s": statistics.median(steps) if steps else None,
    }


def hook_cost(n: int, out: Path) -> dict:
    from gluonbench.profiler import hooks

    def loop() -> float:
        items = range(n)
        t0 = time.perf_counter()
        for _ in hooks.wrap(items):
            with hooks.step():
                pass
        return (time.perf_counter() - t0) / n

    os.environ.pop(hooks.PROFILE_ENV, None)
    hooks.reset()
    off = min(loop() for _ in range(3))
    os.environ[hooks.PROFILE_ENV] = str(out / "profiler-output")
    hooks.reset()
    on = min(loop() for _ in range(3))
    hooks.reset()
    os.environ.pop(hooks.PROFILE_ENV, None)
    return {"steps": n, "hook_s_per_step": on, "noop_s_per_step": off}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", help="MNIST IDX folder (default: gluonbench's look-up)")
    ap.add_argument("--interval", type=int, default=500, help="sampling interval, ms (default 500)")
    ap.add_argument("--seconds", type=float, default=30.0, help="training time under the sampler (default 30)")
    ap.add_argument("--hook-steps", type=int, default=20000, help="empty steps timed with the hooks (default 20000)")
    ap.add_argument("--json", help="also write the figures as JSON to this file")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is not met")
    args = ap.parse_args(argv)

    from gluonbench.env import command_line, environment

    with tempfile.TemporaryDirectory(prefix="gluonbench-profile-bench-") as tmp:
        load0 = os.getloadavg()
        sampler = sampler_cost(args.interval, args.data_dir, args.seconds, Path(tmp) / "sampler")
        hooks = hook_cost(args.hook_steps, Path(tmp) / "hooks")
        seed_step = sampler["seed_step_median_s"]
        result = {
            "command": command_line(),
            "environment": environment(),
            "load_average_before_after": [round(load0[0], 2), round(os.getloadavg()[0], 2)],
            "sampler": sampler,
            "hooks": hooks,
            "ratios": {
                "sampler_share_of_one_core": sampler["share_of_one_core"],
                "hook_share_of_seed_step": hooks["hook_s_per_step"] / seed_step,
            },
            "targets": {"sampler_share_of_one_core": TARGET, "hook_share_of_seed_step": TARGET},
        }
    r = result["ratios"]
    ok = all(r[k] <= TARGET for k in r)
    print(
        f"sampler at {args.interval} ms: {100 * r['sampler_share_of_one_core']:.3f} % of one core "
        f"({sampler['per_sample_ms']:.2f} ms CPU per sample, {sampler['samples']} samples, {sampler['wall_s']:.1f} s)\n"
        f"step hook: {1e6 * hooks['hook_s_per_step']:.2f} us per step (no profile: {1e6 * hooks['noop_s_per_step']:.2f} us) "
        f"= {100 * r['hook_share_of_seed_step']:.4f} % of the seed's median step ({1e3 * seed_step:.1f} ms)\n"
        f"load average {result['load_average_before_after']} (a shared machine: other jobs ran meanwhile)"
    )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.json, json.dumps(result, indent=2) + "\n")
    print(f"targets {'met' if ok else 'NOT met'} (<= {100 * TARGET:g} % each)", file=sys.stderr)
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
