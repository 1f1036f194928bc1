"""``gluonbench compare``: diff two run folders of the same kind."""

from __future__ import annotations

import argparse
from typing import Any

from gluonbench.commands.options import add_json

COMPARE_EXAMPLES = """examples:
  gluonbench compare results/<sweep-A> results/<sweep-B>           # per worker count: samples/s A, B, ratio
  gluonbench compare results/<diag-A> results/<diag-B> --markdown diff.md --html diff.html --json diff.json
  gluonbench compare results/<io-A> results/<io-B> --fail-on-slowdown 5%    # exit 1 on a significant slowdown

rows are matched by their setting (sweep: workers; diagnosis: probe; io: mode/size/layout; tune: the
  candidate's knobs); ratio = B / A of samples/s with a 95 % bootstrap interval over the stored per-run
  (sweep repeats) or per-block (diagnosis probes) figures; flagged when the interval excludes 1.
"""


def add(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="diff two run folders of the same kind (sweep, diagnosis, tune, io) with 95 %% intervals",
        epilog=COMPARE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_a", help="the reference run folder (A)")
    p.add_argument("run_b", help="the run folder compared with it (B)")
    p.add_argument("--markdown", metavar="FILE", help="write the comparison as Markdown")
    add_json(p, "the comparison")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML table")
    p.add_argument(
        "--fail-on-slowdown", metavar="PCT", help="exit 1 when a row is significantly slower by more, e.g. 5%%"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="compare results of different pipelines (factory or script, options, data); refused without it",
    )
    p.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from gluonbench import api
    from gluonbench.check.compare import to_text

    cmp = api.compare(
        args.run_a,
        args.run_b,
        markdown=args.markdown,
        json_path=args.json_path,
        html=args.html,
        fail_on_slowdown=args.fail_on_slowdown,
        force=args.force,
    )
    print(to_text(cmp))
    return cmp.exit_code
