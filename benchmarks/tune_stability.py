"""Is ``gluonbench tune``'s recommendation stable? Five tunes of one pipeline, each a fresh process.

Each run is ``gluonbench tune --json`` (the seed's MNIST pipeline by default), so every run pays its own
start-up as a user's would. Per run: the recommended setting and its *equivalence set* (the settings
the confirmation found within noise of the best, :attr:`gluonbench.tune.TuneResult.within_noise`).

The target (issue #22): the runs recommend the same setting, or each run's equivalence set contains
every other run's pick (the recommendations differ only among settings the tuner itself calls
equivalent). Exit status 1 when it is missed. On a busy machine the sets shrink and grow with the
noise: the load average before and after is printed with the result.

    python benchmarks/tune_stability.py --runs 5 --budget 30 --out results/benchmarks/tune_stability.md
    python benchmarks/tune_stability.py --quick            # 3 runs of 15 s: a smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def one_tune(args: argparse.Namespace, i: int, work: Path) -> dict[str, Any]:
    out = work / f"tune-{i}.json"
    cmd = [sys.executable, "-m", "gluonbench", "tune", "--budget", f"{args.budget:g}", "--json", str(out)]
    cmd += ["--max-workers", str(args.max_workers), *args.tune_args]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=args.budget * 6 + 120)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not out.is_file():
        return {"run": i, "ok": False, "error": (proc.stderr.strip().splitlines() or ["?"])[-1], "wall_s": wall}
    data = json.loads(out.read_text(encoding="utf-8"))
    from gluonbench.tune.result import TuneResult

    r = TuneResult.from_dict(data)
    return {
        "run": i,
        "ok": True,
        "pick": r.recommended.label,
        "equivalent": r.within_noise,
        "samples_per_s": r.samples_per_s,
        "ci": list(r.ci),
        "wall_s": wall,
        "text": r.to_text(),
    }


def judge(rows: list[dict[str, Any]]) -> tuple[bool, list[str]]:
    """Same pick everywhere, or each run's equivalence set holds the others' picks; the misses listed."""
    ok = [r for r in rows if r["ok"]]
    picks = {r["pick"] for r in ok}
    misses = [
        f"run {r['run']} ({r['pick']}) does not count run {o['run']}'s pick {o['pick']} as equivalent"
        for r in ok
        for o in ok
        if o is not r and o["pick"] not in r["equivalent"]
    ]
    return len(ok) == len(rows) and (len(picks) == 1 or not misses), misses


def report(rows: list[dict[str, Any]], args: argparse.Namespace, load: tuple[str, str], passed: bool, misses) -> str:
    lines = [
        "# tune stability: the same pipeline tuned several times",
        "",
        f"`python benchmarks/tune_stability.py {' '.join(sys.argv[1:])}`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} cores; load average before {load[0]}, after {load[1]}.",
        "",
        "| run | recommended | equivalence set (within noise or 5 % of the best) | samples/s [95 % CI] | wall s |",
        "|---:|---|---|---|---:|",
    ]
    for r in rows:
        if not r["ok"]:
            lines.append(f"| {r['run']} | FAILED: {r['error']} | | | {r['wall_s']:.0f} |")
            continue
        lo, hi = r["ci"]
        lines.append(
            f"| {r['run']} | {r['pick']} | {'; '.join(r['equivalent'])} | {r['samples_per_s']:.0f} "
            f"[{lo or float('nan'):.0f}, {hi or float('nan'):.0f}] | {r['wall_s']:.0f} |"
        )
    picks = sorted({r["pick"] for r in rows if r["ok"]})
    lines += [
        "",
        f"picks: {', '.join(picks)}. **{'PASS' if passed else 'FAIL'}**: "
        + (
            "every run recommends the same setting"
            if len(picks) == 1 and passed
            else "each run's equivalence set contains the other runs' picks"
            if passed
            else "; ".join(misses) or "a run failed"
        ),
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="tunes of the same pipeline (default 5)")
    ap.add_argument("--budget", type=float, default=30.0, help="each tune's budget in s (default 30)")
    ap.add_argument("--max-workers", type=int, default=4, help="tune's --max-workers (default 4)")
    ap.add_argument("--quick", action="store_true", help="3 runs of 15 s (a smoke test, not the target)")
    ap.add_argument("--out", help="write the markdown here (and the JSON beside it)")
    ap.add_argument("tune_args", nargs="*", help="more tune arguments after --, e.g. -- --dataset synthetic")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.budget = 3, 15.0
    if args.runs < 2 or args.budget < 10:
        ap.error("--runs must be at least 2 and --budget at least 10")
    load_before = " ".join(f"{v:.2f}" for v in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="gluonbench-tune-stability-") as tmp:
        rows = []
        for i in range(1, args.runs + 1):
            row = one_tune(args, i, Path(tmp))
            rows.append(row)
            print(
                f"run {i}/{args.runs}: "
                + (f"{row['pick']} (equivalent: {'; '.join(row['equivalent'])})" if row["ok"] else row["error"]),
                file=sys.stderr,
                flush=True,
            )
    load_after = " ".join(f"{v:.2f}" for v in os.getloadavg())
    passed, misses = judge(rows)
    text = report(rows, args, (load_before, load_after), passed, misses)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
