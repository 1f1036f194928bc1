"""Command line entry point: build the parser from :mod:`gluonbench.commands` and run the chosen command.

Each command (its flags, examples and what it prints) lives in its own module of :mod:`gluonbench.commands`;
the options several commands share are declared once in :mod:`gluonbench.commands.options`. Here: the
parser, the process-wide set-up (logging, signals, stale scratch folders) and the exit codes.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile

from gluonbench import interrupts
from gluonbench.commands import COMMANDS
from gluonbench.commands.options import Parser, add_no_preflight
from gluonbench.errors import GluonbenchError
from gluonbench.version import __version__

log = logging.getLogger("gluonbench")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: every command of :mod:`gluonbench.commands`, its flags and examples."""
    parser = Parser(
        prog="gluonbench",
        description="Why is Gluon/MXNet training slow, and how do I make the data pipeline keep up?",
        epilog="examples:\n  gluonbench sweep --workers 0..8\n  gluonbench diagnose --workers 2\n"
        "  gluonbench report results/<run>\n"
        "  gluonbench pack data/images packed/ && gluonbench verify packed/\n"
        "  gluonbench stream packed/ --channel train --channel-dir /tmp/ch --epochs 2\n"
        "  gluonbench io\n"
        "  gluonbench profile -- python train.py\n\n"
        "Run 'gluonbench COMMAND --help' for a command's options and examples.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gluonbench {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.add(sub)
    add_no_preflight(sub)
    return parser


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that Python's own flush at exit does not fail on a closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """``gluonbench ...``: parse ``argv``, run the command, map errors to exit codes (2 bad input, 130 interrupted)."""
    from gluonbench.env import ensure_standard_streams

    ensure_standard_streams()  # a closed stdin/stdout/stderr becomes /dev/null before anything opens a file
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="gluonbench: %(levelname)s: %(message)s"
    )
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    from gluonbench.names import use_flags

    use_flags()  # messages name the flags (--budget), not the Python arguments (budget_s)
    from gluonbench.engine.deadline import exit_hard_when_stuck

    exit_hard_when_stuck()  # a step stuck in native code past budget + grace ends this process, not only its command
    # SIGTERM (a scheduler, `kill`) and SIGHUP stop as cleanly as Ctrl-C: finished runs kept, report rebuilt
    interrupts.install()
    from gluonbench.scratch import SHORT_ROOT, sweep_stale

    sweep_stale()  # scratch folders of a gluonbench run killed with -9 (their owner is gone)
    if os.path.realpath(tempfile.gettempdir()) != SHORT_ROOT:
        sweep_stale(SHORT_ROOT)  # where a run's TMPDIR goes when its own folder's path is too long for a socket
    owns_process = argv is None  # the console script or python -m gluonbench, not a caller's main([...])
    from gluonbench.userprocs import UserLeftovers

    leftovers = UserLeftovers(owns_process)
    _limit_user_code(args, hard=owns_process)
    try:
        rc = _run(args)
    finally:
        leftovers.end()
    return leftovers.exit(rc)


def _limit_user_code(args: argparse.Namespace, hard: bool) -> None:
    """A ``--pipeline`` factory's import and call get the command's deadline: its budget plus grace."""
    from gluonbench.engine.deadline import grace_s
    from gluonbench.workloads.spec import limit_user_code

    budget = getattr(args, "budget_s", None)
    if isinstance(budget, int | float) and budget > 0 and budget != float("inf"):
        limit = max(budget + grace_s(budget), USER_CODE_MIN_S)
        why = (
            f"the budget {budget:g} s + {grace_s(budget):g} s grace"
            if limit > USER_CODE_MIN_S
            else f"gluonbench's least limit for a factory, {USER_CODE_MIN_S:g} s"
        )
    else:
        limit, why = USER_CODE_LIMIT_S, f"gluonbench's limit for a factory, {USER_CODE_LIMIT_S:g} s"
    limit_user_code(limit, why, hard=hard)


USER_CODE_LIMIT_S = 300.0
"""seconds a ``--pipeline`` factory's import and call may take in a command without ``--budget``"""
USER_CODE_MIN_S = 40.0
"""the least time a factory's import and call get, however short the budget: importing MXNet and building a data
set can take 15 s on a busy 2-core machine, and a factory stopped for that would be a false alarm"""


def _run(args: argparse.Namespace) -> int:
    """The command, its errors mapped to exit codes."""
    from gluonbench.env import check_environment

    try:
        check_environment()  # OMP_NUM_THREADS, MXNET_*, GLUONBENCH_*: before MXNet is imported
        code = args.func(args)
        interrupts.raise_if_pending()  # a stop the command's code swallowed still ends the command as interrupted
        return code
    except BrokenPipeError:
        # the reader of our output went away (`gluonbench compare A B | head -1`): what it read is all it wanted
        _quiet_stdout()
        return 141  # 128 + SIGPIPE, as a shell reports a command its pipe's reader ended
    except GluonbenchError as exc:
        print(f"gluonbench: error: {exc.worded(flags=True)}", file=sys.stderr)  # the CLI words the parameters as flags
        return 2
    except KeyboardInterrupt:
        if hasattr(args, "resume"):  # only the commands that have --resume may suggest it
            print(
                "gluonbench: interrupted; every finished run is kept (see runs.jsonl; resume with --resume RUN_DIR)",
                file=sys.stderr,
            )
        else:
            print("gluonbench: interrupted; nothing more was measured (run the command again)", file=sys.stderr)
        return 130
