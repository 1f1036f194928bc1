"""The pytest plugin (entry point ``pytest11``): the ``gluonbench_check`` fixture.

In a project's own test suite::

    def test_loader_speed(gluonbench_check):
        gluonbench_check(make_pipeline, baseline="tests/baselines/loader.json")

``make_pipeline`` is anything :func:`gluonbench.check.resolve_pipeline` accepts (a function returning a
dict with ``dataset``/``transform``/..., a PipelineSpec, a Pipeline; a workload name; ``MODULE:FUNC``).
The test fails on a regression (naming the stage), is skipped with the reason when the check is
inconclusive, and passes otherwise. ``against="origin/main"`` instead of ``baseline=`` measures REF's code beside
the working tree's in the same test (``gluonbench check --against``; the pipeline is named as ``MODULE:FUNC`` or
``path/to/file.py:FUNC``, relative to the folder pytest runs in).

``script=["python", "train.py", ARGS...]`` instead of a pipeline gates the training script itself, as written
(``gluonbench check -- python train.py ARGS``, with a baseline or ``against``): it runs through gluonbench's command
line in a child process, and the fixture returns the check's JSON result (a dict) instead of the result object.

A relative ``baseline`` path is resolved against pytest's rootdir (the folder of the project's
``pytest.ini``/``setup.cfg``/``pyproject.toml``), so the same baseline is found whichever folder pytest
is started from. With no baseline file yet, or with ``--gluonbench-save``, the baseline is measured and
saved, and the test is skipped saying so; under ``CI=true`` a missing baseline fails the test instead (a
gate that saves its own baseline never checks anything): commit the baseline, or save it with
``--gluonbench-save``.

Options: ``--gluonbench-budget S`` (seconds per check, default 60, within the check's bounds) and
``--gluonbench-max-slowdown PCT`` (default 5%); both are validated when pytest starts (a bad value stops
the run with one line, pytest's usage error). Importing this module imports neither MXNet nor the measuring
code: a project's suite starts as fast as before.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

DEFAULT_BUDGET_S = 60.0
DEFAULT_MAX_SLOWDOWN = 0.05


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("gluonbench", "gluonbench check (data-pipeline speed gate)")
    group.addoption("--gluonbench-save", action="store_true", help="measure and save the baselines instead of checking")
    group.addoption("--gluonbench-budget", default=None, help="seconds per check (default: 60)")
    group.addoption("--gluonbench-max-slowdown", default=None, help="allowed slowdown, e.g. 5%% (default: 5%%)")


def _budget(value: Any, flag: str) -> float:
    """A budget in seconds within the check's bounds, or :class:`gluonbench.errors.GluonbenchError` naming ``flag``."""
    from gluonbench.check.gate import check_budget
    from gluonbench.errors import GluonbenchError

    try:
        number = float(value) if isinstance(value, str) else value
    except ValueError:
        raise GluonbenchError(f"{flag} {value!r} is not a number of seconds; e.g. {flag} 60") from None
    try:
        return check_budget(number)
    except GluonbenchError as exc:
        raise GluonbenchError(exc.worded(flags=True, rename={"budget_s": flag})) from None


def _fraction(value: Any, flag: str) -> float:
    from gluonbench.check.gate import parse_fraction

    return parse_fraction(value, flag)


def pytest_configure(config: Any) -> None:
    """Validate the plugin's options before any test runs: a bad value is one usage error, never a silent default."""
    from gluonbench.errors import GluonbenchError

    try:
        budget = config.getoption("--gluonbench-budget")
        if budget is not None:
            _budget(budget, "--gluonbench-budget")
        limit = config.getoption("--gluonbench-max-slowdown")
        if limit is not None:
            _fraction(limit, "--gluonbench-max-slowdown")
    except GluonbenchError as exc:
        raise pytest.UsageError(f"gluonbench: {exc}") from None


def in_ci() -> bool:
    """Whether this is a CI run (``CI`` set to a true value, as GitHub Actions, GitLab CI and most runners do)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def resolve_baseline(baseline: str | Path, rootdir: Path) -> Path:
    """``baseline`` made absolute: a relative path is taken from pytest's ``rootdir``, not the current folder."""
    path = Path(baseline).expanduser()
    return path if path.is_absolute() else Path(rootdir) / path


@pytest.fixture
def gluonbench_check(request: Any) -> Any:
    """``gluonbench_check(pipeline, baseline=PATH | against=REF, max_slowdown=None, budget_s=None, **kwargs)``: the
    check against a stored baseline, or side by side with the code of the git ref ``against``."""
    config = request.config

    def run(
        pipeline: Any = None,
        baseline: str | Path | None = None,
        max_slowdown: Any = None,
        budget_s: float | None = None,
        against: str | None = None,
        script: Sequence[str] | None = None,
        **kwargs: Any,
    ):
        from gluonbench.check import run_check
        from gluonbench.check.render import headline, to_text
        from gluonbench.errors import GluonbenchError

        try:
            if budget_s is not None:
                budget = _budget(budget_s, "budget_s")
            else:
                option = config.getoption("--gluonbench-budget")
                budget = DEFAULT_BUDGET_S if option is None else _budget(option, "--gluonbench-budget")
            if max_slowdown is not None:
                limit = _fraction(max_slowdown, "max_slowdown")
            else:
                option = config.getoption("--gluonbench-max-slowdown")
                limit = DEFAULT_MAX_SLOWDOWN if option is None else _fraction(option, "--gluonbench-max-slowdown")
        except GluonbenchError as exc:
            pytest.fail(f"gluonbench_check: {exc}", pytrace=False)
        if (baseline is None) == (against is None):
            pytest.fail("gluonbench_check: give baseline=PATH or against=REF (a git ref), one of them", pytrace=False)
        if (pipeline is None) == (script is None):
            pytest.fail(
                "gluonbench_check: give a pipeline or script=['python', 'train.py', ...] (a training command), one of "
                "them",
                pytrace=False,
            )
        if script is not None:
            if kwargs:
                pytest.fail(
                    f"gluonbench_check: {', '.join(sorted(kwargs))} shape a pipeline; a script is checked as written "
                    "(change its arguments instead)",
                    pytrace=False,
                )
            path = None if baseline is None else resolve_baseline(baseline, config.rootpath)
            return _check_script(list(script), path, against, limit, budget, config)
        try:
            if against is not None:
                # side by side with REF's code: nothing to save, nothing stored (the pipeline is named, MODULE:FUNC)
                result = run_check(pipeline, against=against, max_slowdown=limit, budget_s=budget, **kwargs)
            else:
                result = _against_baseline(run_check, pipeline, baseline, config, limit, budget, kwargs)
        except GluonbenchError as exc:  # bad input or a stalled side: the tool's one line, not a traceback
            pytest.fail(f"gluonbench_check: {exc}", pytrace=False)
        if result.outcome == "regression":
            pytest.fail(to_text(result), pytrace=False)
        if result.outcome == "inconclusive":
            pytest.skip(headline(result))
        return result

    return run


def _check_script(
    script: list[str], baseline: Path | None, against: str | None, limit: float, budget: float, config: Any
) -> dict[str, Any]:
    """``gluonbench check -- SCRIPT`` in a child process (the script runs as written, in its own process anyway):
    a regression fails the test with the report, an inconclusive check skips it, bad input fails it in one line."""
    import json
    import subprocess
    import sys
    import tempfile

    if not script or not all(isinstance(w, str) for w in script):
        pytest.fail("gluonbench_check: script must be a list of words, e.g. ['python', 'train.py']", pytrace=False)
    args = ["check", "--budget", f"{budget:g}", "--max-slowdown", f"{limit * 100:g}%"]
    if against is not None:
        args += ["--against", against]
    elif config.getoption("--gluonbench-save") or not baseline.exists():  # type: ignore[union-attr]
        if not config.getoption("--gluonbench-save") and in_ci():
            pytest.fail(
                f"gluonbench: no baseline at {baseline}; under CI a missing baseline fails instead of being saved: "
                "commit the baseline (measure it with pytest --gluonbench-save)",
                pytrace=False,
            )
        proc = subprocess.run(
            [sys.executable, "-m", "gluonbench", *args, "--save-baseline", str(baseline), "--", *script],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            pytest.fail(f"gluonbench_check: {_last_line(proc.stderr)}", pytrace=False)
        pytest.skip(f"gluonbench: baseline saved to {baseline}; the next run checks against it")
    else:
        args += ["--baseline", str(baseline)]
    with tempfile.TemporaryDirectory(prefix="gluonbench-plugin-") as folder:
        out = Path(folder) / "check.json"
        proc = subprocess.run(
            [sys.executable, "-m", "gluonbench", *args, "--json", str(out), "--", *script],
            capture_output=True,
            text=True,
        )
        result = json.loads(out.read_text()) if out.is_file() else {}
    if proc.returncode == 1:
        pytest.fail(proc.stdout, pytrace=False)
    if proc.returncode == 3:
        pytest.skip(str(result.get("message") or _last_line(proc.stdout)))
    if proc.returncode != 0 or not result:
        pytest.fail(f"gluonbench_check: {_last_line(proc.stderr) or f'exit code {proc.returncode}'}", pytrace=False)
    return result


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip() and not ln.startswith("check: ")]
    return lines[-1] if lines else ""


def _against_baseline(
    run_check: Any, pipeline: Any, baseline: str | Path, config: Any, limit: float, budget: float, kwargs: dict
) -> Any:
    """The check against a stored baseline; saved (and the test skipped) when there is none, but under CI."""
    path = resolve_baseline(baseline, config.rootpath)
    save = config.getoption("--gluonbench-save")
    if not save and not path.exists():
        if in_ci():
            pytest.fail(
                f"gluonbench: no baseline at {path}; under CI a missing baseline fails instead of being saved: "
                "commit the baseline (measure it with pytest --gluonbench-save)",
                pytrace=False,
            )
        save = True
    if save:
        run_check(pipeline, save=path, budget_s=budget, **kwargs)
        pytest.skip(f"gluonbench: baseline saved to {path}; the next run checks against it")
    return run_check(pipeline, baseline=path, max_slowdown=limit, budget_s=budget, **kwargs)
