"""Target: reading packed RecordIO gives >= 5x the records/s of the same records as separate ~40 KB files.

Same records, same reader (:meth:`Source.stream`, FastFile mode: no copy), same worker count (``--threads``
reader threads for both), shuffled as training reads them (file order shuffled; shard order shuffled plus a
local shuffle buffer). Reported separately:

* page cache **warm** (every file read once before) and **cold** (pages evicted with ``fdatasync`` +
  ``posix_fadvise(DONTNEED)``, plus ``/proc/sys/vm/drop_caches`` with ``--drop-caches`` where permitted; the
  share still resident, measured with ``mincore``, is printed, and a VM's host may still cache the disk);
* **S3** with ``--s3``: the same data behind a real S3 API (a moto server on 127.0.0.1 started here, or
  ``--endpoint-url`` for MinIO/AWS with ``--s3-uri``), where each file costs a GET and a shard chunk one
  ranged GET.

Ratios are measured within one run; absolute records/s depend on the machine and its load.

    PYTHONPATH=. python benchmarks/bench_recordio_vs_files.py                    # warm + cold, 1 and 4 threads
    PYTHONPATH=. python benchmarks/bench_recordio_vs_files.py --s3 --size 50MB   # also through a local S3 server
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _io_common import add_data_args, bench_data, finish, median, table

from gluonbench.iobench.cell import evict_page_cache, files_under, resident_fraction, warm_page_cache
from gluonbench.sources.fastfile import FastFileSource

TARGET = 5.0


def records_per_s(uri: str, threads: int, endpoint: str | None, epoch: int) -> float:
    source = FastFileSource(uri, endpoint, threads=threads, cache_bytes=0)
    source.open()
    try:
        t0 = time.perf_counter()
        n = sum(1 for _ in source.stream(epoch, shuffle=True, seed=0))
        return n / (time.perf_counter() - t0)
    finally:
        source.close()


def start_moto() -> tuple[object, str]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return server, f"http://127.0.0.1:{port}"


def upload(folder: Path, uri: str, endpoint: str) -> str:
    from concurrent.futures import ThreadPoolExecutor

    from gluonbench.data.s3 import S3Store
    from gluonbench.data.store import LocalStore

    store, local = S3Store(uri, endpoint), LocalStore(folder)
    store.ensure_bucket()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda o: store.put(o.key, local.get(o.key)), [o for o in local.list() if not o.is_folder]))
    return uri


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_args(ap, "bytes of records")
    ap.add_argument("--threads", default="1,4", help="worker counts, same for both layouts (default 1,4)")
    ap.add_argument("--repeats", type=int, default=3, help="local passes per measurement, median (default 3)")
    ap.add_argument("--drop-caches", action="store_true", help="cold: also write /proc/sys/vm/drop_caches")
    ap.add_argument("--s3", action="store_true", help="also read through S3 (a local moto server unless --s3-uri)")
    ap.add_argument("--s3-uri", help="stage under this s3://BUCKET/PREFIX instead (with --endpoint-url for MinIO)")
    ap.add_argument("--endpoint-url", help="S3-compatible endpoint for --s3-uri")
    args = ap.parse_args()
    tmp, _, files, shards = bench_data(args)
    threads = [int(t) for t in args.threads.split(",")]
    rows, result, ok = [], {"target": TARGET, "rows": []}, True

    def measure(where: str, uris: tuple[str, str], endpoint: str | None, before=None, repeats: int = 1) -> None:
        nonlocal ok
        for w in threads:
            rates = {}
            notes = []
            for name, uri in zip(("files", "shards"), uris, strict=True):
                passes = []
                for r in range(repeats):
                    if before is not None:
                        notes.append(before(Path(uri)))
                    passes.append(records_per_s(uri, w, endpoint, r))
                rates[name] = median(passes)
            ratio = rates["shards"] / rates["files"]
            ok &= ratio >= TARGET
            note = "; ".join(sorted(set(n for n in notes if n)))
            rows.append([where, w, f"{rates['files']:.0f}", f"{rates['shards']:.0f}", f"{ratio:.1f}x", note])
            result["rows"].append({"where": where, "threads": w, **rates, "ratio": ratio, "note": note})

    def warm(folder: Path) -> str:
        warm_page_cache(files_under(folder))
        return ""

    def cold(folder: Path) -> str:
        paths = files_under(folder)
        method = evict_page_cache(paths, args.drop_caches)
        return f"{method}, {resident_fraction(paths):.0%} resident"

    measure("local, warm page cache", (str(files), str(shards)), None, warm, args.repeats)
    measure("local, cold page cache", (str(files), str(shards)), None, cold, args.repeats)
    server = None
    if args.s3 or args.s3_uri:
        endpoint = args.endpoint_url
        base = args.s3_uri
        if base is None:
            server, endpoint = start_moto()
            base = "s3://gluonbench-bench/recordio"
        uris = (upload(files, f"{base}/files", endpoint), upload(shards, f"{base}/shards", endpoint))
        measure(f"S3 ({'local moto server' if server else endpoint or 'AWS'}), 1 pass", uris, endpoint)
    if server is not None:
        server.stop()
    print(table(["where", "threads", "files records/s", "shards records/s", "shards / files", "cache"], rows))
    print(f"\ntarget: shards >= {TARGET:.0f}x the records/s of separate files")
    return finish(result, args.json, ok, args.check, tmp)


if __name__ == "__main__":
    sys.exit(main())
