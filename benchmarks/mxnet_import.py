"""What starting MXNet costs a gluonbench process (each command, each sweep run, each probe is one): the CPU
seconds of ``import gluonbench._mx`` (gluonbench's one MXNet import, with its shims) beside a plain
``import gluonbench; import mxnet``, which loads what MXNet imports as it stands (setuptools' ``distutils``
redirect on Python 3.11, ``scipy.stats``), each way of ``gluonbench._mx``: with MXNet's operator functions kept
compiled (``gluonbench.mxops``, a cache folder of the benchmark's own, made once before timing) and with them
compiled anew (``GLUONBENCH_MXNET_CACHE=off``). Each is a fresh interpreter; the kinds alternate, so they see the
same machine. Prints the median CPU and wall seconds of each and the ratios, and writes them as JSON with
``--out``.

    python benchmarks/mxnet_import.py [--n 15] [--out results/benchmarks]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

CODE = {
    "plain import mxnet": ("import gluonbench, mxnet", {}),
    "gluonbench._mx, operators compiled anew": ("import gluonbench._mx", {"GLUONBENCH_MXNET_CACHE": "off"}),
    "gluonbench._mx": ("import gluonbench._mx", {}),
}
TIMED = (
    "import time, resource; t0 = time.perf_counter()\n{code}\n"
    "u = resource.getrusage(resource.RUSAGE_SELF); print(u.ru_utime + u.ru_stime, time.perf_counter() - t0)"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=15, help="interpreters of each kind (default 15)")
    ap.add_argument("--out", type=Path, help="folder for mxnet_import-<UTC>.json")
    args = ap.parse_args()
    cpu: dict[str, list[float]] = {k: [] for k in CODE}
    wall: dict[str, list[float]] = {k: [] for k in CODE}
    with tempfile.TemporaryDirectory(prefix="mxnet-import-") as cache:
        base = dict(os.environ, GLUONBENCH_CACHE=cache)
        subprocess.run([sys.executable, "-c", "import gluonbench._mx"], env=base, check=True)  # the kept operators
        for _ in range(args.n):
            for name, (code, env) in CODE.items():
                out = subprocess.run(
                    [sys.executable, "-W", "ignore", "-c", TIMED.format(code=code)],
                    capture_output=True,
                    text=True,
                    env={**base, **env},
                )
                if out.returncode != 0:
                    print(out.stderr, file=sys.stderr)
                    return 1
                c, w = map(float, out.stdout.split()[-2:])
                cpu[name].append(c)
                wall[name].append(w)
    rows = {
        name: {"cpu_s_median": statistics.median(cpu[name]), "wall_s_median": statistics.median(wall[name])}
        for name in CODE
    }
    plain, anew, ours = (rows[k] for k in CODE)
    ratio = ours["cpu_s_median"] / plain["cpu_s_median"]
    kept = ours["cpu_s_median"] / anew["cpu_s_median"]
    for name, row in rows.items():
        print(f"{name}: {row['cpu_s_median']:.2f} s CPU, {row['wall_s_median']:.2f} s wall (median of {args.n})")
    print(f"gluonbench._mx / plain: {ratio:.2f} of the CPU; operators kept / compiled anew: {kept:.2f}")
    if args.out:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        args.out.mkdir(parents=True, exist_ok=True)
        doc = {"command": " ".join(["mxnet_import.py", *sys.argv[1:]]), "utc": stamp, "n": args.n, "rows": rows}
        doc["cpu_ratio"] = ratio
        doc["kept_over_anew_cpu_ratio"] = kept
        (args.out / f"mxnet_import-{stamp}.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
