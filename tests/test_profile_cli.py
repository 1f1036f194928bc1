"""gluonbench profile -- CMD on plain Python programs (no MXNet): layout, exit codes, bad input, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import REPO, assert_one_clear_line, make_unwritable, release

BUSY = """
import sys, time
t = time.time()
while time.time() - t < float(sys.argv[1]):
    pass
print("busy done", flush=True)
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
"""

HOOKED = """
import sys, time
from gluonbench import profiler

def batches(n, wait):
    for i in range(n):
        time.sleep(wait)
        yield i

assert profiler.enabled() == (len(sys.argv) > 1 and sys.argv[1] == "expect")
with profiler.epoch(0):
    for b in profiler.wrap(batches(30, 0.01)):
        with profiler.step():
            time.sleep(0.002)
with profiler.phase("eval"):
    for b in profiler.wrap(batches(5, 0.0)):
        with profiler.step():
            pass
print("hooked done", "mxnet" in sys.modules, flush=True)
"""

SPAWNER = """
import subprocess, sys, time
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)]
print("ready", flush=True)
time.sleep(60)
"""


@pytest.fixture
def scripts(tmp_path):
    out = {}
    for name, body in (("busy", BUSY), ("hooked", HOOKED), ("spawner", SPAWNER)):
        path = tmp_path / f"{name}.py"
        path.write_text(body)
        out[name] = path
    return out


def only_profile(out: Path) -> Path:
    dirs = [d for d in out.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_plain_program_layout_and_exit_code(cli, scripts, tmp_path, no_leaks):
    out = tmp_path / "results"
    proc = cli(
        "profile", "--interval", "100", "--out", str(out), "--", sys.executable, str(scripts["busy"]), "1.5", "3"
    )
    assert proc.returncode == 3, proc.stderr
    assert "busy done" in proc.stdout
    prof = only_profile(out)
    assert prof.name.endswith("-profile-busy")
    files = sorted((prof / "profiler-output" / "system" / "incremental").glob("*/*.algo-1.json"))
    assert files
    for f in files:
        hour, minute = f.parent.name, int(f.name.split(".")[0])
        assert minute % 60 == 0 and len(hour) == 10
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert {tuple(sorted(r)) for r in rows} == {("Dimension", "Name", "NodeId", "Timestamp", "Type", "Value")}
    names = {(r["Type"], r["Name"], r["Dimension"]) for r in rows}
    cores = psutil.cpu_count()
    for c in range(cores):
        assert ("cpu", f"cpu{c}", "CPUUtilization") in names and ("cpu", f"cpu{c}", "I/OWaitPercentage") in names
    for key in (
        ("memory", "MemoryUsedPercent", ""),
        ("i/o", "ReadThroughputInBytesPerSecond", ""),
        ("network", "ReceiveBytesPerSecond", "Algorithm"),
        ("process", "WorkerCount", "Training"),
    ):
        assert key in names, key
    cpu_rows = [r for r in rows if r["Dimension"] == "CPUUtilization"]
    assert len(cpu_rows) >= cores * 5  # ~1.5 s at 100 ms is ~15 samples; a loaded machine samples late
    end = float((prof / "profiler-output" / "system" / "training_job_end.ts").read_text())
    assert end >= max(r["Timestamp"] for r in rows)
    rules = json.loads((prof / "rules.json").read_text())
    assert {r["rule"] for r in rules} >= {"CPUBottleneck", "InputBound", "OverallSystemUsage"}
    meta = json.loads((prof / "profile.json").read_text())
    assert meta["exit_code"] == 3 and meta["interval_ms"] == 100
    from gluonbench.monitor.gpu import GpuSampler

    gpus = GpuSampler.open()
    if not gpus.handles:  # no GPU or driver: no GPU rows and exactly one note, never a crash
        assert not any(r["Type"] == "gpu" for r in rows)
        assert [n for n in meta["notes"] if "GPU" in n] == [gpus.note]
    gpus.close()
    html = (prof / "report.html").read_text()
    assert "<svg" in html and "http" not in html.replace("http-equiv", "")  # self-contained: no links out
    # the report is titled with what ran (the program's command), the folder named below it
    assert meta["identity"] == f"{sys.executable} {scripts['busy']} 1.5 3"
    assert f"gluonbench profile: {meta['identity']}" in html and prof.name in html


def test_hooks_record_steps_and_data_wait(cli, scripts, tmp_path, no_leaks):
    out = tmp_path / "results"
    proc = cli("profile", "--out", str(out), "--name", "hooked", "--", sys.executable, str(scripts["hooked"]), "expect")
    assert proc.returncode == 0, proc.stderr
    assert "hooked done False" in proc.stdout  # the hooks never import MXNet
    from gluonbench.profiler.data import load

    data = load(only_profile(out))
    train = data.train_steps()
    assert len(train) == 30 and len([s for s in data.steps if s.phase == "EVAL"]) == 5
    assert all(s.wait_s >= 0.009 for s in train) and all(s.dur_s >= 0.0019 for s in train)
    assert [s.step_num for s in train] == list(range(30))
    assert any(e.get("name") == "Epoch 0" for e in data.events)
    rules = {r["rule"]: r for r in json.loads((only_profile(out) / "rules.json").read_text())}
    assert rules["InputBound"]["triggered"] and rules["InputBound"]["details"]["level"] == "high"


@pytest.mark.parametrize(
    "cmd, name",
    [
        (["python", "train.py", "--workers", "2"], "train"),
        (["python3.11", "-u", "dir/my job.py"], "my-job"),
        (["python", "-m", "pkg.train", "--epochs", "1"], "pkg.train"),
        (["python", "-c", "import os\n" + "x = 1\n" * 200], "python-c"),  # code is no name (was 332 bytes)
        (["/usr/bin/env"], "env"),
        (["python", "-u"], "job"),
        (["python", "x" * 300 + ".py"], "x" * 64),
    ],
)
def test_the_default_run_name_is_short_and_says_what_ran(cmd, name):
    from gluonbench.profiler.session import _default_name

    assert _default_name(cmd) == name


def test_hooks_are_noops_without_a_profile(scripts):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLUONBENCH_PROFILE")}
    proc = subprocess.run([sys.executable, str(scripts["hooked"])], capture_output=True, text=True, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    from gluonbench import profiler

    loader = [1, 2]
    assert profiler.wrap(loader) is loader


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--interval", "300", "--", sys.executable, "-c", "pass"], ["--interval 300", "100, 200, 500"]),
        (["--", sys.executable, "no/such/train.py"], ["script not found: no/such/train.py"]),
        (["--", "no-such-program-xyz"], ["command not found: no-such-program-xyz"]),
        ([], ["no command to profile"]),
        (["--rule", "CPUBottleneck.nope=1", "--", sys.executable, "-c", "pass"], ["unknown parameter"]),
    ],
)
def test_bad_input_is_one_line(cli, tmp_path, args, needles):
    proc = cli("profile", "--out", str(tmp_path / "r"), *args)
    assert_one_clear_line(proc, *needles)
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_unwritable_output(cli, tmp_path):
    locked = make_unwritable(tmp_path / "locked")
    try:
        proc = cli("profile", "--out", str(locked / "sub"), "--", sys.executable, "-c", "pass")
        assert_one_clear_line(proc, "--out")
    finally:
        release(tmp_path / "locked")


def test_failing_script_keeps_its_code_and_profile(cli, tmp_path, no_leaks):
    script = tmp_path / "fails.py"
    script.write_text("import time; time.sleep(0.6); raise SystemExit('boom')\n")
    proc = cli("profile", "--out", str(tmp_path / "r"), "--", sys.executable, str(script))
    assert proc.returncode == 1 and "boom" in proc.stderr
    prof = only_profile(tmp_path / "r")
    assert (prof / "report.html").is_file() and (prof / "rules.json").is_file()


LEAVES_SEGMENTS = """
import os, subprocess, sys

def segment(pid):  # what MXNet's shm_open leaves when a process dies before the batch's receiver opens it
    open(f"/dev/shm/mx_{pid:x}_0000beef", "wb").write(b"batch")

segment(os.getpid())
kid = "import os, time; open('/dev/shm/mx_%x_0000beef' % os.getpid(), 'wb'); print('made', flush=True); time.sleep(60)"
kid = subprocess.Popen([sys.executable, "-c", kid], stdout=subprocess.PIPE)
assert kid.stdout.readline().strip() == b"made"  # still running when the program exits
segment(int(sys.argv[1]))  # named for a process outside the program's tree: not the program's to leave
"""


def test_segments_the_program_left_are_removed_and_only_those(cli, tmp_path):
    script = tmp_path / "leaves.py"
    script.write_text(LEAVES_SEGMENTS)
    shm = Path("/dev/shm")
    before = {p.name for p in shm.iterdir()}
    try:
        proc = cli("profile", "--out", str(tmp_path / "r"), "--", sys.executable, str(script), str(os.getpid()))
        assert proc.returncode == 0, proc.stderr
        left = {p.name for p in shm.iterdir() if p.name.startswith("mx_")} - before
        assert left == {f"mx_{os.getpid():x}_0000beef"}, left  # the program's and its child's are gone
        assert "removed 2 shared-memory segment(s) the program left" in proc.stderr, proc.stderr
    finally:
        (shm / f"mx_{os.getpid():x}_0000beef").unlink(missing_ok=True)


def _gluonbench(args: list[str], tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "profile", "--interval", "100", "--out", str(tmp_path / "r"), "--", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )


def _wait_for(proc: subprocess.Popen, text: str) -> None:
    line = proc.stdout.readline()
    assert text in line, line


def _tree(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def test_ctrl_c_stops_the_group_and_keeps_the_profile(scripts, tmp_path, no_leaks):
    proc = _gluonbench([sys.executable, str(scripts["spawner"])], tmp_path)
    _wait_for(proc, "ready")
    kids = _tree(proc.pid)
    assert len(kids) >= 4  # the program, its 2 children, the watchdog
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted; the profile so far is kept" in err
    _, alive = psutil.wait_procs(kids, timeout=5)
    assert not alive, alive
    prof = only_profile(tmp_path / "r")
    meta = json.loads((prof / "profile.json").read_text())
    assert meta["interrupted"] is True
    assert (prof / "report.html").is_file()
    assert list((prof / "profiler-output" / "system" / "incremental").glob("*/*.json"))


def test_killed_parent_takes_the_program_with_it(scripts, tmp_path, no_leaks):
    proc = _gluonbench([sys.executable, str(scripts["spawner"])], tmp_path)
    _wait_for(proc, "ready")
    kids = _tree(proc.pid)
    time.sleep(0.5)
    proc.kill()  # SIGKILL: no clean-up in gluonbench at all
    proc.wait()
    _, alive = psutil.wait_procs(kids, timeout=10)
    assert not alive, alive
    proc.stdout.close()
    proc.stderr.close()


def test_python_api_context_manager(tmp_path, no_leaks):
    import gluonbench
    from gluonbench import profiler

    with gluonbench.profile(name="api", interval_ms=100, out=str(tmp_path)) as p:
        assert profiler.enabled()
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
        for _ in profiler.wrap(range(20)):
            with profiler.step():
                time.sleep(0.01)
        child.wait()
    assert not profiler.enabled()  # the hooks are off again after the block
    result = p.result
    assert result.exit_code == 0 and result.profile_dir.name.endswith("-profile-api")
    rules = {r.rule: r for r in result.rules}
    assert rules["StepOutlier"].datapoints == 20
    assert (result.profile_dir / "report.html").is_file()
    assert "InputBound" not in result.triggered  # the wait (range) is nothing next to the 10 ms steps


def test_buffered_events_are_written_while_the_script_stalls(tmp_path, monkeypatch):
    from gluonbench.profiler import hooks
    from gluonbench.profiler.data import load

    monkeypatch.setattr(hooks, "FLUSH_S", 0.2)
    monkeypatch.setenv(hooks.PROFILE_ENV, str(tmp_path / "profiler-output"))
    hooks.reset()
    try:
        for _ in hooks.wrap(range(3)):
            with hooks.step():
                pass
        time.sleep(1.0)  # no more events: only the flusher thread can write them
        assert len(load(tmp_path).steps) == 3
    finally:
        monkeypatch.delenv(hooks.PROFILE_ENV)
        hooks.reset()


def test_killed_program_exit_code_is_128_plus_signal(cli, tmp_path, no_leaks):
    proc = cli(
        "profile", "--out", str(tmp_path / "r"), "--", sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"
    )
    assert proc.returncode == 128 + 9, proc.stderr
    assert json.loads((only_profile(tmp_path / "r") / "profile.json").read_text())["exit_code"] == 137
