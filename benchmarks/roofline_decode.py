"""A decode-bound JPEG pipeline against this machine's decode ceiling (issue #20's roofline check).

Writes JPEGs into a temporary folder (MNIST digits upscaled, ~``--kb`` KB each), measures the
decode ceiling the way ``gluonbench doctor`` does (``mx.image.imdecode`` of those images in one
thread), then runs a real Gluon ``DataLoader`` over ``ImageFolderDataset`` (read the file, decode,
a cheap cast) with no model at each worker count, and prints for the best worker count:

    ratio = loader img/s / (decode ceiling per core x cores it used)

where cores used = min(max(workers, 1), usable cores). The target: within 25 % (0.75..1.25).
Each worker count runs in its own process (killed if a forked loader hangs). The ceiling is
measured before and after the loader runs and averaged, so a change of machine
load during the run shows as the spread of the two. Exit status 1 if the ratio misses the
target. Timings are of this machine; the load average is printed with the figures.

    python benchmarks/roofline_decode.py                      # ~1 minute
    python benchmarks/roofline_decode.py --kb 60 --seconds 8 --out results/benchmarks
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gluonbench._mx import mx
from gluonbench.data.images import make_jpeg_folder
from gluonbench.doctor.ceilings import Ceilings, measure_decode
from gluonbench.doctor.checks import usable_cores
from gluonbench.doctor.roofline import decode_line
from gluonbench.env import environment, utc_now
from gluonbench.files import atomic_write_text

TARGET = 0.25


def _cast(img, label):
    return img.astype("float32"), label


def loader_rate(folder: Path, workers: int, batch_size: int, seconds: float) -> float:
    """Images per second a DataLoader (read + imdecode + cast, no model) delivers with ``workers``."""
    ds = mx.gluon.data.vision.ImageFolderDataset(str(folder)).transform(_cast)
    loader = mx.gluon.data.DataLoader(
        ds, batch_size=batch_size, shuffle=True, num_workers=workers, last_batch="discard"
    )
    n = 0
    start = None
    try:
        while True:
            for data, _label in loader:
                data.wait_to_read()
                if start is None:  # the first batch pays the worker start-up
                    start = time.perf_counter()
                    continue
                n += data.shape[0]
                if time.perf_counter() - start >= seconds:
                    return n / (time.perf_counter() - start)
    finally:
        del loader


def rate_in_child(folder: Path, workers: int, batch_size: int, seconds: float) -> float | None:
    """:func:`loader_rate` in a fresh process, killed after a generous timeout (a forked DataLoader can hang)."""
    cmd = [sys.executable, __file__, "--one", str(workers), "--folder", str(folder)]
    cmd += ["--batch-size", str(batch_size), "--seconds", str(seconds)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=4 * seconds + 90)
    except subprocess.TimeoutExpired:
        print(f"  workers {workers}: hung past {4 * seconds + 90:.0f} s and was killed", flush=True)
        return None
    if proc.returncode != 0:
        print(f"  workers {workers}: failed ({proc.stderr.strip().splitlines()[-1:]})", flush=True)
        return None
    return float(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", type=int, default=40, help="JPEG size in KB (default 40)")
    ap.add_argument("--files", type=int, default=300, help="number of JPEGs (default 300)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=6.0, help="seconds of loading per worker count (default 6)")
    ap.add_argument("--workers", default=None, help="worker counts, e.g. 0,1,2 (default 0..usable cores)")
    ap.add_argument("--mnist-dir", default=os.path.join(os.environ.get("GLUONBENCH_DATA", "data"), "mnist"))
    ap.add_argument("--out", help="also write roofline_decode-<UTC>.json into this folder")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child mode: one worker count, prints img/s
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one is not None:
        print(loader_rate(Path(args.folder), args.one, args.batch_size, args.seconds))
        return 0
    usable, _ = usable_cores()
    counts = [int(w) for w in args.workers.split(",")] if args.workers else list(range(0, usable + 1))
    with tempfile.TemporaryDirectory(prefix="gluonbench-roofline-") as tmp:
        folder = Path(tmp) / "images"
        make_jpeg_folder(folder, args.files * args.kb * 1000, file_bytes=args.kb * 1000, mnist_dir=args.mnist_dir)
        before = measure_decode(str(folder), seconds=3.0)
        print(f"decode ceiling before: {before.value:.0f} img/s per core ({before.method})", flush=True)
        rates = {}
        for w in counts:
            rate = rate_in_child(folder, w, args.batch_size, args.seconds)
            if rate is None:
                continue
            rates[w] = rate
            print(f"  workers {w}: {rates[w]:.0f} img/s (load average {os.getloadavg()[0]:.2f})", flush=True)
        after = measure_decode(str(folder), seconds=3.0)
    if not rates:
        print("no worker count finished: no ratio")
        return 1
    before_value = before.value
    ceiling = (before.value + after.value) / 2
    best = max(rates, key=lambda w: rates[w])
    used = min(max(best, 1), usable)
    ratio = rates[best] / (ceiling * used)
    before.value = ceiling
    line = decode_line(rates[best], best, usable, Ceilings("this host", str(folder), decode=before), "loader")
    ok = abs(ratio - 1) <= TARGET
    load = os.getloadavg()
    print(f"decode ceiling after: {after.value:.0f} img/s per core; mean {ceiling:.0f}")
    print(line.text)
    print(
        f"ratio = {rates[best]:.0f} / ({ceiling:.0f} x {used} core(s)) = {ratio:.2f} "
        f"(target 1 +- {TARGET:.2f}: {'met' if ok else 'MISSED'}); load average {load[0]:.2f}, {load[1]:.2f}, "
        f"{load[2]:.2f} on {usable} usable core(s); {utc_now()}"
    )
    if args.out:
        out = Path(args.out) / f"roofline_decode-{utc_now().replace(':', '')}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(
            out,
            json.dumps(
                {
                    "rates": rates,
                    "best_workers": best,
                    "cores_used": used,
                    "ceiling_before": before_value,
                    "ceiling_after": after.value,
                    "ceiling_mean": ceiling,
                    "ratio": ratio,
                    "target": TARGET,
                    "met": ok,
                    "loadavg": load,
                    "args": vars(args),
                    "env": environment(),
                    "utc": utc_now(),
                },
                indent=2,
            ),
        )
        print(f"wrote {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
