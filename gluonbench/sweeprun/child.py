"""One sweep run in its own child process: :func:`run_isolated` (the parent's side) and :func:`main` (the child's).

``python -m gluonbench.sweeprun.child SPEC RESULT [LIFELINE_FD]`` reads a :class:`~gluonbench.sweeprun.run.RunSpec`
JSON, runs :func:`~gluonbench.sweeprun.run.train_and_eval`, and writes the
:class:`~gluonbench.sweeprun.run.RunResult` JSON atomically. Any exception is written as a failed result
(exit 1), so the parent records it; a hard crash leaves no result file and the parent records the exit
signal. Starting, watching and ending the process (the lifeline, ``PR_SET_PDEATHSIG``, the process group,
``/dev/shm``) is the engine's: :mod:`gluonbench.engine.isolation` and :mod:`gluonbench.engine.child`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from gluonbench.engine.child import enter
from gluonbench.files import atomic_write_text

if TYPE_CHECKING:  # imported where used: the child makes itself die with its parent before the heavy imports
    from gluonbench.sweeprun.run import DiagnoseRun, RunResult, RunSpec


def run_isolated(
    spec: RunSpec,
    log_path: Path,
    timeout_s: float,
    progress: Callable[[int], None] | None = None,
    child: ModuleType | None = None,
) -> RunResult:
    """Run ``spec`` in a child process; never raises for a failure of the run itself.

    ``progress(steps_done)`` is called as the child reports training steps. ``child``: the module the
    child process runs (``python -m``), default this one; a layer above passes its own to add what the
    sweep run does not know (:mod:`gluonbench.diagnosis.sweep`: ``--diagnose``).
    ``KeyboardInterrupt`` in the parent kills the child's group and is re-raised.
    """
    from gluonbench.engine.isolation import run_child
    from gluonbench.sweeprun.run import RunResult

    module = child.__name__ if child is not None else __spec__.name  # this module's name, also as __main__
    ran = run_child(spec.to_dict(), module, log_path, timeout_s, progress)
    if ran.result is not None:
        result = RunResult.from_dict(ran.result)
    else:
        result = RunResult(spec=spec.to_dict(), status=ran.status, error=ran.error)
    result.started_utc = result.started_utc or ran.started_utc
    result.finished_utc = result.finished_utc or ran.finished_utc
    result.wall_s = ran.wall_s
    return result


def main(argv: list[str], diagnose: DiagnoseRun | None = None) -> int:
    """Run the spec at ``argv[0]``, write its result to ``argv[1]``; ``diagnose``: the hook a spec with
    ``diagnose`` needs (:mod:`gluonbench.diagnosis.sweep` starts this with it)."""
    paths = enter(argv)
    if paths is None:
        return 3  # the parent died before prctl took effect: nobody would read the result
    spec_path, result_path = paths
    from gluonbench.engine.watchdog import LoaderStalledError, on_stall
    from gluonbench.env import utc_now
    from gluonbench.sweeprun.run import RunResult, RunSpec, train_or_fail

    spec = RunSpec.from_dict(json.loads(spec_path.read_text()))

    def stalled(message: str) -> None:
        """A stalled loader ends this process (see watchdog); its result says why."""
        failed = RunResult(
            spec=spec.to_dict(),
            status="failed",
            error=f"{LoaderStalledError.__name__}: {message}"[:500],
            finished_utc=utc_now(),
        )
        atomic_write_text(result_path, json.dumps(failed.to_dict()))

    on_stall(stalled)
    result, code = train_or_fail(spec, diagnose)
    atomic_write_text(result_path, json.dumps(result.to_dict()))
    return code


if __name__ == "__main__":
    import threading

    from gluonbench.userprocs import exit_despite_threads

    _before = set(threading.enumerate())
    # a factory's non-daemon thread would hold this run's exit (and the sweep waiting for it) for good
    sys.exit(exit_despite_threads(main(sys.argv[1:]), _before))
