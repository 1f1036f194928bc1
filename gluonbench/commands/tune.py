"""``gluonbench tune``: the cheapest DataLoader setting that keeps the model fed."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gluonbench.commands.common import load_warning, print_roofline, print_stalled, start_budgeted, what_runs
from gluonbench.commands.options import (
    BY_GPU,
    add_budget,
    add_dataset_args,
    add_emulate_step,
    add_json,
    add_knob,
    add_pipeline_args,
    add_script_args,
    add_setting,
    add_source_args,
    add_synthetic_args,
    pipeline_options,
    script_flags,
    source_from_args,
    synthetic_options,
)
from gluonbench.knobs import KNOBS

TUNE_EXAMPLES = """examples:
  gluonbench tune                                        # the seed's MNIST pipeline: best DataLoader setting
  gluonbench tune --pipeline mypkg.train:make --toml tuned.toml   # your own pipeline; tuned.toml names it
  gluonbench tune --workers 2 --budget 120 --json tune.json --toml tuned.toml
  gluonbench sweep --config tuned.toml                   # then train at the recommendation
  gluonbench tune --dataset synthetic --read-ms 2        # slow reads: more workers than cores pay
  gluonbench tune --dataset synthetic --cpu-ms 1         # CPU-heavy transform: about the core count
  gluonbench tune --emulate-step-ms resnet50@v100        # would this loader keep a V100 fed? (AU, DLIO's 90 %)
  gluonbench tune --batch-sizes 64,128,256               # also other batch sizes (learning-rate note)
  gluonbench tune --source fastfile --uri packed/        # a RecordIO data set packed by gluonbench pack
  gluonbench tune --out results                          # also a run folder with report.html
  gluonbench tune --budget 120 -- python train.py --epochs 5   # your own script, unmodified: DataLoader(...) to write
  gluonbench tune --max-workers 8 -- python -m mypkg.train     # a module; at most 8 workers tried

how: the model ceiling (one cached batch stepped) once; the loader alone (no model step) at a few worker
counts, chosen by a model of how it grows with workers (linearly until the cores, or the read latency,
saturate; CPU use per worker from psutil); stop once the loader clearly outruns the model; then the full
pipelines of the top candidates and the current setting in interleaved rounds with 95 % CIs; the cheapest
(fewest workers, then least memory) within noise or 5 % of the best is recommended.

with -- CMD (your training script, run as written): one fresh process of the script per setting, its training
DataLoader made with that setting's num_workers, thread_pool, prefetch and pin_memory (the first run: as the
script wrote it, the baseline); in each, its own training loop is measured in interleaved rounds (the full step,
the loader alone, one reused batch), then it is stopped. The same model picks the next setting; the cheapest
within noise of the fastest full step is printed as the DataLoader(...) arguments to write into the script, with
the samples/s of it and of the script as written, and a run folder is kept (--out, default gluonbench-results/).
The batch size is not searched there: the script's learning rate and shapes follow it; try another through the
script's own arguments.
"""


def _tune_epilog() -> str:
    """The examples, then what is searched, from the knobs' declarations."""
    searched = "\n".join(
        f"  {k.flag:14s} {k.tune}" + (f": {', '.join(map(str, k.grid))}" if k.grid else "")
        for k in KNOBS.values()
        if k.tune
    )
    return (
        f"{TUNE_EXAMPLES}\nsearched (the flags give the current setting, measured beside the candidates):\n{searched}\n"
    )


CURRENT = "the current setting, the baseline"


def add(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "tune",
        help="find the cheapest DataLoader setting that keeps the model fed, in a fraction of a sweep",
        description="Search num_workers, thread_pool, prefetch (and pin_memory on a GPU) with short steady-state "
        "measurements and a model of the loader, confirm the top candidates against each other, and print the "
        "DataLoader line to paste with the evidence.",
        epilog=_tune_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_dataset_args(p, "the data set: mnist, fashion-mnist or synthetic", default="mnist")
    add_knob(p, "num_workers", note=CURRENT)
    add_knob(p, "thread_pool", note=CURRENT)
    add_knob(p, "pin_memory", note=CURRENT + "; pinned for the --ctx GPU")
    add_knob(p, "prefetch", note=CURRENT)
    add_knob(p, "batch_size", pipeline_default=True)
    p.add_argument("--batch-sizes", help="also tune these batch sizes, e.g. 64,128,256 (budget shared)")
    add_setting(p, "max_workers", shown="max(16, 4 x cores)")
    add_setting(p, "ctx", shown=BY_GPU)
    add_emulate_step(p)
    add_budget(p, "the search")
    add_setting(p, "seed", default=1)
    add_pipeline_args(p)
    add_source_args(p, modes=("file", "fastfile"))
    add_json(p, "the whole result")
    p.add_argument(
        "--toml", metavar="FILE", help="write the recommendation as a sweep config (gluonbench sweep --config)"
    )
    add_setting(
        p,
        "out",
        metavar="DIR",
        help="also keep a run folder DIR/<UTC>-tune-.../ (runs.jsonl, tune.md/.csv/.json, report.html; "
        "gluonbench report rebuilds it)",
        shown="no run folder",
    )
    add_synthetic_args(p)
    add_script_args(
        p,
        "with -- CMD: your own training script, one fresh process per DataLoader setting (--budget, --max-workers, "
        "--json and --out apply; --out defaults to gluonbench-results/ there)",
        "tune",
    )
    p.set_defaults(func=cmd_tune)
    return p


def cmd_tune(args: argparse.Namespace) -> int:
    from gluonbench import api

    flags = script_flags(args, add, SCRIPT_APPLIES)
    if flags.given:
        flags.refuse(SCRIPT_WHY, script_reasons())
    if flags.cmd:
        return _tune_script(args, flags.cmd)
    from gluonbench.config import TuneSettings
    from gluonbench.ranges import parse_int_list

    options = synthetic_options(args, args.workload)
    source = source_from_args(args, options)
    settings = TuneSettings(
        workload="source" if source is not None else args.workload,
        data_dir=args.data_dir,
        download=args.download,
        workers=args.workers,
        thread_pool=args.thread_pool,
        prefetch=args.prefetch,
        pin_memory=args.pin_memory,
        batch_size=args.batch_size,
        batch_sizes=tuple(parse_int_list(args.batch_sizes, what="--batch-sizes")) if args.batch_sizes else None,
        max_workers=args.max_workers,
        ctx=args.ctx,
        emulate_step_ms=args.emulate_step_ms,
        budget_s=args.budget_s,
        seed=args.seed,
        options=source if source is not None else options,
        json_path=args.json_path,
        toml_path=args.toml,
        pipeline=args.pipeline,
        pipeline_options=pipeline_options(args),
    ).check()
    settings, warn, progress = start_budgeted(args, settings, "tune")

    from gluonbench.console import duration

    progress.start(
        f"searching DataLoader settings of {what_runs(settings)} (batch {settings.batch_size}"
        + (f", batch sizes {', '.join(map(str, settings.batch_sizes))}" if settings.batch_sizes else "")
        + f") within a {duration(settings.budget_s)} budget, then a report"
    )

    def on_progress(elapsed: float, budget: float, best: str) -> None:
        warn()
        progress.advance(elapsed, budget, best)

    from gluonbench.engine.deadline import BudgetExceededError
    from gluonbench.monitor.load import LoadMeter

    meter = LoadMeter().start()  # other processes' CPU during the search: one warning at the end if it mattered
    try:
        try:
            result = api.run_tune(settings, on_progress, out=args.out)
        finally:
            progress.close()
    except BudgetExceededError as exc:
        if exc.partial is not None and exc.partial.measured:  # a stall: what was measured before it, then the line
            print_stalled(exc.partial.to_text, "the tune's evidence")
        raise
    warn()
    print(result.to_text(), end="")
    print_roofline(lambda: api.roofline_tune(settings, result))
    if args.json_path:
        print(f"gluonbench: wrote {args.json_path}", file=sys.stderr)
    if args.toml:
        print(f"gluonbench: wrote {args.toml} (gluonbench sweep --config {args.toml})", file=sys.stderr)
    if result.run_dir is not None:
        print(f"results: {result.run_dir}")
    load_warning(meter, "tune")
    return 0


SCRIPT_APPLIES = ("budget_s", "max_workers", "json_path", "out")
"""tune's flags that apply to a training command; every other one names what the script itself decides"""
SCRIPT_WHY = "the script runs as written (its data, model, contexts); change the script or its arguments"


def script_reasons() -> dict[str, str]:
    """Why tune's batch-size and loader-knob flags do not apply to a training command (the others: SCRIPT_WHY)."""
    from gluonbench.script.tune import BATCH_SIZE_NOTE

    knobs = (
        "the script's own setting is the baseline (run with nothing overridden) and the tune searches "
        "num_workers, thread_pool, prefetch and pin_memory itself; change the script (or its arguments) for "
        "anything else"
    )
    return {
        "batch_size": f"the batch size is {BATCH_SIZE_NOTE}",
        "batch_sizes": f"the batch size is {BATCH_SIZE_NOTE}",
        **{k: knobs for k in ("workers", "thread_pool", "prefetch", "pin_memory")},
    }


def _tune_script(args: argparse.Namespace, cmd: list[str]) -> int:
    """``gluonbench tune [--budget S] -- python train.py ARGS``: the loader knobs searched on the running script."""
    from gluonbench import api
    from gluonbench.script.commands import tune_command

    text, rc = tune_command(args, cmd, _say, api.make_out)
    print(text, end="")
    return rc


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
