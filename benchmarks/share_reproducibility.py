"""Reproducibility of ``diagnose``'s shares: the same pipeline diagnosed N times in a row.

Runs ``gluonbench diagnose`` on the seed's MNIST pipeline (seed transform, seed CNN, batch 64,
CPU) ``--repeat`` times (default 5), each in a fresh process as a user would, and prints each run's
verdict, the speed-ups the verdict is read from (one reused batch, removing preprocessing, removing
the rest of the input), the shares, and each run's time to a verdict.

Targets (issues 7 and 17):

* every run gives the same verdict;
* every speed-up of every run within +-5 % of the median of the runs;
* time to a verdict on MNIST <= 10 s.
(The shares' spread, in points, is printed for information.) A pipeline that sits at the 5 % line on
this machine has no verdict to reach: every run saying so ("inconclusive, at the line") is one reading,
and the time target does not apply; run ``--workers 2`` for a pipeline with a verdict.

Exit status 1 if a target is missed. Timings are of this machine: run it on a quiet one.

    python benchmarks/share_reproducibility.py                          # 5 runs, 0 workers, 60 s budget
    python benchmarks/share_reproducibility.py --workers 2 --out results/benchmarks
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from diagnose_accuracy import reading

import gluonbench
from gluonbench.env import command_line, environment
from gluonbench.files import atomic_write_text

TOLERANCE = 0.05
VERDICT_TARGET_S = 10.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=5, help="diagnoses in a row (default 5)")
    p.add_argument("--workers", type=int, default=0, help="DataLoader workers (default 0)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--budget", type=float, default=60.0, help="seconds per diagnosis (default 60)")
    p.add_argument("--mnist-dir", help="folder of the MNIST files (default: gluonbench's look-up, no download)")
    p.add_argument("--out", help="write share_reproducibility-<UTC>.json and .txt into this folder")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")

    runs = []
    loads: list[float] = []
    failures: list[str] = []
    for i in range(args.repeat):
        # each diagnosis in a fresh process, as a user runs `gluonbench diagnose` again
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "d.json"
            cmd = [sys.executable, "-m", "gluonbench", "-v", "diagnose", "--workers", str(args.workers), "--ctx", "cpu",
                   "--batch-size", str(args.batch_size), "--budget", str(args.budget), "--json", str(out)]  # fmt: skip
            if args.mnist_dir:
                cmd += ["--data-dir", args.mnist_dir, "--no-download"]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                # the runs before it are kept: the failure is recorded, and it fails the one-verdict target
                print(proc.stderr, file=sys.stderr)
                errors = [line for line in proc.stderr.splitlines() if line.startswith("gluonbench: error:")]
                failures.append(f"run {i + 1} (exit {proc.returncode}): {(errors or ['no error line'])[-1]}")
                continue
            d = gluonbench.Diagnosis.from_dict(json.loads(out.read_text()))
        runs.append(d)
        loads.append(load)
        cells = " ".join(f"{k}={v:.3f}x" for k, v in d.speedups.items() if k in ("input", "preprocessing", "disk_io"))
        cells += " " + " ".join(f"{k}={v * 100:4.1f}%" for k, v in d.shares.items())
        settled = f"{d.settled_s:.1f}" if d.settled_s is not None else "-"
        print(
            f"run {i + 1}: {reading(d):13s} {cells}  verdict@{settled} s  ran {d.elapsed_s:.1f} s ({d.stop_reason}, "
            f"{d.rounds} rounds)  load average before {load:.2f}"
        )

    if not runs:
        return 2
    lines = [f"FAILED {f}" for f in failures]
    worst_gain = 0.0
    for key in ("input", "preprocessing", "disk_io"):
        values = [d.speedups.get(key, float("nan")) for d in runs]
        mid = statistics.median(values)
        dev = max(abs(v / mid - 1) for v in values) if mid > 0 else float("inf")
        worst_gain = max(worst_gain, dev)
        lines.append(
            f"speed-up {key:15s} median {mid:5.3f}x  runs "
            + " ".join(f"{v:5.3f}" for v in values)
            + f"  max distance {dev * 100:4.1f} %"
        )
    worst = 0.0
    table = [{**{f"{k} (share)": v for k, v in d.shares.items()}, **d.stages} for d in runs]
    for key in table[0]:
        values = [row[key] for row in table]
        mid = statistics.median(values)
        dev = max(abs(v - mid) for v in values)
        worst = max(worst, dev)
        lines.append(
            f"{key:25s} median {mid * 100:5.1f} %  runs "
            + " ".join(f"{v * 100:5.1f}" for v in values)
            + f"  max distance {dev * 100:4.1f} points"
        )
    settled = [d.settled_s for d in runs]
    slowest = max((s if s is not None else float("inf")) for s in settled)
    verdicts = sorted({reading(d) for d in runs})
    lines.append(
        f"verdicts: {', '.join(verdicts)}; time to verdict: " + ", ".join(f"{s:.1f}" if s else "-" for s in settled)
    )
    at_line = verdicts == ["at_line"]
    lines.append(
        f"{os.cpu_count()} cores; 1-minute load average before each run: " + ", ".join(f"{x:.2f}" for x in loads)
    )
    ok_verdict = len(verdicts) == 1 and verdicts[0] != "inconclusive" and not failures
    ok_shares = worst_gain <= TOLERANCE
    ok_time = at_line or slowest <= VERDICT_TARGET_S
    if at_line:
        timing = "not applicable (at the line: no verdict to reach)"
    elif slowest < float("inf"):
        timing = f"{'met' if ok_time else 'NOT MET'} (slowest {slowest:.1f} s)"
    else:
        timing = f"NOT MET (no verdict in {settled.count(None)} run(s))"
    lines.append(
        f"target: one verdict in every run: {'met' if ok_verdict else 'NOT MET'} ({', '.join(verdicts)}"
        f"{f'; {len(failures)} run(s) failed' if failures else ''}); "
        f"every speed-up within +-{TOLERANCE * 100:.0f} % of the median: "
        f"{'met' if ok_shares else 'NOT MET'} (worst {worst_gain * 100:.1f} %; shares' worst {worst * 100:.1f} points); "
        f"verdict within {VERDICT_TARGET_S:.0f} s: {timing}"
    )
    ok_shares = ok_shares and ok_verdict
    text = "\n".join(lines)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        record = {
            "command": command_line(),
            "env": environment(),
            "runs": [d.to_dict() for d in runs],
            "load_average_before": loads,
            "failures": failures,
            "summary": text,
            "met": ok_shares and ok_time,
        }
        atomic_write_text(out / f"share_reproducibility-{stamp}.json", json.dumps(record, indent=1))
        atomic_write_text(out / f"share_reproducibility-{stamp}.txt", f"$ {command_line()}\n{text}\n")
    return 0 if ok_shares and ok_time else 1


if __name__ == "__main__":
    sys.exit(main())
