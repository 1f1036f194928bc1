"""A ``--pipeline`` factory is what every record, title, folder name and report names (never the built-in mnist);
its own ``batch_size`` is the batch size unless the command's is given; ``loader["batch_size"]`` and an option the
factory's signature does not name are refused; a ``**options`` factory's options are reported back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gluonbench.errors import GluonbenchError
from gluonbench.workloads.spec import PipelineSpec, check_pipeline, load_spec

ROOT = Path(__file__).resolve().parents[1]

# a user's module: numpy samples, a dense net; its own batch size is 16 (the commands' default is 64)
USER = """
import numpy as np
import gluonbench

def _samples(n):
    return [(np.full((4,), i % 7, dtype=np.float32), np.float32(i % 2)) for i in range(n)]

def net():
    from mxnet import gluon
    return gluon.nn.Dense(2)

def make(samples=64, classes=2):
    from mxnet import gluon
    return gluonbench.PipelineSpec(dataset=gluon.data.SimpleDataset(_samples(samples)), net=net, batch_size=16)

def make_any(samples=64, **options):
    from mxnet import gluon
    return gluonbench.PipelineSpec(dataset=gluon.data.SimpleDataset(_samples(samples)), net=net, batch_size=16)

def loader_batch():
    from mxnet import gluon
    return gluonbench.PipelineSpec(
        dataset=gluon.data.SimpleDataset(_samples(32)), net=net, loader={"batch_size": 128})
"""


@pytest.fixture()
def user_dir(tmp_path: Path) -> Path:
    (tmp_path / "usertrain.py").write_text(textwrap.dedent(USER))
    return tmp_path


@pytest.fixture()
def in_user_dir(user_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(user_dir)
    monkeypatch.syspath_prepend(str(user_dir))
    sys.modules.pop("usertrain", None)
    return user_dir


def _cli(args: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GLUONBENCH_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "gluonbench", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_pipeline_sweep_names_the_factory_everywhere(user_dir: Path) -> None:
    """summary.md, summary.json, sweep.json, report.html and sweep.png's title name the factory and its options
    (a credential redacted, and never in the folder's name); the batch size is the spec's 16; the options only
    ``**options`` took are reported back, on stderr and in sweep.json."""
    out = user_dir / "results"
    r = _cli(
        [
            *["sweep", "--pipeline", "usertrain:make_any", "--pipeline-option", "samples=48"],
            *["--pipeline-option", "api_token=s3cr3tvalue", "--workers", "0", "--max-batches", "2"],
            *["--out", str(out)],
        ],
        user_dir,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "takes **options: api_token=" in r.stderr and "s3cr3tvalue" not in r.stderr
    (run_dir,) = out.iterdir()
    assert "usertrain-make_any" in run_dir.name and "s3cr3t" not in run_dir.name
    saved = json.loads((run_dir / "sweep.json").read_text())
    identity = saved["settings"]["identity"]
    assert identity.startswith("usertrain:make_any (api_token=") and "samples=48" in identity
    assert "s3cr3tvalue" not in identity
    assert saved["settings"]["workload"] == "pipeline" and saved["settings"]["batch_size"] == 16
    assert saved["pipeline"] == {"identity": identity, "unchecked_options": ["api_token"]}
    (run,) = [json.loads(x) for x in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert run["status"] == "ok" and run["spec"]["batch_size"] == 16
    md = (run_dir / "summary.md").read_text()
    assert md.startswith(f"# gluonbench sweep: {identity} on cpu") and "mnist" not in md
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["settings"]["identity"] == identity and summary["settings"]["workload"] == "pipeline"
    html = (run_dir / "report.html").read_text()
    assert f"<title>gluonbench sweep: {identity} on cpu" in html.replace("&#x27;", "'")
    from gluonbench.report.sweep import figure
    from gluonbench.rundir import load

    fig = figure(load(run_dir).summary)
    assert fig._suptitle.get_text().startswith(f"{identity}, batch 16, cpu")
    assert "s3cr3tvalue" not in (run_dir / "sweep.json").read_text() + md + html


def test_spec_batch_size_is_the_batch_size_of_diagnose_and_tune(in_user_dir: Path) -> None:
    """Without a batch size, diagnose and tune measure at the spec's 16; a given one decides, said once."""
    from gluonbench.api import run_diagnosis, run_tune
    from gluonbench.config import DiagnoseSettings, TuneSettings

    _, d = run_diagnosis(DiagnoseSettings(pipeline="usertrain:make", ctx="cpu", budget_s=2))
    assert d.setting["batch_size"] == 16 and d.label == "usertrain:make"
    result = run_tune(TuneSettings(pipeline="usertrain:make", ctx="cpu", budget_s=10, max_workers=1))
    assert result.current_batch_size == 16 and result.label == "usertrain:make"


def test_a_given_batch_size_decides_and_is_said_once(in_user_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    from gluonbench.api import with_pipeline
    from gluonbench.config import DiagnoseSettings, SweepSettings, TuneSettings
    from gluonbench.workloads.spec import release_spec, take_spec

    assert with_pipeline(TuneSettings(pipeline="usertrain:make").check()).batch_size == 16
    release_spec(take_spec("usertrain:make"))  # the command done: the spec it kept released
    assert SweepSettings(pipeline="usertrain:make", workers=(0,)).check().specs()[0].batch_size == 16
    with caplog.at_level("WARNING"):
        settings = with_pipeline(DiagnoseSettings(pipeline="usertrain:make", batch_size=32).check())
    assert settings.batch_size == 32
    said = [r for r in caplog.records if "batch_size=16 (runs at 32)" in r.getMessage()]
    assert len(said) == 1
    # without a pipeline: the seed's 64
    assert DiagnoseSettings().check().batch_size == 64 and SweepSettings().check().batch_size == 64


def test_loader_batch_size_is_refused(user_dir: Path) -> None:
    with pytest.raises(GluonbenchError, match=r"write PipelineSpec\(batch_size=128\) and leave it out of loader"):
        PipelineSpec(dataset=[1], net=object, loader={"batch_size": 128})
    r = _cli(["sweep", "--pipeline", "usertrain:loader_batch", "--workers", "0"], user_dir)
    from conftest import assert_one_clear_line

    assert_one_clear_line(r, "the batch size is the spec's own batch_size, not a loader knob")


def test_an_option_the_factory_does_not_name_is_refused(in_user_dir: Path) -> None:
    with pytest.raises(GluonbenchError) as err:
        load_spec("usertrain:make", {"clases": 5})
    text = str(err.value)
    assert "takes no option 'clases' (it takes samples, classes)" in text and "\n" not in text
    assert load_spec("usertrain:make", {"classes": 5}).batch_size == 16


def test_an_option_the_factory_does_not_name_is_one_line_from_the_cli(user_dir: Path) -> None:
    from conftest import assert_one_clear_line

    r = _cli(["diagnose", "--pipeline", "usertrain:make", "--pipeline-option", "clases=5"], user_dir)
    assert_one_clear_line(r, "takes no option 'clases' (it takes samples, classes)")


def test_options_only_star_options_take_are_reported(in_user_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING"):
        check_pipeline("usertrain:make_any", {"samples": 32, "colour": "red"}, "cpu")
    (line,) = [r.getMessage() for r in caplog.records if "**options" in r.getMessage()]
    assert "usertrain:make_any takes **options: colour=red passed to it unchecked" in line
    assert "samples" not in line


def test_check_takes_the_spec_batch_size_and_refuses_unknown_options(in_user_dir: Path) -> None:
    from gluonbench.check.target import resolve_pipeline

    own = resolve_pipeline("usertrain:make", ctx="cpu")
    given = resolve_pipeline("usertrain:make", ctx="cpu", batch_size=32)
    try:
        assert own.pipeline.batch_size == 16 and given.pipeline.batch_size == 32
    finally:
        own.close()
        given.close()
    with pytest.raises(GluonbenchError, match=r"takes no option 'clases' \(it takes samples, classes\)"):
        resolve_pipeline("usertrain:make", ctx="cpu", options={"clases": 5})


def test_profile_runs_at_the_spec_batch_size(in_user_dir: Path) -> None:
    from gluonbench.profiler.pipeline_run import pipeline_command

    own = json.loads(pipeline_command("usertrain:make")[-1])
    given = json.loads(pipeline_command("usertrain:make", batch_size=32)[-1])
    assert (own["batch_size"], given["batch_size"]) == (16, 32)
    assert own["options"]["pipeline"] == "usertrain:make"
