"""``profile --pipeline`` of a pipeline that fails mid-run (a transform that raises at item N, a forward that raises,
items of another shape mid-epoch) says the same one line as sweep, tune, check and diagnose, naming the stage and the
fix, with exit 2; the profile up to the fault is kept (profile.json, the report, the fault's line and traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PLAN_LINE, run_cli

from gluonbench.profiler.pipeline_run import FAULT_FILE, LOG_FILE, read_fault

FACTORIES = Path(__file__).with_name("fenced_factories.py")

SAYS = {
    "transform_raises": (
        "failed mid-run in transform (preprocess) (ValueError: bad sample",
        "fix the transform for that item",
    ),
    "forward_raises": (
        "failed mid-run in step (forward/backward/update) (RuntimeError: the model broke)",
        "fix the net or the loss for that batch",
    ),
    "shapes_differ": (
        "failed mid-run in loader (batchify) (items of different shapes in one batch)",
        "make every item the same shape",
    ),
}


def _profile(tmp_path: Path, func: str, *more: str):
    return run_cli(
        "profile", "--pipeline", f"{FACTORIES}:{func}", "--max-batches", "40", "--out", str(tmp_path / "o"), *more,
        cwd=tmp_path, timeout=300,
    )  # fmt: skip


def _error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip() and not PLAN_LINE.match(line)]
    assert len(lines) == 1 and lines[0].startswith("gluonbench: error:"), stderr[-3000:]
    return lines[0]


@pytest.mark.parametrize("func", list(SAYS))
def test_profile_names_the_stage_of_a_pipeline_fault_and_keeps_the_profile(tmp_path, no_leaks, func):
    proc = _profile(tmp_path, func)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "KeyError" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    line = _error_line(proc.stderr)
    says, fix = SAYS[func]
    assert says in line and fix in line, line
    (folder,) = (tmp_path / "o").iterdir()
    assert f"the profile up to the fault is kept in {folder}" in line, line
    # what was profiled is kept: the sampled metrics, the record, the report and rules, the fault and its traceback
    assert (folder / "report.html").is_file() and (folder / "rules.json").is_file()
    meta = json.loads((folder / "profile.json").read_text())
    assert meta["exit_code"] == 3 and meta["samples"] >= 1, meta
    assert list((folder / "profiler-output" / "system").rglob("*.json"))
    assert read_fault(folder) is not None and says in read_fault(folder)
    assert "Traceback" in (folder / LOG_FILE).read_text()
    assert f"{folder}/report.html (the run stopped at a pipeline fault)" in proc.stdout, proc.stdout[-2000:]


def test_a_fault_in_a_loader_worker_is_the_same_line(tmp_path, no_leaks):
    proc = _profile(tmp_path, "transform_raises", "--workers", "1")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = _error_line(proc.stderr)
    assert SAYS["transform_raises"][0] in line and SAYS["transform_raises"][1] in line, line


def test_a_run_that_does_not_fail_has_no_fault_file(tmp_path, no_leaks):
    proc = _profile(tmp_path, "options")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (folder,) = (tmp_path / "o").iterdir()
    assert not (folder / FAULT_FILE).exists() and not (folder / LOG_FILE).exists()
    assert read_fault(folder) is None
    assert "(exit code 0)" in proc.stdout


def test_read_fault_is_one_bounded_line(tmp_path):
    (tmp_path / FAULT_FILE).write_bytes(b"the pipeline failed\nmid-run \xff" + b"x" * 10_000)
    line = read_fault(tmp_path)
    assert line is not None and "\n" not in line and line.startswith("the pipeline failed mid-run")
    assert len(line) <= 2000
    (tmp_path / FAULT_FILE).write_text("  \n")
    assert read_fault(tmp_path) is None
