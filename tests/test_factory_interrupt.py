"""A KeyboardInterrupt that a --pipeline factory (or its module's import) raises itself is one line naming it, exit 2;
a real Ctrl-C or SIGTERM while the factory runs is still a stop (exit 130, "interrupted")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from gluonbench.errors import GluonbenchError
from gluonbench.userprocs import own_interrupt

FACTORIES = Path(__file__).with_name("fenced_factories.py")


def test_a_keyboard_interrupt_raised_by_user_code_is_an_error_naming_it():
    with pytest.raises(GluonbenchError, match="the factory raised KeyboardInterrupt, though no Ctrl-C") as err:
        with own_interrupt("--pipeline x.py:make", ["the factory"]):
            raise KeyboardInterrupt
    assert str(err.value).startswith("--pipeline x.py:make: ") and "\n" not in str(err.value)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_real_sigint_inside_user_code_stays_an_interrupt():
    with pytest.raises(KeyboardInterrupt):
        with own_interrupt("--pipeline x.py:make", ["the factory"]):
            signal.raise_signal(signal.SIGINT)
            time.sleep(5)  # the handler runs at the next bytecode; never reached
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_callers_own_sigint_handler_is_left_in_charge():
    def mine(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, mine)
    try:
        with pytest.raises(KeyboardInterrupt):
            with own_interrupt("--pipeline x.py:make", ["the factory"]):
                raise KeyboardInterrupt
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize(
    ("command", "env", "says"),
    [
        (("check", "--budget", "10", "--save-baseline", "b.json"), {}, "the factory raised KeyboardInterrupt"),
        (("sweep", "--workers", "0", "--max-batches", "4", "--out", "runs"), {"GB_INTERRUPT_AT_IMPORT": "1"},
         "importing fenced_factories.py raised KeyboardInterrupt"),
        (("diagnose", "--budget", "10", "--workers", "0"), {}, "the factory raised KeyboardInterrupt"),
    ],
    ids=["check", "sweep-import", "diagnose"],
)  # fmt: skip
def test_the_cli_says_it_in_one_line_exit_2(tmp_path, no_leaks, command, env, says):
    func = "options" if env else "interrupts"
    proc = run_cli(*command, "--pipeline", f"{FACTORIES}:{func}", cwd=tmp_path, env=env, timeout=200)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "interrupted" not in lines[0], proc.stderr
    assert not list(tmp_path.iterdir())  # no baseline, run folder or results folder


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_real_stop_while_the_factory_runs_is_still_interrupted(tmp_path, no_leaks, sig):
    pidfile = tmp_path / "pids"
    env = dict(os.environ, GB_PIDFILE=str(pidfile), PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "check", "--budget", "60", "--save-baseline", "b.json", "--pipeline",
         f"{FACTORIES}:sleeps_noted"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not pidfile.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert pidfile.exists(), proc.communicate(timeout=60)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "raised KeyboardInterrupt" not in err and "Traceback" not in err, err


DEL_STOPPED = """
import os, signal
from gluonbench import interrupts

interrupts.install()


class Freed:
    def __del__(self):  # as an NDArray frees its memory: the stop arrives while it runs
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10000):
            pass


obj = Freed()
del obj
print("pending", interrupts.pending())
"""


def test_a_stop_that_arrives_inside_a_del_is_remembered_without_a_traceback():
    """Python cannot raise a stop out of a ``__del__`` (an NDArray's, freeing its memory): it would print it with a
    traceback and go on. The command line remembers the stop and says nothing there; the command stops at its next
    progress tick (a SIGTERM once printed "Exception ignored in: <function NDArrayBase.__del__ ...>" and a
    traceback before "gluonbench: interrupted")."""
    proc = subprocess.run([sys.executable, "-c", DEL_STOPPED], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"pending {int(signal.SIGTERM)}", proc.stdout
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
