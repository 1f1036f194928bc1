"""The pytest plugin (entry point ``pytest11``): the ``gluonbench_check`` fixture.

In a project's own test suite::

    def test_loader_speed(gluonbench_check):
        gluonbench_check(make_pipeline, baseline="tests/baselines/loader.json")

``make_pipeline`` is anything :func:`gluonbench.check.resolve_pipeline` accepts (a function returning a
dict with ``dataset``/``transform``/..., a Pipeline, a Workload; a workload name; ``MODULE:FUNC``).
The test fails on a regression (naming the stage), is skipped with the reason when the check is
inconclusive, and passes otherwise. With no baseline file yet, or with ``--gluonbench-save``, the
baseline is measured and saved, and the test is skipped saying so. Options: ``--gluonbench-budget S``
(default 60) and ``--gluonbench-max-slowdown PCT`` (default 5%). Importing this module imports
neither MXNet nor the measuring code: a project's suite starts as fast as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("gluonbench", "gluonbench check (data-pipeline speed gate)")
    group.addoption("--gluonbench-save", action="store_true", help="measure and save the baselines instead of checking")
    group.addoption("--gluonbench-budget", type=float, default=None, help="seconds per check (default: 60)")
    group.addoption("--gluonbench-max-slowdown", default=None, help="allowed slowdown, e.g. 5%% (default: 5%%)")


@pytest.fixture
def gluonbench_check(request: Any) -> Any:
    """``gluonbench_check(pipeline, baseline=PATH, max_slowdown=None, budget_s=None, **kwargs)``: the check."""
    config = request.config

    def run(
        pipeline: Any, baseline: str | Path, max_slowdown: Any = None, budget_s: float | None = None, **kwargs: Any
    ):
        from gluonbench.check import run_check
        from gluonbench.check.render import headline, to_text

        budget = budget_s or config.getoption("--gluonbench-budget") or 60.0
        limit = max_slowdown or config.getoption("--gluonbench-max-slowdown") or 0.05
        path = Path(baseline)
        if config.getoption("--gluonbench-save") or not path.exists():
            run_check(pipeline, save=path, budget_s=budget, **kwargs)
            pytest.skip(f"gluonbench: baseline saved to {path}; the next run checks against it")
        result = run_check(pipeline, baseline=path, max_slowdown=limit, budget_s=budget, **kwargs)
        if result.outcome == "regression":
            pytest.fail(to_text(result), pytrace=False)
        if result.outcome == "inconclusive":
            pytest.skip(headline(result))
        return result

    return run
