"""What gluonbench's hooks cost a training script's step: the same script with and without them, paired runs.

The script is ``benchmarks/_timed_seed_mnist.py`` (the seed's MNIST CNN at batch 64, a light step) with its own
timer: it prints the median of its step times. Each pair runs it twice in fresh processes, alternating which
goes first: plainly (``python SCRIPT``) and under ``python -m gluonbench.script.boot SCRIPT`` with a run folder
and no control channel, which is how a ``gluonbench diagnose -- python SCRIPT`` run trains in its ``full``
probe: the DataLoader's dataset wrapped in the probes' switch (each worker reads the mode flags for every
sample), every batch handed out through the hooks and followed by their ``nd.waitall()`` barrier, every
``Trainer.step`` reported to them. (The psutil sampler that runs during a diagnosis's probes is not included:
``benchmarks/overhead.py`` bounds its cost by its own CPU time.)

End to end, run-to-run noise on a busy machine can be far larger than 1 %, so the hooks' own work is also timed
directly, in this process, in CPU time of the calling thread (``time.thread_time``, which other programs'
load barely moves): the probes' switch serving 64 samples (against the same dataset without it) and the
driver's bookkeeping for one batch handed out and one ``Trainer.step``, per step of 64 samples. That is an
upper bound on the Python the hooks add to a step, not counting their ``nd.waitall()`` barrier (which only
moves a wait when the script has one of its own, as the seed's loop has).

Each pair gives a ratio (median step with hooks / median step without); the headline is the median of the
ratios with its 95 % interval (distribution-free, ``gluonbench.analysis.stats.median_ci``). Target: the hooks
cost at most 1 % of a step, i.e. a ratio <= 1.01: *pass* when the whole interval is at or below it, *fail*
when it is all above, else *inconclusive* (more pairs, or a quieter machine).

    python benchmarks/script_overhead.py --pairs 5 --steps 300
    python benchmarks/script_overhead.py --pairs 9 --num-workers 1 --no-barrier --out results/benchmarks

With ``--num-workers 0`` (the default) the script loads its batches on its training thread, so every cost the
hooks add (the switch's per-sample flag read included) lies on the step's critical path; with workers, a
loader-bound step can hide the hooks' cost under its wait for the next batch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import weakref
from datetime import UTC, datetime
from pathlib import Path

from gluonbench.analysis.stats import median_ci
from gluonbench.files import atomic_write_text
from gluonbench.script.channel import DIR_ENV, FLAGS
from gluonbench.script.hooks import SLOTS

TARGET = 1.01
SCRIPT = Path(__file__).with_name("_timed_seed_mnist.py")


def run_once(hooked: bool, script_args: list[str], folder: str) -> float:
    """One fresh process of the script, with or without the hooks; its median step time in seconds."""
    env = dict(os.environ)
    if hooked:
        cmd = [sys.executable, "-m", "gluonbench.script.boot", str(SCRIPT), *script_args]
        env[DIR_ENV] = folder
    else:
        cmd = [sys.executable, str(SCRIPT), *script_args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"script_overhead: {' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-500:]}")
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["median_step_s"])


def direct_cost(repeats: int = 2000) -> dict[str, float]:
    """The hooks' own CPU time per step of 64 samples: the switch's 64 lookups and the driver's bookkeeping."""
    import numpy as np
    from mxnet import gluon, nd

    from gluonbench.script.hooks import Driver, Switch

    # a list-backed dataset, so that the switch's own work is not lost in the noise of a costly dataset[i]
    data = gluon.data.SimpleDataset([(np.zeros((1, 28, 28), "float32"), 0.0)] * 256)
    with tempfile.TemporaryDirectory(prefix="gluonbench-overhead-") as folder:
        flags = str(Path(folder, FLAGS))
        Path(flags).write_bytes(bytes(SLOTS))
        switch = Switch(data, flags, 1)

        def per_step(get: object) -> float:
            t0 = time.thread_time()
            for r in range(repeats):
                for i in range(64):
                    get[(r * 64 + i) % 256]  # type: ignore[index]
            return (time.thread_time() - t0) / repeats

        plain_s = min(per_step(data) for _ in range(3))
        switch_s = max(min(per_step(switch) for _ in range(3)) - plain_s, 0.0)
        driver = Driver(None, flags, None)
        loader = gluon.data.DataLoader(data, batch_size=64)
        driver.loaders[1] = weakref.ref(loader)
        driver.last_loader, driver.training, driver.phase = 1, 1, "wait"
        batch = (nd.zeros((64, 1, 28, 28)), nd.zeros((64,)))
        t0 = time.thread_time()
        for _ in range(repeats):
            driver.on_handout(batch, 0.0, loader)
            driver.on_update(None)
        driver_s = (time.thread_time() - t0) / repeats
    return {"switch_s": switch_s, "driver_s": driver_s, "total_s": switch_s + driver_s}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--steps", type=int, default=300, help="timed steps per run (after 30 of warm-up)")
    p.add_argument(
        "--num-workers", type=int, default=0, help="0 (default): the loading on the training thread, as the hooks are"
    )
    p.add_argument("--no-barrier", action="store_true", help="the script without the seed's per-step waitall")
    p.add_argument("--data-dir", default=os.path.join(os.environ.get("GLUONBENCH_DATA", "data"), "mnist"))
    p.add_argument("--out", type=Path, default=None, help="a folder for script_overhead.json")
    args = p.parse_args()
    if not (Path(args.data_dir) / "train-images-idx3-ubyte.gz").exists():
        print(f"script_overhead: no MNIST in {args.data_dir}: give --data-dir or set GLUONBENCH_DATA", file=sys.stderr)
        return 2
    script_args = ["--data-dir", args.data_dir, "--steps", str(args.steps), "--num-workers", str(args.num_workers)]
    if args.no_barrier:
        script_args.append("--no-barrier")
    started = datetime.now(UTC)
    pairs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="gluonbench-overhead-") as folder:
        Path(folder, FLAGS).write_bytes(bytes(SLOTS))  # every loader in mode 0 (full), as between probes
        for i in range(args.pairs):
            order = (False, True) if i % 2 == 0 else (True, False)
            got = {hooked: run_once(hooked, script_args, folder) for hooked in order}
            pair = {"plain_s": got[False], "hooked_s": got[True], "ratio": got[True] / got[False]}
            pairs.append(pair)
            print(
                f"pair {i + 1}: plain {pair['plain_s'] * 1e3:.2f} ms, hooks {pair['hooked_s'] * 1e3:.2f} ms a step, "
                f"ratio {pair['ratio']:.4f}",
                flush=True,
            )
    direct = direct_cost()
    plain_step = statistics.median(q["plain_s"] for q in pairs)
    print(
        f"the hooks' own CPU time a step (thread_time): switch {direct['switch_s'] * 1e6:.1f} us + driver "
        f"{direct['driver_s'] * 1e6:.1f} us = {direct['total_s'] * 1e6:.1f} us, "
        f"{direct['total_s'] / plain_step * 100:.3f} % of the plain median step ({plain_step * 1e3:.1f} ms)"
    )
    ratios = [q["ratio"] for q in pairs]
    med = statistics.median(ratios)
    lo, hi = median_ci(ratios)
    verdict = (
        "inconclusive" if len(ratios) < 3 else "pass" if hi <= TARGET else "fail" if lo > TARGET else "inconclusive"
    )
    load = os.getloadavg()
    print(
        f"hooks / plain, median of {len(ratios)} pairs: {med:.4f} [95 % CI {lo:.4f}, {hi:.4f}] "
        f"(target <= {TARGET}): {verdict}; load average {load[0]:.1f}"
    )
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        result = {
            "benchmark": "script_overhead",
            "started": started.isoformat(timespec="seconds"),
            "command": " ".join([sys.executable, *sys.argv]),
            "load_average": load,
            "pairs": pairs,
            "median_ratio": med,
            "ci": [lo, hi],
            "target": TARGET,
            "verdict": verdict,
            "direct": direct,
            "direct_share_of_step": direct["total_s"] / plain_step,
        }
        atomic_write_text(args.out / "script_overhead.json", json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
