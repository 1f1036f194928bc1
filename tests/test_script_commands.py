"""Every command on the user's unmodified script (``gluonbench sweep|profile|tune|check -- python train.py``), and
the scripts that cannot be run so: each one line, exit 2, within the start timeout, nothing left running."""

from __future__ import annotations

import json
import time

from conftest import assert_one_clear_line, run_cli
from test_script import SMALL, _script

# a loader and a loop, but no Trainer: the script trains by hand (or only reads its data)
NO_TRAINER = """
import time
from mxnet import gluon, nd
loader = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.ones((64, 4)), nd.zeros((64,))), batch_size=8)
while True:
    for x, y in loader:
        (x * 2).wait_to_read()
        time.sleep(0.05)  # a loop that waits, not one that spins a core for the whole start timeout
"""


def test_a_script_that_waits_on_stdin_is_one_line_naming_it(tmp_path, no_leaks):
    script = _script(tmp_path, 'answer = input("which data set? ")\n' + SMALL)
    proc = run_cli("diagnose", "--budget", "5", "--start-timeout", "60", "--", "python", script, timeout=300)
    assert_one_clear_line(proc, "the script ended (exit code 1)", "reads its standard input", "as arguments", plan=True)


def test_a_script_that_hangs_at_import_is_one_line_within_the_start_timeout(tmp_path, no_leaks):
    (tmp_path / "slow_module.py").write_text("import time\ntime.sleep(600)\n")
    script = _script(tmp_path, "import slow_module\n" + SMALL)
    t0 = time.monotonic()
    proc = run_cli("diagnose", "--budget", "5", "--start-timeout", "3", "--", "python", script, timeout=300)
    took = time.monotonic() - t0
    assert_one_clear_line(proc, "made no Gluon DataLoader", "within 3 s", "--start-timeout", plan=True)
    # the interpreter's check and start-up come first; then 3 s, then the stop: never the sleep's 600 s
    assert took < 120, took


def test_a_script_with_a_loader_but_no_trainer_is_one_line_saying_so(tmp_path, no_leaks):
    script = _script(tmp_path, NO_TRAINER)
    proc = run_cli("diagnose", "--budget", "5", "--start-timeout", "12", "--", "python", script, timeout=300)
    assert_one_clear_line(proc, "made 1 Gluon DataLoader(s) but no batch", "gluon.Trainer", "within 12 s", plan=True)


def test_sweep_of_a_script_that_ends_before_training_is_one_line_and_no_folder(tmp_path, no_leaks):
    script = _script(tmp_path, "print('nothing to train')\n")
    out = tmp_path / "out"
    proc = run_cli("sweep", "--workers", "0", "--out", str(out), "--", "python", script, timeout=300)
    assert_one_clear_line(proc, "the script ended (exit code 0)", "nothing to train", plan=True)
    assert not out.exists() or not any(out.iterdir())


def test_profile_of_an_unmodified_script_records_its_steps_and_batch_waits(tmp_path, no_leaks):
    from gluonbench.profiler.data import load

    script = _script(tmp_path, SMALL)
    out = tmp_path / "prof"
    proc = run_cli("profile", "--out", str(out), "--", "python", script, "40", timeout=300)
    assert proc.returncode == 0, proc.stderr
    (folder,) = out.iterdir()
    assert folder.name.endswith("-profile-train")  # named by the script, not by the bootstrap it ran through
    data = load(folder)
    train = data.train_steps()
    # 40 updates over 16 batches an epoch: each epoch's steps but its last (it ends at the epoch's end) and the first
    assert len(train) >= 30 and all(s.wait_s is not None and s.dur_s > 0 for s in train), len(train)
    assert sum(1 for e in data.events if e.get("name") == "DataLoader.next") >= 30
    rules = {r["rule"]: r for r in json.loads((folder / "rules.json").read_text())}
    assert rules["InputBound"]["applicable"] and rules["StepOutlier"]["applicable"]
