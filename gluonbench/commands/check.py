"""``gluonbench check``: the CI gate (a pipeline beside a ruler, against a baseline or a git ref)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from gluonbench.commands.options import (
    BY_GPU,
    add_budget,
    add_json,
    add_knob,
    add_script_args,
    add_setting,
    pipeline_options,
    script_flags,
)
from gluonbench.console import Progress

CHECK_EXAMPLES = """examples:
  gluonbench check --workload mnist --save-baseline baseline.json       # on main: measure, save
  gluonbench check --workload mnist --baseline baseline.json --max-slowdown 5%   # on a pull request
  gluonbench check --pipeline mypkg.data:make_pipeline --baseline baseline.json --junit check.xml
  gluonbench check --pipeline ci/pipeline.py:make --workers 2 --baseline baseline.json --json check.json
  gluonbench check --pipeline examples/imagefolder_pipeline.py:make --pipeline-option root=data/images \\
      --save-baseline images.json
  gluonbench check --workload synthetic --set cpu_ms=1 --save-baseline synth.json --budget 90
  gluonbench check --pipeline ci/pipeline.py:make --against origin/main   # base branch and working tree side by side
  gluonbench check --save-baseline train.json -- python train.py --epochs 50   # your training script, as written
  gluonbench check --baseline train.json --budget 90 -- python train.py --epochs 50
  gluonbench check --against origin/main --budget 60 -- python train.py --epochs 50   # REF's script beside yours

what is measured: the pipeline's probes (full, preprocessing / reading / loader swapped out, the loader
  alone) beside a fixed reference pipeline, the *ruler* (the seed's CNN step fed through a CPU-bound
  transform), in interleaved rounds; every figure is relative to the ruler in the same round, so a slower
  runner or a noisy neighbour is not a regression. Wall and CPU seconds per sample are both recorded.
exit codes: 0 pass (not slower beyond --max-slowdown, 95 % confidence), 1 regression (names the stage:
  preprocessing, read, loader, copy, compute), 2 bad input, 3 inconclusive (too noisy for the budget;
  the message says what --budget would settle it).
--pipeline MODULE:FUNC / path/to/file.py:FUNC: FUNC(**pipeline options) returns a gluonbench PipelineSpec, a
  Pipeline, or a dict with dataset (required), transform, decode, net, loss, batch_size, num_workers.
  Its options (--pipeline-option; --set for a --workload) are kept in the baseline; a check with other options
  says so. --set beside --pipeline is refused.
-- CMD: your training script, unmodified: its training DataLoader's batches go through the same probes inside it
  (as diagnose -- CMD), the ruler runs between its rounds; a baseline is tied to the command as written. Its
  probes are timed by wall clock only. With --against REF, REF's copy of the script runs beside it instead of
  the ruler, the two taking turns.
with $GITHUB_STEP_SUMMARY set, a Markdown summary is appended to it.
"""


def add(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "check",
        help="CI gate: measure a pipeline beside a ruler; save a baseline or fail on a slowdown",
        epilog=CHECK_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = p.add_mutually_exclusive_group()
    add_setting(what, "pipeline", metavar="MODULE:FUNC")
    add_setting(what, "workload", help="a registered workload", shown="mnist", aliases=("--workload",))
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="workload option")
    p.add_argument(
        "--pipeline-option",
        dest="pipeline_option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keyword argument of the --pipeline function (a TOML value), repeatable; kept in the baseline",
    )
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--baseline", metavar="FILE", help="check against this baseline file")
    mode.add_argument("--save-baseline", metavar="FILE", help="measure and save a baseline file")
    mode.add_argument(
        "--against",
        metavar="REF",
        help="measure REF's code (a git ref of this repository, or another checkout's folder) and the working tree "
        "side by side in one job; robust to a busy machine",
    )
    p.add_argument("--max-slowdown", default="5%", help="allowed slowdown before exit 1 (default: 5%%)")
    add_budget(p, "the measurement")
    add_knob(p, "batch_size", pipeline_default=True)
    add_knob(p, "num_workers", note="where the pipeline sets none")
    add_setting(p, "ctx", shown=BY_GPU)
    add_setting(p, "data_dir", metavar="DIR")
    add_json(p, "the result")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML (a regression fails, inconclusive is skipped)")
    add_script_args(p, "with -- CMD: your own training script, run as written (the probes act inside it)", "check")
    p.set_defaults(func=cmd_check)
    return p


SCRIPT_APPLIES = ("baseline", "save_baseline", "against", "max_slowdown", "budget_s", "json_path", "junit")
"""check's flags that apply to a training command; the others name or shape a pipeline: a script is checked as
written"""


def cmd_check(args: argparse.Namespace) -> int:
    from types import SimpleNamespace

    from gluonbench import api
    from gluonbench.check import render
    from gluonbench.config import check_pipeline_settings, parse_overrides

    overrides, pipe_options = parse_overrides(args.overrides), pipeline_options(args)
    # every command's rule: a --pipeline function gets --pipeline-option, a workload --set
    check_pipeline_settings(
        SimpleNamespace(pipeline=args.pipeline, pipeline_options=pipe_options, workload="pipeline", options=overrides)
    )
    options = pipe_options if args.pipeline else overrides
    flags = script_flags(args, add, SCRIPT_APPLIES)
    flags.refuse(
        "the script's own DataLoader, batch size and contexts are checked as written; change them in the script "
        "(or its arguments)"
    )
    script: dict[str, Any] = {}
    if flags.cmd:
        script = {"script": flags.cmd, "loader": args.loader, "start_timeout_s": args.start_timeout_s}
    progress = Progress("check", args.budget_s, "s", timed=True)
    try:
        result = api.check(
            args.pipeline or args.workload or "mnist",
            baseline=args.baseline,
            save=args.save_baseline,
            against=args.against,
            max_slowdown=args.max_slowdown,
            budget_s=args.budget_s,
            batch_size=args.batch_size,
            num_workers=args.workers,
            ctx=args.ctx,
            options=options,
            data_dir=args.data_dir,
            json_path=args.json_path,
            junit_path=args.junit,
            summary_path=os.environ.get("GITHUB_STEP_SUMMARY") or None,
            on_progress=progress.advance,
            **script,
        )
    finally:
        progress.close()
    if args.save_baseline:
        print(render.snapshot_text(result))
        print(f"baseline saved: {args.save_baseline}")
        return 0
    print(render.to_text(result))
    return result.exit_code
