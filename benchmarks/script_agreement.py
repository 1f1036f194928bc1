"""Does ``gluonbench diagnose -- python train.py`` agree with the script's own plain loop?

Three training scripts of the usual shape, each with a known bottleneck (``benchmarks/_agreement_train.py`` with
its arguments: per-sample CPU work in the transform, a slow ``dataset[i]``, a wide model). For each, in each
condition (``quiet``: nothing else started; ``busy``: one process hashing on one core throughout):

1. the *truth*: the script times its own loop (``--own-timer``: its own timer and its own switches, the full
   loader, the transform swapped for a ready sample, one reused batch; no gluonbench code in it) and the
   seed's rule is applied to those figures (``benchmarks/ground_truth.seed_rule``: the 95 % interval of the
   reused batch's speed-up against the 5 % line, the input stage whose removal saves the most);
2. ``--diagnoses`` runs of ``gluonbench diagnose --budget B --json F -- python _agreement_train.py ARGS``, each
   a fresh process, unmodified script.

A diagnosis *agrees* when its verdict is the truth's; a truth at the line (``at_line``/``unclear``) counts no
diagnosis either way. For a clear case, the time a diagnosis took to settle (its rounds' elapsed seconds, the
script's start not included) is reported against the 10 s target.

    python benchmarks/script_agreement.py --out results/benchmarks                  # quiet and busy, 3 each
    python benchmarks/script_agreement.py --conditions busy --diagnoses 1 --budget 30 --only preprocessing
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ground_truth import seed_rule

from gluonbench.analysis.stats import median, median_ci
from gluonbench.files import atomic_write_text

SCRIPT = Path(__file__).with_name("_agreement_train.py")
SETTLE_TARGET_S = 10.0
CASES: dict[str, list[str]] = {
    "preprocessing": ["--transform-work", "12"],
    "disk_io": ["--read-ms", "5"],
    "gpu_io": ["--width", "64", "--contexts", "2", "--light-input"],
}
"""the expected bottleneck -> the script's arguments that make it so (the truth is measured, not assumed)"""


def _hog() -> subprocess.Popen:
    code = "import hashlib\nd=b'x'*16384\nwhile True:\n    d=hashlib.blake2b(d).digest()*256\n"
    return subprocess.Popen([sys.executable, "-c", code])


def _paired(a: list[float], b: list[float]) -> tuple[float, float, float]:
    ratios = [x / y for x, y in zip(a, b, strict=True) if x > 0 and y > 0]
    lo, hi = median_ci(ratios)
    return median(ratios), lo, hi


def truth(args: list[str], rounds: int) -> dict[str, Any]:
    """The script's own loop, timed by itself, and the seed's rule on it."""
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--own-timer", str(rounds), *args], capture_output=True, text=True, timeout=900
    )
    if proc.returncode != 0:
        raise RuntimeError(f"own timer failed: {proc.stderr[-800:]}")
    times = json.loads(proc.stdout.strip().splitlines()[-1])["own_timer"]
    step_ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    reuse = _paired(times["full"], times["reused"])
    return {"rule": seed_rule(reuse, step_ms), "reuse_speedup": list(reuse), "step_ms": step_ms, "rounds": rounds}


def diagnosis(args: list[str], budget: float, work: Path) -> dict[str, Any]:
    """One ``gluonbench diagnose -- python SCRIPT ARGS`` in a fresh process: its verdict and how long it took."""
    out = work / f"d{time.monotonic_ns()}.json"
    cmd = [sys.executable, "-m", "gluonbench", "diagnose", "--budget", f"{budget:g}", "--json", str(out),
           "--out", str(work / "runs"), "--", sys.executable, str(SCRIPT), *args]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=budget * 4 + 300)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not out.exists():
        return {"verdict": "error", "error": proc.stderr.strip().splitlines()[-1:] or ["?"], "wall_s": wall}
    d = json.loads(out.read_text())
    return {
        "verdict": d.get("verdict"),
        "elapsed_s": d.get("elapsed_s"),
        "rounds": d.get("rounds"),
        "settled_s": d.get("settled_s"),
        "stop_reason": d.get("stop_reason"),
        "input_speedup": (d.get("speedups") or {}).get("input"),
        "wall_s": wall,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--conditions", default="quiet,busy", help="quiet, busy or both (default quiet,busy)")
    p.add_argument("--diagnoses", type=int, default=3, help="diagnoses per case and condition (default 3)")
    p.add_argument("--budget", type=float, default=60.0, help="each diagnosis's --budget in seconds (default 60)")
    p.add_argument("--rounds", type=int, default=8, help="rounds of the script's own timer (default 8)")
    p.add_argument("--only", choices=sorted(CASES), action="append", help="only this case (repeatable)")
    p.add_argument("--out", type=Path, default=None, help="a folder for script_agreement-<UTC>.json")
    a = p.parse_args(argv)
    conditions = [c.strip() for c in a.conditions.split(",") if c.strip()]
    if not conditions or set(conditions) - {"quiet", "busy"} or a.diagnoses < 1 or a.budget <= 0 or a.rounds < 3:
        print("script_agreement: --conditions quiet,busy; --diagnoses >= 1; --budget > 0; --rounds >= 3",
              file=sys.stderr)  # fmt: skip
        return 2
    started = datetime.now(UTC)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gluonbench-agreement-") as tmp:
        for condition in conditions:
            for expected, args in CASES.items():
                if a.only and expected not in a.only:
                    continue
                hog = _hog() if condition == "busy" else None
                try:
                    t = truth(args, a.rounds)
                    runs = [diagnosis(args, a.budget, Path(tmp)) for _ in range(a.diagnoses)]
                finally:
                    if hog is not None:
                        hog.kill()
                        hog.wait()
                clear = t["rule"] in ("preprocessing", "disk_io", "gpu_io")
                agree = sum(r["verdict"] == t["rule"] for r in runs) if clear else None
                settle = [r.get("settled_s") or r.get("elapsed_s") for r in runs if r.get("elapsed_s") is not None]
                row = {
                    "condition": condition, "case": expected, "script_args": args, "truth": t, "diagnoses": runs,
                    "agree": agree, "of": len(runs) if clear else 0,
                    "settle_s_max": max(settle) if settle else None, "load_average": os.getloadavg()[0],
                }  # fmt: skip
                results.append(row)
                print(
                    f"{condition:5} {expected:13} truth {t['rule']:13} (own reuse speed-up "
                    f"{t['reuse_speedup'][0]:.2f}x [{t['reuse_speedup'][1]:.2f}, {t['reuse_speedup'][2]:.2f}]); "
                    f"diagnoses {', '.join(str(r['verdict']) for r in runs)}; agree "
                    f"{'-' if agree is None else f'{agree}/{len(runs)}'}; settled in "
                    f"{', '.join(f'{s:.0f}' for s in settle) or '-'} s",
                    flush=True,
                )
    agreed = sum(r["agree"] or 0 for r in results)
    counted = sum(r["of"] for r in results)
    settled = [r["settle_s_max"] for r in results if r["of"] and r["settle_s_max"] is not None]
    print(
        f"agreement: {agreed}/{counted} diagnoses of clear cases; slowest clear case settled in "
        f"{max(settled):.0f} s (target {SETTLE_TARGET_S:.0f} s)"
        if settled
        else f"agreement: {agreed}/{counted}"
    )
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        doc = {
            "benchmark": "script_agreement",
            "started": started.isoformat(timespec="seconds"),
            "command": " ".join([sys.executable, *sys.argv]),
            "cores": os.cpu_count(),
            "results": results,
            "agreed": agreed,
            "counted": counted,
            "settle_target_s": SETTLE_TARGET_S,
        }
        path = a.out / f"script_agreement-{started:%Y%m%dT%H%M%SZ}.json"
        atomic_write_text(path, json.dumps(doc, indent=2) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
