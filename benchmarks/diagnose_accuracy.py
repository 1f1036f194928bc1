"""Accuracy and time-to-verdict of ``gluonbench diagnose`` against the seed's rule.

For every pipeline of ``gluonbench.workloads.cases`` (real reads, real CPU work, real model
compute; preprocessing, disk I/O and device-bound cases with 0 and 2 workers; in-memory loader-heavy
pipelines with a light model and with a model costing about as much as the loader; the seed's MNIST
at 0 and 2 workers) this first measures the ground truth with a plain training loop that overlaps
like MXNet's (``benchmarks/ground_truth.py``, the seed's loop by default, ``--in-flight`` for one that
keeps two steps queued: how much faster one reused batch trains than the full pipeline, and the seed's
rule on it), then runs ``diagnose`` on the same case, and compares.

Prints one line per case and the targets:

* the verdict agrees with the seed's rule on every case (``gpu_io`` only when reusing one batch
  gains nothing; the input stage whose removal gains the most when the gain's CI lies above the 5 %
  line). A case whose plain loop gains beyond the noise with a CI across the line sits *at the line* on
  this machine: the diagnosis agrees when it says so too (``inconclusive``, reading ``at_line``). A case
  whose ground truth is ``unclear`` (too noisy to read) fails the run: rerun it quieter;
* time to a verdict on the seed's MNIST pipeline <= 30 s (not applicable where that case sits at the line).

Exit status 1 if a target is missed. Timings are of this machine: run it on a quiet one.

    python benchmarks/diagnose_accuracy.py --quick                 # quick cases, ~5 minutes
    python benchmarks/diagnose_accuracy.py --budget 30 --truth-seconds 30 --out results/benchmarks
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from time import perf_counter

import ground_truth

import gluonbench
from gluonbench.env import command_line, environment
from gluonbench.report.store import atomic_write_text
from gluonbench.workloads.cases import CASES, build

MNIST_TARGET_S = 30.0


def reading(d) -> str:
    """The diagnosis in the ground truth's words: its verdict, or ``at_line`` for an inconclusive one at the line."""
    return "at_line" if d.at_line else d.verdict


def _line(name: str, truth: str, d, setup_s: float) -> str:
    gain = d.speedups.get("input", float("nan"))
    lo, hi = d.speedup_ci.get("input", [float("nan")] * 2)
    mark = "ok " if reading(d) == truth else "WRONG"
    settled = f"{d.settled_s:5.1f}" if d.settled_s is not None else "    -"
    return (
        f"{name:48s} {truth:13s} {reading(d):13s} {mark:5s} reused batch {gain:.2f}x [{lo:.2f}, {hi:.2f}]  "
        f"verdict@{settled} s  ran {d.elapsed_s:5.1f} s ({d.stop_reason}) setup {setup_s:4.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="only the test suite's cases, shorter budgets")
    p.add_argument("--budget", type=float, help="seconds of diagnose per case (default 30; --quick 12)")
    p.add_argument("--truth-seconds", type=float, help="seconds of the plain loop per case (default 30; --quick 12)")
    p.add_argument("--mnist-dir", help="folder of the MNIST files (default: gluonbench's look-up, no download)")
    p.add_argument("--cache", help="folder for the synthetic files (default: a temporary folder)")
    p.add_argument("--only", action="append", default=[], help="run only this case (repeatable)")
    p.add_argument(
        "--in-flight",
        action="store_true",
        help="ground truth by a loop that keeps one step in flight (no per-step nd.waitall(), unlike the seed's)",
    )
    p.add_argument("--out", help="write diagnose_accuracy-<UTC>.json with every diagnosis into this folder")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    budget = args.budget or (12.0 if args.quick else 30.0)
    truth_s = args.truth_seconds or (12.0 if args.quick else 30.0)
    unknown = sorted(set(args.only) - {c.name for c in CASES})
    if unknown:
        p.error(f"unknown case(s) {', '.join(unknown)}; the cases: {', '.join(c.name for c in CASES)}")
    cases = [c for c in CASES if (c.quick or not args.quick) and (not args.only or c.name in args.only)]

    records, right, unclear, at_line, mnist_times = [], 0, [], [], []
    with tempfile.TemporaryDirectory(prefix="gluonbench-cases-") as tmp:
        dirs = {"synthetic": args.cache or tmp}
        if args.mnist_dir:
            dirs["mnist"] = args.mnist_dir
        print(f"{'case':48s} {'seed rule':13s} {'verdict':13s}", flush=True)
        for case in cases:
            gt = ground_truth.measure(case, dirs, truth_s, barrier=not args.in_flight)
            print("  plain loop: " + ground_truth.line(gt), flush=True)
            t0 = perf_counter()
            kwargs = build(case, dirs)
            setup = perf_counter() - t0
            d = gluonbench.diagnose(ctx="cpu", budget_s=budget, **kwargs)
            right += reading(d) == gt.seed_rule
            if gt.seed_rule == "unclear":
                unclear.append(case.name)
            print(_line(case.name, gt.seed_rule, d, setup), flush=True)
            if gt.seed_rule == "at_line":
                at_line.append(case.name)
            elif case.workload == "mnist" and case.net is None and not case.pretransformed:
                ok = d.verdict != "inconclusive" and d.settled_s is not None and d.settled_s <= MNIST_TARGET_S
                mnist_times.append((case.name, d.settled_s, ok))
            records.append(
                {
                    "case": case.name,
                    "by_construction": case.expected,
                    "why": case.why,
                    "ground_truth": gt.to_dict(),
                    "diagnosis": d.to_dict(),
                }
            )

    print()
    accuracy_ok = right == len(cases) and not unclear
    print(
        f"accuracy: {right}/{len(cases)} verdicts agree with the seed's rule measured by the plain loop"
        + (f"; ground truth unclear on {', '.join(unclear)} (rerun on a quieter machine)" if unclear else "")
        + (f"; at the line on this machine: {', '.join(at_line)}" if at_line else "")
        + f"  [{'PASS' if accuracy_ok else 'FAIL'}: every case agrees]"
    )
    for name in at_line:
        print(f"time to verdict, {name}: not applicable (the case sits at the line here)")
    for name, settled, ok in mnist_times:
        shown = f"{settled:.1f} s" if settled is not None else "no verdict"
        print(f"time to verdict, {name}: {shown}  [{'PASS' if ok else 'FAIL'}: <= {MNIST_TARGET_S:g} s]")
    print(f"1-minute load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
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
                    "truth_seconds": truth_s,
                    "right": right,
                    "cases": len(cases),
                    "unclear": unclear,
                    "at_line": at_line,
                    "records": records,
                },
                indent=2,
            ),
        )
        print(f"json: {path}")
    return 0 if accuracy_ok and all(ok for _, _, ok in mnist_times) else 1


if __name__ == "__main__":
    sys.exit(main())
