"""``gluonbench check`` and ``gluonbench compare``: a CI gate for data-pipeline slowdowns, and run-folder diffs.

* :func:`run_check` measures a pipeline beside a fixed reference pipeline (the ruler) and either saves
  a baseline or judges the pipeline against one (:mod:`gluonbench.check.gate`);
* :func:`gluonbench.check.compare.compare_runs` diffs two run folders of the same kind;
* :mod:`gluonbench.check.pytest_plugin` offers the ``gluonbench_check`` fixture.

Exit codes of ``gluonbench check``: 0 pass, 1 regression, 2 bad input, 3 inconclusive.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gluonbench.check.gate import (
    DEFAULT_BUDGET_S,
    DEFAULT_MAX_SLOWDOWN,
    EXIT_BAD_INPUT,
    EXIT_INCONCLUSIVE,
    EXIT_PASS,
    EXIT_REGRESSION,
    CheckResult,
    Snapshot,
    check_budget,
    decide,
    load_baseline,
    measure_snapshot,
    options_record,
    parse_fraction,
    save_baseline,
)
from gluonbench.check.target import Target, resolve_pipeline
from gluonbench.errors import GluonbenchError
from gluonbench.names import param

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INCONCLUSIVE",
    "EXIT_PASS",
    "EXIT_REGRESSION",
    "CheckResult",
    "Snapshot",
    "Target",
    "resolve_pipeline",
    "run_check",
]


def run_check(
    pipeline: Any,
    *,
    baseline: str | Path | None = None,
    save: str | Path | None = None,
    against: str | Path | None = None,
    max_slowdown: float | str = DEFAULT_MAX_SLOWDOWN,
    budget_s: float = DEFAULT_BUDGET_S,
    batch_size: int | None = None,
    num_workers: int = 0,
    ctx: Any = None,
    options: dict[str, Any] | None = None,
    data_dir: str | None = None,
    identity: str | None = None,
    on_progress: Callable[[float, float], None] | None = None,
) -> CheckResult | Snapshot:
    """Check ``pipeline`` (see :func:`resolve_pipeline`) against ``baseline``, or save one to ``save``, or measure it
    side by side with the code of ``against`` (a git ref or another checkout: :mod:`gluonbench.check.against`).

    Exactly one of ``baseline``, ``save`` and ``against``. Everything is validated before anything is measured; bad
    input raises :class:`GluonbenchError`. Returns the :class:`CheckResult` (checking) or the saved
    :class:`Snapshot` (saving).
    """
    from gluonbench.report.store import check_writable_file

    if sum(x is not None for x in (baseline, save, against)) != 1:
        raise GluonbenchError(
            f"give one of {param('baseline')} FILE (check against it), {param('save', '--save-baseline')} FILE (make one) "
            f"or {param('against')} REF (measure REF's code beside this one)"
        )
    t = parse_fraction(max_slowdown)
    budget_s = check_budget(budget_s)
    if against is not None:
        from gluonbench.check.against import check_against

        return check_against(
            pipeline,
            str(against),
            max_slowdown=t,
            budget_s=budget_s,
            batch_size=batch_size,
            num_workers=num_workers,
            ctx=ctx,
            options=_same_work(pipeline, options, None),
            data_dir=data_dir,
            on_progress=on_progress,
        )
    base = load_baseline(baseline) if baseline is not None else None
    if save is not None:
        check_writable_file(save, "--save-baseline")
    options = _same_work(pipeline, options, base)
    target = resolve_pipeline(
        pipeline,
        batch_size=batch_size,
        num_workers=num_workers,
        ctx=ctx,
        options=options,
        data_dir=data_dir,
        identity=identity,
    )
    try:
        if base is not None and base.identity != target.identity:
            raise GluonbenchError(
                f"{param('baseline')} {baseline} is for pipeline {base.identity!r}, not {target.identity!r}; "
                f"save a baseline for this pipeline with {param('save', '--save-baseline')}"
            )
        snap = measure_snapshot(target, budget_s, on_progress=on_progress)
    finally:
        target.close()
    snap.hash_rate = float((options or {}).get("hash_rate") or 0.0)
    snap.options = options_record(options)
    if save is not None:
        save_baseline(snap, save)
        return snap
    assert base is not None
    return decide(snap, base, t, str(baseline))


def _same_work(pipeline: Any, options: dict[str, Any] | None, base: Snapshot | None) -> dict[str, Any] | None:
    """The synthetic workload's options with one ``cpu_ms`` calibration: the baseline's when checking against one
    (the check runs in another process, whose own calibration can differ by a third), else this process's; by name
    (``synthetic``) or by its factory (``--pipeline gluonbench.workloads.synthetic:make``)."""
    from gluonbench.workloads.synthetic import is_synthetic, pin_hash_rate

    if not is_synthetic(pipeline) or not options:
        return options

    if base is not None and base.hash_rate > 0 and not options.get("hash_rate"):
        options = {**options, "hash_rate": base.hash_rate}
    return pin_hash_rate(options)
