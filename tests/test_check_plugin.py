"""The pytest plugin: a project's own test using the ``gluonbench_check`` fixture, run by a real pytest."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO

TEST_FILE = textwrap.dedent(
    f"""
    import sys
    sys.path.insert(0, {str(REPO / "tests")!r})
    from check_pipelines import make


    def test_loader_speed(gluonbench_check):
        gluonbench_check(make, baseline="loader-baseline.json", max_slowdown="60%", budget_s=30)
    """
)


def _installed() -> bool:
    """Whether the plugin is registered by its pytest11 entry point (an installed gluonbench), so pytest
    loads it by itself; from a bare checkout it is named with -p."""
    from importlib.metadata import entry_points

    return any(ep.value.startswith("gluonbench.") for ep in entry_points(group="pytest11"))


PLUGIN = [] if _installed() else ["-p", "gluonbench.check.pytest_plugin"]


def _pytest(folder, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *PLUGIN, "-q", "-rs", "-p", "no:cacheprovider"],
        cwd=folder,
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
        timeout=600,
    )


def test_plugin_offers_the_fixture_and_options_without_importing_mxnet(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *PLUGIN, "--fixtures", "-p", "no:cacheprovider"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0 and "gluonbench_check" in proc.stdout, proc.stdout + proc.stderr
    helptext = subprocess.run(
        [sys.executable, "-m", "pytest", *PLUGIN, "--help"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    assert "--gluonbench-save" in helptext and "--gluonbench-budget" in helptext
    code = "import sys, gluonbench.check.pytest_plugin; assert 'mxnet' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


@pytest.mark.slow
def test_fixture_saves_a_baseline_then_fails_on_a_regression(tmp_path):
    (tmp_path / "test_speed.py").write_text(TEST_FILE)
    first = _pytest(tmp_path, CI="")  # outside CI a missing baseline is measured and saved
    assert first.returncode == 0 and "1 skipped" in first.stdout, first.stdout + first.stderr
    assert f"baseline saved to {tmp_path / 'loader-baseline.json'}" in first.stdout
    assert (tmp_path / "loader-baseline.json").is_file()
    # the same pipeline three times slower in preprocessing: the test fails, naming the stage
    slow = _pytest(tmp_path, CHECK_TEST_SLOW_PCT="300")
    assert slow.returncode == 1 and "1 failed" in slow.stdout, slow.stdout[-3000:] + slow.stderr
    assert "REGRESSION" in slow.stdout and "preprocessing" in slow.stdout


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--gluonbench-budget", "0", "must be at least 10 seconds"),
        ("--gluonbench-budget", "soon", "not a number of seconds"),
        ("--gluonbench-budget", "nan", "must be a number of seconds"),
        ("--gluonbench-max-slowdown", "0%", "must be above 0 %"),
        ("--gluonbench-max-slowdown", "lots", "is not a percentage"),
    ],
)
def test_bad_options_stop_pytest_before_any_test(tmp_path, option, value, says):
    (tmp_path / "test_x.py").write_text("def test_x():\n    raise AssertionError('ran')\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *PLUGIN, "-q", "-p", "no:cacheprovider", f"{option}={value}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 4, proc.stdout + proc.stderr  # pytest's usage error: no test ran
    assert f"gluonbench: {option}" in proc.stderr and says in proc.stderr and "ran" not in proc.stdout


def test_under_ci_a_missing_baseline_fails_and_is_found_from_the_rootdir(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_speed.py").write_text(
        "def test_loader_speed(gluonbench_check):\n"
        "    gluonbench_check('no.such:pipeline', baseline='baselines/loader.json', budget_s=0)\n"
    )
    # a bad budget in the call is one failure naming it (0 was once silently 60 s)
    bad = _pytest(tests, CI="true")
    assert bad.returncode == 1 and "gluonbench_check: budget_s must be at least 10 seconds (got 0)" in bad.stdout, (
        bad.stdout
    )
    (tests / "test_speed.py").write_text(
        "def test_loader_speed(gluonbench_check):\n"
        "    gluonbench_check('no.such:pipeline', baseline='baselines/loader.json')\n"
    )
    # started from tests/, the relative baseline is the rootdir's: under CI its absence fails, nothing is saved
    proc = _pytest(tests, CI="true")
    assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout + proc.stderr
    assert f"no baseline at {tmp_path / 'baselines' / 'loader.json'}" in proc.stdout
    assert "commit the baseline" in proc.stdout and not (tmp_path / "baselines").exists()


def test_a_relative_baseline_is_taken_from_the_rootdir(tmp_path):
    from gluonbench.check.pytest_plugin import resolve_baseline

    assert resolve_baseline("b/x.json", tmp_path) == tmp_path / "b" / "x.json"
    assert resolve_baseline(tmp_path / "abs.json", Path("/elsewhere")) == tmp_path / "abs.json"


def test_the_fixture_needs_one_of_baseline_and_against(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "def test_both(gluonbench_check):\n"
        "    gluonbench_check('no.such:pipeline', baseline='b.json', against='HEAD')\n"
        "def test_neither(gluonbench_check):\n"
        "    gluonbench_check('no.such:pipeline')\n"
    )
    proc = _pytest(tmp_path, CI="")
    assert proc.returncode == 1 and "2 failed" in proc.stdout, proc.stdout + proc.stderr
    assert proc.stdout.count("give baseline=PATH or against=REF") >= 2


def test_the_fixture_checks_against_a_git_ref_in_one_line_when_it_is_unknown(tmp_path):
    import subprocess as sp

    sp.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "test_x.py").write_text(
        "def test_speed(gluonbench_check):\n"
        "    gluonbench_check('pipe.py:make', against='no-such-branch', budget_s=10)\n"
    )
    proc = _pytest(tmp_path, CI="true")
    assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout + proc.stderr
    assert "gluonbench_check: --against no-such-branch: no such commit" in proc.stdout
    assert "Traceback" not in proc.stdout and "raise " not in proc.stdout


def test_the_fixture_takes_a_script_or_a_pipeline_and_says_which_in_one_line(tmp_path):
    (tmp_path / "train.py").write_text("print('never run')\n")
    (tmp_path / "test_x.py").write_text(
        "def test_both(gluonbench_check):\n"
        "    gluonbench_check('no.such:pipeline', script=['python', 'train.py'], baseline='b.json')\n"
        "def test_shaped(gluonbench_check):\n"
        "    gluonbench_check(script=['python', 'train.py'], baseline='b.json', num_workers=2)\n"
        "def test_not_python(gluonbench_check):\n"
        "    gluonbench_check(script=['bash', 'train.sh'], against='HEAD')\n"
    )
    proc = _pytest(tmp_path, CI="true")
    assert proc.returncode == 1 and "3 failed" in proc.stdout, proc.stdout + proc.stderr
    assert "give a pipeline or script=['python', 'train.py', ...]" in proc.stdout
    assert "gluonbench_check: num_workers shape a pipeline; a script is checked as written" in proc.stdout
    assert "gluonbench_check: " in proc.stdout and "not a Python" in proc.stdout
    assert "Traceback" not in proc.stdout and not (tmp_path / "b.json").exists()


SCRIPT_TEST_FILE = """
import sys


def test_training_speed(gluonbench_check):
    gluonbench_check(script=[sys.executable, "train.py"], baseline="train-baseline.json", budget_s=30)
"""


@pytest.mark.slow
def test_the_fixture_gates_a_training_script_saved_then_slower(tmp_path):
    from test_script_check import TRAIN

    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "test_speed.py").write_text(SCRIPT_TEST_FILE)
    first = _pytest(tmp_path, CI="")
    assert first.returncode == 0 and "1 skipped" in first.stdout, first.stdout + first.stderr
    assert (tmp_path / "train-baseline.json").is_file()
    slow = _pytest(tmp_path, CI="true", SLOWER_TRANSFORM="8")  # the same command, an 8x slower transform
    assert slow.returncode == 1 and "1 failed" in slow.stdout, slow.stdout[-3000:] + slow.stderr
    assert "REGRESSION" in slow.stdout and "preprocessing" in slow.stdout
