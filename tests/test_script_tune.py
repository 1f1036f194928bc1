"""gluonbench tune -- python train.py: the loader knobs searched on the user's unmodified script, one fresh process per
setting, the recommendation printed as the DataLoader(...) arguments to write into it."""

from __future__ import annotations

import json

from conftest import assert_one_clear_line, run_cli, with_more_budget
from test_script import _script

# a training script of the usual shape: argparse, a Gluon DataLoader over an in-memory data set whose transform
# costs CPU, a Trainer with momentum SGD and weight decay, an evaluation pass each epoch
TRAIN = """
import argparse

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1000)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--workers", type=int, default=0)
args = parser.parse_args()


def transform(x, y):
    for _ in range(20):  # CPU work per sample
        x = np.tanh(x @ np.eye(x.shape[0], dtype=x.dtype))
    return x.astype("float32"), y


rng = np.random.RandomState(0)
train = gluon.data.ArrayDataset(rng.rand(1024, 32).astype("float32"), (np.arange(1024) % 4).astype("float32"))
test = gluon.data.ArrayDataset(rng.rand(128, 32).astype("float32"), (np.arange(128) % 4).astype("float32"))
train_loader = gluon.data.DataLoader(
    train.transform(transform), batch_size=args.batch_size, shuffle=True, num_workers=args.workers
)
test_loader = gluon.data.DataLoader(test, batch_size=64)
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(64, activation="relu"), gluon.nn.Dense(4))
net.initialize(mx.init.Xavier())
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-4})
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
for epoch in range(args.epochs):
    for data, label in train_loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
    metric = mx.metric.Accuracy()
    for data, label in test_loader:
        metric.update(label, net(data))
"""


def test_tune_of_a_script_prints_the_dataloader_line_and_records_a_measured_best(tmp_path, no_leaks):
    script = _script(tmp_path, TRAIN)

    def tune(budget: float) -> tuple:
        out = tmp_path / f"out{budget:g}"
        args = ("--budget", f"{budget:g}", "--out", str(out), "--", "python", script, "--epochs", "1000")
        return run_cli("tune", *args, timeout=600), out

    def searched(result: tuple) -> bool:  # a machine too busy for 2 runs in 12 s gets a larger budget, as advised
        proc, out = result
        records = [f for f in out.glob("*/runs.jsonl")] if proc.returncode == 0 else []
        if len(records) != 1:
            return False
        (record,) = [json.loads(ln) for ln in records[0].read_text().splitlines()]
        ok = [e for e in record["tune"]["evidence"] if e["label"].startswith("full: ") and e["status"] == "ok"]
        return len(ok) >= 2

    proc, out = with_more_budget(tune, (12, 24, 48), searched)
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("recommended: "))
    assert line.startswith("recommended: DataLoader(..., num_workers=") and "thread_pool=" in line, line
    assert "tune: as written: 0 workers: samples/s full step" in proc.stderr
    assert "batch_size: not searched in a script" in proc.stdout  # said, not silently left out
    (folder,) = out.iterdir()
    assert folder.name.endswith("-tune-script-train") and (folder / "tune.md").exists()
    (record,) = [json.loads(ln) for ln in (folder / "runs.jsonl").read_text().splitlines()]
    assert record["kind"] == "tune" and record["status"] == "ok"
    tune = record["tune"]
    assert tune["dataloader"] in line
    # every run's full step, by setting: the baseline first (the script as written, nothing overridden)
    full = [e for e in tune["evidence"] if e["label"].startswith("full: ") and e["status"] == "ok"]
    assert full[0]["phase"] == "baseline" and full[0]["label"] == "full: 0 workers"
    assert tune["current_samples_per_s"] == full[0]["samples_per_s"]
    assert len(full) >= 2, tune["tried"]  # the search ran the script at other settings than its own
    # the recommendation was run, with the rate it reports, and is among the settings tied with the fastest run
    (best,) = [e for e in full if e["setting"] == tune["setting"]]
    assert tune["samples_per_s"] == best["samples_per_s"]
    fastest = max(full, key=lambda e: e["samples_per_s"])
    tied = tune["batch_sizes"][0]["within_noise"]
    assert fastest["label"][len("full: ") :] in tied and best["label"][len("full: ") :] in tied, (tied, full)
    written = f"num_workers={tune['setting']['num_workers']}, thread_pool={tune['setting']['thread_pool']}"
    assert written in line, (written, line)


def test_each_tuned_knob_reaches_the_scripts_loader(tmp_path, no_leaks):
    """A run at a setting makes the script's training loader with that setting's knobs, as if the script said so."""
    from gluonbench.script.hooks import override
    from gluonbench.script.run import check_inputs
    from gluonbench.script.tune import run_trial
    from gluonbench.tune.model import Setting

    kwargs: dict = {"batch_size": 8}
    args = override(("data", 8, False, None, None, None, None, 0, False), kwargs, {"num_workers": 3, "prefetch": 5})
    assert args[7] == 3 and kwargs == {"batch_size": 8, "prefetch": 5}  # positional where given, else by name
    command = check_inputs(["python", _script(tmp_path, TRAIN), "--workers", "1"], 10, None, 120)
    trial = run_trial(
        command, Setting(2, thread_pool=True, prefetch=3), index=1, measure_s=1.0, start_timeout_s=120, role="t", why=""
    )
    made = trial.loader
    assert (made["num_workers"], made["thread_pool"], made["prefetch"]) == (2, True, 3), made
    # it trained at that setting: its rounds came back (a figure needs more than this 1 s on a busy machine)
    assert trial.error is None and trial.records["full"].rounds >= 1


def test_tune_of_a_script_that_ends_before_training_is_one_line_and_no_folder(tmp_path, no_leaks):
    script = _script(tmp_path, "print('nothing to train')\n")
    out = tmp_path / "out"
    proc = run_cli("tune", "--budget", "10", "--out", str(out), "--", "python", script, timeout=300)
    assert_one_clear_line(proc, "the script ended (exit code 0)", "nothing to train", plan=True)
    assert not out.exists() or not any(out.iterdir())
    # the tune's own flags, checked before the script starts (a process of its own: the command line's state, its
    # signal handlers and message style, stays out of the test's process)
    for flags, needle in (
        (["--budget", "5"], "--budget must be at least 10"),
        (["--batch-size", "64"], "not searched"),
    ):
        assert_one_clear_line(run_cli("tune", *flags, "--out", str(out), "--", "python", script), needle)
    assert not out.exists() or not any(out.iterdir())
