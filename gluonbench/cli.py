"""Command line: parse, call the API, print. No measurement logic lives here."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from gluonbench import __version__
from gluonbench.errors import GluonbenchError

log = logging.getLogger("gluonbench")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the fix, exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


SWEEP_EXAMPLES = """examples:
  gluonbench sweep --workers 0..8                 # the seed's experiment, 1 epoch per worker count
  gluonbench sweep --workers 0,2,4 --repeat 3     # median and min-max of 3 runs each
  gluonbench sweep --workers 0..8:2 --max-batches 100 --batch-size 128
  gluonbench sweep --dataset fashion-mnist --ctx gpu:0 --workers 0..8
  gluonbench sweep --config configs/p3.2xlarge.toml --set repeat=3
  gluonbench sweep --resume results/20261122T150000Z-sweep-mnist-cpu
"""

REPORT_EXAMPLES = """examples:
  gluonbench report results/20261122T150000Z-sweep-mnist-cpu   # rebuild csv, md, png from runs.jsonl
"""


def _add_sweep(sub: Any) -> None:
    p = sub.add_parser(
        "sweep",
        help="train at each DataLoader worker count and compare",
        description="Train the workload once per worker count (each run in its own process) and report "
        "train time, eval time, accuracy, samples/s and the best worker count.",
        epilog=SWEEP_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workers", help="worker counts: 0..8, 0..8:2 or 0,2,4,8 (default 0..8)")
    p.add_argument("--dataset", dest="workload", help="mnist (default) or fashion-mnist")
    p.add_argument(
        "--data-dir",
        help="folder with the four IDX files (default: $GLUONBENCH_DATA/NAME, MXNet's cache, system copies)",
    )
    p.add_argument(
        "--no-download",
        dest="download",
        action="store_false",
        default=None,
        help="never download; fail if no local copy",
    )
    p.add_argument("--repeat", type=int, help="runs per worker count (median and min-max); default 1")
    p.add_argument("--epochs", type=int, help="epochs per run (default 1)")
    p.add_argument("--max-batches", type=int, help="cap on training (and eval) batches per run, for quick looks")
    p.add_argument("--batch-size", type=int, help="default 64, as the seed")
    p.add_argument("--eval-workers", type=int, help="fix the eval loader's workers (default: same as training)")
    p.add_argument("--ctx", help="cpu (default), gpu or gpu:N")
    p.add_argument(
        "--thread-pool", action="store_true", default=None, help="DataLoader(thread_pool=True): threads, not processes"
    )
    p.add_argument(
        "--timeout",
        dest="timeout_s",
        type=float,
        help="seconds before a run is killed and recorded as failed (default 3600)",
    )
    p.add_argument("--seed", type=int, help="random seed (default 1, as the seed)")
    p.add_argument("--name", help="suffix of the run folder (default sweep-DATASET-CTX)")
    p.add_argument("--out", default="results", help="parent folder of run folders (default results/)")
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
    p.set_defaults(func=cmd_sweep)


def _add_report(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="rebuild summary.csv, summary.md and sweep.png from runs.jsonl",
        epilog=REPORT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_dir", help="a run folder made by gluonbench sweep")
    p.set_defaults(func=cmd_report)


SUBCOMMANDS: list[Callable[[Any], None]] = [_add_sweep, _add_report]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gluonbench",
        description="Why is Gluon/MXNet training slow, and how do I make the data pipeline keep up?",
        epilog="examples:\n  gluonbench sweep --workers 0..8\n  gluonbench report results/<run>\n\n"
        "Run 'gluonbench COMMAND --help' for a command's options and examples.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gluonbench {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def settings_from_args(args: argparse.Namespace):
    """Defaults < --config < explicit flags < --set."""
    from gluonbench.config import SweepSettings, coerce, load_toml, parse_overrides

    settings = SweepSettings()
    if args.config:
        settings = coerce(settings, load_toml(args.config), source=f"--config {args.config}")
    flags = {
        k: getattr(args, k)
        for k in (
            "workers",
            "workload",
            "data_dir",
            "download",
            "repeat",
            "epochs",
            "max_batches",
            "batch_size",
            "eval_workers",
            "ctx",
            "thread_pool",
            "timeout_s",
            "seed",
            "name",
        )
        if getattr(args, k) is not None
    }
    settings = coerce(settings, flags, source="command line")
    settings = coerce(settings, parse_overrides(args.overrides), source="--set")
    from gluonbench.engine.context import check_ctx

    check_ctx(settings.ctx)
    return settings.check()


def _progress_bar(total: int | None, desc: str):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(
        total=total,
        desc=desc,
        unit="step",
        file=sys.stderr,
        dynamic_ncols=True,
        leave=False,
        disable=not sys.stderr.isatty() and os.environ.get("GLUONBENCH_PROGRESS") != "1",
    )


def cmd_sweep(args: argparse.Namespace) -> int:
    from gluonbench import api
    from gluonbench.engine.run import seed_line
    from gluonbench.report.export import to_markdown

    settings = None if args.resume else settings_from_args(args)
    state: dict[str, Any] = {"bar": None, "last": 0}

    def on_progress(steps: int, planned: int | None) -> None:
        if state["bar"] is None:
            state["bar"] = _progress_bar(planned, "sweep")
        bar = state["bar"]
        if bar is not None and steps > state["last"]:
            bar.update(steps - state["last"])
            state["last"] = steps

    def on_result(result) -> None:
        line = seed_line(result)
        if state["bar"] is not None:
            state["bar"].write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr)

    try:
        run_dir, summary = api.sweep(
            settings, out=args.out, resume=args.resume, on_result=on_result, on_progress=on_progress
        )
    finally:
        if state["bar"] is not None:
            state["bar"].close()
    from gluonbench.report.export import seed_lines

    print("\n".join(seed_lines(summary)))
    print()
    print(to_markdown(summary))
    print(f"results: {run_dir}")
    return 0 if all(r.failed == 0 for r in summary.rows) else 1


def cmd_report(args: argparse.Namespace) -> int:
    from gluonbench.report.export import to_markdown, write_reports
    from gluonbench.report.store import RunStore

    store = RunStore(args.run_dir)
    if not store.path.is_dir():
        raise GluonbenchError(f"{args.run_dir} is not a folder; pass a run folder made by gluonbench sweep")
    if not store.runs_path.is_file():
        raise GluonbenchError(f"{args.run_dir} has no runs.jsonl; pass a run folder made by gluonbench sweep")
    summary = write_reports(store.path)
    print(to_markdown(summary))
    print(f"rebuilt: {store.path}/summary.csv, summary.md, summary.json, sweep.png")
    return 0


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="gluonbench: %(levelname)s: %(message)s"
    )
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    # SIGTERM (a scheduler, `kill`) stops as cleanly as Ctrl-C: finished runs kept, report rebuilt
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return args.func(args)
    except GluonbenchError as exc:
        print(f"gluonbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "gluonbench: interrupted; every finished run is kept (see runs.jsonl; resume with --resume RUN_DIR)",
            file=sys.stderr,
        )
        return 130
