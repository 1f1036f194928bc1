"""A --pipeline that breaks after its first batch passed the check (a transform or forward that raises later,
items of another shape mid-epoch) is one line naming the stage and the fix, exit 2, in diagnose."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from gluonbench.engine.deadline import midrun_error

FACTORIES = Path(__file__).with_name("fenced_factories.py")


@pytest.mark.parametrize(
    ("func", "says"),
    [("transform_raises", "failed mid-run in transform (preprocess) (ValueError: bad sample"),
     ("shapes_differ", "failed mid-run in loader (batchify) (items of different shapes in one batch)"),
     ("forward_raises", "failed mid-run in step (forward/backward/update) (RuntimeError: the model broke)")],
)  # fmt: skip
def test_diagnose_names_the_stage_of_a_midrun_fault(tmp_path, no_leaks, func, says):
    proc = run_cli("diagnose", "--budget", "10", "--workers", "0", "--pipeline", f"{FACTORIES}:{func}",
                   cwd=tmp_path, timeout=300)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert says in last and ("fix the" in last or "same shape" in last), last


def test_an_unknown_stage_still_names_a_way_on():
    try:
        raise ValueError("x")
    except ValueError as exc:
        line = str(midrun_error(exc, "the pipeline p"))
    assert "failed mid-run in an unknown stage (ValueError: x)" in line and "0 workers" in line
