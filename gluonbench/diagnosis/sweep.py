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

from gluonbench.diagnosis.run import diagnose_workload
from gluonbench.sweeprun import child
from gluonbench.sweeprun.run import RunSpec

log = logging.getLogger(__name__)


def diagnose_run(spec: RunSpec, workload: Any, ctx: Any) -> dict[str, Any]:
    """The diagnosis of one run's setting (same workload, workers, batch size, context), for ``extra``."""
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
    log.info("diagnosis at %d workers: %s %s", spec.workers, d.verdict, d.shares)
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
    sys.exit(main(sys.argv[1:]))
