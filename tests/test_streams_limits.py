"""Closed standard streams and low resource limits: one line naming the limit (or a quiet end where nothing can
be printed), never a traceback, a hang or a run that dies of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gluonbench.env import MIN_OPEN_FILES, resource_problems

ENV = dict(os.environ, GLUONBENCH_OFFLINE="1")


def _gluonbench(args: list[str], prefix: str = "", redirect: str = "", timeout: float = 300):
    """``gluonbench ARGS`` from a shell, with ``prefix`` (``ulimit -n 20;``) and ``redirect`` (``>&- 2>&-``)."""
    cmd = f"{prefix} exec {sys.executable} -m gluonbench {' '.join(args)} {redirect}"
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=ENV, timeout=timeout)


@pytest.mark.parametrize(
    "prefix, needle",
    [
        ("ulimit -n 20;", "the open files limit (ulimit -n 20) is below the 128 gluonbench needs"),
        ("ulimit -v 400000;", "the address space limit (ulimit -v 400000)"),
        ("ulimit -f 1;", "the file size limit (ulimit -f 1)"),
    ],
)
@pytest.mark.parametrize("command", [["doctor"], ["sweep", "--workers", "0", "--max-batches", "2"]])
def test_a_resource_limit_too_low_is_one_line_naming_it(tmp_path, prefix, needle, command):
    proc = _gluonbench([*command, "--out", str(tmp_path)] if command[0] == "sweep" else command, prefix)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"gluonbench: error: {proc.stderr.split('error: ')[1].strip()}"]
    assert needle in proc.stderr and "raise it" in proc.stderr
    assert list(tmp_path.iterdir()) == []  # refused before any work


def test_limits_at_the_floor_pass():
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < MIN_OPEN_FILES:
        pytest.skip("this machine's own limit is below the floor")
    resource.setrlimit(resource.RLIMIT_NOFILE, (MIN_OPEN_FILES, hard))
    try:
        assert resource_problems() == []
        resource.setrlimit(resource.RLIMIT_NOFILE, (MIN_OPEN_FILES - 1, hard))
        (problem,) = resource_problems()
        assert f"ulimit -n {MIN_OPEN_FILES - 1}" in problem
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize(
    "redirect",
    ["<&- >&-", pytest.param(">&- 2>&-", marks=pytest.mark.slow), pytest.param("<&- >&- 2>&-", marks=pytest.mark.slow)],
)
def test_a_sweep_with_closed_streams_runs_and_keeps_its_records(tmp_path, redirect):
    proc = _gluonbench(["sweep", "--workers", "0,1", "--max-batches", "3", "--out", str(tmp_path)], redirect=redirect)
    assert proc.returncode == 0, proc.stderr
    (run,) = tmp_path.iterdir()
    records = [json.loads(line) for line in (run / "runs.jsonl").read_text().splitlines()]
    assert [(r["spec"]["workers"], r["status"]) for r in records] == [(0, "ok"), (1, "ok")]


def test_bad_input_with_stdout_closed_is_still_one_line_and_exit_2(tmp_path):
    proc = _gluonbench(["compare", str(tmp_path / "a"), str(tmp_path / "b")], redirect=">&-")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "no such folder" in proc.stderr


def test_bad_input_with_every_stream_closed_ends_quietly_with_exit_2(tmp_path):
    proc = _gluonbench(["compare", str(tmp_path / "a"), str(tmp_path / "b")], redirect="<&- >&- 2>&-")
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", "")


def test_a_write_past_the_file_size_limit_names_it(tmp_path):
    import errno

    from gluonbench.files import write_error

    line = str(write_error(tmp_path / "x.json", OSError(errno.EFBIG, "File too large")))
    assert "file size limit (ulimit -f)" in line and "raise it" in line
