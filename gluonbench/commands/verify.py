"""``gluonbench verify``: re-read a packed folder and check every shard."""

from __future__ import annotations

import argparse
from typing import Any

VERIFY_EXAMPLES = """examples:
  gluonbench verify packed/      # sizes, SHA-256, record framing, labels and .idx offsets of every shard
"""


def add(sub: Any) -> None:
    p = sub.add_parser(
        "verify",
        help="re-read a packed folder and check every shard",
        epilog=VERIFY_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("out_dir", metavar="OUT_DIR", help="a folder made by gluonbench pack")
    p.set_defaults(func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    from gluonbench.data.recordio import verify
    from gluonbench.units import format_size

    result = verify(args.out_dir)
    print(
        f"ok: {result.shards} shard(s), {result.records} records, {format_size(result.bytes)} verified "
        f"in {result.seconds:.2f} s: {result.out_dir}"
    )
    return 0
