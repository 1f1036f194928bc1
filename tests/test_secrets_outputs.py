"""Credentials given as --pipeline-option are kept in no file a command writes: tune's tuned.toml (the option is left
out with a comment) and profile --pipeline's record, report and first line (the run's spec shown redacted)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_cli

from gluonbench.tune.result import _toml_line

FACTORIES = Path(__file__).with_name("fenced_factories.py")
TOKEN = "ghp_" + "Zq9TokenX" * 4


def test_a_credential_is_not_written_into_a_tuned_toml():
    assert _toml_line("password", "hunter2").startswith("# password = (a credential, not written here")
    assert "hunter2" not in _toml_line("password", "hunter2")
    assert TOKEN not in _toml_line("note", TOKEN)  # a credential's shape under any name
    assert "s3cret" not in _toml_line("db_url", "postgres://u:s3cret@db:5432/x")
    assert _toml_line("max_tokens", 512) == "max_tokens = 512"
    assert _toml_line("mode", "file") == 'mode = "file"'


def test_profile_of_a_pipeline_keeps_no_credential(tmp_path, no_leaks):
    proc = run_cli(
        "profile", "--pipeline", f"{FACTORIES}:secrets", "--pipeline-option", "password=hunter2-xyz",
        "--pipeline-option", f"api_token={TOKEN}", "--max-batches", "4", "--out", str(tmp_path / "o"),
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "hunter2-xyz" not in proc.stderr and TOKEN not in proc.stderr
    assert "***redacted:" in proc.stderr.splitlines()[0]
    files = [p for p in (tmp_path / "o").rglob("*") if p.is_file()]
    assert any(p.name == "profile.json" for p in files)
    for path in files:
        data = path.read_bytes()
        assert b"hunter2-xyz" not in data and TOKEN.encode() not in data, path


def test_a_local_distributed_job_hands_its_spec_over_off_the_command_line(tmp_path, monkeypatch):
    """A kvstore job's nodes get the run's spec (a factory's options, credentials among them) in their environment,
    which only this user can read, not on their command line, which any user's ``ps`` shows."""
    from gluonbench.distributed.launch import Job
    from gluonbench.env import FROM_ENV, SPEC_ENV, handed_spec
    from gluonbench.sweeprun.run import RunSpec

    options = {"pipeline": f"{FACTORIES}:secrets", "pipeline_options": {"password": "hunter2-xyz"}}
    spec = RunSpec(workload="pipeline", options=options, hosts=2, kvstore="dist_sync")
    argv, env = Job(spec, tmp_path, 60.0)._local_node({"KEEP": "1"})
    assert argv[-1] == FROM_ENV and not any("hunter2" in word for word in argv)
    assert env["KEEP"] == "1" and "hunter2-xyz" in env[SPEC_ENV]
    monkeypatch.setenv(SPEC_ENV, env[SPEC_ENV])
    assert RunSpec.from_dict(json.loads(handed_spec(argv[-1]))).options == options
    assert SPEC_ENV not in os.environ  # popped: nothing the node starts inherits it


@pytest.mark.slow
def test_a_distributed_sweep_of_a_pipeline_keeps_the_credential_off_every_command_line(tmp_path, no_leaks):
    """The factory itself fails when a credential is in its worker's command line (fenced_factories.secrets)."""
    proc = run_cli(
        "sweep", "--pipeline", f"{FACTORIES}:secrets", "--pipeline-option", "password=hunter2-xyz",
        "--workers", "0", "--kvstore", "dist_sync", "--hosts", "2", "--max-batches", "3", "--out", str(tmp_path / "o"),
        cwd=tmp_path, timeout=400,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    for path in (p for p in (tmp_path / "o").rglob("*") if p.is_file()):
        assert b"hunter2-xyz" not in path.read_bytes(), path
