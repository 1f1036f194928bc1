"""``gluonbench sweep``: train at each DataLoader worker count (or run a training script once per count) and compare."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gluonbench.commands.common import pipeline_first, preflight, print_roofline, what_runs
from gluonbench.commands.options import (
    SCALE_FLAGS,
    SCRIPT_ONLY,
    add_dataset_args,
    add_emulate_step,
    add_knob,
    add_name,
    add_pipeline_args,
    add_results_out,
    add_scale_args,
    add_script_args,
    add_setting,
    add_source_args,
    add_synthetic_args,
    add_vision_args,
    pipeline_options,
    script_flags,
    source_from_args,
    source_workload,
    synthetic_options,
    vision_options,
)
from gluonbench.knobs import KNOBS

SWEEP_EXAMPLES = """examples:
  gluonbench sweep --workers 0..8                 # the seed's experiment, 1 epoch per worker count
  gluonbench sweep --pipeline mypkg.train:make --workers 0,2,4    # your own pipeline (gluonbench.PipelineSpec)
  gluonbench sweep --pipeline examples/imagefolder_pipeline.py:make --pipeline-option root=data/images
  gluonbench sweep --workers 2,4 --prefetch 8 --thread-pool --pin-memory --ctx gpu:0   # any knob tune can recommend
  gluonbench sweep --workers 0,2,4 --repeat 3     # median and min-max of 3 runs each
  gluonbench sweep --workers 0..8:2 --max-batches 100 --batch-size 128
  gluonbench sweep --dataset fashion-mnist --ctx gpu:0 --workers 0..8
  gluonbench sweep --config configs/p3.2xlarge.toml --set repeat=3
  gluonbench sweep --resume results/20261122T150000Z-sweep-mnist-cpu
  gluonbench sweep --workers 0,2,4 --diagnose     # the bottleneck (verdict, shares) at each worker count
  gluonbench sweep --workers 0,2 --max-batches 100 --profile   # the profiler rules and a report per run
  gluonbench sweep --dataset synthetic --read-ms 1 --width 1024 --depth 3 --workers 0,2 --max-batches 40 --diagnose
  gluonbench sweep --source fastfile --uri packed/ --workers 0,2 --max-batches 100   # through an input mode
  gluonbench sweep --source file --uri s3://bucket/packed --endpoint-url http://127.0.0.1:9000
  gluonbench sweep --dataset imagefolder --data-dir data/images --model resnet18_v1 --image-size 64 --workers 0..4
  gluonbench sweep --config configs/seed004-resnet.toml     # seed 004 scaled down: ResNet-18 on ~39 KB JPEGs
  gluonbench sweep --config configs/seed004-resnet.toml --layout shards --source fastfile   # packed shards
scale-out (batch size is per device; see docs/tutorials/scale-out.md):
  gluonbench sweep --ctx cpu --devices 2 --kvstore local --workers 0,2 --max-batches 50   # 2 CPU contexts
  gluonbench sweep --gpus 0,1,2,3 --kvstore device --workers 0..8:2
  gluonbench sweep --kvstore dist_sync --hosts 1,2,4 --servers 1 --workers 0 --max-batches 60   # all on 127.0.0.1
  gluonbench sweep --kvstore dist_sync --launcher ssh --hostfile hosts.txt --hosts 2 --gpus 0..7
  gluonbench sweep --kvstore dist_sync --hosts 2 --workers 0,2 --diagnose --diagnose-rank 1
  gluonbench sweep --config configs/p3.16xlarge-2hosts-dist.toml
"""


def add(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "sweep",
        help="train at each DataLoader worker count and compare",
        description="Train the workload once per worker count (each run in its own process) and report "
        "train time, eval time, accuracy, samples/s and the best worker count.",
        epilog=SWEEP_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_knob(p, "num_workers", unset=True, several="0..8")
    add_dataset_args(p, "the data set: mnist, fashion-mnist, synthetic, imagefolder, seed004", unset=True)
    add_setting(p, "repeat")
    add_setting(p, "epochs")
    add_setting(p, "max_batches", note="for quick looks")
    add_knob(p, "batch_size", pipeline_default=True)
    p.add_argument(
        "--to-end", action="store_true", help="with -- CMD: run the script to its end each time (its train duration)"
    )
    add_setting(p, "eval_workers", shown="same as training")
    add_setting(p, "ctx", shown="cpu", note="cpu:N is another CPU device")
    add_knob(p, "thread_pool", unset=True)
    add_setting(p, "timeout_s", help="seconds before a run is killed and recorded as failed")
    add_setting(p, "seed")
    add_setting(
        p, "diagnose", help="after each run, diagnose the bottleneck at that worker count (adds diagnosis time per run)"
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="profile each run (system metrics, the profiler rules, report.html) into RUN_DIR/profiles/",
    )
    add_setting(p, "diagnose_budget_s", help="seconds of diagnosis per run with --diagnose")
    add_knob(p, "prefetch")
    add_knob(p, "pin_memory", unset=True)
    add_emulate_step(p)
    add_pipeline_args(p)
    add_source_args(p)
    add_name(p, "sweep-DATASET-CTX")
    add_results_out(p)
    p.add_argument(
        "--resume", metavar="RUN_DIR", help="finish an interrupted sweep in RUN_DIR (its settings are reused)"
    )
    p.add_argument("--config", help="TOML file of settings (keys as in --set)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one setting, e.g. --set batch_size=128",
    )
    add_synthetic_args(p)
    add_vision_args(p)
    add_scale_args(p)
    add_script_args(p, "with -- CMD: your own training script, once per --workers count (fresh process each)", "set")
    p.set_defaults(func=cmd_sweep)
    return p


def settings_from_args(args: argparse.Namespace):
    """Defaults < --config < explicit flags < --set."""
    from gluonbench.config import SweepSettings, coerce, load_toml, parse_overrides

    settings = SweepSettings()
    if args.config:
        settings = coerce(settings, load_toml(args.config), source=f"--config {args.config}")
    flags = {
        k: getattr(args, k)
        for k in (
            "workload",
            "data_dir",
            "download",
            "repeat",
            "epochs",
            "max_batches",
            "eval_workers",
            "ctx",
            "timeout_s",
            "seed",
            "diagnose",
            "diagnose_budget_s",
            "name",
            *SCALE_FLAGS,
            *(knob.key for knob in KNOBS.values()),
            "emulate_step_ms",
            "pipeline",
        )
        if getattr(args, k, None) is not None
    }
    if args.pipeline_option:
        flags["pipeline_options"] = {**settings.pipeline_options, **pipeline_options(args)}
    flags.update({k: v for k, v in vision_options(args).items() if k != "layout"})
    if args.gpus is not None and args.ctx is None:
        flags["ctx"] = "gpu"
    options = {**settings.options, **({"layout": args.layout} if args.layout else {})}
    source = source_from_args(args, options)
    if source is not None:
        flags.update(workload=source_workload(flags.get("workload", settings.workload)), options=source)
    elif args.layout:
        flags["options"] = options
    settings = coerce(settings, flags, source="command line")
    settings = coerce(settings, parse_overrides(args.overrides), source="--set")
    knobs = synthetic_options(args, settings.workload)
    if knobs:
        settings = coerce(settings, {"options": {**settings.options, **knobs}}, source="command line")
    return settings.check()


def cmd_sweep(args: argparse.Namespace) -> int:
    from gluonbench import api
    from gluonbench.console import Progress
    from gluonbench.report.sweep import to_markdown
    from gluonbench.sweeprun.run import seed_line

    flags = script_flags(args, add, SCRIPT_APPLIES, SCRIPT_ONLY_FLAGS)
    flags.refuse(
        "the script runs as written, with only its training DataLoader's num_workers set per run; pass --workers "
        "and --max-batches or --to-end (or change the script's arguments)"
    )
    if flags.cmd:
        return _sweep_script(args, flags.cmd)

    settings = None if args.resume else settings_from_args(args)
    if settings is not None:
        warn = preflight(
            args,
            settings.data_dir,
            settings.ctx,
            max(settings.workers or [0]),
            settings.batch_size,
            settings.options,
            explore=True,
        )
    else:
        warn = preflight(args, None, None, 0, 1, None, enabled=False)
    settings = pipeline_first(settings)  # the pipeline's own batch size unless --batch-size
    if settings is not None:
        api.check_before_start(settings, args.out, create=False)  # what needs no MXNet first: no import wait
    # then the context, the data set and the workload's options (the folder, its sweep.json and its lock with
    # --resume): bad input is one line, before the first; only a download or a remote store waits for the sweep
    api.check_inputs(settings if settings is not None else api.check_resume(args.resume), reach=False)
    progress = Progress("sweep", _planned_runs(settings), "run")
    progress.start(_sweep_plan(settings, args.resume))

    def on_progress(steps: int, planned: int | None) -> None:
        warn()
        progress.steps(steps, planned)  # on a terminal, a bar of training steps; the run lines above it

    def on_result(result) -> None:
        warn()
        if result.kind == "dist":
            from gluonbench.report.scaling import worker_line

            line = worker_line(result)
        else:
            line = seed_line(result)
        if "profile" in result.extra:
            line += f"; rules fired: {', '.join(result.extra['profile']['triggered']) or 'none'}"
        progress.finished(line)

    try:
        run_dir, summary = api.sweep(
            settings,
            out=args.out,
            resume=args.resume,
            on_result=on_result,
            on_progress=on_progress,
            profile=args.profile,
        )
    finally:
        progress.close()
    warn()
    from gluonbench.report.scaling import ScalingSummary

    if isinstance(summary, ScalingSummary):
        from gluonbench.report.scaling import to_markdown as scaling_markdown

        print(scaling_markdown(summary))
        print(f"results: {run_dir}")
        return 0 if summary.failed == 0 else 1
    # the per-run lines (seed format) went to stderr as each run finished: stdout has the table once
    print(to_markdown(summary))
    print_roofline(lambda: api.roofline_sweep(settings, summary))
    print(f"results: {run_dir}")
    return 0 if all(r.failed == 0 for r in summary.rows) else 1


def _is_dist(settings: Any) -> bool:
    return str(getattr(settings, "kvstore", "") or "").startswith("dist")


def _planned_runs(settings: Any) -> int | None:
    """Lines a sweep prints: one per run (worker counts x repeats), or with a dist_* kvstore one per
    worker process of each job (sum of --hosts x worker counts x repeats); None when resuming."""
    if settings is None:
        return None
    per_setting = sum(settings.hosts) if _is_dist(settings) else 1
    return len(settings.workers) * settings.repeat * per_setting


def _sweep_plan(settings: Any, resume: str | None) -> str:
    """The sweep's first line: what runs, and what is known of how long it takes."""
    if settings is None:
        return f"resuming {resume}: the runs it lacks, then the report"
    s = settings
    if _is_dist(s):
        jobs = len(s.workers) * s.repeat * len(s.hosts)
        what = f"{jobs} {s.kvstore} job(s) ({', '.join(map(str, s.hosts))} worker process(es) x loader workers " + (
            f"{', '.join(map(str, s.workers))} x {s.repeat} repeat(s)) of {what_runs(s)}"
        )
    else:
        what = f"{_planned_runs(s)} run(s) (workers {', '.join(map(str, s.workers))} x {s.repeat} repeat(s)) of {what_runs(s)}"
    what += (
        f", {s.epochs} epoch(s)"
        + (f" of at most {s.max_batches} batches" if s.max_batches else "")
        + f" at batch {s.batch_size} on {s.ctx}"
    )
    return (
        f"{what}; each run is a fresh process (start-up, training, eval). How long a run takes is known once the "
        "first finishes: each finished run prints the time left"
        + (f" (each run is stopped after {s.timeout_s:g} s)" if getattr(s, "timeout_s", None) else "")
    )


SCRIPT_APPLIES = ("workers", "max_batches", "repeat", "timeout_s", "out", "name")
"""sweep's flags that apply to a training command; the others name what the script itself decides (its data,
model, loader knobs other than the workers)"""
SCRIPT_ONLY_FLAGS = (*SCRIPT_ONLY, "to_end")
"""sweep's flags that go with a training command alone"""


def _sweep_script(args: argparse.Namespace, cmd: list[str]) -> int:
    """``gluonbench sweep --workers 0,2 -- python train.py ARGS``: the script once per worker count."""
    from gluonbench import api
    from gluonbench.script.commands import sweep_command

    text, rc = sweep_command(args, cmd, _say, api.make_out)
    print(text, end="")
    return rc


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
