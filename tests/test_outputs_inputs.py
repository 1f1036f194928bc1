"""An output never overwrites an input; closed pipes and a hang-up end a command cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, run_cli

SWEEP3 = REPO / "results" / "20261122T163950Z-sweep-mnist-cpu-1epoch-repeat3"
PIPE = "tests/check_pipelines.py:make"


def _one_line(proc: subprocess.CompletedProcess, *says: str) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    for s in says:
        assert s in line, line
    return line


def _baseline(tmp_path: Path) -> Path:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"format": "gluonbench-baseline", "kept": "as it was"}))
    return path


def test_check_refuses_a_json_or_junit_output_that_is_its_baseline(tmp_path):
    base = _baseline(tmp_path)
    before = base.read_bytes()
    for flag in ("--json", "--junit"):
        _one_line(run_cli("check", "--pipeline", PIPE, "--baseline", str(base), flag, str(base)), "also an input")
        _one_line(run_cli("check", "--pipeline", PIPE, "--save-baseline", str(base), flag, str(base)), "also an input")
    assert base.read_bytes() == before


def test_check_refuses_the_summary_file_that_is_its_baseline_and_a_summary_fifo_before_any_work(tmp_path):
    base = _baseline(tmp_path)
    env = {"GITHUB_STEP_SUMMARY": str(base)}
    _one_line(run_cli("check", "--pipeline", PIPE, "--baseline", str(base), env=env), "GITHUB_STEP_SUMMARY", "input")
    fifo = tmp_path / "summary"
    os.mkfifo(fifo)  # no reader: opening it to append would block forever
    t0 = time.monotonic()
    proc = run_cli("check", "--pipeline", PIPE, "--baseline", str(base), env={"GITHUB_STEP_SUMMARY": str(fifo)})
    _one_line(proc, "GITHUB_STEP_SUMMARY", "not a regular file")
    assert time.monotonic() - t0 < 60
    _one_line(
        run_cli("check", "--pipeline", PIPE, "--baseline", str(base), env={"GITHUB_STEP_SUMMARY": str(tmp_path / "no" / "s.md")}),
        "does not exist",
    )  # fmt: skip


def test_compare_refuses_to_write_over_its_inputs_or_into_a_run_folder(tmp_path):
    doc = {"dataloader": "x", "evidence": [{"phase": "p", "label": "w0", "samples_per_s": 10.0, "ci": [9, 11]}]}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(doc))
    b.write_text(json.dumps(doc))
    before = a.read_bytes()
    _one_line(run_cli("compare", str(a), str(b), "--json", str(a)), "--json", "also an input")
    _one_line(run_cli("compare", str(a), str(b), "--markdown", str(b)), "--markdown", "also an input")
    assert a.read_bytes() == before
    _one_line(run_cli("compare", str(SWEEP3), str(SWEEP3), "--html", str(SWEEP3 / "c.html")), "inside the run folder")
    _one_line(run_cli("compare", str(a), str(b), "--json", str(tmp_path / "runs.jsonl")), "records")
    assert not (SWEEP3 / "c.html").exists()


def test_a_closed_pipe_ends_the_command_quietly():
    proc = subprocess.run(
        f"{sys.executable} -m gluonbench compare {SWEEP3} {SWEEP3} | head -1",
        shell=True, capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert proc.stdout.startswith("sweep: A = ") and len(proc.stdout.splitlines()) == 1
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_hang_up_stops_like_ctrl_c(tmp_path, sig):
    proc = subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "diagnose", "--dataset", "synthetic", "--budget", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    # wait for the first line (what is about to run): the handlers are in place by then
    assert proc.stderr is not None
    first = proc.stderr.readline()
    assert first, "no first line"
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(2)
        break
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode in (130, -sig, -signal.SIGINT), err  # killed by its own SIGINT while shutting down
    assert "interrupted" in first + err and "Traceback" not in err


SWALLOWS = """# a pipeline whose dataset[i] prints a KeyboardInterrupt and goes on, as code called from C can
import os
import time
import traceback

import numpy as np


class Swallows:
    calls = 0

    def __len__(self):
        return 4096

    def __getitem__(self, i):
        Swallows.calls += 1
        if Swallows.calls == 200:  # past the checks of the first batch: the rounds are under way
            open(os.environ["GB_MEASURING"], "w").close()
        try:
            time.sleep(0.01)
        except BaseException:
            traceback.print_exc()
        return np.full((16,), i % 7, dtype=np.float32), np.float32(i % 2)


def net():
    from mxnet import gluon

    return gluon.nn.Dense(2)


def make():
    return {"dataset": Swallows(), "net": net, "batch_size": 16}
"""


def test_a_hang_up_that_user_code_swallows_still_stops_the_command(tmp_path):
    """SIGTERM lands in code that prints the KeyboardInterrupt and goes on: the command still stops, exit 130."""
    (tmp_path / "swallows.py").write_text(SWALLOWS)
    measuring = tmp_path / "measuring"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]), GB_MEASURING=str(measuring))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "diagnose", "--pipeline", "swallows:make", "--workers", "0",
         "--budget", "120"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert proc.stderr is not None
    first = proc.stderr.readline()
    assert first, "no first line"
    deadline = time.monotonic() + 90
    while not measuring.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)  # until the rounds are under way: nearly all of a step is then dataset[i]'s sleep
    assert measuring.exists(), "the diagnosis never reached its rounds"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=110)
    assert proc.returncode == 130, err
    assert time.monotonic() - t0 < 100, "ran on to its budget"
    assert "interrupted" in err
