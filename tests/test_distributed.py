"""Scale-out: several CPU contexts in one process, and real dist_sync jobs (scheduler, server, workers
on 127.0.0.1) training the seed's CNN; correctness, faults, leaks."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from conftest import REPO, assert_one_clear_line, session_processes

ACCURACY_TOLERANCE = 0.05
"""dist_sync (2 workers x batch 64) vs one process at batch 128, both 60 steps: test accuracies within this.
The single-process run's own seed-to-seed spread at 60 steps was 0.851-0.890 here (seeds 1-3)."""


def _records(run_root: Path) -> tuple[Path, list[dict]]:
    (run_dir,) = [p for p in run_root.iterdir() if p.is_dir()]
    lines = (run_dir / "runs.jsonl").read_text().splitlines()
    return run_dir, [json.loads(line) for line in lines if line.strip()]


def _nodes() -> list[psutil.Process]:
    """Live processes of distributed jobs started by this test session."""
    return session_processes("gluonbench.distributed.node")


def _role(p: psutil.Process) -> str:
    try:
        return p.environ().get("DMLC_ROLE", "")
    except psutil.Error:
        return ""


def _listening(port: int) -> bool:
    return any(c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in psutil.net_connections())


def _start(args: list[str], tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "sweep", *args, "--out", str(tmp_path / "out")],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )


def _wait_training(tmp_path: Path, steps: int = 3, timeout: float = 90) -> None:
    """Until worker 0 of the running job reports ``steps`` training steps."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        for f in (tmp_path / "out").glob("*/logs/.progress-*"):
            try:
                if int(f.read_text() or 0) >= steps:
                    return
            except (OSError, ValueError):
                pass
        time.sleep(0.2)
    raise AssertionError("the distributed job never started training")


def _wait_gone(timeout: float = 15) -> list[psutil.Process]:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        left = _nodes()
        if not left:
            return []
        time.sleep(0.2)
    return _nodes()


# -- several contexts in one process ----------------------------------------------------------------


def test_two_cpu_devices_in_one_process(cli, mnist_dir, tmp_path, no_leaks):
    proc = cli(
        "sweep", "--ctx", "cpu", "--devices", "2", "--kvstore", "local", "--workers", "0", "--max-batches", "12",
        "--data-dir", str(mnist_dir), "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _, (rec,) = _records(tmp_path)
    assert rec["status"] == "ok"
    assert rec["spec"]["devices"] == 2 and rec["spec"]["kvstore"] == "local"
    extra = rec["extra"]
    assert extra["devices"] == ["cpu(0)", "cpu(1)"]
    assert rec["train_samples"] == 12 * 2 * 64  # the batch size is per device
    # the kvstore's cost is a paired probe (issue #18, G3): within noise of 0 on this machine's CPU contexts
    assert extra["comm_measure"].startswith("paired probe") and 0 <= extra["comm_share"] < 1
    low, high = extra["kvstore_step_ms_ci"]
    assert low <= high and extra["kvstore_s"] >= 0
    assert extra["params_equal_on_devices"] is True
    steady = rec["steady"]
    assert steady["copy_s"] > 0  # split_and_load, moved from compute into copy
    assert steady["total_s"] == pytest.approx(steady["wait_s"] + steady["copy_s"] + steady["compute_s"])
    run_dir, _ = _records(tmp_path)
    md = (run_dir / "summary.md").read_text()
    assert "## Data-parallel step" in md and "cpu(0), cpu(1)" in md


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--kvstore", "bogus"], ["--kvstore", "dist_sync"]),
        (["--hosts", "2"], ["--hosts", "--kvstore dist_sync"]),
        (["--kvstore", "nccl"], ["nccl", "GPUs"]),
        (["--kvstore", "dist_sync", "--launcher", "ssh"], ["--hostfile"]),
        (["--kvstore", "dist_sync", "--launcher", "ssh", "--hostfile", "/nonexistent"], ["/nonexistent"]),
        (["--kvstore", "dist_sync", "--hosts", "0"], ["--hosts"]),
        (["--devices", "0"], ["--devices"]),
        (["--gpus", "0,1", "--ctx", "cpu"], ["--gpus"]),
        (["--gpus", "0"], ["GPU"]),
        (["--kvstore", "dist_sync", "--port", "80"], ["--port"]),
        (["--kvstore", "dist_sync", "--hosts", "1,2", "--diagnose", "--diagnose-rank", "1"], ["--diagnose-rank"]),
        (["--diagnose-rank", "1"], ["--diagnose-rank", "--diagnose"]),
    ],
)
def test_bad_scale_settings_are_one_line(cli, mnist_dir, tmp_path, args, needles):
    proc = cli("sweep", "--workers", "0", "--data-dir", str(mnist_dir), "--out", str(tmp_path), *args)
    # --gpus 0 on this machine is judged by MXNet (seconds to import): only there may the plan line come first
    assert_one_clear_line(proc, *needles, plan=args == ["--gpus", "0"])


def test_strided_shards_cover_every_sample_once():
    from gluonbench.data.shard import shard_indices, strided_shard

    seen = sorted(i for rank in range(3) for i in shard_indices(10, rank, 3))
    assert seen == list(range(10))
    assert list(shard_indices(10, 1, 3)) == [1, 4, 7]
    data = list(range(100, 110))
    shard = strided_shard(data, 2, 4)
    assert len(shard) == 2 and [shard[0], shard[1]] == [102, 106]


def test_tracker_compat_gives_dmlc_tracker_its_isalive():
    """MXNet's dmlc_tracker calls Thread.isAlive (gone since Python 3.9); with the shim its PS tracker,
    the one the ssh launcher uses, runs a real scheduler command and joins it."""
    from gluonbench.distributed.tracker import apply_compat

    apply_compat()
    from dmlc_tracker import tracker

    t = tracker.PSTracker(hostIP="127.0.0.1", cmd='test -n "$DMLC_PS_ROOT_PORT"')
    t.join()  # while self.thread.isAlive(): ...
    assert t.alive() is False
    assert t.slave_envs() == {"DMLC_PS_ROOT_URI": "127.0.0.1", "DMLC_PS_ROOT_PORT": t.port}


def test_params_differ_names_the_parameters_that_disagree():
    from gluonbench.distributed.launch import JobOutcome, job_records
    from gluonbench.sweeprun.run import RunResult, RunSpec

    def worker(rank: int, digests: dict[str, str]) -> RunResult:
        sha = "".join(digests[k] for k in sorted(digests))
        return RunResult(spec={}, extra={"rank": rank, "param_sha256": sha, "param_digests": digests})

    same = {"a_bias": "01", "a_weight": "02"}
    recs = job_records(JobOutcome([worker(0, same), worker(1, dict(same))]), RunSpec(hosts=2), "")
    assert recs[0].extra["job"]["params_identical"] is True and recs[0].extra["job"]["params_differ"] == []
    recs = job_records(JobOutcome([worker(0, same), worker(1, {**same, "a_bias": "ff"})]), RunSpec(hosts=2), "")
    job = recs[1].extra["job"]
    assert job["params_identical"] is False and job["params_differ"] == ["a_bias"]


# -- dist_sync on 127.0.0.1 --------------------------------------------------------------------------


@pytest.mark.slow
def test_dist_sync_two_workers_identical_params(cli, mnist_dir, tmp_path, no_leaks):
    """Scheduler, 1 server, 2 workers; a busy --port is replaced; correctness against one process."""
    busy = socket.socket()
    busy.bind(("", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        proc = cli(
            "sweep", "--kvstore", "dist_sync", "--hosts", "2", "--servers", "1", "--workers", "0",
            "--max-batches", "60", "--port", str(port), "--data-dir", str(mnist_dir), "--out", str(tmp_path / "d"),
        )  # fmt: skip
    finally:
        busy.close()
    assert proc.returncode == 0, proc.stderr
    run_dir, recs = _records(tmp_path / "d")
    assert [r["kind"] for r in recs] == ["dist", "dist"]
    assert sorted(r["extra"]["rank"] for r in recs) == [0, 1]
    job = recs[0]["extra"]["job"]
    assert job["port"] != port and job["status"] == "ok"
    assert not _listening(job["port"])
    digests = {r["extra"]["param_sha256"] for r in recs}
    assert len(digests) == 1 and job["params_identical"] is True and job["params_differ"] == []
    assert len(recs[0]["extra"]["param_digests"]) == 8  # the CNN's 4 weights and 4 biases, one digest each
    for r in recs:
        assert r["status"] == "ok" and r["spec"]["hosts"] == 2
        assert r["extra"]["shard_samples"] == 30000
        assert r["train_samples"] == 60 * 64
        assert 0 < r["extra"]["comm_share"] < 1
        assert r["extra"]["startup_s"] > 0
        assert r["accuracy"] > 0.5  # chance is 0.1
    for name in ("scaling.csv", "scaling.md", "scaling.json", "scaling.png"):
        assert (run_dir / name).is_file(), name
    md = (run_dir / "scaling.md").read_text()
    assert "| 2 | 0 | 128 |" in md and "identical on 2 worker(s)" in md

    # the same global batch in one process, the same number of steps
    single = cli(
        "sweep", "--workers", "0", "--batch-size", "128", "--max-batches", "60",
        "--data-dir", str(mnist_dir), "--out", str(tmp_path / "s"),
    )  # fmt: skip
    assert single.returncode == 0, single.stderr
    _, (one,) = _records(tmp_path / "s")
    assert abs(recs[0]["accuracy"] - one["accuracy"]) <= ACCURACY_TOLERANCE, (recs[0]["accuracy"], one["accuracy"])


def _lag_servers(proc: subprocess.Popen, stop_s: float = 0.02, period_s: float = 0.05) -> None:
    """While ``proc`` runs: stop this session's parameter servers ``stop_s`` out of every ``period_s``."""
    servers: list[psutil.Process] = []
    while proc.poll() is None:
        servers = [s for s in servers if s.is_running()] or [p for p in _nodes() if _role(p) == "server"]
        for s in servers:
            with contextlib.suppress(psutil.Error):
                s.suspend()
        time.sleep(stop_s)
        for s in servers:
            with contextlib.suppress(psutil.Error):
                s.resume()
        time.sleep(period_s - stop_s)


@pytest.mark.slow
def test_dist_sync_identical_params_with_a_lagging_server(mnist_dir, tmp_path, no_leaks):
    """A server off the CPU now and then (SIGSTOP/SIGCONT, as on a busy machine) finds requests queued, and
    ps-lite serves queued requests newest first. Before each worker waited for its initial pulls, the last
    parameter's pull could be answered after the first gradient round (that worker then started from the
    summed gradient): 4 of 45 such jobs here, so two jobs are a statistical guard only; the counts come
    from benchmarks/dist_params_stress.py. Now every worker's pulls are answered before it pushes."""
    proc = _start(
        ["--kvstore", "dist_sync", "--hosts", "2", "--workers", "0", "--max-batches", "24", "--batch-size", "8",
         "--repeat", "2", "--data-dir", str(mnist_dir)],
        tmp_path,
    )  # fmt: skip
    lagger = threading.Thread(target=_lag_servers, args=(proc,), daemon=True)
    lagger.start()
    try:
        _out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
        lagger.join()
    assert proc.returncode == 0, err
    _, recs = _records(tmp_path / "out")
    jobs = {(r["spec"]["repeat"]): r["extra"]["job"] for r in recs}
    assert len(recs) == 4 and len(jobs) == 2
    for job in jobs.values():
        assert job["status"] == "ok" and job["params_identical"] is True, job["params_differ"]


@pytest.mark.slow
def test_diagnose_on_a_chosen_rank(cli, mnist_dir, tmp_path, no_leaks):
    proc = cli(
        "sweep", "--kvstore", "dist_sync", "--hosts", "2", "--workers", "0", "--max-batches", "15",
        "--diagnose", "--diagnose-rank", "1", "--diagnose-budget", "4",
        "--data-dir", str(mnist_dir), "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run_dir, recs = _records(tmp_path)
    by_rank = {r["extra"]["rank"]: r for r in recs}
    assert "verdict" not in by_rank[0]["extra"]
    assert by_rank[1]["extra"]["verdict"] in ("preprocessing", "disk_io", "gpu_io", "inconclusive")
    assert by_rank[1]["extra"]["shares"]
    assert "## Bottleneck of the diagnosed worker" in (run_dir / "scaling.md").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("role", ["worker", "server"])
def test_killed_node_stops_the_job(mnist_dir, tmp_path, no_leaks, role):
    proc = _start(
        ["--kvstore", "dist_sync", "--hosts", "2", "--workers", "0", "--max-batches", "5000",
         "--data-dir", str(mnist_dir)],
        tmp_path,
    )  # fmt: skip
    try:
        _wait_training(tmp_path)
        victim = next(p for p in _nodes() if _role(p) == role)
        victim.kill()
        killed_at = time.monotonic()
        _out, err = proc.communicate(timeout=60)
        stopped_in = time.monotonic() - killed_at
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    assert stopped_in < 20
    lines = [ln for ln in err.splitlines() if "distributed job stopped" in ln]
    assert len(lines) == 1, err
    assert f"{role} " in lines[0] and "SIGKILL" in lines[0] and "Traceback" not in err
    assert _wait_gone(5) == []
    _, recs = _records(tmp_path / "out")
    assert recs[-1]["status"] == "failed" and "distributed job stopped" in recs[-1]["error"]
    assert not _listening(recs[-1]["extra"]["job"]["port"])


@pytest.mark.slow
def test_killed_parent_takes_the_job_with_it(mnist_dir, tmp_path, no_leaks):
    proc = _start(
        ["--kvstore", "dist_sync", "--hosts", "2", "--workers", "0", "--max-batches", "5000",
         "--data-dir", str(mnist_dir)],
        tmp_path,
    )  # fmt: skip
    try:
        _wait_training(tmp_path)
        assert len(_nodes()) == 4  # scheduler, server, 2 workers
        proc.kill()
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert _wait_gone(10) == []


@pytest.mark.slow
def test_ctrl_c_keeps_finished_jobs(mnist_dir, tmp_path, no_leaks):
    proc = _start(
        ["--kvstore", "dist_sync", "--hosts", "1,2", "--workers", "0", "--max-batches", "15",
         "--data-dir", str(mnist_dir)],
        tmp_path,
    )  # fmt: skip
    try:
        t0 = time.monotonic()
        while not list((tmp_path / "out").glob("*/runs.jsonl")) and time.monotonic() - t0 < 90:
            time.sleep(0.2)
        # the second job (2 workers) is under way
        while len([p for p in _nodes() if _role(p) == "worker"]) < 2 and time.monotonic() - t0 < 120:
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert _wait_gone(5) == []
    run_dir, recs = _records(tmp_path / "out")
    assert [r["spec"]["hosts"] for r in recs] == [1] and recs[0]["status"] == "ok"
    assert (run_dir / "scaling.md").is_file()
    # --resume runs only the job that was interrupted
    resumed = subprocess.run(
        [sys.executable, "-m", "gluonbench", "sweep", "--resume", str(run_dir)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    _, recs = _records(tmp_path / "out")
    assert [r["spec"]["hosts"] for r in recs] == [1, 2, 2] and all(r["status"] == "ok" for r in recs)
    assert "| 2 | 0 | 128 |" in (run_dir / "scaling.md").read_text()


def test_report_rebuilds_the_committed_scaling_run(cli, tmp_path):
    """The scaling report is a pure function of runs.jsonl: rebuilt from the committed results."""
    import shutil

    (src,) = (REPO / "results").glob("*-scaling-dist_sync-cpu")
    run_dir = tmp_path / src.name
    run_dir.mkdir()
    for name in ("runs.jsonl", "sweep.json"):
        shutil.copy(src / name, run_dir / name)
    proc = cli("report", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    assert (run_dir / "scaling.md").read_text() == (src / "scaling.md").read_text()
    assert (run_dir / "scaling.csv").read_text() == (src / "scaling.csv").read_text()
    assert (run_dir / "scaling.png").stat().st_size > 10_000
    rows = json.loads((run_dir / "scaling.json").read_text())["rows"]
    assert [r["hosts"] for r in rows] == [1, 2, 4]
    assert rows[0]["efficiency"] == 1.0 and rows[2]["efficiency"] < rows[1]["efficiency"] < 1.0
    assert all(r["params_identical"] for r in rows)


# -- --launcher ssh: MXNet's dmlc_tracker over a real sshd on 127.0.0.1 -------------------------------


@pytest.fixture
def local_sshd(tmp_path):
    """An sshd on a free 127.0.0.1 port accepting one fresh key; yields (hostfile line, PATH with an
    ``ssh`` that uses that key). Skipped without openssh-server or root."""
    import shutil

    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    if not Path(sshd).exists() or os.geteuid() != 0:
        pytest.skip("needs openssh-server (apt-get install openssh-server) and root to run sshd")
    d = tmp_path / "ssh"
    (d / "bin").mkdir(parents=True)
    for key in ("host_key", "id_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True)
    (d / "authorized_keys").write_text((d / "id_key.pub").read_text())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        f"PermitRootLogin prohibit-password\nPidFile {d}/sshd.pid\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)
    wrapper = d / "bin" / "ssh"
    wrapper.write_text(
        f'#!/bin/sh\nexec /usr/bin/ssh -i {d}/id_key -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR "$@"\n'
    )
    wrapper.chmod(0o755)
    server = subprocess.Popen([sshd, "-D", "-e", "-f", str(d / "sshd_config")], stderr=subprocess.DEVNULL)
    try:
        t0 = time.monotonic()
        while not _listening(port):
            assert time.monotonic() - t0 < 10 and server.poll() is None, "sshd did not start"
            time.sleep(0.1)
        yield f"127.0.0.1:{port}", f"{d / 'bin'}:{os.environ['PATH']}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def _remote_nodes() -> list[psutil.Process]:
    """Node processes whatever their environment (those started through sshd lack the test mark)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if "gluonbench.distributed.node" in " ".join(p.info.get("cmdline") or []):
            out.append(p)
    return out


@pytest.mark.slow
def test_ssh_launcher_through_dmlc_tracker(local_sshd, mnist_dir, tmp_path, no_leaks):
    host, path = local_sshd
    hostfile = tmp_path / "hosts.txt"
    hostfile.write_text(f"{host}\n{host}\n")
    before = {p.pid for p in _remote_nodes()}
    proc = subprocess.run(
        [sys.executable, "-m", "gluonbench", "sweep", "--kvstore", "dist_sync", "--launcher", "ssh",
         "--hostfile", str(hostfile), "--hosts", "2", "--workers", "0", "--max-batches", "20",
         "--data-dir", str(mnist_dir), "--out", str(tmp_path / "out")],
        cwd=REPO, capture_output=True, text=True, timeout=300, env=dict(os.environ, PATH=path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _, recs = _records(tmp_path / "out")
    assert sorted(r["extra"]["rank"] for r in recs) == [0, 1]
    assert {r["extra"]["host"] for r in recs} == {"127.0.0.1"}  # DMLC_NODE_HOST from the hostfile
    assert recs[0]["extra"]["job"]["launcher"] == "ssh" and recs[0]["extra"]["job"]["params_identical"]
    t0 = time.monotonic()
    while {p.pid for p in _remote_nodes()} - before and time.monotonic() - t0 < 10:
        time.sleep(0.2)
    assert not {p.pid for p in _remote_nodes()} - before


@pytest.mark.slow
def test_ssh_launcher_killed_worker_stops_remote_nodes(local_sshd, mnist_dir, tmp_path, no_leaks):
    host, path = local_sshd
    hostfile = tmp_path / "hosts.txt"
    hostfile.write_text(f"{host}\n")
    before = {p.pid for p in _remote_nodes()}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "sweep", "--kvstore", "dist_sync", "--launcher", "ssh",
         "--hostfile", str(hostfile), "--hosts", "2", "--workers", "0", "--max-batches", "5000",
         "--data-dir", str(mnist_dir), "--out", str(tmp_path / "out")],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, PATH=path),
    )  # fmt: skip
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 120:
            workers = [p for p in _remote_nodes() if p.pid not in before and _role(p) == "worker"]
            if len(workers) == 2:
                break
            time.sleep(0.2)
        time.sleep(3)  # training
        workers[0].kill()
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    assert "distributed job stopped" in err and "Traceback" not in err
    t0 = time.monotonic()
    while {p.pid for p in _remote_nodes()} - before and time.monotonic() - t0 < 15:
        time.sleep(0.2)
    assert not {p.pid for p in _remote_nodes()} - before


# -- GPUs (skipped where MXNet sees fewer than two) -----------------------------------------------------


def _gpus() -> int:
    from gluonbench._mx import num_gpus

    return num_gpus()


@pytest.mark.gpu
@pytest.mark.parametrize("kvstore", ["device", "nccl"])
def test_two_gpus_in_one_process(cli, mnist_dir, tmp_path, no_leaks, kvstore):
    if _gpus() < 2:
        pytest.skip("needs two GPUs visible to MXNet")
    proc = cli(
        "sweep", "--gpus", "0,1", "--kvstore", kvstore, "--workers", "0,2", "--max-batches", "30",
        "--data-dir", str(mnist_dir), "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _, recs = _records(tmp_path)
    for r in recs:
        assert r["status"] == "ok" and r["extra"]["devices"] == ["gpu(0)", "gpu(1)"]
        assert r["extra"]["params_equal_on_devices"] and 0 < r["extra"]["comm_share"] < 1
        assert r["steady"]["copy_s"] > 0 and r["accuracy"] > 0.3


@pytest.mark.gpu
@pytest.mark.slow
def test_dist_device_sync_on_gpus(cli, mnist_dir, tmp_path, no_leaks):
    if _gpus() < 1:
        pytest.skip("needs a GPU visible to MXNet")
    proc = cli(
        "sweep", "--ctx", "gpu:0", "--kvstore", "dist_device_sync", "--hosts", "2", "--workers", "0",
        "--max-batches", "30", "--data-dir", str(mnist_dir), "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _, recs = _records(tmp_path)
    assert len(recs) == 2 and recs[0]["extra"]["job"]["params_identical"]


@pytest.mark.slow
def test_scheduler_bind_failure_restarts_on_a_free_port(mnist_dir, tmp_path, monkeypatch, no_leaks):
    """The port looked free when picked but is taken when the scheduler binds: the job restarts elsewhere."""
    from gluonbench.distributed import launch
    from gluonbench.sweeprun.run import RunSpec

    busy = socket.socket()
    busy.bind(("", 0))
    busy.listen()
    port = busy.getsockname()[1]
    monkeypatch.setattr(launch, "port_free", lambda *_: True)  # the race: the check says free
    try:
        spec = RunSpec(data_dir=str(mnist_dir), max_batches=5, kvstore="dist_sync", hosts=1, servers=1)
        outcome = launch.run_job(spec, tmp_path / "logs", timeout_s=240, port=port)
    finally:
        busy.close()
    assert outcome.status == "ok", outcome.error
    assert outcome.port != port and len(outcome.results) == 1
    assert "bind failed" in (tmp_path / "logs" / "h1-w0-r0-scheduler.log").read_text()
