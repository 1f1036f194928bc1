"""``gluonbench report``: rebuild every export of a run folder or a profile."""

from __future__ import annotations

import argparse
from typing import Any

from gluonbench.commands.options import add_rule, add_setting
from gluonbench.commands.profile import print_rules
from gluonbench.errors import GluonbenchError

REPORT_EXAMPLES = """examples:
  gluonbench report results/20261122T150000Z-sweep-mnist-cpu   # rebuild csv, md, json, png, report.html
  gluonbench report results/20261122T160000Z-io-local-read      # an io benchmark's folder
  gluonbench report results/20261122T170000Z-diagnose-mnist-w0  # a folder of gluonbench diagnose --out
  gluonbench report results/20261123T130000Z-profile-train     # rebuild a profile's rules.json, report.html
  gluonbench report ~/Downloads/my-job/profiler-output --out /tmp/my-job   # a folder SageMaker Debugger wrote
  gluonbench report results/<profile> --rule StepOutlier.stddev=4
"""


def add(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="rebuild every export of a run folder (sweep, io, diagnose --out, tune --out, profile), report.html "
        "included",
        epilog=REPORT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "run_dir",
        help="a run folder made by gluonbench sweep, io, diagnose --out or tune --out, a profile folder, or a "
        "profiler-output folder",
    )
    add_setting(
        p, "out", metavar="DIR", help="profiles: write rules.json and report.html here", shown="beside profiler-output"
    )
    add_rule(p, "profiles: ")
    p.set_defaults(func=cmd_report)


def _is_profile(folder: Any) -> bool:
    return (
        (folder / "profiler-output").is_dir()
        or (folder / "system" / "incremental").is_dir()
        or (folder.name == "profiler-output" and folder.is_dir())
    )


def _report_profile(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gluonbench.profiler.data import find_output
    from gluonbench.profiler.rules import parse_overrides
    from gluonbench.profiler.session import build_report

    reports = build_report(args.run_dir, parse_overrides(args.rule), args.out)
    print_rules(reports)
    target = args.out or find_output(Path(args.run_dir))[0]
    print(f"rebuilt: {target}/rules.json, report.html")


def cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gluonbench.rundir import rebuild

    if _is_profile(Path(args.run_dir)):
        return _report_profile(args)
    if args.out or args.rule:
        raise GluonbenchError(
            "--out and --rule apply to profile folders only; pass a folder made by gluonbench profile"
        )
    written = rebuild(args.run_dir)
    for path in written:
        if path.suffix == ".md":
            print(path.read_text(encoding="utf-8"))
    print(f"rebuilt: {', '.join(str(p) for p in written)}")
    return 0
