"""Bad input refused in one line, exit 2, before any measuring: an unknown ``check --set`` key, a text learning
rate, a data set whose ``__len__`` raises (in every command that runs a pipeline), an absurdly small
``--max-slowdown``, a repeated ``--pipeline-option`` key."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from gluonbench.check.gate import parse_fraction
from gluonbench.errors import GluonbenchError
from gluonbench.workloads.spec import parse_pipeline_options

FACTORIES = Path(__file__).with_name("fenced_factories.py")
COMMANDS = {
    "check": ("check", "--budget", "10", "--save-baseline", "b.json"),
    "diagnose": ("diagnose", "--budget", "10"),
    "sweep": ("sweep", "--workers", "0", "--max-batches", "2", "--out", "runs"),
    "tune": ("tune", "--budget", "10"),
}


def _one_line(proc, says: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], proc.stderr


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("func", "says"),
    [("bad_len", "len(dataset) raised RuntimeError: the index is not loaded; fix the dataset's __len__"),
     ("text_lr", "learning_rate must be a number above 0 (got str 'fast')")],
)  # fmt: skip
def test_a_bad_spec_is_one_line_in_every_command(tmp_path, no_leaks, command, func, says):
    proc = run_cli(*COMMANDS[command], "--pipeline", f"{FACTORIES}:{func}", cwd=tmp_path, timeout=300)
    _one_line(proc, says)
    assert not (tmp_path / "b.json").exists() and not (tmp_path / "runs").exists()


def test_check_set_of_an_unknown_key(tmp_path):
    proc = run_cli(*COMMANDS["check"], "--set", "nosuch=3", cwd=tmp_path, timeout=300)
    _one_line(proc, "workload mnist takes no option 'nosuch'")


@pytest.mark.parametrize("value", ["1e-300", "0.0001%", "5e-324"])
def test_an_absurdly_small_max_slowdown(value):
    with pytest.raises(GluonbenchError, match=r"below 0\.1%"):
        parse_fraction(value)
    assert parse_fraction("0.1%") == pytest.approx(0.001)


def test_check_cli_refuses_a_tiny_max_slowdown_before_measuring(tmp_path):
    proc = run_cli("check", "--budget", "10", "--max-slowdown", "1e-300", "--baseline", "b.json", cwd=tmp_path)
    _one_line(proc, "--max-slowdown '1e-300' is below 0.1%")


def test_a_repeated_pipeline_option_is_refused():
    with pytest.raises(GluonbenchError, match="--pipeline-option a is given twice"):
        parse_pipeline_options(["a=1", "b=2", "a=3"])
    assert parse_pipeline_options(["a=1", "b=2"]) == {"a": 1, "b": 2}


def test_the_cli_refuses_a_repeated_pipeline_option(tmp_path):
    proc = run_cli(*COMMANDS["check"], "--pipeline", f"{FACTORIES}:options", "--pipeline-option", "a=1",
                   "--pipeline-option", "a=2", cwd=tmp_path)  # fmt: skip
    _one_line(proc, "--pipeline-option a is given twice")
