"""What each command does with a training command after ``--`` (``gluonbench sweep|tune|check|profile -- CMD``).

The CLI calls these with its parsed arguments (the flags that do not apply to a script refused already: the
command's own :func:`gluonbench.commands.options.script_flags`) and prints what they return: each checks the rest
before the script starts, runs the
command through the script's hooks and returns the text for stdout and the exit code. Lines meant for stderr
as the command runs go to ``say``; ``make_out`` is the API's check of the output folder. Nothing here prints.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.ranges import parse_int_list

log = logging.getLogger(__name__)

Say = Callable[[str], None]


def sweep_command(
    args: argparse.Namespace, cmd: list[str], say: Say, make_out: Callable[[str], Any]
) -> tuple[str, int]:
    """``gluonbench sweep --workers 0,2 [--max-batches N | --to-end] -- python train.py ARGS``: a sweep run folder."""
    from gluonbench.report.sweep import to_markdown
    from gluonbench.script.run import check_inputs
    from gluonbench.script.sweep import check_sweep, sweep_script

    to_end = bool(getattr(args, "to_end", False))
    if to_end and args.max_batches:
        raise GluonbenchError(
            "--to-end and --max-batches exclude each other: give one (--to-end runs the script to its end)"
        )
    workers = parse_int_list(args.workers or "0..8")
    max_batches = args.max_batches or 100
    repeat = args.repeat or 1
    timeout_s = args.timeout_s or 3600.0
    check_sweep(workers, max_batches, repeat, timeout_s, to_end)
    command = check_inputs(cmd, 60.0, args.loader, args.start_timeout_s, "sweep")  # bad input: before the first line
    make_out(args.out)
    timed = (
        "the script run to its end each time (its train duration)"
        if to_end
        else (f"{max_batches} of its training steps timed per run after warm-up")
    )
    say(
        f"sweep: running {' '.join(cmd)} at {', '.join(map(str, workers))} worker(s) x {repeat} repeat(s), a fresh "
        f"process each, its training DataLoader's num_workers set; {timed}"
    )

    def on_run(run: Any) -> None:
        if run.error:
            say(f"sweep: {run.workers} worker(s): failed: {run.error}")
        else:
            say(f"sweep: {run.workers} worker(s): {run.samples_per_s:.1f} samples/s over {run.steps} steps")

    result = sweep_script(
        command,
        workers,
        max_batches,
        repeat=repeat,
        to_end=to_end,
        timeout_s=timeout_s,
        loader=args.loader,
        start_timeout_s=args.start_timeout_s,
        out=args.out,
        name=args.name,
        on_run=on_run,
    )
    info = result.loader_info
    span = "each run to the script's end" if to_end else f"{max_batches} training steps a run"
    head = (
        f"DataLoader #{result.loader} of the script ({info.get('dataset')}, batch size {info.get('batch_size')}, "
        f"{span})\n\n"
    )
    text = head + to_markdown(result.summary) + f"results: {result.run_dir}\n"
    return text, 0 if all(not r.error for r in result.runs) else 1


def profile_run_as(cmd: list[str]) -> list[str] | None:
    """What ``gluonbench profile -- CMD`` starts for ``cmd``: when it is a Python interpreter running a script or a
    module, and that interpreter imports gluonbench and mxnet, the same command through the script mode's bootstrap,
    so the steps and batch waits of its training DataLoader are recorded with no change to the script; else None
    (``cmd`` runs as it is: system metrics, and the framework events the script marks itself)."""
    from gluonbench.script.run import check_interpreter, parse_command

    try:
        command = parse_command(cmd, "profile")
        check_interpreter(command)
    except GluonbenchError as exc:
        log.info("profiling without the script hooks: %s", exc)
        return None
    return command.boot()


def tune_command(args: argparse.Namespace, cmd: list[str], say: Say, make_out: Callable[[str], Any]) -> tuple[str, int]:
    """``gluonbench tune [--budget S] [--max-workers N] -- python train.py ARGS``: the recommendation as the
    ``DataLoader(...)`` arguments to write into the script, and a tune run folder (``--out``, default
    ``gluonbench-results/``). The flags that do not apply to a script were refused before (the tune command's own
    check)."""
    import json

    from gluonbench.files import atomic_write_text
    from gluonbench.report import DEFAULT_OUT
    from gluonbench.script.run import check_inputs
    from gluonbench.script.tune import check_tune, save_tune, tune_script
    from gluonbench.validate import redact

    out = args.out or DEFAULT_OUT
    check_tune(args.budget_s, args.max_workers)
    command = check_inputs(cmd, args.budget_s, args.loader, args.start_timeout_s, "tune")  # before the first line
    make_out(out)
    say(
        f"tune: running {' '.join(cmd)} once per DataLoader setting (a fresh process each, its training DataLoader "
        f"made with that setting) within a {args.budget_s:g} s budget; first as written, the baseline"
    )

    def on_trial(trial: Any) -> None:
        if trial.error:
            say(f"tune: {trial.setting.label}: failed: {trial.error}")
            return
        parts = [f"{name} {trial.rate(mode)[0]:.0f}" for mode, name in TUNE_MODES]
        what = "as written: " if trial.role == "baseline" else ""
        say(
            f"tune: {what}{trial.setting.label}: samples/s {', '.join(parts)} (run {trial.wall_s:.1f} s, "
            f"{trial.startup_s:.1f} s of it to its first steps)"
        )

    tuned = tune_script(
        command,
        args.budget_s,
        max_workers=args.max_workers,
        loader=args.loader,
        start_timeout_s=args.start_timeout_s,
        on_trial=on_trial,
    )
    result = tuned.result
    settings = {
        "budget_s": args.budget_s,
        "max_workers": args.max_workers,
        "loader": tuned.loader,
        "loader_choice": args.loader,
        "loader_info": tuned.loader_info,
        "batch_size": result.batch_size,
        "searched": ["num_workers", "thread_pool", "prefetch", "pin_memory"],
    }
    if args.json_path:
        atomic_write_text(args.json_path, json.dumps(redact(result.to_dict()), indent=2))
    save_tune(result, cmd, out, settings)
    head = (
        f"the script as written: {_setting_text(result.current)}: "
        f"{_samples(result.current_samples_per_s)} (DataLoader #{tuned.loader} of the script, batch size "
        f"{result.batch_size}, nothing overridden)\n"
        f"the best setting:      {_setting_text(result.setting)}: {_samples(result.samples_per_s)}{_fastest(result)}\n\n"
    )
    text = head + result.to_text()
    if args.json_path:
        text += f"json: {args.json_path}\n"
    return text + f"results: {result.run_dir}\n", 0


TUNE_MODES = (("full", "full step"), ("loader_only", "loader alone"), ("cached_batch", "one reused batch"))


def _setting_text(setting: dict[str, Any]) -> str:
    from gluonbench.tune.model import Setting

    return Setting.from_dict(setting).label


def _samples(rate: float) -> str:
    return f"{rate:.0f} samples/s" if rate == rate else "n/a"


def _fastest(result: Any) -> str:
    """Where the recommendation is not the fastest run: the cheapest within noise of it, said with the fastest."""
    b = result.batch_sizes[0] if result.batch_sizes else None
    runs = [c for c in (b.confirmed if b else []) if isinstance(c.get("samples_per_s"), float)]
    top = max(runs, key=lambda c: c["samples_per_s"], default=None)
    if top is None or top["label"] == _setting_text(result.setting):
        return " (the fastest run)"
    return (
        f" (the cheapest of {len(b.within_noise)} within noise or 5 % of the fastest run, {top['label']}: "
        f"{_samples(top['samples_per_s'])})"
    )
