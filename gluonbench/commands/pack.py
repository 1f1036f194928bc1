"""``gluonbench pack``: an image folder or IDX data set into RecordIO shards."""

from __future__ import annotations

import argparse
from typing import Any

from gluonbench.commands.options import add_setting

PACK_EXAMPLES = """examples:
  gluonbench pack data/images packed/                     # class sub-folders -> 150 MB RecordIO shards
  gluonbench pack data/images packed/ --shard-size 64MB --shuffle --seed 1
  gluonbench pack ../shared/data/mnist mnist-rec/ --split train   # an IDX data set; images stored as PNG
  gluonbench verify packed/
"""


def add(sub: Any) -> None:
    p = sub.add_parser(
        "pack",
        help="pack an image folder or IDX data set into RecordIO shards",
        description="Write SRC's samples into OUT_DIR/<name>-NNNNN.rec + .idx shards (MXNet's own RecordIO, "
        "original file bytes behind an IRHeader, as im2rec --pass-through) and a manifest.json with SHA-256 per "
        "shard. SRC is a folder with one sub-folder per class, or a folder with MNIST-style IDX files.",
        epilog=PACK_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("src", metavar="SRC", help="image folder (SRC/<class>/*.jpg) or IDX folder")
    p.add_argument("out_dir", metavar="OUT_DIR", help="empty or new folder for the shards")
    p.add_argument("--shard-size", default="150MB", help="largest shard, e.g. 150MB (default), 64MiB")
    p.add_argument("--shuffle", action="store_true", help="write records in a seeded random order")
    add_setting(p, "seed", default=0, help="seed of --shuffle")
    add_setting(p, "name", help="shard file prefix", shown="SRC's folder name")
    p.add_argument("--split", choices=("train", "test"), default="train", help="IDX split to pack (default train)")
    p.add_argument("--force", action="store_true", help="write into a non-empty OUT_DIR (never into SRC)")
    p.set_defaults(func=cmd_pack)


def cmd_pack(args: argparse.Namespace) -> int:
    from gluonbench.data.recordio import pack
    from gluonbench.units import format_size, parse_size

    shard_size = parse_size(args.shard_size, "--shard-size")
    result = pack(args.src, args.out_dir, shard_size, args.shuffle, args.seed, args.name, args.split, args.force)
    m = result.manifest
    print(
        f"packed {m.records} records ({format_size(m.bytes)}) into {len(m.shards)} shard(s) in {result.seconds:.2f} s "
        f"({result.mb_per_s:.0f} MB/s): {result.out_dir}"
    )
    return 0
