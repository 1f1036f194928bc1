"""The package's layout (issue #16): one ``__all__`` that resolves, the diagnosis in one package, no alias modules."""

import importlib

import pytest

import gluonbench


def test_every_name_in_all_resolves():
    missing = [name for name in gluonbench.__all__ if getattr(gluonbench, name, None) is None]
    assert not missing, missing
    from gluonbench.diagnosis.verdict import Thresholds

    assert gluonbench.Thresholds is Thresholds
    assert gluonbench.DiagnoseSettings().thresholds == gluonbench.Thresholds()


@pytest.mark.parametrize(
    "old",
    [
        "gluonbench.engine.diagnosis",
        "gluonbench.engine.probes",
        "gluonbench.probes",
        "gluonbench.analysis.verdict",
        "gluonbench.analysis.recommend",
        "gluonbench.report.diagnosis",
    ],
)
def test_the_diagnosis_left_no_alias_module_behind(old):
    """A 0.x package: the diagnosis moved to gluonbench.diagnosis, nothing answers at the old paths."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_the_diagnosis_package_holds_each_step():
    for name in ("probes", "measure", "verdict", "recommend", "run", "report", "sweep"):
        module = importlib.import_module(f"gluonbench.diagnosis.{name}")
        assert module.__doc__, name


def test_the_engine_gets_the_diagnosis_passed_in():
    """engine/ sits below diagnosis/: a sweep run that diagnoses needs the hook from above, refused before any work."""
    from gluonbench.diagnosis import sweep
    from gluonbench.sweeprun.run import RunSpec, train_and_eval
    from gluonbench.errors import GluonbenchError

    with pytest.raises(GluonbenchError, match=r"diagnose=gluonbench\.diagnosis\.sweep\.diagnose_run"):
        train_and_eval(RunSpec(workload="no-such-workload", diagnose=True))
    assert sweep.main.__module__ == "gluonbench.diagnosis.sweep"  # the child entry run_isolated(child=sweep) starts
