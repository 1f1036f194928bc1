"""Target: Pipe mode delivers >= 90 % of the throughput of `cat`-ing the same files to /dev/null from page cache.

Both sides read the same files, warm in the page cache, in one run:

* **cat**: ``cat FILE... > /dev/null`` as a real process (the files in one argument list), wall time;
* **pipe**: a real ``gluonbench stream DIR --channel bench --channel-dir D --epochs N`` producer and a
  :class:`~gluonbench.sources.pipe.PipeChannel` consumer reading each epoch's FIFO to EOF into a buffer
  (as SageMaker's sample does), timed from waiting for the FIFO to EOF. Epoch 0 (producer start-up and
  listing) is reported apart; the ratio uses the median of epochs 1..N. cat runs and pipe epochs alternate.

Two sets: many ~40 KB JPEG files and the same bytes packed into a few large RecordIO shards. Ratios are
measured within one run; absolute MB/s depend on the machine (and on who else uses it).

    PYTHONPATH=. python benchmarks/bench_pipe_vs_cat.py                 # 200 MB, 5 repeats
    PYTHONPATH=. python benchmarks/bench_pipe_vs_cat.py --size 1GB --repeats 7 --work-dir /tmp/gb-bench
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _io_common import add_data_args, bench_data, finish, median, table

from gluonbench.data.store import LocalStore
from gluonbench.iobench.cell import files_under, warm_page_cache
from gluonbench.sources.pipe import PipeChannel, data_objects

TARGET = 0.90


def cat_mb_per_s(paths: list[Path]) -> float:
    total = sum(p.stat().st_size for p in paths)
    t0 = time.perf_counter()
    subprocess.run(["cat", *map(str, paths)], stdout=subprocess.DEVNULL, check=True)
    return total / 1e6 / (time.perf_counter() - t0)


def measure(folder: Path, paths: list[Path], repeats: int, threads: int) -> tuple[list[float], float, list[float]]:
    """cat runs interleaved with pipe epochs, so load from elsewhere hits both alike."""
    with tempfile.TemporaryDirectory(prefix="gluonbench-bench-") as tmp:
        channel_dir = Path(tmp) / "data"
        proc = subprocess.Popen(
            [sys.executable, "-m", "gluonbench", "stream", str(folder), "--channel", "bench", "--channel-dir",
             str(channel_dir), "--epochs", str(repeats + 1), "--threads", str(threads), "--open-timeout", "60"],
            stdout=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
        )  # fmt: skip
        channel = PipeChannel(channel_dir, "bench", framing="none", timeout=60, producer=proc)
        cat, pipe = [], []
        try:
            for epoch in range(repeats + 1):
                if epoch:
                    cat.append(cat_mb_per_s(paths))
                t0 = time.perf_counter()
                got = sum(len(chunk) for chunk in channel.chunks(epoch))
                pipe.append(got / 1e6 / (time.perf_counter() - t0))
        finally:
            proc.wait(timeout=60)
    return cat, pipe[0], pipe[1:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_args(ap, "bytes per data set")
    ap.add_argument("--repeats", type=int, default=5, help="cat runs and pipe epochs (default 5)")
    ap.add_argument("--threads", type=int, default=4, help="producer read-ahead threads (default 4)")
    args = ap.parse_args()
    tmp, _, files, shards = bench_data(args)
    rows, result, ok = [], {"target": TARGET, "sets": {}}, True
    for name, folder in (("many ~40 KB files", files), ("few large shards", shards)):
        store = LocalStore(folder)
        paths = [store.local_path(o.key) for o in data_objects(store)]
        warm_page_cache(files_under(folder))
        cat, first, pipe = measure(folder, paths, args.repeats, args.threads)
        ratio = median(pipe) / median(cat)
        ok &= ratio >= TARGET
        rows.append([name, len(paths), f"{median(cat):.0f}", f"{median(pipe):.0f}", f"{first:.0f}", f"{ratio:.2f}"])
        result["sets"][name] = {"files": len(paths), "cat_mb_per_s": cat, "pipe_mb_per_s": pipe,
                                "pipe_epoch0_mb_per_s": first, "ratio": ratio}  # fmt: skip
    print(table(["data set", "files", "cat MB/s", "pipe MB/s (epochs 1..N)", "pipe epoch 0", "pipe / cat"], rows))
    print(f"\ntarget: pipe >= {TARGET:.0%} of cat on every set")
    return finish(result, args.json, ok, args.check, tmp)


if __name__ == "__main__":
    sys.exit(main())
