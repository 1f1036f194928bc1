"""The package's layout (issue #16): one ``__all__`` that resolves, the diagnosis in one package,
engine/ holding measure(), the timer, schedules and process isolation only."""

import importlib
from pathlib import Path

import pytest

import gluonbench


def test_every_name_in_all_resolves():
    missing = [name for name in gluonbench.__all__ if getattr(gluonbench, name, None) is None]
    assert not missing, missing
    from gluonbench.diagnosis.verdict import Thresholds

    assert gluonbench.Thresholds is Thresholds
    assert gluonbench.DiagnoseSettings().thresholds == gluonbench.Thresholds()


def test_the_diagnosis_package_holds_each_step():
    for name in ("probes", "measure", "verdict", "recommend", "run", "report", "sweep"):
        module = importlib.import_module(f"gluonbench.diagnosis.{name}")
        assert module.__doc__, name


def test_the_engine_holds_measure_the_timer_schedules_and_isolation_only():
    """Each command's logic lives in its own package; engine/ keeps what every command runs through."""
    engine = Path(gluonbench.__file__).parent / "engine"
    modules = {p.stem for p in engine.glob("*.py")}
    assert modules == {"__init__", "measure", "loop", "isolation", "child", "watchdog", "deadline"}, modules
    assert not [p.name for p in engine.iterdir() if p.is_dir() and p.name != "__pycache__"]
    for name in ("sweeprun.run", "sweeprun.child", "iobench.cell", "pipeline.scale", "pipeline.samples"):
        assert importlib.import_module(f"gluonbench.{name}").__doc__, name


def test_the_sweep_run_package_leaves_gluonbench_sweep_the_function():
    """Importing gluonbench.sweeprun binds gluonbench.sweeprun, never the public function's name."""
    import gluonbench.sweeprun.child
    from gluonbench import api

    assert gluonbench.sweep is api.sweep


def test_the_engine_runs_the_child_module_it_is_given(tmp_path):
    """engine.isolation knows no sweep: it starts the entry module it is given and hands back what it wrote."""
    from gluonbench.engine.isolation import run_child
    from gluonbench.sweeprun.run import RunSpec

    spec = RunSpec(workload="no-such-workload").to_dict()
    ran = run_child(spec, "gluonbench.sweeprun.child", tmp_path / "run.log", timeout_s=120)
    assert ran.status == "ok" and ran.error is None, ran  # the child ended and wrote its result
    assert ran.result["status"] == "failed" and "no-such-workload" in ran.result["error"], ran.result
    assert ran.wall_s > 0 and ran.started_utc <= ran.finished_utc
    ran = run_child(spec, "gluonbench.no_such_module", tmp_path / "bad.log", timeout_s=120)
    assert ran.status == "failed" and ran.result is None and "exit code 1" in ran.error, ran


def test_the_sweep_run_gets_the_diagnosis_passed_in():
    """sweeprun/ sits below diagnosis/: a sweep run that diagnoses needs the hook from above, refused before any work."""
    from gluonbench.diagnosis import sweep
    from gluonbench.errors import GluonbenchError
    from gluonbench.sweeprun.run import RunSpec, train_and_eval

    with pytest.raises(GluonbenchError, match=r"diagnose=gluonbench\.diagnosis\.sweep\.diagnose_run"):
        train_and_eval(RunSpec(workload="no-such-workload", diagnose=True))
    assert sweep.main.__module__ == "gluonbench.diagnosis.sweep"  # the child entry run_isolated(child=sweep) starts
