"""Reliability, round 3 (issue #21): nothing outside the output folder is touched, every bad value is one line.

Each test makes the real thing (a symlink, a FIFO, a device node as root, a hostfile with a shell
payload, a TOML file) and checks both the one-line refusal and that nothing outside was changed.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import PLAN_LINE, assert_one_clear_line, leak_check, run_cli

from gluonbench.errors import GluonbenchError
from gluonbench.files import atomic_write_text
from gluonbench.report.exporters import stage_label
from gluonbench.report.store import RunStore, check_free_space, check_writable_file, dumps

# -- class 1: touching what is not ours ------------------------------------------------------------


def _special_targets(tmp_path):
    """A symlink to a file outside, a FIFO, and (as root) a character device node made with mknod."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    link = tmp_path / "link.json"
    link.symlink_to(outside)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    targets = {"symbolic link": link, "not a regular file": fifo}
    if os.geteuid() == 0:
        null = tmp_path / "null.json"
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers, in a temp folder
        targets["not a regular file (device)"] = null
    return outside, targets


def test_atomic_write_refuses_links_and_special_files(tmp_path):
    outside, targets = _special_targets(tmp_path)
    for label, path in targets.items():
        mode = os.lstat(path).st_mode
        with pytest.raises(GluonbenchError, match=r"symbolic link|not a regular file"):
            atomic_write_text(path, "{}")
        with pytest.raises(GluonbenchError, match=r"symbolic link|not a regular file"):
            check_writable_file(path, "--json")
        assert os.lstat(path).st_mode == mode, f"{label} was replaced"
    assert outside.read_text() == "keep me"
    plain = tmp_path / "plain.json"
    atomic_write_text(plain, "{}")
    atomic_write_text(plain, "[]")  # a regular file is replaced as before
    assert plain.read_text() == "[]"


def test_cli_json_at_a_link_is_one_line_and_nothing_measured(cli, tmp_path):
    outside, targets = _special_targets(tmp_path)
    proc = cli("diagnose", "--dataset", "synthetic", "--budget", "5", "--json", str(targets["symbolic link"]))
    assert_one_clear_line(proc, "symbolic link")
    assert outside.read_text() == "keep me"


@pytest.mark.parametrize("name", [".lock", "runs.jsonl", "runs.jsonl.torn", "sweep.json", "logs"])
def test_resume_never_writes_through_a_link_in_the_run_folder(tmp_path, name):
    run = tmp_path / "run"
    run.mkdir()
    (run / "sweep.json").write_text(json.dumps({"settings": {}}))
    victim = tmp_path / "victim"
    if name == "logs":
        victim.mkdir()
    else:
        victim.write_text("precious\n")
    (run / name).unlink(missing_ok=True)
    (run / name).symlink_to(victim)
    store = RunStore(run)
    with pytest.raises(GluonbenchError, match="symbolic link"):
        with store.lock():
            store.append({"kind": "note"})
    if name == "logs":
        assert list(victim.iterdir()) == []
    else:
        assert victim.read_text() == "precious\n"


def test_resume_cli_refuses_a_linked_runs_file(cli, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "sweep.json").write_text(json.dumps({"settings": {"workload": "synthetic", "workers": [0]}}))
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (run / "runs.jsonl").symlink_to(victim)
    proc = cli("sweep", "--resume", str(run))
    assert_one_clear_line(proc, "symbolic link")
    assert victim.read_text() == "precious\n"


def test_existing_channel_dir_is_never_chmodded(tmp_path):
    from gluonbench.sources.pipe import private_dir

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp
    assert private_dir(shared) is False
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    target = tmp_path / "target"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    link = tmp_path / "via-link"
    link.symlink_to(target)
    assert private_dir(link) is False
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    fresh = tmp_path / "fresh" / "channel"
    assert private_dir(fresh) is True and stat.S_IMODE(fresh.stat().st_mode) == 0o700


def test_endpoint_credentials_are_refused_and_never_stored(cli, tmp_path):
    from gluonbench.data.s3 import check_endpoint_url

    with pytest.raises(GluonbenchError, match="carries credentials") as err:
        check_endpoint_url("http://user:s3cret@127.0.0.1:9000")
    assert "s3cret" not in str(err.value)
    proc = cli("sweep", "--source", "file", "--uri", "s3://b/p", "--endpoint-url", "http://user:s3cret@127.0.0.1:9",
               "--workers", "0", "--out", str(tmp_path / "r"))  # fmt: skip
    assert_one_clear_line(proc, "credentials")
    assert "s3cret" not in proc.stderr + proc.stdout
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").rglob("*.json*"))
    # a record that carries a URL with credentials anyway (a command line, an env) is stored redacted
    line = dumps({"command": "gluonbench io --endpoint-url https://ak:sk@minio:9000", "nested": ["s3://k:v@h/x"]})
    assert "sk@" not in line and "v@h" not in line and "***redacted:" in line and "@minio:9000" in line


# -- class 2: shell injection through the hostfile -------------------------------------------------


@pytest.mark.parametrize(
    "line",
    ["host$(touch PWNED)", "`touch PWNED`", "a.b; touch PWNED", "-oProxyCommand=touch PWNED", "h:22 x", "# comment",
     "host:0", "host:99999", "user@@h", "[::1]:22", "h\x00"],
)  # fmt: skip
def test_hostfile_lines_are_checked_strictly(tmp_path, line):
    from gluonbench.distributed.settings import parse_hostfile

    hostfile = tmp_path / "hosts.txt"
    hostfile.write_text(f"good-host\n{line}\n")
    with pytest.raises(GluonbenchError, match="line 2"):
        parse_hostfile(hostfile)
    assert not (tmp_path / "PWNED").exists()


def test_hostfile_accepts_host_port_user_and_refuses_binary(tmp_path, cli):
    from gluonbench.distributed.settings import parse_hostfile

    hostfile = tmp_path / "hosts.txt"
    hostfile.write_text("\n10.0.0.1\nnode-2.example.com:2222\n  ubuntu@node3  \n")
    assert parse_hostfile(hostfile) == [("10.0.0.1", 22), ("node-2.example.com", 2222), ("ubuntu@node3", 22)]
    hostfile.write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe")
    with pytest.raises(GluonbenchError, match="not a text file"):
        parse_hostfile(hostfile)
    hostfile.write_text("host$(touch PWNED)\n")
    proc = cli("sweep", "--kvstore", "dist_sync", "--launcher", "ssh", "--hostfile", str(hostfile), "--hosts", "1",
               "--workers", "0", "--out", str(tmp_path / "r"), cwd=tmp_path)  # fmt: skip
    assert_one_clear_line(proc, "line 1", "[user@]host[:port]")
    assert not (tmp_path / "PWNED").exists()


# -- class 5: measured, then lost -------------------------------------------------------------------


def test_free_space_is_checked_before_measuring(tmp_path):
    check_free_space(tmp_path, "diagnose --json")  # the test machine has 4 MiB free
    with pytest.raises(GluonbenchError, match=r"disk full at .* KiB free, tune --json needs"):
        check_free_space(tmp_path, "tune --json", need=1 << 62)


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/unshare"), reason="needs root and unshare -m")
def test_diagnose_json_on_a_full_disk_says_so_before_measuring(tmp_path):
    import subprocess
    import sys

    script = (
        f"mount -t tmpfs -o size=64k tmpfs {tmp_path} && dd if=/dev/zero of={tmp_path}/fill bs=4k count=64 2>/dev/null;"
        f" {sys.executable} -m gluonbench diagnose --dataset synthetic --budget 5 --json {tmp_path}/d.json"
    )
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert_one_clear_line(proc, "disk full", "before measuring")


# -- classes 6 and 7: bounds, silently accepted values ----------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["sweep", "--workers", "0..99999999999"], "values go up to"),
        (["sweep", "--workers", "0..4000"], "--workers"),
        (["sweep", "--devices", "100000"], "--devices"),
        (["sweep", "--batch-size", "1" * 400], "--batch-size"),
        (["sweep", "--timeout", "1e300"], "too long"),
        (["sweep", "--name", "n" * 300], "--name"),
        (["sweep", "--out", "/tmp/" + "d" * 300, "--workers", "0"], "--out"),
        (["profile", "--rule", "CPUBottleneck.threshold=nan", "--", "true"], "threshold"),
        (["io", "--small", "1" * 400], "size"),
    ],
)
def test_unbounded_values_are_one_line(cli, tmp_path, args, needle):
    proc = cli(*args, cwd=tmp_path)
    assert_one_clear_line(proc, needle)


def test_non_utf8_name_is_one_line_before_training(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable.encode(), b"-m", b"gluonbench", b"sweep", b"--name", b"\xff", b"--out", str(tmp_path).encode()],
        capture_output=True, timeout=120, env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert b"Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == [], "nothing written"


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        ("batch_size = true", "batch_size must be a whole number"),
        ("batch_size = 64.9", "batch_size must be a whole number"),
        ("timeout_s = true", "timeout_s must be a number of seconds"),
        ('workers = "0..99999999999"', "values go up to"),
        ('name = "x"\n[sweep]\nworkers = "0"', "beside [sweep]"),
        ("x = " + "[" * 2000 + "]" * 2000, "nested too deeply"),
    ],
)
def test_toml_values_are_not_silently_changed(cli, tmp_path, toml, needle):
    config = tmp_path / "c.toml"
    config.write_text(toml + "\n")
    proc = cli("sweep", "--config", str(config), "--out", str(tmp_path / "r"))
    assert_one_clear_line(proc, needle)


def test_config_of_a_device_or_a_fifo_is_refused(cli, tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    proc = cli("sweep", "--config", str(fifo), timeout=60)
    assert_one_clear_line(proc, "not a regular file")
    proc = cli("sweep", "--config", "/dev/zero", timeout=60)
    assert_one_clear_line(proc, "not a regular file")


# -- class 4: nothing hangs past its budget; class 7: Ctrl-C of diagnose/tune -----------------------


class _Blocks:
    """A dataset whose reads block (a dead network share): dataset[0] answers, every later read hangs."""

    def __len__(self):
        return 256

    def __getitem__(self, i):
        import time

        import numpy as np

        if i > 0:
            time.sleep(3600)
        return np.zeros((1, 28, 28), np.float32), np.float32(0)


def test_python_diagnose_with_a_blocking_getitem_ends_within_budget_plus_grace():
    import time

    import gluonbench
    from gluonbench._mx import mx  # noqa: F401  MXNet's first import (seconds on a busy machine) is not the budget's
    from gluonbench.engine.deadline import BudgetExceededError, grace_s

    t0 = time.monotonic()
    with pytest.raises(BudgetExceededError, match=r"stalled in read \(dataset\[i\]\)") as err:
        gluonbench.diagnose(_Blocks(), batch_size=4, ctx="cpu", budget_s=2)
    assert err.value.stage == "read (dataset[i])"
    assert time.monotonic() - t0 < 2 + grace_s(2) + 10, "budget + grace, plus closing the loader"
    import signal

    handler = signal.getsignal(signal.SIGALRM)
    assert getattr(handler, "__self__", None).__class__.__name__ != "Deadline", "the handler before it is restored"


def test_cli_read_ms_past_the_budget_is_one_line_naming_the_stage(stalled_clis):
    proc, took, _ = stalled_clis["read_ms"]
    assert_one_clear_line(proc, "stalled in read", "budget 5 s", plan=True)  # found by measuring
    assert took < 5 + 10 + 60, "budget + grace + start-up on a busy machine"


STALLS_LATER = """
import numpy as np
import gluonbench

class StallsLater:
    # reads answer until the READS-th (or, with AFTER_S, until that many seconds after the first read, whichever
    # comes first, counted from the 64th read: a slow, busy machine reaches the stall within the budget all the same), then block (a network
    # share that goes away mid-run); only the reads of the process that made the data set count (a loader worker's
    # fork keeps a copy of the count and never stalls)
    def __init__(self, reads, after_s=None):
        import os
        self.reads, self.done, self.pid, self.after_s, self.first = reads, 0, os.getpid(), after_s, None
    def __len__(self):
        return 512
    def __getitem__(self, i):
        import os
        import time
        if os.getpid() == self.pid:
            self.done += 1
            if self.done == 64:  # the clock starts once measuring reads: not at the spec's check of dataset[0]
                self.first = time.monotonic()
            late = self.after_s is not None and self.first is not None and time.monotonic() - self.first > self.after_s
            if self.done > self.reads or late:
                time.sleep(3600)
        return np.full((16,), i % 7, dtype=np.float32), np.float32(i % 2)

def net():
    from mxnet import gluon
    return gluon.nn.Dense(2)

def make(reads=6000, after_s=None):
    return gluonbench.PipelineSpec(dataset=StallsLater(reads, after_s), transform=lambda d, y: (d / 7.0, y), net=net,
                                   batch_size=8)
"""


@pytest.mark.slow  # in the suite on a busy runner no round may end before the stall: then there is nothing to keep
def test_cli_a_stall_mid_diagnosis_keeps_the_rounds_before_it(tmp_path):
    # "nothing already measured is lost": reads that stop answering after a few rounds (counted in reads, so a busy
    # machine gets as many rounds) still leave their diagnosis, printed, in --json and in the --out folder
    proc, _, tmp_path = run_stalled(tmp_path, ("diagnose",))["diagnose"]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("gluonbench: error: diagnose stopped after") and "stalled in read" in error, error
    assert (tmp_path / "d.json").is_file(), proc.stderr  # the rounds before the stall are kept
    d = json.loads((tmp_path / "d.json").read_text())
    assert d["rounds"] >= 1 and d["stop_reason"] == "stalled in read (dataset[i])", d["stop_reason"]
    run_dir = next((tmp_path / "runs").iterdir())
    assert f"kept in d.json and {run_dir.relative_to(tmp_path)}" in error, error
    assert json.loads((run_dir / "diagnosis.json").read_text())["rounds"] == d["rounds"]
    assert "(stopped: stalled in read (dataset[i]))" in proc.stdout  # the partial diagnosis, printed
    assert "the stall itself is not in them" in proc.stdout and d["elapsed_s"] < 16 + 10
    record = json.loads((run_dir / "runs.jsonl").read_text().splitlines()[0])
    assert record["status"] == "stalled", record["status"]
    # what to do first is the stall's fix, not a larger budget
    assert d["recommendations"][0].startswith("The pipeline stalled in read (dataset[i])"), d["recommendations"]
    assert d["verdict"] != "inconclusive" or not any("--budget" in r for r in d["recommendations"])
    # every figure is from complete rounds: no probe has a round the diagnosis does not count
    assert all(p["rounds"] <= d["rounds"] and len(p["per_round"]) <= d["rounds"] for p in d["probes"].values())


def test_cli_a_stall_mid_tune_keeps_what_was_measured(cli, stalled_clis):
    # tune too: reads that stop answering in the loader at 0 workers (the main process's own reads; counted in reads,
    # so a busy machine measures as many rounds first) leave every measurement before the stall, printed, in --json
    # and in the --out folder; no --toml and no recommendation, since the search never compared the settings
    proc, _, tmp_path = stalled_clis["tune"]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("gluonbench: error: tune stopped after") and "stalled in read" in error, error
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["status"] == "stalled" and doc["stage"] == "read (dataset[i])", doc
    measured = [e for e in doc["evidence"] if e["status"] == "ok" and e["samples_per_s"]]
    assert measured and all(e["blocks"] >= 1 and e["samples_per_s"] > 0 for e in measured), doc["evidence"]
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.name.endswith("-tune-stalls-make-cpu-stalled"), run_dir.name  # named after the pipeline
    assert json.loads((run_dir / "tune.json").read_text()) == doc
    report = cli("report", str(run_dir), cwd=tmp_path)  # no report of a stalled tune, and the line says why
    assert report.returncode == 2 and "a tune that a stall stopped" in report.stderr, report.stderr
    noun = "measurement" if len(measured) == 1 else "measurements"
    assert f"the {len(measured)} {noun} made before it" in error, error
    assert f"kept in t.json and {run_dir.relative_to(tmp_path) / 'tune.json'}" in error, error
    assert not (tmp_path / "t.toml").exists(), "no tuned.toml: nothing was confirmed"
    assert "no recommendation" in proc.stdout and "recommended:" not in proc.stdout, proc.stdout
    assert doc["elapsed_s"] < 10 + 10 + 5, doc["elapsed_s"]  # budget + grace (+ the signal's delivery)


ENGINE_HANG = """# a pipeline whose model step blocks forever inside MXNet's engine after a number of calls (a custom operator)
import numpy as np
import gluonbench

class Data:
    def __len__(self):
        return 512
    def __getitem__(self, i):
        return np.full((16,), i % 7, dtype=np.float32), np.float32(i % 2)

def net(calls=200):
    import time
    import mxnet as mx
    from mxnet import gluon

    class Hangs(mx.operator.CustomOp):
        n = 0
        def forward(self, is_train, req, in_data, out_data, aux):
            Hangs.n += 1
            if Hangs.n > calls:
                time.sleep(3600)  # an operator that never finishes: the engine waits for it
            self.assign(out_data[0], req[0], in_data[0])
        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0])

    @mx.operator.register("gb_hangs")
    class HangsProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=True)
        def list_arguments(self):
            return ["data"]
        def list_outputs(self):
            return ["output"]
        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []
        def create_operator(self, ctx, shapes, dtypes):
            return Hangs()

    class Net(gluon.Block):
        def __init__(self):
            super().__init__()
            self.dense = gluon.nn.Dense(2)
        def forward(self, x):
            return self.dense(mx.nd.Custom(x, op_type="gb_hangs"))

    return Net()

def make(calls=200):
    return gluonbench.PipelineSpec(dataset=Data(), net=lambda: net(int(calls)), batch_size=8)
"""


STALL_CALLS: dict[str, tuple[str, ...]] = {
    "read_ms": ("diagnose", "--dataset", "synthetic", "--read-ms", "100000", "--budget", "5"),
    # the stall: after 6000 reads, or 12 s after the 64th read, whichever comes first (a busy machine reads
    # less). 12 s: the probes' set-up and warm-ups come between that read and the first round, 3 s on a quiet
    # 2-core VM and 8.5 s beside three busy processes; a stall before any complete round has nothing to keep
    "diagnose": (
        "diagnose", "--pipeline", "stalls:make", "--pipeline-option", "after_s=12", "--batch-size", "8",
        "--budget", "16", "--json", "d.json", "--out", "runs",
    ),
    "tune": (
        "tune", "--pipeline", "stalls:make", "--pipeline-option", "reads=20000", "--pipeline-option", "after_s=6",
        "--budget", "10", "--json", "t.json", "--toml", "t.toml", "--out", "runs",
    ),
    # the 60th forward hangs: within the 4 s budget on a busy machine too (the first-step check runs 1 or 2)
    "native": ("diagnose", "--pipeline", "engine_hang:make", "--pipeline-option", "calls=60", "--budget", "4"),
}  # fmt: skip
"""The commands that stall, by name: each mostly waits out its budget and grace once its stall comes."""
STALL_FILES = {
    "diagnose": ("stalls.py", STALLS_LATER),
    "tune": ("stalls.py", STALLS_LATER),
    "native": ("engine_hang.py", ENGINE_HANG),
}
"""The module each stalled command's ``--pipeline`` names, written into its folder."""


def run_stalled(base: Path, names: tuple[str, ...]) -> dict[str, tuple[subprocess.CompletedProcess, float, Path]]:
    """``names`` of :data:`STALL_CALLS` run at once, each in its own folder under ``base``: name -> (the finished
    process, its seconds from start to end, its working folder). At once, since a stalled command waits (a read
    that never returns, a step stuck in native code); only tune measures, for seconds, before its stall, which
    is counted in reads, so a busy machine reaches it all the same). Leaves no process and no shared memory behind
    (the native hang's backstop included)."""
    for name in names:
        (base / name).mkdir()
        if name in STALL_FILES:
            (base / name / STALL_FILES[name][0]).write_text(STALL_FILES[name][1])

    def timed(name: str) -> tuple[subprocess.CompletedProcess, float, Path]:
        t0 = time.monotonic()
        proc = run_cli(*STALL_CALLS[name], cwd=base / name, timeout=180)
        return proc, time.monotonic() - t0, base / name

    with leak_check(), ThreadPoolExecutor(max_workers=len(names)) as pool:
        done = {name: pool.submit(timed, name) for name in names}
        return {name: call.result() for name, call in done.items()}


@pytest.fixture(scope="module")
def stalled_clis(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, float, Path]]:
    """The stalled commands of the default suite, run at once (:func:`run_stalled`)."""
    return run_stalled(tmp_path_factory.mktemp("stalls"), ("read_ms", "tune", "native"))


def test_cli_a_step_stuck_in_native_code_ends_within_budget_grace_and_backstop(stalled_clis):
    # a custom operator that never finishes holds the main thread in nd.waitall() (native code), where the deadline's
    # signal handler never runs: the CLI's backstop ends the process after budget + grace + HARD_EXIT_S, one line
    from gluonbench.engine.deadline import HARD_EXIT_S, grace_s

    proc, took, _ = stalled_clis["native"]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("gluonbench: error: diagnose stopped after"), error
    assert "stalled in step (forward/backward/update) inside native code" in error, error
    assert took < 4 + grace_s(4) + HARD_EXIT_S + 30, took  # + start-up (MXNet's import) on a busy machine


def test_sweep_diagnose_keeps_the_rounds_before_a_stall(tmp_path, monkeypatch):
    # sweep --diagnose: a diagnosis that stalls after some rounds leaves them in the run's extra, marked as such,
    # and the summary's bottleneck table says so (the stall itself: a stored diagnosis raised as the error's partial)
    import shutil
    from pathlib import Path

    from gluonbench.diagnosis import sweep as diagnosis_sweep
    from gluonbench.diagnosis.run import Diagnosis
    from gluonbench.engine.deadline import BudgetExceededError
    from gluonbench.rundir import rebuild
    from gluonbench.sweeprun.run import RunSpec

    results = Path(__file__).resolve().parents[1] / "results"
    stored = Diagnosis.from_dict(json.loads((results / "diagnose" / "mnist-cpu-w2.json").read_text()))

    def stalls(*args, **kwargs):
        exc = BudgetExceededError("diagnose stopped after 40 s: the pipeline stalled in read (dataset[i])", "read")
        exc.partial = stored
        raise exc

    monkeypatch.setattr(diagnosis_sweep, "diagnose_workload", stalls)
    extra = diagnosis_sweep.diagnose_run(RunSpec(workload="mnist", workers=2), None, "cpu")
    assert extra["verdict"] == stored.verdict and extra["stalled"] == "read"
    assert extra["diagnose_error"].startswith("BudgetExceededError: diagnose stopped after 40 s")
    assert extra["diagnosis"]["rounds"] == stored.rounds

    def no_round(*args, **kwargs):
        raise BudgetExceededError("diagnose stopped after 40 s: the pipeline stalled in read (dataset[i])", "read")

    monkeypatch.setattr(diagnosis_sweep, "diagnose_workload", no_round)
    with pytest.raises(BudgetExceededError):  # nothing to keep: the run records the error, as before
        diagnosis_sweep.diagnose_run(RunSpec(workload="mnist", workers=2), None, "cpu")

    run_dir = tmp_path / "sweep"
    shutil.copytree(results / "20261122T161015Z-sweep-mnist-cpu-1epoch", run_dir)
    lines = (run_dir / "runs.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["extra"] = extra
    (run_dir / "runs.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    rebuild(run_dir)
    md = (run_dir / "summary.md").read_text()
    assert f"{stage_label(stored.verdict, 'cpu')} (stalled in read: the rounds before it)" in md, md[
        md.find("## Bottleneck") :
    ][:800]


def test_interrupting_diagnose_does_not_suggest_resume(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "diagnose", "--dataset", "synthetic", "--budget", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    # Ctrl-C once it is measuring: after its first line (what it is about to run), not after a fixed sleep that a
    # quiet machine spends measuring and a busy one may spend importing MXNet
    before = []  # a preflight warning may come first
    while not (before and PLAN_LINE.match(before[-1])) and proc.poll() is None:
        before.append(proc.stderr.readline())
    first = "".join(before)
    assert PLAN_LINE.match(before[-1]), first
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in (130, -2), first + err  # -2: killed by the SIGINT while shutting down
    assert "interrupted" in err and "--resume" not in err


# -- class 7: errors that blame the right thing ------------------------------------------------------


class _Gives:
    def __init__(self, fn):
        self.fn = fn

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return self.fn(i)


def _image(i=0):
    import numpy as np

    return np.zeros((1, 28, 28), np.float32)


@pytest.mark.parametrize(
    ("dataset", "kwargs", "needle"),
    [
        (_Gives(lambda i: (None, 0)), {}, r"dataset\[0\] gives data of type NoneType"),
        (_Gives(lambda i: ("a string", 0)), {}, r"dataset\[0\] gives data of type str"),
        (_Gives(lambda i: (_image(), None)), {}, r"dataset\[0\] gives label of type NoneType"),
        (_Gives(lambda i: (_image()[:, : 28 - (i % 2)], 0.0)), {}, r"dataset\[1\] gives data of shape \(1, 27, 28\)"),
        (_Gives(lambda i: (_image(), 0.0)), {"loss": 42}, r"loss must be a Gluon loss .* \(got int 42\)"),
        (
            _Gives(lambda i: (_image(), 0.0)),
            {"transform": lambda d, y: (None, y)},
            r"gives data of type NoneType after the transform",
        ),
    ],
)
def test_bad_samples_and_loss_are_blamed_right(dataset, kwargs, needle):
    import gluonbench

    # the budgets never run out: each call is refused before measuring (a 2 s budget could, on a busy machine)
    for call, budget in ((gluonbench.diagnose, 10), (gluonbench.tune, 10)):
        with pytest.raises(GluonbenchError, match=needle):
            call(dataset, batch_size=4, ctx="cpu", budget_s=budget, **kwargs)


def test_a_loader_whose_workers_hand_over_nothing_is_named_as_such(monkeypatch):
    # 2026-11-25: a 2-worker MNIST diagnosis waited past its deadline for a batch that never came; the line
    # must not claim that a step is slow when the workers may be stuck
    import signal
    import sys

    from gluonbench.engine import watchdog
    from gluonbench.engine.deadline import BudgetExceededError, Deadline

    monkeypatch.setattr(watchdog, "shm_full", lambda: None)  # another test may be filling /dev/shm meanwhile

    def recv():  # the name of the queue wait MXNet's loader blocks in
        return sys._getframe()

    with pytest.raises(BudgetExceededError) as err:
        Deadline(5, "diagnose")._fire(signal.SIGALRM, recv())
    assert err.value.stage == "loader (waiting for a batch from the workers)"
    assert "no batch came from the loader's workers" in str(err.value) and "0 workers" in str(err.value)


def test_the_deadline_logs_where_the_main_thread_was(caplog):
    # the one-line error names a stage; -v adds the frames themselves ("waiting for a batch" covers every wait
    # of the loader's, closing its worker pool included), so a rare stall can be placed from one occurrence
    import logging
    import time

    from gluonbench.engine.deadline import BudgetExceededError, Deadline

    def stuck_here_for_a_while():
        time.sleep(10)

    with caplog.at_level(logging.INFO, logger="gluonbench.engine.deadline"):
        with pytest.raises(BudgetExceededError):
            with Deadline(0.2, "a test", grace=0.1):
                stuck_here_for_a_while()
    lines = [r.getMessage() for r in caplog.records if "the main thread was in" in r.getMessage()]
    assert len(lines) == 1, caplog.text
    assert "stuck_here_for_a_while < test_faults_reliab.py:test_the_deadline_logs_where" in lines[0]


BACKSTOP = """
import sys, time
from gluonbench.engine import deadline
deadline.exit_hard_when_stuck()
deadline.HARD_EXIT_S = 1.0  # the backstop: 1 s after budget + grace (0.6 s) ...
deadline.CLEANUP_S = 4.0  # ... and, once the deadline's error is raised, 4 s from then for the clean-up
try:
    with deadline.Deadline(0.3, "test", grace=0.3):  # as with_deadline wraps diagnose() and tune()
        try:
            time.sleep(30)  # blocks in Python: the deadline's own error ends it after 0.6 s
        finally:
            time.sleep(float(sys.argv[1]))  # their clean-up (loaders closed, nd.waitall()) that follows the error
except deadline.BudgetExceededError:
    print("cleaned up")
"""


@pytest.mark.parametrize(("cleanup_s", "finishes"), [(2.0, True), (30.0, False)])
def test_the_backstop_gives_the_clean_up_after_a_stall_its_own_bounded_time(cleanup_s, finishes):
    # after the deadline's error the command closes its loaders and saves what it measured: that gets CLEANUP_S of
    # its own (a 2 s clean-up outlives the HARD_EXIT_S meant for a main thread that never answered), and a clean-up
    # that hangs is ended too
    import subprocess
    import sys

    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", BACKSTOP, str(cleanup_s)], capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    if finishes:
        assert proc.returncode == 0 and "cleaned up" in proc.stdout, proc.stderr
    else:
        assert proc.returncode == 2 and "cleaned up" not in proc.stdout, (proc.returncode, proc.stdout)
        assert proc.stderr.strip().splitlines()[-1].startswith("gluonbench: error: test stopped after"), proc.stderr
        assert took < 20, took  # 0.6 s + CLEANUP_S + start-up, not the 30 s clean-up


SWALLOWS_CTRL_C = """
import time

import numpy as np
import gluonbench


class Slow:
    # each sample leaves an object whose __del__ takes the time: a Ctrl-C then lands in __del__, where Python
    # prints the KeyboardInterrupt ("Exception ignored in") and goes on
    def __del__(self):
        time.sleep(0.02)


class Data:
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        Slow()
        return np.full((8,), i % 5, dtype=np.float32), np.float32(i % 2)


def net():
    from mxnet import gluon
    return gluon.nn.Dense(2)


def make():
    return gluonbench.PipelineSpec(dataset=Data(), net=net, batch_size=8)
"""


def test_a_ctrl_c_that_user_code_swallows_still_stops_the_command(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "swallows.py").write_text(SWALLOWS_CTRL_C)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "diagnose", "--pipeline", "swallows.py:make", "--budget", "120"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    before = []
    while not (before and PLAN_LINE.match(before[-1])) and proc.poll() is None:
        before.append(proc.stderr.readline())
    assert PLAN_LINE.match(before[-1]), "".join(before)
    time.sleep(2)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=90)
    # stopped at the next progress tick (every few seconds), not at the budget's end
    assert proc.returncode == 130 and time.monotonic() - t0 < 60, err
    assert "interrupted" in err.splitlines()[-1], err
