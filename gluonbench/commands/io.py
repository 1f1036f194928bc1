"""``gluonbench io``: input modes x data set size x file layout."""

from __future__ import annotations

import argparse
from typing import Any

from gluonbench.commands.options import add_emulate_step, add_knob, add_name, add_results_out, add_setting

IO_EXAMPLES = """examples:
  gluonbench io                                   # seed 004's matrix at the default scale (a few minutes)
  gluonbench io --modes file,fastfile --sizes large --epochs 3
  gluonbench io --small 50MB --large 2GB --shard-size 150MB --work-dir /data/gb-io   # closer to real sizes
  gluonbench io --src data/my-images              # your own image folder (one sub-folder per class)
  gluonbench io --s3-uri s3://my-bucket/gluonbench-io --endpoint-url http://127.0.0.1:9000   # MinIO
  gluonbench io --s3-uri s3://my-bucket/gluonbench-io  # AWS (credentials from the usual boto3 chain)
  gluonbench io --page-cache cold --drop-caches   # evict the origin before each cell
  gluonbench io --stage decode --preset imagenet --image-size 224   # also decode + ImageNet augmentation
  gluonbench io --stage decode --emulate-step-ms resnet50@v100   # which cells keep a V100 fed? (AU, DLIO's 90 %)
"""


def add(sub: Any) -> None:
    p = sub.add_parser(
        "io",
        help="benchmark input modes (file, fastfile, pipe) x data set size x file layout",
        description="Seed 004's matrix: each input mode over a small and a large data set, stored as many ~40 KB "
        "JPEG files and as a few large RecordIO shards. Per cell: start-up to the first batch, read MB/s and "
        "samples/s per epoch, total time, local disk used; then a recommendation drawn from the numbers. "
        "Writes OUT/<UTC>-io-.../ with runs.jsonl, io.csv, io.md, io.json, io.png.",
        epilog=IO_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--modes", default="file,fastfile,pipe", help="comma list (default file,fastfile,pipe)")
    p.add_argument("--sizes", default="small,large", help="comma list of small, large (default both)")
    p.add_argument("--layouts", default="files,shards", help="comma list of files, shards (default both)")
    p.add_argument("--small", default="20MB", help="size of the small data set (default 20MB)")
    p.add_argument("--large", default="200MB", help="size of the large data set (default 200MB)")
    p.add_argument("--file-size", default="40KB", help="mean JPEG size (default 40KB, as seed 004's ~39 KB)")
    p.add_argument("--shard-size", help="shard size (default: a fifth of the data set, at most 150MB)")
    p.add_argument("--src", help="benchmark this image folder (SRC/<class>/*.jpg) instead of generated data")
    p.add_argument("--s3-uri", help="stage the data sets under s3://BUCKET/PREFIX and read them through boto3")
    p.add_argument("--endpoint-url", help="S3-compatible endpoint for --s3-uri (MinIO, moto)")
    add_setting(p, "epochs", default=2, help="epochs per cell")
    add_knob(p, "batch_size")
    p.add_argument("--threads", type=int, default=4, help="reader threads in every mode (default 4)")
    p.add_argument("--stage", choices=("read", "decode"), default="read", help="read only (default) or also decode")
    add_setting(
        p,
        "preset",
        help="--stage decode: decode to RGB and apply this training preset per sample (as sweep/diagnose --preset)",
    )
    add_setting(p, "image_size", default=224, help="--preset's output size")
    add_emulate_step(p, note=" per cell (DLIO's 90 %% line)")
    p.add_argument("--page-cache", choices=("warm", "cold"), default="warm", help="origin cached or evicted first")
    p.add_argument(
        "--drop-caches", action="store_true", help="with --page-cache cold: also write /proc/sys/vm/drop_caches"
    )
    p.add_argument("--no-shuffle", dest="shuffle", action="store_false", help="read in key order")
    add_setting(p, "seed", default=0, help="seed of data generation and shuffling")
    p.add_argument("--work-dir", help="keep generated data sets here and reuse them (default: a temporary folder)")
    p.add_argument("--mnist-dir", help="MNIST IDX folder whose digits the JPEGs show (default: look it up)")
    add_setting(p, "timeout_s", default=600.0, help="pipe stall limit, s")
    add_name(p, "io-local-STAGE or io-s3-STAGE")
    add_results_out(p)
    p.set_defaults(func=cmd_io)


def cmd_io(args: argparse.Namespace) -> int:
    from gluonbench import api
    from gluonbench.config import IoSettings
    from gluonbench.report.iobench import to_markdown
    from gluonbench.units import parse_size

    def names(text: str) -> tuple[str, ...]:
        return tuple(v.strip() for v in text.split(",") if v.strip())

    settings = IoSettings(
        modes=names(args.modes),
        sizes=names(args.sizes),
        layouts=names(args.layouts),
        small_bytes=parse_size(args.small, "--small"),
        large_bytes=parse_size(args.large, "--large"),
        file_size=parse_size(args.file_size, "--file-size"),
        shard_size=parse_size(args.shard_size, "--shard-size") if args.shard_size else None,
        src=args.src,
        s3_uri=args.s3_uri,
        endpoint_url=args.endpoint_url,
        epochs=args.epochs,
        batch_size=args.batch_size,
        threads=args.threads,
        stage=args.stage,
        page_cache=args.page_cache,
        drop_caches=args.drop_caches,
        shuffle=args.shuffle,
        seed=args.seed,
        work_dir=args.work_dir,
        mnist_dir=args.mnist_dir,
        timeout_s=args.timeout_s,
        name=args.name,
        preset=args.preset,
        image_size=args.image_size,
        emulate_step_ms=args.emulate_step_ms,
    ).check()

    from gluonbench.console import Progress

    cells = len(settings.modes) * len(settings.sizes) * len(settings.layouts)
    api.check_before_start(settings, args.out, create=False)  # what needs no MXNet: before the first line
    progress = Progress("io", cells, "cell")
    progress.start(
        f"{cells} cell(s): modes {', '.join(settings.modes)} x sizes {', '.join(settings.sizes)} x layouts "
        f"{', '.join(settings.layouts)}, {settings.epochs} epoch(s) each; the data sets are generated first "
        "(reused with --work-dir); each finished cell prints the time left"
    )

    def on_result(r) -> None:
        c = r.cell
        what = f"{c['mode']:>8} {c['size']:>5} {c['layout']:>6}"
        if r.ok:
            au = f", AU {r.emulated['au']:.0%}" if r.emulated else ""
            progress.finished(
                f"{what}: start-up {r.startup_s:.3f} s, {r.read_mb_per_s:.0f} MB/s, {r.samples_per_s:.0f} samples/s, "
                f"total {r.total_s:.2f} s{au}"
            )
        else:
            progress.finished(f"{what}: failed ({r.error})")

    run_dir, summary = api.io_benchmark(settings, out=args.out, on_result=on_result)
    print(to_markdown(summary))
    print(f"results: {run_dir}")
    return 0 if all(r.get("status") == "ok" for r in summary.rows) else 1
