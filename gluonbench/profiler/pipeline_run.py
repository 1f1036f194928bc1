"""``gluonbench profile --pipeline MODULE:FUNCTION``: the profiled program is one training run of that pipeline.

:func:`pipeline_command` is the command ``gluonbench profile`` runs under its sampler:
``python -m gluonbench.profiler.pipeline_run RUN_SPEC_JSON``, started as :func:`private` makes it (the spec, which
may hold the factory's credentials, in the environment rather than in the command line that ``ps`` shows). That
program trains the pipeline once (the
sweep's run, :func:`gluonbench.sweeprun.run.train_and_eval`, in its own process), with the profiler's step
events: each step and the wait for its batch are marked, inside a ``train`` phase, so the rules see steps
as they see them from a hooked script.

When the pipeline fails mid-run (its transform, dataset or net raises after the first batch passed the check, a
stage stalls past its budget), the program writes the one line that names the stage and the fix to
:data:`FAULT_FILE` in the profile folder, the traceback to :data:`LOG_FILE` beside it, and exits
:data:`FAULT_EXIT`; ``gluonbench profile`` then says that line (:func:`read_fault`) and keeps the profile.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from gluonbench.env import FROM_ENV, SPEC_ENV, handed_spec
from gluonbench.profiler import hooks

FAULT_FILE = "pipeline-fault.txt"
"""in the profile folder: the one line of a pipeline that failed mid-run"""
LOG_FILE = "pipeline.log"
"""in the profile folder: the profiled run's log (a failure's traceback), made only when something is logged"""
FAULT_EXIT = 3
"""the profiled program's exit code after a pipeline fault (its line is in :data:`FAULT_FILE`)"""
MAX_LINE = 2000


def pipeline_command(
    target: str,
    options: dict[str, Any] | None = None,
    workers: int = 0,
    batch_size: int | None = None,
    max_batches: int | None = None,
    epochs: int = 1,
    ctx: str = "cpu",
    thread_pool: bool = False,
    prefetch: int | None = None,
    pin_memory: bool = False,
) -> list[str]:
    """The program ``gluonbench profile`` runs for a pipeline factory: its settings checked first, one line
    per mistake (the factory itself is loaded and checked here too, before the profile starts). ``batch_size``
    None: the pipeline's own."""
    from gluonbench.config import SweepSettings

    settings = SweepSettings(
        pipeline=target,
        pipeline_options=dict(options or {}),
        workers=(workers,),
        batch_size=batch_size,
        max_batches=max_batches,
        epochs=epochs,
        ctx=ctx,
        thread_pool=thread_pool,
        prefetch=prefetch,
        pin_memory=pin_memory,
    ).check()
    from gluonbench.config import resolve_batch_size
    from gluonbench.workloads.spec import check_pipeline

    check_pipeline(  # reuses the spec the CLI checked before its first line, if it did: one factory call
        target,
        options,
        ctx,
        pin_memory,
        keep=batch_size is None,  # then read for its batch size below, and released
        batch_size=batch_size,
        num_workers=workers,
        thread_pool=thread_pool,
        prefetch=prefetch,
    )
    spec = resolve_batch_size(settings, keep=False).specs()[0]  # the pipeline's own batch size unless one is given
    return [sys.executable, "-m", "gluonbench.profiler.pipeline_run", json.dumps(spec.to_dict())]


def private(cmd: list[str]) -> tuple[list[str], dict[str, str]]:
    """``cmd`` (from :func:`pipeline_command`) as it is started: its spec moved from the command line, which any
    user's ``ps`` shows, to the environment, which only the same user can read; and that environment's addition."""
    return [*cmd[:-1], FROM_ENV], {SPEC_ENV: cmd[-1]}


def marked(batches: Iterable[Any]) -> Iterator[Any]:
    """``batches`` with the profiler's marks: the wait for each batch, and each step (the time until the next
    batch is asked for)."""
    for item in hooks.wrap(batches):
        with hooks.step():
            yield item


def _profile_folder() -> Path | None:
    """The profile folder this program is profiled into (the parent of the hooks' output folder), if any."""
    root = os.environ.get(hooks.PROFILE_ENV)
    return Path(root).parent if root else None


def read_fault(profile_dir: str | Path) -> str | None:
    """The one line a profiled pipeline run left in ``profile_dir`` when it failed mid-run, else None."""
    path = Path(profile_dir) / FAULT_FILE
    try:
        with open(path, "rb") as f:
            text = f.read(MAX_LINE).decode("utf-8", "replace")
    except OSError:
        return None
    line = " ".join(text.split())
    return line or None


def _fault_line(exc: BaseException) -> str | None:
    """``exc`` as one line when it is the pipeline failing (its code raised mid-run, a stage stalled, a
    gluonbench check), else None."""
    from gluonbench.engine.deadline import pipeline_fault
    from gluonbench.errors import GluonbenchError

    if isinstance(exc, GluonbenchError):
        return str(exc)
    fault = pipeline_fault(exc)
    return str(fault) if fault is not None else None


def main(argv: list[str]) -> int:
    from gluonbench.files import atomic_write_text
    from gluonbench.sweeprun.run import RunSpec, seed_line, train_and_eval

    folder = _profile_folder()
    fmt = "%(asctime)s %(name)s %(levelname)s %(message)s"
    if folder is None:
        logging.basicConfig(level=logging.INFO, format=fmt)
    else:  # the log (a failure's traceback) beside the profile; warnings also on stderr
        to_file = logging.FileHandler(folder / LOG_FILE, delay=True)
        to_file.setFormatter(logging.Formatter(fmt))
        to_stderr = logging.StreamHandler()
        to_stderr.setLevel(logging.WARNING)
        to_stderr.setFormatter(logging.Formatter(fmt))
        logging.basicConfig(level=logging.INFO, handlers=[to_file, to_stderr])
    spec = RunSpec.from_dict(json.loads(handed_spec(argv[0])))
    try:
        with hooks.phase("train"):
            result = train_and_eval(spec, observe=marked)
    except Exception as exc:
        line = _fault_line(exc) if folder is not None else None
        if line is None:
            raise
        logging.getLogger(__name__).info("the profiled pipeline run failed: %s", line, exc_info=exc)
        atomic_write_text(folder / FAULT_FILE, line[:MAX_LINE] + "\n")
        return FAULT_EXIT
    print(seed_line(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
