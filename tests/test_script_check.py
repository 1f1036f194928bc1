"""``gluonbench check -- python train.py ARGS``: the CI gate on the user's unmodified training script.

The default suite keeps one short end-to-end pair (a baseline saved, the same script checked against it) and the
bad inputs, which are refused before the script starts; the slow set adds a real slowdown caught."""

from __future__ import annotations

import json

import pytest
from conftest import assert_one_clear_line, run_cli, run_clis, with_more_budget
from test_script import _script

# a training script of the usual shape: argparse, a transform_first transform that costs CPU, momentum SGD with a
# schedule, an evaluation pass; $SLOWER_TRANSFORM multiplies the transform's work (the same command, slower code)
TRAIN = """
import argparse
import os

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon, nd

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=1000)
p.add_argument("--batch-size", type=int, default=32)
args = p.parse_args()
work = 3 * int(os.environ.get("SLOWER_TRANSFORM", "1"))


def augment(image):
    x = image.astype("float32")
    for _ in range(work):
        x = np.roll(x, 1, axis=0) * 0.5 + np.flip(x, axis=1) * 0.5
    return nd.array(x.reshape(1, 16, 16) / 255.0)


rng = np.random.RandomState(0)
images = rng.randint(0, 256, size=(1024, 16, 16)).astype("uint8")
labels = rng.randint(0, 4, size=1024).astype("float32")
train = gluon.data.ArrayDataset(images, labels).transform_first(augment)
loader = gluon.data.DataLoader(train, batch_size=args.batch_size, shuffle=True, last_batch="discard")
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Conv2D(8, 3, activation="relu"), gluon.nn.Flatten(), gluon.nn.Dense(4))
net.initialize(mx.init.Xavier())
net.hybridize()
schedule = mx.lr_scheduler.FactorScheduler(step=100, factor=0.9, base_lr=0.05)
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05, "momentum": 0.9, "lr_scheduler": schedule})
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
for epoch in range(args.epochs):
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
    correct = sum(float((net(x).argmax(axis=1) == y).sum().asscalar()) for x, y in loader)
"""


def _check(*args, budget=10, env=None, timeout=400):
    return run_cli("check", "--budget", f"{budget:g}", *args, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A baseline of the script, saved once for the module: at check's 10 s floor, and with more only when a busy
    machine fitted too few paired rounds to save one (the command refuses then and says to raise --budget)."""
    folder = tmp_path_factory.mktemp("script-check")
    script = _script(folder, TRAIN)
    baseline = folder / "train-baseline.json"
    proc = with_more_budget(
        lambda budget: _check("--save-baseline", str(baseline), "--", "python", script, budget=budget),
        (10, 20, 40),
        lambda proc: proc.returncode == 0 or "raise --budget" not in proc.stderr,
    )
    assert proc.returncode == 0, proc.stderr
    assert "baseline saved" in proc.stdout
    return script, baseline


def test_a_script_checked_against_its_own_baseline_is_not_a_regression(saved, tmp_path, no_leaks):
    script, baseline = saved
    doc = json.loads(baseline.read_text())
    assert doc["identity"] == f"python {script}"  # the command as written: the baseline is tied to it
    assert doc["setting"]["timed"] == "wall" and doc["rounds"] >= 6
    assert doc["total"]["rel"] > 0 and {"preprocessing", "compute"} <= set(doc["stages"])
    out = tmp_path / "check.json"
    proc = _check("--baseline", str(baseline), "--max-slowdown", "50%", "--json", str(out), "--", "python", script)
    # unchanged code: a pass, or on a machine too busy for 10 s inconclusive; never a regression
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    assert f"pipeline python {script}" in proc.stdout and "timed by wall clock" in proc.stdout
    result = json.loads(out.read_text())
    assert result["outcome"] in ("pass", "inconclusive")


def test_bad_input_of_a_script_check_is_one_line_before_the_script_starts(saved, tmp_path):
    script, baseline = saved
    workers, other_args, bash, loader = run_clis(  # each refused before anything starts: all four at once
        ("check", "--budget", "20", "--baseline", str(baseline), "--workers", "2", "--", "python", script),
        ("check", "--budget", "20", "--baseline", str(baseline), "--", "python", script, "--epochs", "3"),
        ("check", "--budget", "20", "--save-baseline", str(tmp_path / "b.json"), "--", "bash", "x.sh"),
        ("check", "--budget", "20", "--baseline", str(baseline), "--loader", "2"),
        timeout=400,
    )
    assert_one_clear_line(workers, "--workers does not apply to a training command")
    assert_one_clear_line(other_args, "is for pipeline", "--save-baseline")
    assert_one_clear_line(bash, "not a Python")
    assert_one_clear_line(loader, "--loader goes with a training command")
    assert not (tmp_path / "b.json").exists()


@pytest.mark.slow
def test_a_slower_transform_in_the_same_script_is_a_regression_naming_preprocessing(saved, no_leaks):
    script, baseline = saved
    env = {"SLOWER_TRANSFORM": "8"}
    proc = run_cli("check", "--budget", "60", "--baseline", str(baseline), "--", "python", script, env=env, timeout=400)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "REGRESSION" in proc.stdout and "preprocessing" in proc.stdout


def test_a_script_check_checks_the_command_once_and_measures_the_checked_command(tmp_path, monkeypatch):
    """The command and its interpreter (a process started) are checked once; the ScriptCommand that check made is
    what is measured and what the baseline is tied to."""
    import gluonbench.script.check as script_check
    import gluonbench.script.run as run
    from gluonbench.script.run import ScriptCommand

    calls: list[ScriptCommand] = []
    real = run.check_interpreter
    monkeypatch.setattr(run, "check_interpreter", lambda command: (calls.append(command), real(command))[1])
    measured: list = []

    def measure(cmd, budget_s, **kwargs):
        measured.append(run.check_inputs(cmd, budget_s, kwargs["loader"], kwargs["start_timeout_s"]))
        raise KeyboardInterrupt  # the measurement itself is the end-to-end tests' part

    monkeypatch.setattr(script_check, "measure_script", measure)
    script = _script(tmp_path, TRAIN)
    with pytest.raises(KeyboardInterrupt):
        script_check.check_script(
            ["python", script], None, tmp_path / "b.json", None, "5%", 20, None, 60, on_progress=None
        )
    assert len(calls) == 1 and measured == calls, (calls, measured)
    assert script_check.script_identity(calls[0]) == f"python {script}"
