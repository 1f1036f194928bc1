"""``gluonbench stream``: the Pipe-mode producer (per-epoch FIFOs)."""

from __future__ import annotations

import argparse
from typing import Any

from gluonbench.commands.options import add_setting

STREAM_EXAMPLES = """examples:
  gluonbench stream packed/ --channel train --channel-dir /tmp/ch --epochs 3
  gluonbench stream s3://bucket/train --endpoint-url http://127.0.0.1:9000 --channel train \\
      --channel-dir /tmp/ch --epochs 2 --shuffle --seed 7
  gluonbench stream data/images --channel train --channel-dir /tmp/ch --record-wrapper recordio \\
      --shard-index 0 --shard-count 4      # ShardedByS3Key: objects 0, 4, 8, ...
The consumer reads /tmp/ch/train_0, then /tmp/ch/train_1, ... (SageMaker's Pipe-mode protocol).
"""


def add(sub: Any) -> None:
    p = sub.add_parser(
        "stream",
        help="Pipe-mode producer: stream a data set into per-epoch FIFOs",
        description="Create DIR/NAME_0, stream SRC's objects into it (threads read ahead), close it, then "
        "DIR/NAME_1, and so on: SageMaker's Pipe-mode protocol. A packed folder streams its .rec shards; any "
        "other source streams every object. Waits at most --open-timeout for a consumer to open each FIFO.",
        epilog=STREAM_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("src", metavar="SRC", help="a folder or s3://bucket/prefix")
    p.add_argument("--channel", required=True, metavar="NAME", help="channel name, e.g. train")
    p.add_argument("--channel-dir", required=True, metavar="DIR", help="folder for the FIFOs (made private, 0700)")
    add_setting(p, "epochs", default=1, help="epochs to stream")
    p.add_argument("--shuffle", action="store_true", help="new object order each epoch")
    add_setting(p, "seed", default=0, help="seed of --shuffle")
    p.add_argument("--record-wrapper", choices=WRAPPERS_CHOICES, default="none", help="none (default) or recordio")
    p.add_argument("--gzip", action="store_true", help="objects are gzip files: decompress before streaming")
    p.add_argument("--shard-index", type=int, help="ShardedByS3Key: this consumer's index I (object i if i %% K == I)")
    p.add_argument("--shard-count", type=int, help="ShardedByS3Key: number of consumers K")
    p.add_argument("--endpoint-url", help="S3-compatible endpoint, e.g. http://127.0.0.1:9000 for MinIO")
    p.add_argument("--threads", type=int, default=4, help="read-ahead threads (default 4)")
    p.add_argument("--open-timeout", type=float, default=600.0, help="seconds to wait for a consumer (default 600)")
    p.add_argument("--write-timeout", type=float, default=600.0, help="seconds a consumer may stall (default 600)")
    p.set_defaults(func=cmd_stream)


WRAPPERS_CHOICES = ("none", "recordio")


def cmd_stream(args: argparse.Namespace) -> int:
    import signal

    from gluonbench.data.store import open_store
    from gluonbench.sources.pipe import Producer, StreamOptions

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)  # unwinds through the producer's clean-up (FIFO removal)

    signal.signal(signal.SIGTERM, stop)
    options = StreamOptions(
        channel=args.channel,
        channel_dir=args.channel_dir,
        epochs=args.epochs,
        shuffle=args.shuffle,
        seed=args.seed,
        record_wrapper=args.record_wrapper,
        gzip=args.gzip,
        shard_index=args.shard_index,
        shard_count=args.shard_count,
        threads=args.threads,
        open_timeout=args.open_timeout,
        write_timeout=args.write_timeout,
    ).check()

    def on_epoch(stats) -> None:
        note = "" if stats.complete else f" (incomplete: {stats.note})"
        print(
            f"epoch {stats.epoch}: {stats.objects} objects, {stats.bytes} bytes in {stats.seconds:.3f} s "
            f"({stats.mb_per_s:.1f} MB/s){note}",
            flush=True,
        )

    Producer(open_store(args.src, args.endpoint_url), options).run(on_epoch)
    return 0
