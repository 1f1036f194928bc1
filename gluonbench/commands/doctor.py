"""``gluonbench doctor``: this machine's setup checks and measured ceilings."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gluonbench.commands.options import add_knob, add_setting

DOCTOR_EXAMPLES = """examples:
  gluonbench doctor                                     # this machine: cores, memory, /dev/shm, threads, MXNet build
  gluonbench doctor --data-dir data/images --workers 4 --batch-size 128   # and the data folder, its ceilings
  gluonbench doctor --data-dir data/images --refresh    # measure the ceilings again (else cached per host)
  gluonbench doctor --ctx gpu:0 --json                  # JSON on stdout; exit 1 when any check fails
  gluonbench doctor --json doctor.json --no-ceilings    # the checks alone, in about a second

checks: cores (affinity, cgroup quota), memory (cgroup limit), shm (/dev/shm against workers x prefetch x
  batch bytes), threads (OMP_NUM_THREADS, MXNET_CPU_WORKER_NTHREADS, BLAS), mxnet build (MKLDNN, CUDA, CUDNN,
  NCCL, DIST_KVSTORE), versions (numpy / MXNet shims), data fs (local, tmpfs, NFS/FUSE), page cache (does the
  data set fit in free RAM), gpu (driver, CUDA, GPUs MXNet sees vs NVML, pinned memory).
ceilings (cached in $GLUONBENCH_CACHE or ~/.cache/gluonbench): read MB/s with the page cache bypassed,
  decode img/s per core (mx.image.imdecode of the data set's images), memcpy GB/s per core, H2D GB/s on a GPU.
exit status: 0 no check failed, 1 a check failed, 2 bad input.
"""


def add(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help="check this machine's setup (cores, /dev/shm, threads, MXNet build, data folder) and measure its ceilings",
        description="Preflight checks, each ok / warn / fail with the figure and a one-line fix, then this "
        "machine's measured ceilings (disk read, decode per core, memcpy, host-to-device) that diagnose, "
        "sweep and tune compare every stage with.",
        epilog=DOCTOR_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_setting(
        p,
        "data_dir",
        metavar="DIR",
        help="the data set's folder: its file system, size against RAM, read and decode ceilings",
    )
    add_setting(p, "ctx", default="cpu", note="a GPU: also check it and measure H2D")
    add_knob(p, "num_workers", note="as you plan to run")
    add_knob(p, "batch_size", note="as you plan to run")
    add_knob(p, "prefetch", note="as you plan to run")
    p.add_argument("--refresh", action="store_true", help="measure the ceilings again instead of using the cache")
    p.add_argument("--no-ceilings", dest="ceilings", action="store_false", help="only the checks; measure nothing")
    add_setting(p, "json_path", nargs="?", const="-", metavar="FILE", help="JSON on stdout, or into FILE")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    import json

    from gluonbench import api
    from gluonbench.doctor import DoctorSettings

    settings = DoctorSettings(
        data_dir=args.data_dir,
        ctx=args.ctx,
        workers=args.workers,
        batch_size=args.batch_size,
        prefetch=args.prefetch,
        refresh=args.refresh,
        ceilings=args.ceilings,
    ).check()
    report = api.run_doctor(settings)
    if args.json_path == "-":
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.to_text(), end="")
        if args.json_path:
            from gluonbench.files import atomic_write_text

            atomic_write_text(args.json_path, json.dumps(report.to_dict(), indent=2))
            print(f"gluonbench: wrote {args.json_path}", file=sys.stderr)
    return report.exit_code
