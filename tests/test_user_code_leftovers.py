"""A --pipeline factory is fenced: an import or call that never returns ends within the command's deadline in one
line (exit 2); a non-daemon thread, a child process, a double-forked grandchild or a fork it starts does not outlive
the command, and the command does not hang at its exit."""

from __future__ import annotations

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from conftest import leak_check, run_cli

from gluonbench.errors import GluonbenchError
from gluonbench.workloads.spec import limit_user_code, load_spec

FACTORIES = Path(__file__).with_name("fenced_factories.py")


@pytest.fixture(scope="module", autouse=True)
def hanging_import(tmp_path_factory):
    """check with a factory whose import never returns, started as the module begins: it waits out gluonbench's least
    limit for a factory (40 s) while the module's other tests run (the suite's time), and
    test_check_ends_a_hanging_import_within_budget_plus_grace, the module's last test, reads how it ended. No process
    or shared memory it made outlives the module."""
    folder = tmp_path_factory.mktemp("hanging-import")
    with leak_check(), ThreadPoolExecutor(max_workers=1) as pool:

        def timed() -> tuple[subprocess.CompletedProcess, float]:
            t0 = time.monotonic()
            proc = run_cli("check", "--budget", "10", "--pipeline", f"{FACTORIES}:thread", "--save-baseline",
                           str(folder / "b.json"), env={"GB_HANG_AT_IMPORT": "1"}, timeout=120)  # fmt: skip
            return proc, time.monotonic() - t0

        yield folder, pool.submit(timed)


@pytest.fixture
def short_limit():
    limit_user_code(2.0, "a test's limit")
    yield
    limit_user_code(None)


@pytest.mark.parametrize("func", ["sleeps", "reads_socket"])
def test_a_factory_that_blocks_is_one_line_within_the_limit(short_limit, func):
    t0 = time.monotonic()
    with pytest.raises(GluonbenchError) as err:
        load_spec(f"{FACTORIES}:{func}")
    assert time.monotonic() - t0 < 30
    text = str(err.value)
    assert "the factory did not return within 2 s (a test's limit)" in text and "\n" not in text


def test_a_module_import_that_blocks_is_one_line_within_the_limit(short_limit, tmp_path):
    (tmp_path / "hangs.py").write_text("import time\ntime.sleep(1e6)\n\ndef make():\n    return {}\n")
    with pytest.raises(GluonbenchError, match=r"importing hangs\.py did not return within 2 s"):
        load_spec(f"{tmp_path}/hangs.py:make")


def test_no_limit_outside_the_cli_by_default():
    from gluonbench.workloads.spec import _USER_CODE

    assert _USER_CODE["limit_s"] is None


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


COMMANDS = {
    "check": ("check", "--budget", "10", "--save-baseline", "b.json"),
    "diagnose": ("diagnose", "--budget", "2", "--workers", "0"),  # what is checked is the clean-up, not a figure
    "sweep": ("sweep", "--workers", "0", "--max-batches", "4", "--out", "runs"),
}
FUNCS = ["thread", "child", "grandchild", "fork", "fork_returns"]
DEFAULT = {("diagnose", f) for f in FUNCS} | {("check", "thread"), ("sweep", "thread"), ("sweep", "fork")}
"""the cases the default suite runs (every kind of leftover in one command, each command once); the rest are slow"""


def _leftover_case(command: str, func: str, folder: Path) -> tuple[subprocess.CompletedProcess, list[int], list[int]]:
    """``command`` with the factory ``func`` in ``folder``: the finished process, the pids the factory started, and
    those of them still alive 10 s after the command ended."""
    folder.mkdir()
    pidfile = folder / "pids"
    proc = run_cli(*COMMANDS[command], "--pipeline", f"{FACTORIES}:{func}", cwd=folder,
                   env={"GB_PIDFILE": str(pidfile)}, timeout=300)  # fmt: skip
    pids = [int(x) for x in pidfile.read_text().split()] if pidfile.exists() else []
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return proc, pids, [p for p in pids if _alive(p)]


@pytest.fixture(scope="module")
def default_cases(tmp_path_factory) -> dict[tuple[str, str], tuple[subprocess.CompletedProcess, list[int], list[int]]]:
    """The default suite's cases, two commands at a time (the suite's time: each command's budget is wall time, and
    what is checked is the clean-up, not a figure; not more at once: on a machine busy with other jobs a factory's
    own MXNet import has to stay within gluonbench's 40 s limit for a factory): (command, func) -> what
    :func:`_leftover_case` found. No process or shared memory that any of them made outlives them."""
    base = tmp_path_factory.mktemp("leftovers")
    with leak_check(), ThreadPoolExecutor(max_workers=2) as pool:
        calls = {case: pool.submit(_leftover_case, *case, base / "-".join(case)) for case in sorted(DEFAULT)}
        return {case: call.result() for case, call in calls.items()}


@pytest.mark.parametrize(
    ("command", "func"),
    [pytest.param(c, f, marks=() if (c, f) in DEFAULT else pytest.mark.slow, id=f"{c}-{f}")
     for c in COMMANDS for f in FUNCS],
)  # fmt: skip
def test_nothing_a_factory_starts_outlives_the_command(request, tmp_path, func, command):
    if (command, func) in DEFAULT:
        proc, pids, alive = request.getfixturevalue("default_cases")[(command, func)]
    else:
        with leak_check():
            proc, pids, alive = _leftover_case(command, func, tmp_path / "case")
    # check refuses to save a baseline of too few rounds (a busy machine fits fewer in 10 s): an answer, not a fault
    too_few = command == "check" and proc.returncode == 2 and "paired rounds" in proc.stderr
    assert proc.returncode == 0 or too_few, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    if func != "thread":
        assert pids, "the factory did not start anything"
    assert not alive, proc.stderr[-2000:]
    if func == "thread":
        assert "'user-sleeper'" in proc.stderr
    if func == "fork_returns":  # the forked child never ran the command: one first line, one result
        assert proc.stdout.count("baseline saved") <= 1
    assert os.getpid()  # the test process itself is untouched


def test_check_ends_a_hanging_import_within_budget_plus_grace(hanging_import):
    folder, call = hanging_import
    proc, took = call.result()
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "importing fenced_factories.py did not return within 40 s" in last and "--budget" in last
    assert "Traceback" not in proc.stderr and not (folder / "b.json").exists()
    assert took < 110
