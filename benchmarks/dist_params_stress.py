"""Run many short 2-worker ``dist_sync`` jobs and count those whose workers end with different parameters.

Each job is ``gluonbench sweep --kvstore dist_sync --hosts 2 --servers 1`` on 127.0.0.1 (scheduler, one
server, two workers) training the seed's CNN for ``--steps`` steps of ``--batch-size``; the job record's
``params_identical`` (SHA-256 of every parameter, compared between the workers) is what is counted. A
flaky initial broadcast or gradient round shows up here as a small share of jobs with two different
checksums, so it takes dozens of jobs to see (see README "Scale-out", parameter consistency).

    python benchmarks/dist_params_stress.py --jobs 40                  # about 10 s a job on 2 busy cores
    python benchmarks/dist_params_stress.py --jobs 40 --json results/benchmarks/dist_params_stress.json
    python benchmarks/dist_params_stress.py --jobs 20 --stutter 20/50   # the server off the CPU 40% of the time

Jobs run one at a time; each in its own output folder under a temporary root (kept with ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]


MARK = "GLUONBENCH_STRESS_JOB"


def _servers(mark: str) -> list[psutil.Process]:
    """This job's parameter-server processes (found by the marker every node inherits)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if "gluonbench.distributed.node" not in " ".join(p.info.get("cmdline") or []):
            continue
        try:
            env = p.environ()
        except psutil.Error:
            continue
        if env.get(MARK) == mark and env.get("DMLC_ROLE") == "server":
            out.append(p)
    return out


def stutter(proc: subprocess.Popen, mark: str, stop_ms: float, period_ms: float) -> None:
    """Until ``proc`` ends: stop the job's server for ``stop_ms`` out of every ``period_ms`` (SIGSTOP/SIGCONT).

    A server that is off the CPU now and then, as on a busy machine, finds several requests waiting when it
    runs again; that is when their order of handling matters.
    """
    servers: list[psutil.Process] = []
    while proc.poll() is None:
        servers = [s for s in servers if s.is_running()] or _servers(mark)
        for s in servers:
            try:
                s.send_signal(signal.SIGSTOP)
            except psutil.Error:
                pass
        time.sleep(stop_ms / 1000)
        for s in servers:
            try:
                s.send_signal(signal.SIGCONT)
            except psutil.Error:
                pass
        time.sleep(max(period_ms - stop_ms, 1) / 1000 if servers else 0.05)


def run_job(
    out: Path, data_dir: str, steps: int, batch_size: int, timeout: float, stutter_ms: tuple[float, float] | None
) -> dict:
    """One dist_sync job; its outcome: identical or not, each rank's parameter sum, the differing parameters."""
    cmd = [
        sys.executable, "-m", "gluonbench", "sweep", "--kvstore", "dist_sync", "--hosts", "2", "--servers", "1",
        "--workers", "0", "--max-batches", str(steps), "--batch-size", str(batch_size),
        "--data-dir", data_dir, "--out", str(out),
    ]  # fmt: skip
    mark = f"{os.getpid()}-{out.name}"
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, env=dict(os.environ, **{MARK: mark})
        )
        if stutter_ms:
            thread = threading.Thread(target=stutter, args=(proc, mark, *stutter_ms), daemon=True)
            thread.start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        finally:
            if stutter_ms:
                thread.join()
        err.seek(0)
        stderr = err.read()
    wall = time.monotonic() - t0
    recs = []
    for path in out.glob("*/runs.jsonl"):
        recs += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if proc.returncode != 0 or len(recs) != 2:
        return {"status": "failed", "rc": proc.returncode, "wall_s": wall, "stderr": stderr[-500:]}
    job = recs[0]["extra"]["job"]
    by_rank = {r["extra"]["rank"]: r["extra"] for r in recs}
    return {
        "status": job["status"],
        "identical": bool(job["params_identical"]),
        "differ": job.get("params_differ"),
        "sums": [round(by_rank[k]["param_sum"], 4) for k in sorted(by_rank)],
        "wall_s": round(wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=30, help="number of jobs (default 30)")
    ap.add_argument("--steps", type=int, default=24, help="training steps per worker (default 24)")
    ap.add_argument("--batch-size", type=int, default=8, help="per-worker batch (default 8)")
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data" / "mnist"), help="MNIST folder")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per job before it counts as failed")
    ap.add_argument(
        "--stutter",
        metavar="STOP_MS/PERIOD_MS",
        help="stop the job's server for STOP_MS of every PERIOD_MS (SIGSTOP/SIGCONT), e.g. 20/50: a busy server",
    )
    ap.add_argument("--json", help="write the summary and every job's outcome here")
    ap.add_argument("--keep", action="store_true", help="keep the jobs' output folders (printed at the end)")
    args = ap.parse_args(argv)

    stutter_ms = None
    if args.stutter:
        try:
            stop, period = (float(x) for x in args.stutter.split("/"))
        except ValueError:
            ap.error(f"--stutter {args.stutter!r}: give STOP_MS/PERIOD_MS, e.g. 20/50")
        if not 0 < stop < period:
            ap.error(f"--stutter {args.stutter!r}: STOP_MS must be above 0 and below PERIOD_MS")
        stutter_ms = (stop, period)
    root = Path(tempfile.mkdtemp(prefix="gb-dist-stress-"))
    outcomes = []
    for i in range(args.jobs):
        try:
            o = run_job(root / f"job{i:03d}", args.data_dir, args.steps, args.batch_size, args.timeout, stutter_ms)
        except subprocess.TimeoutExpired:
            o = {"status": "timeout"}
        outcomes.append(o)
        print(f"job {i + 1:3d}/{args.jobs}: {json.dumps(o)}", flush=True)
    ok = [o for o in outcomes if o.get("status") == "ok"]
    differ = [o for o in ok if not o["identical"]]
    summary = {
        "jobs": args.jobs,
        "ok": len(ok),
        "params_differ": len(differ),
        "not_ok": len(outcomes) - len(ok),
        "sum_pairs": Counter(json.dumps(o["sums"]) for o in ok).most_common(),
        "steps": args.steps,
        "batch_size": args.batch_size,
        "stutter": args.stutter,
        "machine": f"{platform.node()} ({os.cpu_count()} cores, shared with other users' work)",
        "finished_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"summary": summary, "jobs": outcomes}, indent=1) + "\n")
    if args.keep:
        print(f"job folders kept in {root}")
    else:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    return 0 if not differ and len(ok) == args.jobs else 1


if __name__ == "__main__":
    sys.exit(main())
