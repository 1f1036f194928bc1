"""``gluonbench profile``: run a training program (or one run of a pipeline) and profile it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gluonbench.commands.options import (
    add_command,
    add_knob,
    add_name,
    add_pipeline_args,
    add_results_out,
    add_rule,
    add_setting,
    pipeline_options,
)
from gluonbench.errors import GluonbenchError

PROFILE_EXAMPLES = """examples:
  gluonbench profile -- python train.py --epochs 1          # system metrics of any program, rules, report
  gluonbench profile --pipeline mypkg.train:make --workers 2 --max-batches 200   # one run of your pipeline
  gluonbench profile --interval 100 --name mnist-w2 -- python examples/train_mnist.py --workers 2
  gluonbench profile --rule CPUBottleneck.threshold=30 --rule StepOutlier.stddev=4 -- python train.py
  gluonbench profile --mxnet-profiler -- python examples/train_mnist.py   # merge MXNet's operator trace

In the script (optional, framework metrics; no-ops when not profiled):
  from gluonbench import profiler
  for data, label in profiler.wrap(loader):      # data wait per batch
      with profiler.step():                      # step duration
          ...

writes OUT/<UTC>-profile-NAME/: profiler-output/ (SageMaker Debugger's layout: system/incremental/...,
framework/ Chrome traces), profile.json, rules.json, report.html. Exit code: the program's own; with --pipeline,
2 when the pipeline fails mid-run (one line names the stage; the profile up to it is kept).
"""


def add(sub: Any) -> None:
    p = sub.add_parser(
        "profile",
        help="run a training program and profile it: system and framework metrics, rules, HTML report",
        description="Run CMD as a child process (its own process group), sample the machine and its process "
        "tree every --interval ms, record the gluonbench.profiler hooks' step events, then run SageMaker "
        "Debugger's profiler rules and gluonbench's InputBound and write report.html.",
        epilog=PROFILE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--interval", type=int, default=500, metavar="MS", help="100, 200, 500 (default), 1000, 5000, 60000")
    add_results_out(p, "the profile folder")
    add_name(p, "the script's name", "profile folder")
    add_rule(p)
    p.add_argument("--mxnet-profiler", action="store_true", help="also run MXNet's profiler; merge its dump")
    add_pipeline_args(p)
    g = p.add_argument_group("with --pipeline: the one training run profiled (instead of -- CMD)")
    add_knob(g, "num_workers")
    add_knob(g, "batch_size", pipeline_default=True)
    add_setting(g, "max_batches", help="cap on training (and eval) batches")
    add_setting(g, "epochs", default=1, help="epochs")
    add_setting(g, "ctx", default="cpu")
    add_knob(g, "thread_pool")
    add_knob(g, "prefetch")
    add_knob(g, "pin_memory")
    add_command(p, "the program and its arguments")
    p.set_defaults(func=cmd_profile)


def cmd_profile(args: argparse.Namespace) -> int:
    from gluonbench.profiler.rules import parse_overrides
    from gluonbench.profiler.session import ProfileSettings, check_command, run_command

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    name = args.name
    identity: str | None = None  # a program is named by its command
    if args.pipeline:
        from gluonbench.config import pipeline_label
        from gluonbench.profiler.pipeline_run import pipeline_command

        if cmd:
            raise GluonbenchError("give either --pipeline MODULE:FUNCTION or -- CMD, not both")
        ProfileSettings(interval_ms=args.interval, out=args.out, name=args.name).check()  # before loading
        cmd = pipeline_command(
            args.pipeline,
            pipeline_options(args),
            workers=args.workers,
            batch_size=args.batch_size,
            max_batches=args.max_batches,
            epochs=args.epochs,
            ctx=args.ctx,
            thread_pool=args.thread_pool,
            prefetch=args.prefetch,
            pin_memory=args.pin_memory,
        )
        name = name or f"{pipeline_label(args.pipeline)}-w{args.workers}"
        from gluonbench.identity import describe

        identity = describe(args.pipeline, pipeline_options(args))
    elif args.pipeline_option:
        raise GluonbenchError("--pipeline-option goes with --pipeline MODULE:FUNCTION; add --pipeline")
    settings = ProfileSettings(
        interval_ms=args.interval,
        out=args.out,
        name=name,
        rules=parse_overrides(args.rule),
        mxnet_profiler=args.mxnet_profiler,
        identity=identity,
    ).check()
    from gluonbench.api import make_out

    check_command(cmd)  # before the first line: a command that cannot start is the one line (run_command checks again)
    make_out(settings.out)  # before the first line: a bad --out is the one line
    shown = cmd
    if args.pipeline:  # the run's spec as the program's argument, its credentials redacted where it is shown or kept
        import json

        from gluonbench.validate import redact

        shown = [*cmd[:-1], json.dumps(redact(json.loads(cmd[-1])))]
    print(
        f"profile: running {' '.join(shown) or '(no command)'} with system metrics every {args.interval} ms; it ends "
        "when the program does, then the rules run and report.html is written",
        file=sys.stderr,
        flush=True,
    )
    if args.pipeline:
        from gluonbench.profiler.pipeline_run import private

        run_as, env = private(cmd)
    else:
        from gluonbench.script.commands import profile_run_as

        run_as, env = profile_run_as(cmd), None
    result = run_command(shown, settings, run_as=run_as, env=env)
    print_rules(result.rules)
    if result.interrupted:
        print(f"gluonbench: interrupted; the profile so far is kept: {result.profile_dir}", file=sys.stderr)
    elif args.pipeline:
        from gluonbench.profiler.pipeline_run import read_fault

        fault = read_fault(result.profile_dir)  # the pipeline failed mid-run: its one line, as every command says it
        if fault is not None:
            print(f"profile: {result.profile_dir}/report.html (the run stopped at a pipeline fault)")
            raise GluonbenchError(f"{fault}; the profile up to the fault is kept in {result.profile_dir}")
    print(f"profile: {result.profile_dir}/report.html (exit code {result.exit_code})")
    return result.exit_code if result.exit_code is not None else 1


def print_rules(reports: list) -> None:
    print(f"{'rule':<22} {'status':<10} {'violations / datapoints':<23} note")
    for r in reports:
        status = "TRIGGERED" if r.triggered else "ok" if r.applicable else "n/a"
        note = r.reason if not r.applicable else r.recommendation if r.triggered else ""
        print(f"{r.rule:<22} {status:<10} {r.violations:>10} / {r.datapoints:<10} {note}".rstrip())
