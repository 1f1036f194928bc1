"""What several commands do around their API call: preflight warnings, the roofline, a stall's evidence, the load warning."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import Any

log = logging.getLogger("gluonbench")


def print_stalled(text: Callable[[], str], what: str) -> None:
    """Print what a stalled command measured before the stall (``text()``); its one error line follows, whatever
    happens here."""
    try:
        print(text(), end="")
    except Exception as err:
        log.info("%s before the stall could not be printed: %r", what, err)


def what_runs(settings: Any) -> str:
    """What a command runs, for its first line: the user's pipeline factory or the registered workload."""
    return f"the pipeline {settings.identity()}" if getattr(settings, "pipeline", None) else str(settings.workload)


def pipeline_first(settings: Any) -> Any:
    """Import and check a ``--pipeline`` factory before the first line, so bad input stays one line (the
    library's check before measuring reuses the spec kept here: the factory is called once in this process);
    the settings at the pipeline's own batch size unless ``--batch-size`` was given."""
    if settings is not None and getattr(settings, "pipeline", None):
        from gluonbench import api

        api.check_user_pipeline(settings, keep=True)  # kept: the API's check reuses it (one factory call)
        return api.with_pipeline(settings)
    return settings


def preflight(
    args: argparse.Namespace,
    data_dir: Any,
    ctx: Any,
    workers: int,
    batch_size: int,
    options: Any,
    explore: bool = False,
    enabled: bool = True,
) -> Callable[[], None]:
    """Run the cheap doctor checks now (< 1 s); return ``warn()``, which prints any ``fail`` once, as a warning.

    The command calls ``warn()`` once its own validation has passed (its first progress report, or the
    end), so bad input stays one clear line. ``explore``: a sweep tries worker counts above the cores
    on purpose, so the cores check leaves them out (``/dev/shm`` is still checked for the largest).
    """
    lines: list[str] = []
    if enabled and getattr(args, "preflight", True):
        from gluonbench import api

        for c in api.preflight(data_dir, ctx, workers, batch_size, options, explore=explore):
            if c.status == "fail":
                lines.append(
                    f"gluonbench: warning: preflight {c.line()} (gluonbench doctor for all checks; "
                    "--no-preflight skips them)"
                )

    def warn() -> None:
        while lines:
            print(lines.pop(0), file=sys.stderr)

    return warn


def print_roofline(lines: Callable[[], list[Any]]) -> None:
    """Print roofline lines (:class:`~gluonbench.doctor.roofline.RooflineLine` or their dicts) under a heading."""
    from gluonbench.doctor.roofline import RooflineLine, to_text

    text = to_text([ln if isinstance(ln, RooflineLine) else RooflineLine(**ln) for ln in lines()])
    if text:
        print(text, end="")


def load_warning(meter: Any, what: str) -> None:
    """After a measurement: one line when other processes' load was enough to change it (monitor.load)."""
    from gluonbench.monitor.load import warning

    line = warning(meter.stop(), what)
    if line:
        print(line, file=sys.stderr)


def start_budgeted(args: Any, settings: Any, command: str) -> tuple[Any, Callable[[], None], Any]:
    """What a budgeted command (diagnose, tune) does before its first line: the cheap preflight checks, the
    ``--pipeline`` factory imported and checked (its own batch size unless ``--batch-size``), the checks that need
    no MXNet; then its progress line. Returns the settings, the preflight's warning callback and the progress."""
    from gluonbench import api
    from gluonbench.console import Progress

    warn = preflight(args, settings.data_dir, settings.ctx, settings.workers, settings.batch_size, settings.options)
    settings = pipeline_first(settings)  # the pipeline's own batch size unless --batch-size
    api.check_before_start(settings, args.out)  # what needs no MXNet: before the first line
    return settings, warn, Progress(command, settings.budget_s, "s", timed=True)
