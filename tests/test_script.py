"""gluonbench diagnose -- python train.py: the user's unmodified script, the probes applied inside it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from conftest import REPO, assert_one_clear_line, leak_check, run_cli, run_clis, with_more_budget

from gluonbench.errors import GluonbenchError
from gluonbench.script.run import parse_command

# a small training script of the usual shape: a DataLoader over an in-memory data set, a Trainer, a loop
SMALL = """
import sys
import mxnet as mx
from mxnet import autograd, gluon, nd

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10**9
fail = len(sys.argv) > 2 and sys.argv[2] == "fail"
x = nd.random.uniform(shape=(512, 20))
y = nd.array([i % 4 for i in range(512)])
loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=32, shuffle=True)
net = gluon.nn.Dense(4)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
done = 0
while done < steps:
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
        done += 1
        if done >= steps:
            break
if fail:
    raise ValueError("the script's own error after %d steps" % done)
print("trained", done, "steps")
"""


def _script(tmp_path: Path, body: str, name: str = "train.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


# -- the command ---------------------------------------------------------------------------------------------


def test_the_command_is_read_as_an_interpreter_running_a_script_or_a_module(tmp_path):
    script = _script(tmp_path, "print(1)\n")
    c = parse_command(["python", "-u", "-X", "dev", script, "--epochs", "3"])
    assert (c.target, c.module, c.options, c.args) == (script, False, ("-u", "-X", "dev"), ("--epochs", "3"))
    assert c.boot()[1:5] == ["-u", "-X", "dev", "-m"] and c.boot()[5] == "gluonbench.script.boot"
    m = parse_command(["python", "-m", "pkg.train", "--lr", "0.1"])
    assert (m.target, m.module, m.args, m.name) == ("pkg.train", True, ("--lr", "0.1"), "pkg.train")
    assert m.boot()[-4:] == ["-m", "pkg.train", "--lr", "0.1"]


@pytest.mark.parametrize(
    ("cmd", "needle"),
    [
        ([], "no command after --"),
        (["bash", "train.sh"], "not a Python interpreter"),
        (["python", "-c", "print(1)"], "python -c CODE cannot be diagnosed"),
        (["python", "no_such_train.py"], "script not found: no_such_train.py"),
        (["python", "-m"], "python -m needs a module name"),
        (["python"], "no training script after python"),
    ],
)
def test_a_command_that_is_not_python_running_a_script_is_refused(cmd, needle):
    with pytest.raises(GluonbenchError, match=needle.replace("(", r"\(")):
        parse_command(cmd)


def test_the_cli_refuses_a_non_python_command_and_pipeline_flags_in_one_line():
    bash, workers = run_clis(
        ("diagnose", "--", "bash", "x.sh"),
        ("diagnose", "--workers", "2", "--", "python", "examples/train_mnist_gluon.py"),
    )
    assert_one_clear_line(bash, "not a Python interpreter")
    assert_one_clear_line(workers, "--workers does not apply to a training command")


def test_an_interpreter_without_mxnet_is_one_line(tmp_path):
    bare = Path("/usr/bin/python3")
    if not bare.exists() or subprocess.run([bare, "-c", "import mxnet"], capture_output=True).returncode == 0:
        pytest.skip("needs a system python3 without mxnet")
    script = _script(tmp_path, SMALL)
    proc = run_cli("diagnose", "--budget", "5", "--", str(bare), script)
    assert_one_clear_line(proc, "cannot import mxnet", "install gluonbench into the environment", plan=True)


# -- the hooks' stage swaps, in this process ----------------------------------------------------------------


def test_the_switch_replays_cached_samples_and_removes_the_transform_alone(tmp_path):
    from mxnet import gluon

    from gluonbench.script.hooks import SLOTS, Switch

    reads, transforms = [], []

    class Counting(gluon.data.Dataset):
        def __len__(self):
            return 100

        def __getitem__(self, i):
            reads.append(i)
            return (i, i % 3)

    def tf(x):
        transforms.append(x)
        return x * 10

    flags = tmp_path / "modes"
    flags.write_bytes(bytes(SLOTS))
    s = Switch(Counting().transform_first(tf), str(flags), 1)
    assert s.transforms and len(s) == 100
    assert [s[i][0] for i in range(3)] == [0, 10, 20]  # full: read, transform, cached as they pass
    assert (len(reads), len(transforms)) == (3, 3)
    flags.write_bytes(bytes([0, 2]) + bytes(SLOTS - 2))  # no_read: neither read nor transform
    assert [s[i][0] for i in (7, 8)] == [10, 20]  # cache[i % 3]
    assert (len(reads), len(transforms)) == (3, 3)
    flags.write_bytes(bytes([0, 1]) + bytes(SLOTS - 2))  # no_preprocess: the read stays, the transform goes
    assert s[5][0] == 20 and reads[-1] == 5 and len(transforms) == 3


# -- end to end ---------------------------------------------------------------------------------------------


def test_diagnose_runs_an_unmodified_training_script_and_leaves_nothing(tmp_path, no_leaks):
    out = tmp_path / "out"
    proc = run_cli(
        "diagnose",
        "--budget",
        "10",
        "--json",
        str(tmp_path / "d.json"),
        "--out",
        str(out),
        "--",
        "python",
        "examples/train_mnist_gluon.py",
        "--epochs",
        "1000",
        "--limit",
        "1280",
        "--num-workers",
        "1",
        "--log-interval",
        "0",
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    for probe in ("full", "no_preprocess", "no_read", "cached_batch", "loader_only"):
        assert f"| {probe} |" in proc.stdout
    assert "Verdict" in proc.stdout and "train_mnist_gluon.py" in proc.stdout
    d = json.loads((tmp_path / "d.json").read_text())
    assert d["label"] == "train_mnist_gluon.py" and d["setting"]["num_workers"] == 1
    assert d["setting"]["batch_size"] == 64 and d["rounds"] >= 1
    assert all(d["probes"][p]["blocks"] for p in ("full", "no_preprocess", "no_read", "cached_batch", "loader_only"))
    assert d["probes"]["device_batch"]["same_as"] == "cached_batch"
    # psutil evidence per probe, of the script's process tree (it and its loader worker)
    assert d["probes"]["full"]["system"]["samples"] >= 2 and d["probes"]["full"]["system"]["peak_processes"] >= 2
    (run_dir,) = out.iterdir()
    assert (run_dir / "runs.jsonl").exists() and (run_dir / "diagnosis.md").exists()


# slow storage (20 ms a sample, 160 ms a batch of 8, read by one loader worker) and a step whose compute the
# script queues and never reads back (as most training scripts: nothing waits for the step but the next one)
SLEEPY = """
import time
from mxnet import autograd, gluon, nd

class Slow(gluon.data.Dataset):
    def __init__(self):
        self.x = nd.random.uniform(shape=(256, 32)).asnumpy()

    def __len__(self):
        return 256

    def __getitem__(self, i):
        time.sleep(0.02)
        return self.x[i], i % 4

loader = gluon.data.DataLoader(Slow(), batch_size=8, shuffle=True, num_workers=1)
net = gluon.nn.Dense(4)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
w = nd.random.uniform(shape=(384, 384)) / 384
while True:
    for data, label in loader:
        h = nd.random.uniform(shape=(384, 384))
        for _ in range(8):
            h = nd.dot(h, w)
        with autograd.record():
            loss = loss_fn(net(data), label) + 0 * h.sum()
        loss.backward()
        trainer.step(data.shape[0])
"""


def test_no_read_removes_the_reads_in_the_workers_and_cached_batch_waits_for_the_step(tmp_path, no_leaks):
    script = _script(tmp_path, SLEEPY)

    def measure(budget: float) -> dict[str, float | None]:
        proc = run_cli(
            "diagnose", "--budget", str(budget), "--json", str(tmp_path / "d.json"), "--", "python", script, timeout=300
        )
        assert proc.returncode == 0, proc.stderr
        return {p: v["samples_per_s"] for p, v in json.loads((tmp_path / "d.json").read_text())["probes"].items()}

    # a busy machine can leave a probe without a block in 5 s: then measure again with more, as the advice says
    rate = with_more_budget(measure, (5, 15), lambda r: all(r.get(p) for p in ("full", "no_read", "cached_batch")))
    # reading is 160 ms a batch, the step's compute 20-80 ms on a busy machine: replayed samples are much faster
    assert rate["no_read"] > 2 * rate["full"], rate
    # the replayed batch still waits for the step's compute (the barrier every probe has): not the time Python
    # takes to queue it, which is several times shorter
    assert rate["cached_batch"] < 2.5 * rate["no_read"], rate


NO_LOADER = """
import mxnet as mx
from mxnet import autograd, gluon, nd
it = mx.io.NDArrayIter(nd.ones((64, 4)), nd.zeros((64,)), batch_size=8)
net = gluon.nn.Dense(2)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
for batch in it:
    with autograd.record():
        loss = net(batch.data[0]).sum()
    loss.backward()
    trainer.step(8)
"""


@pytest.fixture(scope="module")
def refused_scripts(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """diagnose of four scripts it cannot diagnose, all at once (each is refused, none is timed against another: the
    suite's time): one that raises after 12 steps, one that ends after 12, one with no DataLoader, one that never
    starts training. No process or shared memory that any of them made outlives them."""
    folder = tmp_path_factory.mktemp("refused")
    small = _script(folder, SMALL)
    calls = {
        "raises": ("diagnose", "--budget", "10", "--", "python", small, "12", "fail"),
        "ends": ("diagnose", "--budget", "10", "--", "python", small, "12"),
        "no_loader": ("diagnose", "--budget", "10", "--", "python", _script(folder, NO_LOADER, "no_loader.py")),
        "idle": ("diagnose", "--budget", "5", "--start-timeout", "3", "--", "python",
                 _script(folder, "import time\ntime.sleep(60)\n", "idle.py")),
    }  # fmt: skip
    with leak_check():
        return dict(zip(calls, run_clis(*calls.values(), timeout=300), strict=True))


def test_a_script_that_raises_is_one_line_with_its_exit_code_and_error(refused_scripts):
    assert_one_clear_line(
        refused_scripts["raises"], "the script ended (exit code 1)", "ValueError: the script's own error", plan=True
    )


def test_a_script_that_ends_early_is_one_line(refused_scripts):
    assert_one_clear_line(refused_scripts["ends"], "the script ended (exit code 0)", "run it longer", plan=True)


def test_a_script_without_a_dataloader_is_one_line(refused_scripts):
    assert_one_clear_line(
        refused_scripts["no_loader"], "no Gluon DataLoader batch before it", "needs a gluon.data.DataLoader", plan=True
    )
    assert_one_clear_line(
        refused_scripts["idle"], "within 3 s", "needs a gluon.data.DataLoader feeding a gluon.Trainer", plan=True
    )


def test_kill_9_of_gluonbench_takes_the_script_and_its_workers_with_it(tmp_path, no_leaks):
    script = _script(tmp_path, SMALL.replace("batch_size=32, shuffle=True", "batch_size=32, num_workers=2"))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    gb = subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "diagnose", "--budget", "120", "--", "python", script],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    tree: list[psutil.Process] = []
    while time.monotonic() < deadline:  # the script and its two loader workers
        tree = [p for p in psutil.Process(gb.pid).children(recursive=True) if "script.boot" in " ".join(p.cmdline())]
        if len(tree) >= 3:
            break
        time.sleep(0.2)
    assert len(tree) >= 3, tree
    gb.send_signal(signal.SIGKILL)
    gb.wait()
    _, alive = psutil.wait_procs(tree, timeout=20)
    assert not alive, alive


@pytest.mark.slow
def test_a_module_with_gradient_accumulation_and_a_custom_batchify_is_diagnosed(tmp_path, no_leaks):
    proc = run_cli(
        "diagnose",
        "--budget",
        "10",
        "--json",
        str(tmp_path / "d.json"),
        "--",
        "python",
        "-m",
        "examples.train_cifar_synthetic",
        "--epochs",
        "1000",
        "--train-size",
        "1024",
        "--num-workers",
        "1",
        "--accumulate",
        "2",
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    d = json.loads((tmp_path / "d.json").read_text())
    assert d["label"] == "examples.train_cifar_synthetic"
    assert d["setting"]["batch_size"] == 128  # two batches of 64 per trainer.step: one step
    assert "batchify batchify" in d["pipeline"]["loader"]
    assert d["elapsed_s"] < 10 + 30  # the round in flight at the budget's end stops at its next probe


def test_the_hooks_set_one_loaders_workers_and_count_accumulated_batches_as_one_step():
    code = textwrap.dedent(
        """
        from gluonbench.script.hooks import install
        driver = install(None, None, None, workers=(2, 1))
        from mxnet import autograd, gluon, nd
        data = gluon.data.ArrayDataset(nd.ones((64, 3)), nd.zeros((64,)))
        first = gluon.data.DataLoader(data, batch_size=8)
        second = gluon.data.DataLoader(data, 8, False, None, None, None, None, 0)  # num_workers given by position
        assert (first._num_workers, second._num_workers) == (0, 1), (first._num_workers, second._num_workers)
        net = gluon.nn.Dense(2)
        net.initialize()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        done = []
        driver.step_done = lambda seconds, samples, wait, batch: done.append(samples)
        for i, (x, y) in enumerate(first):
            with autograd.record():
                loss = net(x).sum()
            loss.backward()
            if i % 2 == 1:
                trainer.step(16)
        assert driver.training == 1 and done == [16, 16], (driver.training, done)
        print("ok")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_a_dataloader_subclass_that_overrides_iter_is_still_hooked():
    code = textwrap.dedent(
        """
        from gluonbench.script.hooks import install
        driver = install(None, None, None)
        from mxnet import autograd, gluon, nd

        class Doubling(gluon.data.DataLoader):  # its own __iter__ around the base's
            def __iter__(self):
                for x, y in super().__iter__():
                    yield x * 2, y

        class Own(gluon.data.DataLoader):  # its own __iter__, never the base's
            def __iter__(self):
                for indices in self._batch_sampler:
                    yield self._batchify_fn([self._dataset[i] for i in indices])

        data = gluon.data.ArrayDataset(nd.ones((64, 3)), nd.zeros((64,)))
        net = gluon.nn.Dense(2)
        net.initialize()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        for cls in (Doubling, Own):
            driver.training, driver.last_loader = None, None
            done = []
            driver.step_done = lambda seconds, samples, wait, batch: done.append(samples)
            loader = cls(data, batch_size=8)
            for x, y in loader:
                assert float(x.sum().asscalar()) == (48 if cls is Doubling else 24)
                with autograd.record():
                    loss = net(x).sum()
                loss.backward()
                trainer.step(8)
            # each batch handed out once through the hooks: 8 batches; the first update finds the loader, steps 2 to 7
            # end at the next batch (the last ends with the epoch): 6 steps of 8 samples, none counted twice
            assert driver.training == loader._gluonbench_index and done == [8] * 6, (cls, driver.training, done)
        print("ok")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_sweep_runs_the_script_once_per_worker_count_into_a_sweep_run_folder(tmp_path, no_leaks):
    script = _script(tmp_path, SMALL)
    out = tmp_path / "out"
    proc = run_cli(
        "sweep", "--workers", "0,1", "--max-batches", "5", "--out", str(out), "--", "python", script, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "DataLoader #1 of the script (ArrayDataset, batch size 32, 5 training steps a run)" in proc.stdout
    (run_dir,) = out.iterdir()
    assert run_dir.name.endswith("-sweep-script-train")
    assert {"runs.jsonl", "summary.json", "summary.md", "sweep.png", "sweep.json"} <= {
        p.name for p in run_dir.iterdir()
    }
    records = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert [r["spec"]["workers"] for r in records] == [0, 1]
    assert all(r["kind"] == "run" and r["status"] == "ok" and r["extra"]["steps"] == 5 for r in records)
    assert all(r["system"]["peak_mem_bytes"] > 0 for r in records)  # the script's process tree, over its run
    settings = json.loads((run_dir / "sweep.json").read_text())["settings"]
    assert settings["pipeline"] == f"python {script}" and settings["workload"] == "script train.py"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [row["workers"] for row in summary["rows"]] == [0, 1]
    assert str(run_dir) in proc.stdout


def test_sweep_to_end_runs_the_script_to_its_end_and_records_a_failed_run(tmp_path, no_leaks):
    script = _script(tmp_path, SMALL)
    out, elsewhere = tmp_path / "out", tmp_path / "failed"
    proc, failed, both = run_clis(  # three commands at once: none of them is timed against another
        ("sweep", "--workers", "0", "--to-end", "--out", str(out), "--", "python", script, "40"),
        ("sweep", "--workers", "0", "--to-end", "--out", str(elsewhere), "--", "python", script, "40", "fail"),
        ("sweep", "--to-end", "--max-batches", "5", "--", "python", script),
    )
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = out.iterdir()
    (record,) = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    # 40 updates over 16 batches an epoch: three epochs, every step counted, the train duration measured
    assert record["extra"] == {"steps": 40, "epochs": 3} and record["train_s"] > 0, record
    assert record["samples_per_s"] == pytest.approx(40 * 32 / record["train_s"])
    assert failed.returncode == 1, failed.stderr
    assert "the script ended (exit code 1)" in failed.stdout and "ValueError" in failed.stdout
    assert_one_clear_line(both, "--to-end and --max-batches exclude each other")


def test_a_block_of_steps_fits_in_an_epoch_of_the_training_loader():
    """A block's steps must fit between an epoch's start (its skipped steps) and its end: a script that evaluates
    after each epoch breaks a block there. On a fast machine a block of a cheap step's steps outnumbered an epoch
    of 32 batches, no block ever filled, and every round waited until it stalled."""
    from gluonbench.diagnosis.verdict import Thresholds
    from gluonbench.script.run import ScriptRounds

    ready = {"step_s": 0.0005, "samples": 32}  # a fast step: many steps to a block
    unknown = ScriptRounds(None, {"num_workers": 0}, ready, 20.0, Thresholds())  # type: ignore[arg-type]
    assert max(k for name, _s, k, _skip in unknown.schedule(1) if name != "loader_only") > 32
    rounds = ScriptRounds(None, {"num_workers": 0, "batches": 32}, ready, 20.0, Thresholds())  # type: ignore[arg-type]
    for name, _slice_s, k, skip in rounds.schedule(1):
        assert 1 <= k and (name == "loader_only" or 2 * k <= 32 - skip), (name, k, skip)
