"""Accuracy of ``gluonbench diagnose`` against the seed's rule measured by a plain training loop.

For every pipeline of ``gluonbench.workloads.cases`` (real reads, real CPU work, real model compute;
preprocessing, disk I/O and device-bound cases with 0 and 2 workers; in-memory loader-heavy pipelines; the
seed's MNIST at 0 and 2 workers; and pipelines written as users write them: an ``ImageFolderDataset`` over
JPEGs made here with ``transform_first``, ``gluon.data.vision.MNIST(transform=...)``, encoded bytes decoded by
the transform, a text model over token ids, many tiny samples, storage whose reads wait) this first measures
the ground truth with a plain training loop that overlaps like MXNet's (``benchmarks/ground_truth.py``, the
seed's loop by default, ``--in-flight`` for one that keeps two steps queued: how much faster one reused batch
trains than the full pipeline, and the seed's rule on it), then runs ``diagnose`` on the same case, and
compares.

The score (:func:`score`) counts only the cases whose plain loop is *decisive* (its interval clear of the 5 %
line: ``preprocessing``, ``disk_io`` or ``gpu_io``). The target: no wrong class among them (a diagnosis naming
another class, or failing, is wrong), every committed verdict agreeing, and at most 1 in 10 of them left
undecided (``inconclusive``, at the line included). Cases the plain loop puts at the line, or cannot read, are
reported and not scored. ``--hog N`` keeps N cores busy (N spinning processes, started and ended here) for the
whole run, as on a shared machine; ``--round-order pairs`` runs every diagnosis with ``full`` beside
``cached_batch`` in each round (``Rounds(order="pairs")``). The time to a verdict on the seed's MNIST is printed for reference.

Exit status 1 if the target is missed.

    python benchmarks/diagnose_accuracy.py --quick                 # quick cases, ~5 minutes
    python benchmarks/diagnose_accuracy.py --budget 60 --truth-seconds 60 --hog 1 --out results/benchmarks
    python benchmarks/diagnose_accuracy.py --only imagefolder-jpeg-small-cnn --budget 15 --truth-seconds 15
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from time import perf_counter

import ground_truth

import gluonbench
from gluonbench.env import command_line, environment
from gluonbench.files import atomic_write_text
from gluonbench.workloads.cases import CASES, build

MNIST_TARGET_S = 30.0
DECISIVE = ("preprocessing", "disk_io", "gpu_io")
"""the plain loop's readings that decide a class (its interval clear of the 5 % line); only these are scored"""
UNDECIDED = ("inconclusive", "at_line")
"""diagnose's readings that name no class"""


@dataclass
class Score:
    """The benchmark's target over one run's (case, plain loop's reading, diagnose's reading) rows."""

    decisive: list[str] = field(default_factory=list)
    """cases whose plain loop decided a class: the scored ones"""
    agree: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    """decisive cases whose diagnosis named another class, or failed"""
    undecided: list[str] = field(default_factory=list)
    """decisive cases the diagnosis left inconclusive (at the line included)"""
    not_scored: list[str] = field(default_factory=list)
    """cases the plain loop put at the line or could not read"""

    @property
    def passed(self) -> bool:
        """No wrong class, and at most 1 in 10 of the decisive cases undecided."""
        return bool(self.decisive) and not self.wrong and 10 * len(self.undecided) <= len(self.decisive)

    def summary(self) -> str:
        n = len(self.decisive)
        committed = len(self.agree) + len(self.wrong)
        text = (
            f"decisive cases (plain loop clear of the 5 % line): {n}; committed verdicts agreeing "
            f"{len(self.agree)}/{committed}; wrong {len(self.wrong)}"
            + (f" ({', '.join(self.wrong)})" if self.wrong else "")
            + f"; undecided {len(self.undecided)}/{n}"
            + (f" ({', '.join(self.undecided)})" if self.undecided else "")
            + f" (at most {n // 10} allowed)"
        )
        if self.not_scored:
            text += f"; not scored (plain loop at the line or unclear): {', '.join(self.not_scored)}"
        return text + f"  [{'PASS' if self.passed else 'FAIL'}]"


def score(rows: list[tuple[str, str, str]]) -> Score:
    """Score ``(case, plain loop's reading, diagnose's reading)`` rows: see :class:`Score`.

    A diagnose reading outside the three classes and :data:`UNDECIDED` (``error``: the diagnosis failed or
    refused the pipeline) is wrong on a decisive case.
    """
    s = Score()
    for name, truth, got in rows:
        if truth not in DECISIVE:
            s.not_scored.append(name)
            continue
        s.decisive.append(name)
        if got == truth:
            s.agree.append(name)
        elif got in UNDECIDED:
            s.undecided.append(name)
        else:
            s.wrong.append(name)
    return s


HOG = """
import os, sys
if os.fork():
    os._exit(0)
os.setsid()
parent = {parent}
print(os.getpid(), flush=True)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):  # the launcher's pipes close: subprocess.run returns at once
    os.dup2(null, fd)
n = 0
while True:
    n += 1
    if n % 2000000 == 0:  # about every 0.1 s: ends by itself once the benchmark is gone, even after kill -9
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            os._exit(0)
"""


@contextmanager
def busy_cores(n: int) -> Iterator[list[int]]:
    """``n`` processes spinning on a core each for the duration, as another job's would: not descendants of this
    process (double fork), so no diagnosis counts their CPU as its own pipeline's; each is killed on the way out,
    and ends by itself within a second should this process be killed."""
    pids: list[int] = []
    try:
        for _ in range(n):
            launcher = subprocess.run(
                [sys.executable, "-c", HOG.format(parent=os.getpid())], capture_output=True, text=True, timeout=60
            )
            pids.append(int(launcher.stdout.split()[0]))
        yield pids
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def use_round_order(order: str) -> None:
    """Make this process's diagnoses run their rounds in ``order`` (``Rounds.order``: rotate or pairs).

    For benchmarks only (an A/B of the order, a whole accuracy run in one): ``diagnose`` itself takes no such
    argument, so this sets the field on the ``Rounds`` its module builds.
    """
    import functools

    import gluonbench.diagnosis.run as diagnosis_run
    from gluonbench.engine.measure import Rounds

    diagnosis_run.Rounds = functools.partial(Rounds, order=order)


def reading(d) -> str:
    """The diagnosis in the ground truth's words: its verdict, or ``at_line`` for an inconclusive one at the line."""
    return "at_line" if d.at_line else d.verdict


def _line(name: str, truth: str, d, setup_s: float) -> str:
    gain = d.speedups.get("input", float("nan"))
    lo, hi = d.speedup_ci.get("input", [float("nan")] * 2)
    got = reading(d)
    mark = "ok " if got == truth else "-    " if truth not in DECISIVE or got in UNDECIDED else "WRONG"
    settled = f"{d.settled_s:5.1f}" if d.settled_s is not None else "    -"
    return (
        f"{name:48s} {truth:13s} {got:13s} {mark:5s} reused batch {gain:.2f}x [{lo:.2f}, {hi:.2f}]  "
        f"verdict@{settled} s  ran {d.elapsed_s:5.1f} s ({d.stop_reason}) setup {setup_s:4.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="only the test suite's cases, shorter budgets")
    p.add_argument("--budget", type=float, help="seconds of diagnose per case (default 30; --quick 12)")
    p.add_argument("--truth-seconds", type=float, help="seconds of the plain loop per case (default 30; --quick 12)")
    p.add_argument("--mnist-dir", help="folder of the MNIST files (default: gluonbench's look-up, no download)")
    p.add_argument("--cache", help="folder for the files the cases make (default: a temporary folder)")
    p.add_argument("--only", action="append", default=[], help="run only this case (repeatable)")
    p.add_argument(
        "--in-flight",
        action="store_true",
        help="ground truth by a loop that keeps one step in flight (no per-step nd.waitall(), unlike the seed's)",
    )
    p.add_argument(
        "--hog",
        type=int,
        default=0,
        metavar="N",
        help="keep N cores busy for the whole run (N spinning processes, ended with the run; default 0)",
    )
    p.add_argument(
        "--round-order",
        choices=("rotate", "pairs"),
        help="the order of diagnose's probes within each round (default: the library's, rotate)",
    )
    p.add_argument("--out", help="write diagnose_accuracy-<UTC>.json with every diagnosis into this folder")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    budget = args.budget or (12.0 if args.quick else 30.0)
    truth_s = args.truth_seconds or (12.0 if args.quick else 30.0)
    unknown = sorted(set(args.only) - {c.name for c in CASES})
    if unknown:
        p.error(f"unknown case(s) {', '.join(unknown)}; the cases: {', '.join(c.name for c in CASES)}")
    if not 0 <= args.hog <= 4 * (os.cpu_count() or 1):
        p.error(f"--hog {args.hog} is out of range: give 0..{4 * (os.cpu_count() or 1)} busy processes, e.g. 1")
    cases = [c for c in CASES if (c.quick or not args.quick) and (not args.only or c.name in args.only)]
    if args.round_order:
        use_round_order(args.round_order)

    records, rows, mnist_times = [], [], []
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="gluonbench-cases-") as tmp, busy_cores(args.hog):
        dirs = {"synthetic": args.cache or tmp}
        if args.mnist_dir:
            dirs["mnist"] = args.mnist_dir
        print(f"{'case':48s} {'seed rule':13s} {'verdict':13s}", flush=True)
        for case in cases:
            try:
                gt = ground_truth.measure(case, dirs, truth_s, barrier=not args.in_flight)
            except Exception as exc:  # a case the plain loop cannot train is reported, not scored
                print(f"{case.name:48s} plain loop failed: {type(exc).__name__}: {exc}", flush=True)
                rows.append((case.name, "error", "-"))
                records.append({"case": case.name, "ground_truth_error": f"{type(exc).__name__}: {exc}"})
                continue
            print("  plain loop: " + ground_truth.line(gt), flush=True)
            t0 = perf_counter()
            try:
                kwargs = build(case, dirs)
                setup = perf_counter() - t0
                d = gluonbench.diagnose(ctx="cpu", budget_s=budget, **kwargs)
            except Exception as exc:  # refused or failed: wrong on a decisive case
                why = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                print(f"{case.name:48s} {gt.seed_rule:13s} {'error':13s} diagnose failed: {why}", flush=True)
                rows.append((case.name, gt.seed_rule, "error"))
                records.append({"case": case.name, "ground_truth": gt.to_dict(), "diagnosis_error": why})
                continue
            rows.append((case.name, gt.seed_rule, reading(d)))
            print(_line(case.name, gt.seed_rule, d, setup), flush=True)
            if case.workload == "mnist" and case.net is None and not case.pretransformed and gt.seed_rule in DECISIVE:
                mnist_times.append((case.name, d.settled_s))
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
    result = score(rows)
    print("accuracy: " + result.summary())
    for name, settled in mnist_times:  # reported, no longer a target (issue 17's acceptance was replaced)
        shown = f"{settled:.1f} s" if settled is not None else "no verdict"
        print(f"time to verdict, {name}: {shown} (for reference; {MNIST_TARGET_S:g} s was issue 17's line)")
    load = os.getloadavg()[0]
    print(f"1-minute load average at the end: {load:.2f} on {os.cpu_count()} cores; {args.hog} busy process(es)")
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
                    "started": started.isoformat(),
                    "budget_s": budget,
                    "truth_seconds": truth_s,
                    "hog": args.hog,
                    "round_order": args.round_order or "default",
                    "load_average_end": load,
                    "score": {**asdict(result), "passed": result.passed},
                    "records": records,
                },
                indent=2,
            ),
        )
        print(f"json: {path}")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
