"""Accuracy and time-to-verdict of ``gluonbench diagnose``.

Runs ``diagnose`` on every pipeline of ``gluonbench.workloads.cases`` (bottleneck known by
construction: real reads, real CPU work, real model compute; preprocessing, disk I/O and
device-bound cases, with 0 and 2 workers), then on the seed's own MNIST pipeline (seed
transform, seed CNN, batch 64) at 0 and 2 workers, whose verdict is reported as measured.

Prints one line per case and the targets:

* every ground-truth case classified right;
* time to a verdict on the seed's MNIST pipeline <= 30 s (the time from the start of
  ``diagnose`` to the end of the round from which the verdict held; the measurement itself
  goes on until every probe is known to +-5 % or the budget is spent).

Exit status 1 if a target is missed. Timings are of this machine: run it on a quiet one.

    python benchmarks/diagnose_accuracy.py --quick                 # quick cases, ~2 minutes
    python benchmarks/diagnose_accuracy.py --budget 30 --out results/benchmarks
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from time import perf_counter

import gluonbench
from gluonbench.api import diagnose_workload
from gluonbench.env import command_line, environment
from gluonbench.report.store import atomic_write_text
from gluonbench.workloads.cases import CASES, build

MNIST_TARGET_S = 30.0


def _line(name: str, expected: str, d, setup_s: float) -> str:
    shares = " ".join(f"{k[:4]}={v * 100:3.0f}%" for k, v in d.shares.items())
    mark = "" if expected == "-" else ("ok " if d.verdict == expected else "WRONG")
    settled = f"{d.settled_s:5.1f}" if d.settled_s is not None else "    -"
    return (
        f"{name:48s} {expected:13s} {d.verdict:13s} {mark:5s} {shares}  verdict@{settled} s  "
        f"ran {d.elapsed_s:5.1f} s ({d.stop_reason}) setup {setup_s:4.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="only the test suite's cases, shorter budgets")
    p.add_argument("--budget", type=float, help="seconds per ground-truth case (default 30; --quick 12)")
    p.add_argument("--mnist-budget", type=float, default=60.0, help="seconds for the seed's MNIST runs (default 60)")
    p.add_argument("--mnist-dir", help="folder of the MNIST files (default: gluonbench's look-up, no download)")
    p.add_argument("--cache", help="folder for the synthetic files (default: a temporary folder)")
    p.add_argument("--only", action="append", default=[], help="run only this case (repeatable)")
    p.add_argument("--out", help="write diagnose_accuracy-<UTC>.json with every diagnosis into this folder")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    budget = args.budget or (12.0 if args.quick else 30.0)
    cases = [c for c in CASES if (c.quick or not args.quick) and (not args.only or c.name in args.only)]

    with tempfile.TemporaryDirectory(prefix="gluonbench-cases-") as tmp:
        dirs = {"synthetic": args.cache or tmp}
        if args.mnist_dir:
            dirs["mnist"] = args.mnist_dir
        print(f"{'case':48s} {'expected':13s} {'verdict':13s}       shares", flush=True)
        records, right = [], 0
        for case in cases:
            t0 = perf_counter()
            kwargs = build(case, dirs)
            setup = perf_counter() - t0
            d = gluonbench.diagnose(ctx="cpu", budget_s=budget, **kwargs)
            right += d.verdict == case.expected
            print(_line(case.name, case.expected, d, setup), flush=True)
            records.append({"case": case.name, "expected": case.expected, "why": case.why, "diagnosis": d.to_dict()})

        seed_runs = [] if args.only else ([0] if args.quick else [0, 2])
        mnist_times = []
        for workers in seed_runs:
            t0 = perf_counter()
            d = diagnose_workload(
                "mnist", 64, workers, "cpu", args.mnist_budget, data_dir=dirs.get("mnist"), download=False, seed=1
            )
            name = f"seed MNIST pipeline, batch 64, {workers} workers"
            print(_line(name, "-", d, 0.0), flush=True)
            ok = d.verdict != "inconclusive" and d.settled_s is not None and d.settled_s <= MNIST_TARGET_S
            mnist_times.append((workers, d.settled_s, ok))
            records.append({"case": name, "expected": None, "diagnosis": d.to_dict(), "wall_s": perf_counter() - t0})

    print()
    accuracy_ok = right == len(cases)
    print(f"accuracy: {right}/{len(cases)} cases right  [{'PASS' if accuracy_ok else 'FAIL'}: every case right]")
    for workers, settled, ok in mnist_times:
        shown = f"{settled:.1f} s" if settled is not None else "no verdict"
        print(
            f"time to verdict, seed MNIST at {workers} workers: {shown}  "
            f"[{'PASS' if ok else 'FAIL'}: <= {MNIST_TARGET_S:g} s]"
        )
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        path = out / f"diagnose_accuracy-{stamp}.json"
        atomic_write_text(
            path,
            json.dumps(
                {
                    "command": command_line(),
                    "env": environment(),
                    "budget_s": budget,
                    "right": right,
                    "cases": len(cases),
                    "records": records,
                },
                indent=2,
            ),
        )
        print(f"json: {path}")
    return 0 if accuracy_ok and all(ok for _, _, ok in mnist_times) else 1


if __name__ == "__main__":
    sys.exit(main())
