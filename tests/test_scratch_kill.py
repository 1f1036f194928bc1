"""Issue #21 class 3: nothing is left behind after ``kill -9`` of gluonbench itself.

Every test kills a real gluonbench process with SIGKILL (no ``finally`` runs) and checks that its scratch
folder is swept by the next gluonbench start, that its helper processes died with it, and that a profiled
program's grandchild that left the process group with ``setsid()`` is killed too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gluonbench.scratch import owned_tempdir, sweep_stale

REPO = Path(__file__).resolve().parents[1]
MNIST = Path(os.environ.get("GLUONBENCH_DATA", "/work/shared/data")) / "mnist"
SETSID_GRANDCHILD = (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    open('grandchild.pid', 'w').write(str(os.getpid()))\n"
    "    time.sleep(600)\n"
    "    os._exit(0)\n"
    "time.sleep(float(sys.argv[1]))\n"
)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _gluonbench(args: list[str], cwd: Path, tmpdir: Path) -> subprocess.Popen:
    env = dict(os.environ, TMPDIR=str(tmpdir), PYTHONPATH=str(REPO))
    with open(cwd / f"{args[0]}.stderr", "ab") as err:  # read back by _said when a test fails
        return subprocess.Popen(
            [sys.executable, "-m", "gluonbench", *args], cwd=cwd, env=env,
            stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
        )  # fmt: skip


def _said(cwd: Path, command: str) -> str:
    """What a gluonbench command started by _gluonbench wrote to stderr (its last lines)."""
    try:
        return (cwd / f"{command}.stderr").read_text(errors="replace")[-2000:]
    except OSError:
        return ""


def _next_start(cwd: Path, tmpdir: Path) -> None:
    """Any gluonbench command: it sweeps what a killed run left before it does anything else."""
    assert _gluonbench(["report", str(cwd / "no-such-run")], cwd, tmpdir).wait(timeout=120) == 2


def test_sweep_removes_only_folders_whose_owner_is_gone(tmp_path):
    code = "import sys, time; from gluonbench.scratch import owned_tempdir; print(owned_tempdir('io', sys.argv[1]))"
    owner = subprocess.Popen(
        [sys.executable, "-c", code + "; sys.stdout.flush(); time.sleep(600)", str(tmp_path)],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)),
    )  # fmt: skip
    dead = Path(owner.stdout.readline().strip())
    (dead / "data").mkdir()
    assert dead.parent == tmp_path and dead.name.startswith(f"gluonbench-io-{owner.pid}.")
    mine = owned_tempdir("pipe", tmp_path)  # this process is alive: kept
    owner.kill()
    owner.wait()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("keep")
    link = tmp_path / f"gluonbench-job-{owner.pid}.1-abc"  # named like a stale folder, but a link: never followed
    link.symlink_to(victim)
    other = tmp_path / "gluonbench-io-notours"
    other.mkdir()
    removed = sweep_stale(tmp_path)
    assert removed == [dead] and not dead.exists()
    assert mine.is_dir() and other.is_dir() and link.is_symlink() and (victim / "keep").read_text() == "keep"


def test_a_reused_pid_is_not_taken_for_the_owner(tmp_path):
    # our own pid, but a start time that is not ours: the owner that made it is gone
    stale = tmp_path / f"gluonbench-file-{os.getpid()}.1-xyz"
    stale.mkdir()
    assert sweep_stale(tmp_path) == [stale]


def test_io_killed_with_9_leaves_nothing_after_the_next_start(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    args = ["io", "--modes", "file", "--sizes", "small", "--layouts", "files", "--small", "200KB", "--large", "400KB",
            "--file-size", "20KB", "--epochs", "1", "--out", str(tmp_path / "out"), "--mnist-dir", str(MNIST)]  # fmt: skip
    proc = _gluonbench(args, tmp_path, tmpdir)
    assert _wait_for(lambda: any(tmpdir.glob("gluonbench-io-*/*")), 120), (
        f"io never made its work folder: {_said(tmp_path, 'io')}"
    )
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert list(tmpdir.glob("gluonbench-io-*"))  # killed: nothing could clean up yet
    _next_start(tmp_path, tmpdir)
    assert list(tmpdir.iterdir()) == []


@pytest.mark.slow
def test_pipe_sweep_killed_with_9_leaves_no_fifo_log_or_producer(tmp_path, packed_dir):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    # the packed data is small: batches of 2 over many epochs keep a FIFO open for about a minute
    args = ["sweep", "--source", "pipe", "--uri", str(packed_dir), "--workers", "0", "--batch-size", "2",
            "--epochs", "200", "--out", str(tmp_path / "out")]  # fmt: skip
    proc = _gluonbench(args, tmp_path, tmpdir)
    # the run's child makes its pipe folder in its own TMPDIR: the run's gluonbench-run-* folder, or, where a
    # worker's socket path would not fit there (pytest's long tmp_path), /tmp/gluonbench-tmp-PID.* (child_tmpdir)
    run_tmps = [tmpdir, *Path("/tmp").glob(f"gluonbench-tmp-{proc.pid}.*")]

    def fifo_made() -> bool:
        run_tmps[1:] = Path("/tmp").glob(f"gluonbench-tmp-{proc.pid}.*")
        return any(any(t.glob("**/gluonbench-pipe-*/data/*")) for t in run_tmps)

    assert _wait_for(fifo_made, 120), f"no FIFO was made: {_said(tmp_path, 'sweep')}"
    producers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _environ_has(p, str(tmpdir))]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _wait_for(lambda: not any(_alive(int(p.name)) for p in producers), 20), "a process outlived the sweep"
    _next_start(tmp_path, tmpdir)
    assert not list(tmpdir.glob("gluonbench-*"))
    assert not [t for t in run_tmps[1:] if t.exists()], "the run's TMPDIR under /tmp outlived the sweep"


def _environ_has(proc: Path, text: str) -> bool:
    try:
        return text.encode() in (proc / "environ").read_bytes()
    except OSError:
        return False


def test_profile_killed_with_9_takes_a_setsid_grandchild_with_it(tmp_path):
    proc = _gluonbench(
        ["profile", "--out", str(tmp_path / "out"), "--", sys.executable, "-c", SETSID_GRANDCHILD, "600"],
        tmp_path,
        tmp_path,
    )
    pid_file = tmp_path / "grandchild.pid"
    assert _wait_for(lambda: pid_file.exists() and pid_file.read_text(), 60)
    grandchild = int(pid_file.read_text())
    assert _alive(grandchild)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    try:
        assert _wait_for(lambda: not _alive(grandchild), 20), "the setsid() grandchild outlived profile"
    finally:
        if _alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)


def test_profile_that_ends_normally_takes_a_setsid_grandchild_with_it(tmp_path):
    proc = _gluonbench(
        ["profile", "--out", str(tmp_path / "out"), "--", sys.executable, "-c", SETSID_GRANDCHILD, "1"],
        tmp_path,
        tmp_path,
    )
    assert proc.wait(timeout=120) == 0
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    try:
        assert _wait_for(lambda: not _alive(grandchild), 10), "the setsid() grandchild outlived profile"
    finally:
        if _alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)


SEGMENT_MAKERS = (
    "import os, time\n"
    "def segment(tag):\n"
    "    name = f'/dev/shm/mx_{os.getpid():x}_{tag:x}'\n"
    "    with open(name, 'wb') as f:\n"
    "        f.write(b'x')\n"
    "    with open(f'segment{tag}', 'w') as f:\n"
    "        f.write(name)\n"
    "if os.fork() == 0:\n"  # a loader worker that made a batch's segment and ended
    "    segment(1)\n"
    "    time.sleep(2)\n"
    "    os._exit(0)\n"
    "if os.fork() == 0:\n"  # one that left the group and lives on
    "    os.setsid()\n"
    "    segment(2)\n"
    "    time.sleep(600)\n"
    "    os._exit(0)\n"
    "time.sleep(600)\n"
)


def test_profile_killed_with_9_leaves_no_segment_the_program_made(tmp_path):
    """Segments named as MXNet names a worker's batch (``mx_<pid hex>_<id hex>``), made by the profiled program's
    processes, one of them gone before the kill: the watchdog removes them; another process's is kept."""
    proc = _gluonbench(
        ["profile", "--out", str(tmp_path / "out"), "--", sys.executable, "-c", SEGMENT_MAKERS], tmp_path, tmp_path
    )
    made = [tmp_path / "segment1", tmp_path / "segment2"]
    others = Path(f"/dev/shm/mx_{os.getpid():x}_{int(time.time()):x}")  # this test's: not the program's
    try:
        assert _wait_for(lambda: all(m.exists() and m.read_text() for m in made), 60), _said(tmp_path, "profile")
        others.write_bytes(b"x")
        segments = [Path(m.read_text()) for m in made]
        time.sleep(3)  # the first maker has exited: only the watchdog's earlier look saw it
        assert all(s.exists() for s in segments)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert _wait_for(lambda: not any(s.exists() for s in segments), 20), (
            "a segment the program made outlived profile"
        )
        assert others.exists(), "profile's watchdog removed a segment the program did not make"
    finally:
        others.unlink(missing_ok=True)
        for m in made:
            if m.exists():
                Path(m.read_text()).unlink(missing_ok=True)


def test_the_workers_folder_is_made_once_and_a_temp_folder_that_refuses_it_is_not_fatal(monkeypatch):
    from multiprocessing import process

    from gluonbench import scratch

    first = scratch.own_multiprocessing_tempdir()
    assert first is not None and first.is_dir() and first.name.startswith(f"gluonbench-mp-{scratch.owner_tag()}-")
    assert scratch.own_multiprocessing_tempdir() == first, "one folder a process"
    assert process.current_process()._config["tempdir"] == str(first)
    # a full or read-only temp folder: the loader still starts, with multiprocessing's own default
    monkeypatch.setitem(process.current_process()._config, "tempdir", None)

    def refuse(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(scratch, "owned_tempdir", refuse)
    assert scratch.own_multiprocessing_tempdir() is None
    assert process.current_process()._config["tempdir"] is None


def test_the_watchdog_removes_the_segments_of_a_forked_process_that_ended_first(tmp_path):
    """gluonbench killed with -9 during a script's run: its watchdog ends the script's group and removes the MXNet
    segments its processes made, also those of a loader worker that ended between two of the watchdog's looks (its
    pid is in the run's file of forks); a segment of any other process stays."""
    from gluonbench.profiler.session import WATCHDOG
    from gluonbench.scratch import MX_SEGMENT_PATTERN

    ended = os.fork()
    if ended == 0:
        os._exit(0)
    os.waitpid(ended, 0)  # a worker that made its segment and ended
    shm = tmp_path / "shm"
    shm.mkdir()
    (shm / f"mx_{ended:x}_1a2b").write_bytes(b"batch")
    (shm / f"mx_{os.getpid():x}_1a2b").write_bytes(b"not the script's")
    forked = tmp_path / "forked"
    forked.write_text(f"{ended}\n")
    group = subprocess.Popen(["sleep", "60"], start_new_session=True)  # the script, still running
    since = time.time() - 5
    dog = subprocess.Popen(
        [sys.executable, "-c", WATCHDOG, str(group.pid), "GLUONBENCH_TREE=none", str(since), str(shm),
         MX_SEGMENT_PATTERN, str(forked)],
        stdin=subprocess.PIPE,
    )  # fmt: skip
    dog.stdin.close()  # gluonbench gone without saying 'done'
    assert dog.wait(timeout=30) == 0
    assert group.wait(timeout=30) == -signal.SIGKILL
    assert sorted(p.name for p in shm.iterdir()) == [f"mx_{os.getpid():x}_1a2b"]
