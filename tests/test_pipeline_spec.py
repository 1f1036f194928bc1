"""Issue 16: a user's own pipeline (``gluonbench.PipelineSpec``, ``--pipeline MODULE:FUNCTION``), one assembly
(``build_pipeline``) and the loader knobs declared once (``gluonbench.knobs``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gluonbench
from gluonbench.errors import GluonbenchError
from gluonbench.knobs import KNOBS, check_loader, unmet
from gluonbench.workloads.spec import PipelineSpec, load_spec, parse_pipeline_options

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "imagefolder_pipeline.py"

# a tiny pipeline written into a user's folder: numpy samples, a dense net, no files to read
TINY = """
import numpy as np
import gluonbench

def _sample(i):
    return np.full((4,), i % 7, dtype=np.float32), np.float32(i % 2)

class Data:
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        return _sample(i)

def scale(data, label):
    return data / 7.0, label

def net():
    from mxnet import gluon
    return gluon.nn.Dense(2)

def make(samples=96, **options):
    from mxnet import gluon
    return gluonbench.PipelineSpec(
        dataset=gluon.data.SimpleDataset([_sample(i) for i in range(samples)]),
        transform=scale, net=net, batch_size=8, name="tiny", **options)

def as_dict(samples=32):
    return {"dataset": Data(samples), "net": net, "transform": scale}

def broken_pair():
    return {"dataset": [1, 2, 3], "net": net}

def broken_transform():
    return {"dataset": Data(4), "net": net, "transform": lambda d, l: (d["x"], l)}

def raises(**kw):
    raise ValueError("no data folder configured")

def wrong():
    return 42

not_a_function = 3
"""


@pytest.fixture()
def user_dir(tmp_path: Path) -> Path:
    (tmp_path / "mytrain.py").write_text(textwrap.dedent(TINY))
    return tmp_path


@pytest.fixture()
def in_user_dir(user_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(user_dir)
    monkeypatch.syspath_prepend(str(user_dir))
    sys.modules.pop("mytrain", None)
    return user_dir


def test_factory_by_module_and_by_file(in_user_dir: Path) -> None:
    spec = load_spec("mytrain:make", {"samples": 40})
    assert isinstance(spec, PipelineSpec) and len(spec.dataset) == 40 and spec.batch_size == 8
    by_file = load_spec(f"{in_user_dir / 'mytrain.py'}:as_dict")  # a dict of the fields works too
    assert isinstance(by_file, PipelineSpec) and len(by_file.dataset) == 32


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nosuchmodule_xyz:make", "module 'nosuchmodule_xyz' not found"),
        ("mytrain:nothing", "has no function 'nothing'"),
        ("mytrain:not_a_function", "not a function"),
        ("mytrain:raises", "the factory raised ValueError: no data folder configured"),
        ("mytrain:wrong", "returned int, not a gluonbench.PipelineSpec"),
        ("mytrain:broken_pair", "not (data, label)"),
        ("mytrain:broken_transform", "transform fails on dataset[0]: IndexError"),
        ("mytrain", "write MODULE:FUNCTION"),
        ("missing/file.py:make", "file missing/file.py not found"),
    ],
)
def test_bad_specs_fail_in_one_line(in_user_dir: Path, target: str, message: str) -> None:
    with pytest.raises(GluonbenchError) as err:
        load_spec(target)
    text = str(err.value)
    assert message in text and "\n" not in text


def test_dict_with_unknown_field_is_named() -> None:
    with pytest.raises(GluonbenchError, match=r"unknown field.*colour"):
        PipelineSpec.from_dict({"dataset": [], "net": None, "colour": 1})
    with pytest.raises(GluonbenchError, match=r"loader\.workers"):
        PipelineSpec(dataset=[(1, 2)], net=lambda: None, loader={"workers": 2}).check()


def test_pipeline_options_parse_as_toml_values() -> None:
    assert parse_pipeline_options(["n=5", "r=0.5", "on=true", "root=data/images", 'q="x y"']) == {
        "n": 5,
        "r": 0.5,
        "on": True,
        "root": "data/images",
        "q": "x y",
    }
    with pytest.raises(GluonbenchError, match="KEY=VALUE"):
        parse_pipeline_options(["novalue"])


def test_knobs_declared_once() -> None:
    from gluonbench.config import SweepSettings
    from gluonbench.pipeline import Loader
    from gluonbench.sweeprun.run import RunSpec
    from gluonbench.tune.model import Setting

    loader = Loader()
    for name, knob in KNOBS.items():
        assert getattr(loader, name) == knob.default, name
    for name in ("thread_pool", "prefetch", "pin_memory"):  # what tune can recommend, sweep and a run can set
        assert hasattr(Setting(), name) and hasattr(SweepSettings(), name) and hasattr(RunSpec(), name)
    assert check_loader({"num_workers": 2, "prefetch": None}) == {"num_workers": 2, "prefetch": None}
    with pytest.raises(GluonbenchError, match="prefetch must be 0 or more"):
        check_loader({"prefetch": -1})
    assert unmet({"pin_memory": True}, on_gpu=False) == ["pin_memory matters only with a GPU context"]
    assert unmet({"pin_memory": True}, on_gpu=True) == []


def test_sweep_settings_carry_pipeline_and_pin_memory(in_user_dir: Path) -> None:
    from gluonbench.config import SweepSettings, coerce

    s = coerce(
        SweepSettings(),
        {"pipeline": "mytrain:make", "pipeline_options": {"samples": 16}, "pin_memory": "true", "workers": "0,1"},
        source="--config t.toml",
    ).check()
    runs = s.specs()
    assert [r.workload for r in runs] == ["pipeline", "pipeline"]
    assert runs[0].options == {"pipeline": "mytrain:make", "pipeline_options": {"samples": 16}}
    assert runs[0].pin_memory is True
    assert s.label() == "sweep-mytrain-make-cpu"
    with pytest.raises(GluonbenchError, match="exclude each other"):
        SweepSettings(pipeline="mytrain:make", workload="synthetic").check()
    with pytest.raises(GluonbenchError, match="goes with pipeline"):
        SweepSettings(pipeline_options={"a": 1}).check()


def test_build_pipeline_is_the_assembly(in_user_dir: Path) -> None:
    from gluonbench.pipeline import Loader, build_pipeline

    spec = load_spec("mytrain:make", {"loader": {"num_workers": 1, "prefetch": 3}})
    p = build_pipeline(spec)
    assert isinstance(p.loader, Loader)
    assert (p.batch_size, p.num_workers, p.loader.prefetch) == (8, 1, 3)
    q = build_pipeline(spec, num_workers=0, batch_size=4)  # a command's knobs override the spec's
    assert (q.batch_size, q.num_workers, q.loader.prefetch) == (4, 0, 3)
    assert p.stages()["transform"] == "scale" and p.step is None
    with pytest.raises(GluonbenchError, match="thread_pool must be True or False"):
        build_pipeline(spec, thread_pool="yes")
    assert gluonbench.build_pipeline is build_pipeline and gluonbench.PipelineSpec is PipelineSpec


def _cli(args: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GLUONBENCH_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "gluonbench", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize("command", ["sweep", "diagnose", "tune", "profile"])
def test_cli_bad_pipeline_is_one_line_exit_2(user_dir: Path, command: str) -> None:
    # the command's plan line (gluonbench.console) may precede the one error line, as everywhere
    from conftest import assert_one_clear_line

    r = _cli([command, "--pipeline", "mytrain:raises"], user_dir)
    assert_one_clear_line(r, "the factory raised ValueError: no data folder configured")


def test_sweep_module_from_the_working_folder(user_dir: Path) -> None:
    """``--pipeline mytrain:make`` from the user's folder: each run's child process imports it again."""
    out = user_dir / "results"
    r = _cli(
        [
            *["sweep", "--pipeline", "mytrain:make", "--pipeline-option", "samples=64", "--workers", "0,1"],
            *["--batch-size", "8", "--max-batches", "4", "--prefetch", "2", "--out", str(out)],
        ],
        user_dir,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    (run_dir,) = out.iterdir()
    runs = [json.loads(x) for x in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert [(x["status"], x["spec"]["workers"]) for x in runs] == [("ok", 0), ("ok", 1)]
    assert all(x["spec"]["options"]["pipeline"] == "mytrain:make" and x["train_samples"] == 32 for x in runs)
    assert runs[1]["spec"]["prefetch"] == 2


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        import imagefolder_pipeline
    finally:
        sys.path.remove(str(EXAMPLE.parent))
    return imagefolder_pipeline.make_images(tmp_path_factory.mktemp("user") / "images", classes=3, per_class=24)


def _example(images: Path) -> list[str]:
    return ["--pipeline", f"{EXAMPLE}:make", "--pipeline-option", f"root={images}"]


def test_example_sweep_pipeline(images: Path, tmp_path: Path) -> None:
    """The example user module (gluon image folder, gluon's vision transforms, a small CNN) swept."""
    r = _cli(
        [
            "sweep",
            *_example(images),
            "--workers",
            "0,1",
            "--batch-size",
            "8",
            "--max-batches",
            "3",
            "--out",
            str(tmp_path),
        ],
        tmp_path,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert "imagefolder_pipeline-make" in run_dir.name
    runs = [json.loads(x) for x in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert [x["status"] for x in runs] == ["ok", "ok"] and all(x["train_samples"] == 24 for x in runs)
    assert (run_dir / "summary.md").is_file()


@pytest.mark.slow
def test_example_diagnose_tune_profile(images: Path, tmp_path: Path) -> None:
    """diagnose, tune and profile take the same factory and each leave their output."""
    r = _cli(
        ["diagnose", *_example(images), "--batch-size", "8", "--budget", "15", "--out", str(tmp_path / "d")], tmp_path
    )
    assert r.returncode == 0, r.stderr[-2000:]
    (d,) = (tmp_path / "d").iterdir()
    assert "diagnose-imagefolder_pipeline-make-w0" in d.name and (d / "runs.jsonl").is_file()
    r = _cli(
        ["profile", *_example(images), "--batch-size", "8", "--max-batches", "8", "--out", str(tmp_path / "p")],
        tmp_path,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    (p,) = (tmp_path / "p").iterdir()
    assert (p / "report.html").is_file()
    traces = list(p.rglob("*.json"))
    assert any("Step:ModeKeys.TRAIN" in t.read_text(errors="replace") for t in traces)
    toml = tmp_path / "tuned.toml"
    r = _cli(
        ["tune", *_example(images), "--batch-size", "8", "--budget", "60", "--max-workers", "2", "--toml", str(toml)],
        tmp_path,
        timeout=400,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    from gluonbench.config import SweepSettings, coerce, load_toml

    tuned = coerce(SweepSettings(), load_toml(toml), source="tuned.toml").check()
    assert tuned.pipeline == f"{EXAMPLE}:make" and tuned.pipeline_options == {"root": str(images)}


def test_builtin_mnist_is_a_spec_factory(tmp_path: Path) -> None:
    """``--dataset mnist`` and ``--pipeline gluonbench.workloads.mnist:make`` train the same pipeline: same seed,
    same batches, same accuracy."""
    from concurrent.futures import ThreadPoolExecutor

    accuracies = []
    whats = (["--dataset", "mnist"], ["--pipeline", "gluonbench.workloads.mnist:make"])
    with ThreadPoolExecutor(max_workers=2) as pool:  # both at once: a run of 5 batches is not timed
        runs = list(pool.map(
            lambda what: _cli(["sweep", *what, "--workers", "0", "--max-batches", "5", "--out",
                               str(tmp_path / what[0].strip("-"))], tmp_path),
            whats,
        ))  # fmt: skip
    for what, r in zip(whats, runs, strict=True):
        out = tmp_path / what[0].strip("-")
        assert r.returncode == 0, r.stderr[-2000:]
        (run_dir,) = out.iterdir()
        (run,) = [json.loads(x) for x in (run_dir / "runs.jsonl").read_text().splitlines()]
        assert run["status"] == "ok" and run["eval_samples"] == 5 * 64
        accuracies.append(run["accuracy"])
    assert accuracies[0] == accuracies[1]


def test_a_spec_setting_the_command_overrides_is_warned(in_user_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    from gluonbench.workloads.spec import check_pipeline

    with caplog.at_level("WARNING"):
        assert check_pipeline("mytrain:make", {"samples": 16}, "cpu", batch_size=64) == {"train": 16}
    assert "the pipeline's spec says batch_size=8 (runs at 64)" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        check_pipeline("mytrain:make", {"samples": 16}, "cpu", batch_size=8)
    assert "spec says" not in caplog.text
