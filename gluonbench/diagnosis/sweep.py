"""``sweep --diagnose``: the diagnosis of a sweep run's own setting, after its training, in its child process.

A sweep run (:func:`gluonbench.sweeprun.run.train_and_eval`) sits below the diagnosis, so the diagnosis is
passed in from above: :func:`diagnose_run` is the ``diagnose`` hook, and this module is the child process
entry point a diagnosing run starts (``python -m gluonbench.diagnosis.sweep SPEC RESULT [LIFELINE_FD]``,
:func:`gluonbench.sweeprun.child.run_isolated` with ``child=`` this module): the sweep run's child with the hook.
"""

from __future__ import annotations

import logging
import math
import sys
from typing import Any

from gluonbench.diagnosis.run import Diagnosis, diagnose_workload
from gluonbench.engine.deadline import BudgetExceededError
from gluonbench.sweeprun import child
from gluonbench.sweeprun.run import RunSpec

log = logging.getLogger(__name__)


def diagnose_run(spec: RunSpec, workload: Any, ctx: Any) -> dict[str, Any]:
    """The diagnosis of one run's setting (same workload, workers, batch size, context), for ``extra``.

    A stage that stalls past the diagnosis's budget and grace leaves the diagnosis of the complete rounds before
    it, with ``stalled`` (the stage) and ``diagnose_error`` (the stall's line) beside it; with no complete round,
    the error is raised (the run records it as ``diagnose_error``).
    """
    try:
        d = diagnose_workload(
            spec.workload,
            spec.batch_size,
            spec.workers,
            ctx,
            spec.diagnose_budget_s,
            workload=workload,
            thread_pool=spec.thread_pool,
            seed=spec.seed,
        )
    except BudgetExceededError as exc:
        if exc.partial is None:
            raise
        log.info("diagnosis at %d workers stalled in %s; %d rounds kept", spec.workers, exc.stage, exc.partial.rounds)
        return {**_extra(exc.partial), "stalled": exc.stage, "diagnose_error": f"{type(exc).__name__}: {exc}"[:500]}
    log.info("diagnosis at %d workers: %s %s", spec.workers, d.verdict, d.shares)
    return _extra(d)


def _extra(d: Diagnosis) -> dict[str, Any]:
    """What a diagnosis adds to its sweep run's ``extra``."""
    return {
        "verdict": d.verdict,
        "at_line": d.at_line,
        "shares": {k: round(v, 4) for k, v in d.shares.items()},
        "secondary": d.secondary,
        "input_bound": d.input_bound,
        # the seed's rule: how much faster one reused batch trains (what the verdict is read from)
        "input_speedup": round(d.speedups.get("input", math.nan), 4),
        "input_speedup_ci": [round(x, 4) for x in d.speedup_ci.get("input", [math.nan, math.nan])],
        "diagnosis": d.to_dict(),
    }


def main(argv: list[str]) -> int:
    """The sweep run's child process (:func:`gluonbench.sweeprun.child.main`) with :func:`diagnose_run` as its hook."""
    return child.main(argv, diagnose=diagnose_run)


if __name__ == "__main__":
    import threading

    from gluonbench.userprocs import exit_despite_threads

    _before = set(threading.enumerate())
    sys.exit(exit_despite_threads(main(sys.argv[1:]), _before))  # as gluonbench.sweeprun.child
