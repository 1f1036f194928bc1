"""A/B of two gluonbench checkouts on one ground-truth case: ``diagnose`` from each, interleaved.

A change to how the probes are measured must not move what they read. This diagnoses one case of
``gluonbench.workloads.cases`` with checkout A and checkout B in turn (A B, then B A, ...), each run in a
fresh process that imports gluonbench from its checkout, and prints each run's reading, the input
speed-up with its 95 % CI, its rounds and its time to a verdict, then the medians per checkout.
Interleaving puts both checkouts under the same background load; on a 2-core VM one pair cannot show a
bias under the rounds' noise: read several pairs, and the case's plain loop (``diagnose_accuracy.py``).

    git worktree add /tmp/before HEAD~2
    python benchmarks/ab_checkouts.py --case mnist-seed-2workers --a /tmp/before --b . --pairs 2 \\
        --mnist-dir ../shared/data/mnist --out results/benchmarks

An A/B of the rounds' order alone (one checkout, ``Rounds(order=...)`` set for each arm's diagnoses; the
summary gives each arm's median width of the reused batch's 95 % interval)::

    python benchmarks/ab_checkouts.py --case synthetic-heavy-model --a . --b . --order-a rotate --order-b pairs
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from gluonbench.env import command_line
from gluonbench.files import atomic_write_text
from gluonbench.workloads.cases import CASES

RUN = """
import json, sys
sys.path[:0] = [{root!r}, {root!r} + "/benchmarks"]
import gluonbench
from diagnose_accuracy import reading
from gluonbench.workloads.cases import CASES, build
case = next(c for c in CASES if c.name == {case!r})
if {hash_rate!r} and (case.options or {{}}).get("cpu_ms"):  # the same work per sample in every run
    import dataclasses
    case = dataclasses.replace(case, options={{**case.options, "hash_rate": {hash_rate!r}}})
if {order!r}:  # the rounds' order for this run only: diagnose's own Rounds with the order field set
    from diagnose_accuracy import use_round_order
    use_round_order({order!r})
d = gluonbench.diagnose(ctx="cpu", budget_s={budget!r}, **build(case, {dirs!r}))
print(json.dumps({{"reading": reading(d), "input": d.speedups.get("input"), "order": {order!r} or "default",
    "ci": d.speedup_ci.get("input"), "settled_s": d.settled_s, "rounds": d.rounds, "elapsed_s": d.elapsed_s,
    "stop": d.stop_reason, "steps": {{k: p.steps for k, p in d.probes.items()}}}}))
"""


def _width(run: dict) -> float:
    """The width of a run's 95 % interval of the reused batch's speed-up, in log units (hi/lo as a log)."""
    lo, hi = run["ci"]
    return math.log(hi / lo) if lo and hi and lo > 0 else math.inf


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", required=True, help="a case of gluonbench.workloads.cases, e.g. mnist-seed-2workers")
    p.add_argument("--a", required=True, help="checkout A (a folder with gluonbench/ in it)")
    p.add_argument("--b", required=True, help="checkout B")
    p.add_argument("--pairs", type=int, default=2, help="A/B pairs, in alternating order (default 2)")
    p.add_argument("--budget", type=float, default=60.0, help="seconds per diagnosis (default 60)")
    p.add_argument("--mnist-dir", help="folder of the MNIST files (default: gluonbench's look-up, no download)")
    p.add_argument("--out", help="write ab_checkouts-<case>-<UTC>.json into this folder")
    for arm in ("a", "b"):
        p.add_argument(
            f"--order-{arm}",
            choices=("rotate", "pairs"),
            help=f"the rounds' order for checkout {arm.upper()}'s diagnoses (default: the checkout's own); with "
            "--a and --b the same checkout this is an A/B of the order alone",
        )
    p.add_argument(
        "--hash-rate",
        default="auto",
        help="a synthetic case's cpu_ms calibration (hashing rounds per ms) given to every run, so each does the same "
        "work per sample: auto (default: calibrated once here), a number, or 0 (each run calibrates itself, as "
        "checkouts before the hash_rate option must)",
    )
    args = p.parse_args(argv)
    roots = {"A": str(Path(args.a).resolve()), "B": str(Path(args.b).resolve())}
    for name, root in roots.items():
        if not (Path(root) / "gluonbench" / "__init__.py").is_file():
            p.error(f"--{name.lower()} {root}: no gluonbench/ there; give a checkout of this repository")
    if not 1 <= args.pairs <= 50:
        p.error("--pairs must be 1..50")
    if not (math.isfinite(args.budget) and 2 <= args.budget <= 3600):
        p.error(f"--budget {args.budget:g} is out of range: give 2..3600 seconds, e.g. 60")
    out = Path(args.out) if args.out else None
    if out is not None:  # before an hour of diagnoses, not after
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            p.error(f"--out {out}: {exc.strerror}; give a folder you can write")
        if not os.access(out, os.W_OK):
            p.error(f"--out {out} is not writable; give a folder you can write")
    try:
        hash_rate = 0.0 if args.hash_rate == "0" else float(args.hash_rate) if args.hash_rate != "auto" else None
    except ValueError:
        p.error(f"--hash-rate {args.hash_rate!r}: give auto, 0 or a number of rounds per ms, e.g. 33")
    if hash_rate is None:
        from gluonbench.workloads.synthetic import hash_rounds_per_ms

        hash_rate = round(hash_rounds_per_ms(), 3)
    if hash_rate and not 1 <= hash_rate <= 1e6:
        p.error(f"--hash-rate {hash_rate:g} is out of range: give 1..10^6 rounds per ms, or 0")
    names = [c.name for c in CASES]
    if args.case not in names:
        p.error(f"unknown case {args.case!r}; the cases: {', '.join(names)}")

    # A B, then B A, ...: a drift in the machine's speed reaches both checkouts alike
    order = [(i + 1, arm) for i in range(args.pairs) for arm in (("A", "B") if i % 2 == 0 else ("B", "A"))]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # each run imports its own checkout
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="gluonbench-ab-") as tmp:
        dirs = {"synthetic": tmp}
        if args.mnist_dir:
            dirs["mnist"] = str(Path(args.mnist_dir).resolve())
        for pair, arm in order:
            order_of = args.order_a if arm == "A" else args.order_b
            code = RUN.format(
                root=roots[arm], case=args.case, budget=args.budget, dirs=dirs, hash_rate=hash_rate, order=order_of
            )
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                print(proc.stderr[-2000:], file=sys.stderr)
                print(f"{arm}: the diagnosis failed (exit {proc.returncode}); the runs before it are kept")
                break
            r = {"arm": arm, "pair": pair, **json.loads(proc.stdout.strip().splitlines()[-1])}
            runs.append(r)
            lo, hi = r["ci"]
            settled = f"{r['settled_s']:.1f} s" if r["settled_s"] is not None else "-"
            print(
                f"{arm} ({r['order']}) {r['reading']:13s} reused batch {r['input']:.3f}x [{lo:.3f}, {hi:.3f}]  "
                f"{r['rounds']} rounds  verdict@{settled}  ({r['stop']} after {r['elapsed_s']:.1f} s)",
                flush=True,
            )
    for arm in ("A", "B"):
        mine = [r for r in runs if r["arm"] == arm]
        if mine:
            print(
                f"{arm} ({roots[arm]}): median reused batch {statistics.median(r['input'] for r in mine):.3f}x, "
                f"median rounds {statistics.median(r['rounds'] for r in mine):g}, "
                f"median width of its 95 % interval {statistics.median(_width(r) for r in mine):.3f} "
                f"(in log units), "
                f"readings {', '.join(r['reading'] for r in mine)}"
            )
    if out is not None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        path = out / f"ab_checkouts-{args.case}-{stamp}.json"
        atomic_write_text(
            path,
            json.dumps(
                {
                    "command": command_line(),
                    "checkouts": roots,
                    "orders": {"A": args.order_a, "B": args.order_b},
                    "hash_rate": hash_rate,
                    "load_average": os.getloadavg(),
                    "runs": runs,
                },
                indent=1,
            ),
        )
        print(f"json: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
