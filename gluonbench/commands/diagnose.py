"""``gluonbench diagnose``: the bottleneck of a pipeline, or of a training script run as written."""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Any

from gluonbench.commands.common import load_warning, print_stalled, start_budgeted, what_runs
from gluonbench.commands.options import (
    BY_GPU,
    add_budget,
    add_dataset_args,
    add_json,
    add_knob,
    add_pipeline_args,
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
from gluonbench.errors import GluonbenchError

DIAGNOSE_EXAMPLES = """examples:
  gluonbench diagnose                                   # the seed's MNIST pipeline, 0 workers, batch 64
  gluonbench diagnose --pipeline mypkg.train:make --workers 2   # your own pipeline (gluonbench.PipelineSpec)
  gluonbench diagnose --budget 30 -- python train.py --epochs 20   # your own training script, unmodified
  gluonbench diagnose --workers 2 --batch-size 256 --json results/diagnose-mnist-w2.json
  gluonbench diagnose --dataset fashion-mnist --ctx gpu:0 --budget 120
  gluonbench diagnose --dataset synthetic --cpu-ms 2           # per-sample preprocessing of 2 ms CPU
  gluonbench diagnose --dataset synthetic --read-ms 1 --record-kb 64   # slow network file system
  gluonbench diagnose --dataset synthetic --width 2048 --depth 3       # a heavy model
  gluonbench diagnose --threshold secondary_share=0.25 --threshold share_precision=0.03
  gluonbench diagnose --dataset imagefolder --data-dir data/images --model resnet50_v1 --preset imagenet
  gluonbench diagnose --dataset seed004 --workers 2 --batch-size 32   # ResNet-18, 64 px, ~39 KB JPEGs

probes (each the pipeline with more stages swapped, measured in interleaved rounds):
{probes}

verdict: the seed's rule, as speed-ups paired round by round with 95 % CIs:
  input         = full / cached_batch       (one batch reused: "with a perfect input pipeline
                                             training would be 1.27x [1.21, 1.33] faster")
  preprocessing = full / no_preprocess      disk_io = no_preprocess / cached_batch (read, loader)
  gpu_io only when reusing one batch gains nothing (the input CI under the input_gain line, or 1
  within it once converged); the input stage whose removal gains the most when the whole CI lies
  above the line; inconclusive when the CIs cannot tell ("at the line": a gain beyond the noise
  whose CI crosses the line). The shares (the time each stage's removal saves) are printed too:
  preprocessing = full - no_preprocess, disk_io = no_preprocess - cached_batch, gpu_io = cached_batch
  (copy = cached_batch - device_batch, compute = device_batch), each over the total, with intervals.
thresholds (--threshold KEY=VALUE):
{thresholds}
"""


def _diagnose_epilog() -> str:
    """The examples, with the probe list taken from the probe declarations."""
    from gluonbench.diagnosis.probes import PROBES
    from gluonbench.diagnosis.verdict import THRESHOLDS

    thresholds = (
        textwrap.fill(f"{t.name}={t.shown_default()}: {t.help}", 100, initial_indent="  ", subsequent_indent="    ")
        for t in THRESHOLDS.values()
    )
    return DIAGNOSE_EXAMPLES.format(
        probes="\n".join(f"  {p.name:14s} {p.removes}" for p in PROBES), thresholds="\n".join(thresholds)
    )


def add(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "diagnose",
        help="classify the bottleneck: preprocessing, disk I/O or GPU I/O, with evidence and fixes",
        description="Measure the training pipeline with one stage swapped at a time (probes), attribute the "
        "step time to preprocessing, disk I/O and the device, and print the verdict, the evidence (psutil) "
        "and what to change.",
        epilog=_diagnose_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_dataset_args(
        p, "the data set: mnist, fashion-mnist, synthetic, imagefolder (with --data-dir) or seed004", default="mnist"
    )
    add_knob(p, "num_workers")
    add_knob(p, "batch_size", pipeline_default=True)
    add_setting(p, "ctx", shown=BY_GPU)
    add_knob(p, "thread_pool")
    add_knob(p, "pin_memory", note="pinned for the --ctx GPU; the cached_batch ceiling is pinned too")
    add_budget(
        p,
        "the measurement",
        "; it stops earlier once the verdict is settled, clear of the line at 95 and 99 %%, and every share is known "
        "to +-5 points",
    )
    add_setting(p, "seed", default=1)
    add_pipeline_args(p)
    add_source_args(p, modes=("file", "fastfile"))
    add_json(p, "the whole diagnosis")
    add_setting(
        p,
        "out",
        metavar="DIR",
        help="also keep a run folder DIR/<UTC>-diagnose-.../ (runs.jsonl, diagnosis.md/.csv/.json; "
        "gluonbench report rebuilds it)",
        shown="no run folder",
    )
    p.add_argument(
        "--threshold",
        dest="thresholds",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a threshold of the verdict, e.g. --threshold secondary_share=0.2 (see below)",
    )
    add_synthetic_args(p)
    add_vision_args(p)
    add_script_args(p, "with -- CMD: your own training script, run as written (the probes act inside it)", "diagnose")
    p.set_defaults(func=cmd_diagnose)
    return p


def cmd_diagnose(args: argparse.Namespace) -> int:
    from gluonbench.config import DiagnoseSettings, parse_thresholds

    flags = script_flags(args, add, SCRIPT_APPLIES)
    flags.refuse(
        "the script's own DataLoader, batch size and contexts are diagnosed as written; change them in the script "
        "(or its arguments)"
    )
    if flags.cmd:
        return _diagnose_script(args, flags.cmd)
    from gluonbench.monitor.load import LoadMeter
    from gluonbench.workloads.vision_zoo import resolve_workload

    meter = LoadMeter().start()  # other processes' CPU over the whole command: one warning at the end if it mattered

    options = {**synthetic_options(args, args.workload), **vision_options(args)}
    source = source_from_args(args, options)
    workload = args.workload
    if source is not None:
        workload, options = source_workload(args.workload), source
    settings = DiagnoseSettings(
        workload=resolve_workload(workload, options),
        data_dir=args.data_dir,
        download=args.download,
        workers=args.workers,
        batch_size=args.batch_size,
        ctx=args.ctx,
        thread_pool=args.thread_pool,
        pin_memory=args.pin_memory,
        budget_s=args.budget_s,
        seed=args.seed,
        options=options,
        thresholds=parse_thresholds(args.thresholds),
        json_path=args.json_path,
        pipeline=args.pipeline,
        pipeline_options=pipeline_options(args),
    ).check()
    settings, warn, progress = start_budgeted(args, settings, "diagnose")

    from gluonbench import api
    from gluonbench.console import duration
    from gluonbench.diagnosis.report import to_text

    progress.start(
        f"timing {what_runs(settings)} at {settings.workers} worker(s), batch {settings.batch_size}, with each "
        f"pipeline stage swapped for a stand-in, in interleaved rounds within a {duration(settings.budget_s)} budget"
    )

    def on_progress(elapsed: float, budget: float) -> None:
        warn()
        progress.advance(elapsed, budget)

    from gluonbench.engine.deadline import BudgetExceededError, midrun_error

    try:
        try:
            run_dir, d = api.run_diagnosis(settings, out=args.out, on_progress=on_progress)
        finally:
            progress.close()
    except BudgetExceededError as exc:
        if exc.partial is not None:  # a stall: what the rounds before it measured, then the one error line
            partial = exc.partial
            print_stalled(lambda: to_text(partial), "the diagnosis")
        raise
    except (GluonbenchError, OSError, MemoryError):
        raise
    except Exception as exc:  # the user's pipeline raised after its first batch passed the check
        if not getattr(settings, "pipeline", None):
            raise
        raise midrun_error(exc, f"the pipeline {settings.pipeline}") from None
    warn()
    print(to_text(d), end="")
    if args.json_path:
        print(f"gluonbench: wrote {args.json_path}", file=sys.stderr)
    if run_dir is not None:
        print(f"results: {run_dir}")
    load_warning(meter, "diagnosis")
    return 0


SCRIPT_APPLIES = ("budget_s", "json_path", "out", "thresholds")
"""diagnose's flags that apply to a training command; the others name or shape a pipeline the script decides"""


def _diagnose_script(args: argparse.Namespace, cmd: list[str]) -> int:
    """``gluonbench diagnose [options] -- python train.py ARGS``: the script's own loader, step and contexts."""
    from gluonbench import api
    from gluonbench.config import parse_thresholds
    from gluonbench.console import Progress, duration
    from gluonbench.diagnosis.report import to_text

    thresholds = parse_thresholds(args.thresholds)
    command = api.check_script(cmd, args.budget_s, args.out, args.loader, args.start_timeout_s)  # before the first line
    progress = Progress("diagnose", args.budget_s, "s", timed=True)
    progress.start(
        f"running {' '.join(cmd)} with gluonbench's hooks; once it trains, its training DataLoader's batches are "
        f"swapped for stand-ins in interleaved rounds within a {duration(args.budget_s)} budget, then it is stopped"
    )
    try:
        run_dir, d = api.diagnose_script(
            command,
            args.budget_s,
            out=args.out,
            json_path=args.json_path,
            thresholds=thresholds,
            loader=args.loader,
            start_timeout_s=args.start_timeout_s,
            on_progress=progress.advance,
        )
    finally:
        progress.close()
    print(to_text(d), end="")
    if args.json_path:
        print(f"gluonbench: wrote {args.json_path}", file=sys.stderr)
    if run_dir is not None:
        print(f"results: {run_dir}")
    return 0
