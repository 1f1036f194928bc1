"""Shared fixtures: the real data sets beside the checkout, a CLI runner, and a leak check."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]

# a suite started in the background by a non-interactive shell (`bash .ci/run &`, a CI runner's step)
# inherits SIGINT ignored, and every gluonbench process a test starts would inherit that too: the Ctrl-C
# tests would then wait for a command that never hears its Ctrl-C. Python's own handler here makes the
# processes started from this one get SIGINT's default action back (a handler does not survive exec).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# processes started by this test session carry this mark, so the leak check below ignores
# processes of other sessions on a shared machine (another engineer's test run, say)
SESSION_MARK = "GLUONBENCH_TEST_SESSION"
os.environ[SESSION_MARK] = str(os.getpid())

# the doctor's ceilings and the synthetic data sets are cached in $GLUONBENCH_CACHE (default
# ~/.cache/gluonbench): the session uses a temporary folder instead, so no test writes into $HOME. The
# process that starts the session makes it (pytest-xdist's workers inherit it) and removes it at the end.
CACHE_ENV = "GLUONBENCH_CACHE"
_SESSION_CACHE: str | None = None
if not os.environ.get(CACHE_ENV):
    _SESSION_CACHE = tempfile.mkdtemp(prefix="gluonbench-test-cache-")
    os.environ[CACHE_ENV] = _SESSION_CACHE


def pytest_unconfigure(config) -> None:
    if _SESSION_CACHE:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


LONGEST_FIRST = (
    "test_diagnose.py",
    "test_faults_reliab.py",
    "test_check.py",
    "test_sweep_e2e.py",
    "test_script.py",
    "test_html_report.py",
    "test_vision_zoo.py",
    "test_user_code_leftovers.py",
    "test_device_paths.py",
    "test_profile_cli.py",
    "test_faults_shm.py",
    "test_script_check.py",
    "test_script_commands.py",
    "test_doctor.py",
    "test_diagnose_cli.py",
    "test_midrun_faults_all.py",
    "test_io_emulate.py",
    "test_mxops.py",
    "test_pipeline.py",
    "test_compare.py",
)
"""The files whose tests take longest in all (a fresh-clone run's ``--durations``), collected first: pytest-xdist
hands each worker a whole file in collection order, and a long file handed out last leaves the other workers idle
while it runs (on two cores, the last minute of the suite ran at 60 % of them). The order changes nothing else."""


def pytest_collection_modifyitems(config, items) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its own order


def data_root() -> Path:
    return Path(os.environ.get("GLUONBENCH_DATA") or REPO.parent / "shared" / "data")


@pytest.fixture(scope="session")
def mnist_dir() -> Path:
    folder = data_root() / "mnist"
    if not (folder / "train-images-idx3-ubyte.gz").is_file():
        pytest.fail(f"real MNIST not found at {folder}; set GLUONBENCH_DATA to the folder holding mnist/")
    return folder


@pytest.fixture(scope="session")
def fashion_dir() -> Path:
    folder = Path("/usr/share/datasets/fashion-mnist")
    if not (folder / "train-images-idx3-ubyte.gz").is_file():
        pytest.skip("Debian's dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)")
    return folder


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No data-set look-up hints from the outside; MXNet's cache in a fresh folder; no downloads."""
    monkeypatch.delenv("GLUONBENCH_DATA", raising=False)
    monkeypatch.setenv("MXNET_HOME", str(tmp_path / "mxnet-home"))
    monkeypatch.setenv("GLUONBENCH_OFFLINE", "1")
    return tmp_path


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 600, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """``python -m gluonbench ARGS`` in a real subprocess."""
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    proc = subprocess.run(
        [sys.executable, "-m", "gluonbench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=cwd or REPO,
    )
    assert_worded(proc, args, cwd or REPO)
    return proc


UNWORDED = ("\u27e6", "\u27ea")
"""the opening marks of a parameter or an example not yet worded (gluonbench.names.param): never in output"""


def assert_worded(proc: subprocess.CompletedProcess, args: Sequence[str], cwd: Path) -> None:
    """Every parameter a message names is worded in what the command printed and in the text files it wrote
    under ``--out`` (no raw marker of :func:`gluonbench.names.param` leaks)."""
    for stream in (proc.stdout or "", proc.stderr or ""):
        assert not any(mark in stream for mark in UNWORDED), stream
    if "--out" in args and args.index("--out") + 1 < len(args):
        out = Path(cwd) / args[args.index("--out") + 1]
        try:
            paths = list(out.rglob("*")) if out.is_dir() and not out.is_symlink() else []
        except OSError:  # a name the file system refuses (a test of bad --out values)
            paths = []
        for path in paths:
            if path.suffix in (".txt", ".md", ".json", ".jsonl", ".html", ".xml", ".log") and path.is_file():
                text = path.read_text(errors="replace")
                assert not any(mark in text for mark in UNWORDED), path


def run_clis(
    *calls: Sequence[str], timeout: float = 600, cwd: Path | None = None, env: dict[str, str] | None = None
) -> list[subprocess.CompletedProcess]:
    """:func:`run_cli` of each argument list at once (independent commands that measure nothing, such as bad
    inputs or ``report``): a test waits for the slowest start-up, not for the sum of them. In the order given;
    ``env`` for each of them."""
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(lambda args: run_cli(*args, env=env, timeout=timeout, cwd=cwd), calls))


PLAN_LINE = re.compile(r"^(sweep|diagnose|tune|io): |^profile: running ")
"""the first line of a long command (what is about to run), see gluonbench.console"""


T = TypeVar("T")


def with_more_budget(measure: Callable[[float], T], budgets: Sequence[float], ok: Callable[[T], bool]) -> T:
    """``measure(budget)`` with each budget in turn until ``ok(result)``; the last result either way.

    A machine busy with other jobs can leave a short measurement inconclusive, a probe without a block, or a
    loader stalled: what the tool's own advice says to do then is to measure again with a larger budget. The
    test's assertions run on the result this returns, so a wrong answer still fails.
    """
    result = measure(budgets[0])
    for budget in budgets[1:]:
        if ok(result):
            break
        result = measure(budget)
    return result


def raising_budget(call: Callable[[float], T], budgets: Sequence[float]) -> T:
    """``call(budget)`` with each budget in turn while it fails with the tool's own advice to raise the budget.

    ``tune`` on a busy machine can spend a small budget's confirmation on worker start-ups and say so ("raise
    budget_s"); the test then does what the message says. Any other error, or the advice at the last
    budget, fails the test.
    """
    from gluonbench.errors import GluonbenchError

    for budget in budgets[:-1]:
        try:
            return call(budget)
        except GluonbenchError as exc:
            if "raise budget_s" not in str(exc):
                raise
    return call(budgets[-1])


def assert_one_clear_line(proc: subprocess.CompletedProcess, *needles: str, plan: bool = False) -> None:
    """Bad input: exit 2, no traceback, exactly one line on stderr, naming each of ``needles``.

    Bad input is one line, before anything else: every input a command can check without the network is
    checked before its first line (what it is about to run, gluonbench.console). ``plan=True`` lets that
    line precede the error, for what is only found by reaching a remote store (a silent ``--endpoint-url``) or
    by measuring (a stage that stalls past the budget)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    if plan and len(lines) == 2 and PLAN_LINE.match(lines[0]):
        lines = lines[1:]
    assert len(lines) == 1, lines
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def cli():
    return run_cli


def _mx_shm() -> set[str]:
    from gluonbench.scratch import shm_entries

    return {n for n in shm_entries() if n.startswith(("mx_", "sem.mp-"))}


LEFTOVER_WAIT_S = 10.0
"""how long the leak check lets a child the code made go (a DataLoader's pool reaps its workers when the loader is
collected: until then they are zombies); one still there after this is left behind"""


def _still_there(me: psutil.Process, before: set[int]) -> list[psutil.Process]:
    """The children ``me`` has that it did not have before, once those that are going have gone (at most
    :data:`LEFTOVER_WAIT_S`; a garbage collection first, so that a loader nothing holds ends its pool)."""
    deadline = time.monotonic() + LEFTOVER_WAIT_S
    while True:
        leftover = [p for p in me.children(recursive=True) if p.pid not in before]
        if not leftover or time.monotonic() > deadline:
            return leftover
        gc.collect()
        time.sleep(0.2)


def _ours(p: psutil.Process) -> bool:
    try:
        return p.environ().get(SESSION_MARK) == os.environ[SESSION_MARK]
    except (psutil.Error, OSError):
        return True  # cannot tell: count it


def session_processes(*needles: str) -> list[psutil.Process]:
    """Live processes started by this test session whose command line contains one of ``needles``."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info.get("cmdline") or [])
        if any(n in cmd for n in needles):
            try:
                if p.environ().get(SESSION_MARK) == os.environ[SESSION_MARK]:
                    out.append(p)
            except psutil.Error:
                continue
    return out


def _children(pid: int) -> list[int]:
    """The children of ``pid``, read from ``/proc/PID/task/TID/children`` (every thread's): a walk down from this
    process reads its own tree only, where psutil's ``children(recursive=True)`` reads every process's state."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
    return out


class _Descendants:
    """Every pid that was a descendant of this process while the test ran (polled every 50 ms: a loader worker lives
    far longer; the poll is the suite's own cost, so it walks this process's tree alone)."""

    def __init__(self) -> None:
        self.me = psutil.Process()
        self.pids: set[int] = {self.me.pid}
        self._tree = os.path.exists(f"/proc/{self.me.pid}/task/{self.me.pid}/children")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(0.05)

    def sample(self) -> None:
        if not self._tree:  # a kernel without the children files: every process's state
            try:
                self.pids.update(p.pid for p in self.me.children(recursive=True))
            except psutil.Error:
                pass
            return
        frontier = [self.me.pid]
        while frontier:
            found = _children(frontier.pop())
            self.pids.update(found)
            frontier.extend(found)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sample()


def _mapped_by_others(names: set[str], ours: set[int]) -> set[str]:
    """Those of ``names`` (files in /dev/shm) that a live process outside this test has mapped or open."""
    found: set[str] = set()
    for p in psutil.process_iter():
        if p.pid in ours or not names - found:
            continue
        try:
            text = Path(f"/proc/{p.pid}/maps").read_text() + " ".join(
                os.readlink(f"/proc/{p.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{p.pid}/fd")
            )
        except OSError:
            continue
        found.update(n for n in names if f"/dev/shm/{n}" in text)
    return found


def created_by(names: set[str], pids: set[int]) -> set[str]:
    """Those of ``names`` (new /dev/shm segments) this test made, not another process on a shared machine.

    MXNet names its segments ``mx_<pid hex>_<id hex>``: one is ours when that pid was our descendant.
    Python's ``sem.mp-*`` name no process: one is ours unless a live process outside the test maps it.
    """
    from gluonbench.scratch import mx_segment_owner

    mine = {n for n in names if (owner := mx_segment_owner(n)) is None or owner in pids}
    return mine - _mapped_by_others({n for n in mine if not n.startswith("mx_")}, pids)


def scratch_folders(kinds: tuple[str, ...]) -> set[str]:
    """The names of gluonbench's scratch folders of ``kinds`` (``against``, ``script``) in the temp folder now."""
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith(tuple(f"gluonbench-{k}-" for k in kinds))}


def scratch_left(before: set[str], kinds: tuple[str, ...]) -> set[str]:
    """The scratch folders of ``kinds`` made since ``before`` (:func:`scratch_folders`) whose owner has ended: left
    behind. A folder whose owner still runs is another test's command at work on a shared machine, not a leftover."""
    from gluonbench.scratch import owner_alive

    return {n for n in scratch_folders(kinds) - before if not owner_alive(n)}


@contextlib.contextmanager
def leak_check() -> Iterator[None]:
    """Fail if the code run inside leaves a child process or an MXNet shared-memory segment behind.

    Only what it made counts: on a shared machine other processes come and go, and make and drop their own
    /dev/shm segments, meanwhile. :func:`no_leaks` for one test; a module-scoped fixture uses this directly.
    """
    me = psutil.Process()
    before_children = {p.pid for p in me.children(recursive=True)}
    before_shm = _mx_shm()
    before_all = {p.pid for p in psutil.process_iter()}
    tracker = _Descendants()
    try:
        yield
    finally:
        tracker.stop()
    leftover = _still_there(me, before_children)
    # orphans re-parented to init: new processes still running gluonbench code
    orphans = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if p.pid in before_all or p.pid == me.pid:
            continue
        cmd = " ".join(p.info.get("cmdline") or [])
        if "gluonbench" in cmd and "pytest" not in cmd and _ours(p):
            orphans.append(f"{p.pid}: {cmd}")
    assert not leftover, f"child processes left running: {leftover}"
    assert not orphans, f"orphaned processes: {orphans}"
    left = created_by(_mx_shm() - before_shm, tracker.pids)
    assert not left, f"shared memory left: {left}"


@pytest.fixture
def no_leaks():
    """Fail if the test leaves a child process or an MXNet shared-memory segment behind (:func:`leak_check`)."""
    with leak_check():
        yield


# -- S3: a real S3-compatible server (moto's standalone server) on 127.0.0.1, never the internet --


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint():
    """``http://127.0.0.1:PORT`` of a moto server for this session; fake credentials in the environment."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    creds = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    saved = {k: os.environ.get(k) for k in creds}
    os.environ.update(creds)  # inherited by child processes (producers, run children)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def upload_folder(folder: Path, uri: str, endpoint: str) -> str:
    """Put every file under ``folder`` at ``uri`` (s3://bucket/prefix) on the test server; return ``uri``."""
    from gluonbench.data.s3 import S3Store

    store = S3Store(uri, endpoint)
    store.ensure_bucket()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            store.put(path.relative_to(folder).as_posix(), path.read_bytes())
    return uri


# -- files and folders that refuse access, also for root --


def make_unwritable(folder: Path) -> Path:
    """A folder nothing can be written into: chmod 555, plus the immutable flag when running as root."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o555)
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
            # no chattr on this file system: a path under a regular file cannot be created by anyone
            blocker = folder.parent / (folder.name + "-is-a-file")
            blocker.write_text("")
            return blocker / "cache"
    return folder


def release(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
    if folder.exists():
        folder.chmod(0o755)


def make_unreadable(path: Path) -> None:
    """chmod 000; root reads through that, so as root the file becomes a link to nowhere (open fails too)."""
    path.chmod(0o000)
    if os.geteuid() == 0:
        path.unlink()
        path.symlink_to(path.with_name(".gone-" + path.name))


# -- small real data sets, made once per session --


@pytest.fixture(scope="session")
def jpeg_dir(tmp_path_factory, mnist_dir) -> Path:
    """About 60 real JPEGs (~12 KB, MNIST digits) in one sub-folder per class."""
    from gluonbench.data.images import make_jpeg_folder

    folder = tmp_path_factory.mktemp("jpeg") / "images"
    make_jpeg_folder(folder, 720_000, file_bytes=12_000, mnist_dir=mnist_dir)
    return folder


@pytest.fixture(scope="session")
def packed_dir(tmp_path_factory, jpeg_dir) -> Path:
    """``jpeg_dir`` packed into 3 or more RecordIO shards."""
    from gluonbench.data.recordio import pack

    out = tmp_path_factory.mktemp("packed") / "packed"
    pack(jpeg_dir, out, shard_size=250_000, shuffle=True, seed=1)
    return out


# numpy >= 1.24 (Python 3.12's pin) removed np.bool & co.; prepended to a fresh interpreter's code
EMULATE_NUMPY_124 = textwrap.dedent(
    """
    import numpy as np
    removed = ("bool", "int", "float", "complex", "object", "str")
    original = np.__getattr__
    def no_aliases(name):
        if name in removed:
            raise AttributeError(name)
        return original(name)
    np.__getattr__ = no_aliases
    for name in removed:
        np.__dict__.pop(name, None)
    try:
        np.bool
    except AttributeError:
        pass
    else:
        raise SystemExit("the emulation failed: numpy still has np.bool")
    """
)
