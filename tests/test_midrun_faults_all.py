"""A --pipeline that breaks after its first batch passed the check (a transform that raises at item N, items of
another shape mid-epoch), or whose loss is not connected to the graph, is the same one line naming the stage and
the fix in sweep, tune and check (diagnose: tests/test_midrun_faults.py); what was measured before it is kept where
the command keeps partial results (tune's evidence, sweep's finished runs)."""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import PLAN_LINE, leak_check, run_cli

from gluonbench.engine.deadline import PipelineFaultError, pipeline_fault

FACTORIES = Path(__file__).with_name("fenced_factories.py")

SAYS = {
    "transform_raises": "failed mid-run in transform (preprocess) (ValueError: bad sample",
    "shapes_differ": "failed mid-run in loader (batchify) (items of different shapes in one batch)",
    "loss_detached": "the loss Detached is not connected to the graph",
}
FIX = {
    "transform_raises": "fix the transform for that item",
    "shapes_differ": "make every item the same shape",
    "loss_detached": "make the loss a function of the net's output",
}


def _command(command: str, func: str, tmp_path: Path) -> list[str]:
    target = f"{FACTORIES}:{func}"
    if command == "sweep":
        return ["sweep", "--workers", "0", "--max-batches", "40", "--pipeline", target, "--out", str(tmp_path / "o")]
    if command == "tune":
        return ["tune", "--budget", "10", "--pipeline", target, "--out", str(tmp_path / "o")]
    return ["check", "--budget", "10", "--save-baseline", str(tmp_path / "b.json"), "--pipeline", target]


def _error_line(stderr: str) -> str:
    """The one line on stderr (after a long command's plan line)."""
    lines = [line for line in stderr.splitlines() if line.strip() and not PLAN_LINE.match(line)]
    assert len(lines) == 1 and lines[0].startswith("gluonbench: error:"), stderr[-3000:]
    return lines[0]


COMMANDS = ["sweep", "tune", "check"]


@pytest.fixture(scope="module")
def fault_runs(tmp_path_factory) -> dict[tuple[str, str], tuple[subprocess.CompletedProcess, Path]]:
    """Each command with each pipeline that breaks (the matrix below) and with one whose parameter gets no gradient,
    four at a time (the suite's time: what is checked is the line and what was kept, not a figure; each fault
    fires at given items, however busy the machine): (command, factory) -> (the finished process, its folder).
    No process or shared memory that any of them made outlives them."""
    base = tmp_path_factory.mktemp("faults")

    def run(case: tuple[str, str]) -> tuple[subprocess.CompletedProcess, Path]:
        folder = base / "-".join(case)
        folder.mkdir()
        return run_cli(*_command(*case, folder), cwd=folder, timeout=300), folder

    cases = [(command, func) for command in COMMANDS for func in [*SAYS, "param_unused"]]
    with leak_check(), ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(cases, pool.map(run, cases), strict=True))


@pytest.mark.parametrize("func", list(SAYS))
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_names_the_stage_of_a_pipeline_fault(fault_runs, command, func):
    proc, tmp_path = fault_runs[(command, func)]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "KeyError" not in proc.stdout + proc.stderr
    if command == "sweep" and func != "loss_detached":
        # the run is recorded as failed with the one line, and the sweep's summary says it (exit 1: a run failed)
        assert proc.returncode == 1, proc.stderr[-2000:]
        (record,) = [json.loads(x) for x in next((tmp_path / "o").glob("*/runs.jsonl")).read_text().splitlines()]
        assert record["status"] == "failed" and SAYS[func] in record["error"] and FIX[func] in record["error"]
        assert f"0 workers: the pipeline {SAYS[func]}" in proc.stdout, proc.stdout[-2000:]
        return
    assert proc.returncode == 2, proc.stderr[-2000:]
    line = _error_line(proc.stderr)
    assert SAYS[func] in line and FIX[func] in line, line
    if command == "check":
        assert not (tmp_path / "b.json").exists()  # nothing half-measured saved as a baseline


# a pipeline whose transform fails in the main process once the net has stepped on more than 8 different batches:
# only a full pipeline does that (tune's confirmation); the phases before it (the model on one cached batch, the
# loader alone) never do, whatever the machine's pace, so their evidence is complete when the fault fires
AFTER_A_FULL_PIPELINE = """
import multiprocessing

import numpy as np
from mxnet import gluon

SEEN = set()


class Net(gluon.nn.Block):
    def __init__(self):
        super().__init__()
        self.dense = gluon.nn.Dense(2)

    def forward(self, x):
        SEEN.add(tuple(x[:, 0].asnumpy().tolist()))
        return self.dense(x)


def transform(data, label):
    if multiprocessing.current_process().name == "MainProcess" and len(SEEN) > 8:
        raise ValueError("the source went away")
    return data, label


def make():
    x = np.zeros((256, 8), dtype="float32")
    x[:, 0] = np.arange(256)
    y = np.zeros((256,), dtype="float32")
    return {"dataset": gluon.data.ArrayDataset(x, y), "transform": transform, "net": Net, "batch_size": 8}
"""


def test_tune_keeps_the_evidence_measured_before_the_fault(tmp_path, no_leaks):
    """The transform fails once a full pipeline has run (tune's confirmation): the settings measured before are kept
    in --json and the run folder, as after a stall, and the one line names the stage."""
    (tmp_path / "late.py").write_text(AFTER_A_FULL_PIPELINE)
    proc = run_cli(
        "tune", "--budget", "10", "--pipeline", "late.py:make", "--json", str(tmp_path / "t.json"),
        "--out", str(tmp_path / "o"), cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = _error_line(proc.stderr)
    assert "failed mid-run in transform (preprocess) (ValueError: the source went away)" in line, line
    assert "kept in" in line and str(tmp_path / "t.json") in line, line
    assert "tune stopped: the pipeline failed in transform (preprocess)" in proc.stdout, proc.stdout
    kept = json.loads((tmp_path / "t.json").read_text())
    assert kept["event"] == "failure", kept
    # the phases before the confirmation were measured whole: the ceiling and the loader alone at 0 workers at least
    ok = {e["label"] for e in kept["evidence"] if e["status"] == "ok"}
    assert {"ceiling", "loader: 0 workers"} <= ok, kept["evidence"]
    assert list((tmp_path / "o").glob("*/tune.json"))


def test_sweep_keeps_the_runs_before_a_fault_and_records_the_failed_one(tmp_path, no_leaks):
    """A transform that fails in the loader's workers only: the 0-worker run is measured, the 1-worker run is
    recorded as failed with the one line naming the stage (a worker's traceback read for it)."""
    proc = run_cli(
        "sweep", "--workers", "0,1", "--max-batches", "40", "--pipeline", f"{FACTORIES}:worker_fault",
        "--out", str(tmp_path / "o"), cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    runs = [json.loads(x) for x in next((tmp_path / "o").glob("*/runs.jsonl")).read_text().splitlines()]
    by_workers = {r["spec"]["workers"]: r for r in runs}
    assert by_workers[0]["status"] == "ok" and by_workers[0]["train_samples"] > 0, by_workers[0]
    assert by_workers[1]["status"] == "failed", by_workers[1]
    assert "failed mid-run in transform (preprocess) (ValueError: bad sample" in by_workers[1]["error"]
    assert "1 worker: the pipeline failed mid-run in transform" in proc.stdout, proc.stdout[-2000:]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_parameter_with_no_gradient_is_one_line_before_measuring(fault_runs, command):
    proc, tmp_path = fault_runs[(command, "param_unused")]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = _error_line(proc.stderr)
    assert "gets no gradient from the loss SoftmaxCrossEntropyLoss" in line and "use every block" in line, line
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").glob("*/runs.jsonl"))


def test_only_the_users_code_is_a_pipeline_fault():
    """gluonbench's own errors and an exception with no frame of user code (a loader whose workers died) are left as
    they are, so tune still records such a setting as failed and goes on."""
    from gluonbench.errors import GluonbenchError

    def raised(fn, *args):
        """What ``fn(*args)`` raised, its traceback from ``fn`` in (this function's own frame left out)."""
        try:
            fn(*args)
        except BaseException as exc:
            return exc.with_traceback(exc.__traceback__.tb_next)
        raise AssertionError("no exception")

    def users():
        raise ValueError("x")

    assert isinstance(pipeline_fault(raised(users)), PipelineFaultError)  # this test file is user code
    assert pipeline_fault(raised(json.loads, "{")) is None  # raised in the standard library, no user frame
    assert pipeline_fault(GluonbenchError("x")) is None and pipeline_fault(KeyboardInterrupt()) is None
    assert pipeline_fault(KeyError(type(None))) is None
    ragged = pipeline_fault(KeyError("<class 'numpy.object_'>"))
    assert ragged is not None and ragged.stage == "loader (batchify)"


def test_check_against_names_the_stage_a_side_failed_in(tmp_path, no_leaks):
    """``check --against``: each side runs in its own process; the side whose transform fails mid-run ends with the
    one line, and the parent says which side, not a traceback's last line."""
    import shutil
    import subprocess

    root = tmp_path / "project"
    (root / "ci").mkdir(parents=True)
    shutil.copy(FACTORIES, root / "ci" / "pipe.py")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.org")  # fmt: skip
    for args in (["init", "-q"], ["add", "ci/pipe.py"], ["commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env, capture_output=True)
    proc = run_cli("check", "--pipeline", "ci/pipe.py:late_fault", "--against", "HEAD", "--budget", "15", cwd=root,
                   timeout=300)  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("gluonbench: error: the ") and " side (" in last and "Error: the pipeline" not in last, last
    assert "failed mid-run in transform (preprocess) (ValueError: the source went away)" in last, last
