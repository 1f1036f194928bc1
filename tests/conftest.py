"""Shared fixtures: the real data sets beside the checkout, a CLI runner, and a leak check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]


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
    return subprocess.run(
        [sys.executable, "-m", "gluonbench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=cwd or REPO,
    )


@pytest.fixture
def cli():
    return run_cli


def _mx_shm() -> set[str]:
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith(("mx_", "sem.mp-"))}
    except OSError:
        return set()


@pytest.fixture
def no_leaks():
    """Fail if the test leaves a child process or an MXNet shared-memory segment behind."""
    me = psutil.Process()
    before_children = {p.pid for p in me.children(recursive=True)}
    before_shm = _mx_shm()
    before_all = {p.pid for p in psutil.process_iter()}
    yield
    leftover = [p for p in me.children(recursive=True) if p.pid not in before_children]
    # orphans re-parented to init: new processes still running gluonbench code
    orphans = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if p.pid in before_all or p.pid == me.pid:
            continue
        cmd = " ".join(p.info.get("cmdline") or [])
        try:
            reparented = p.ppid() == 1
        except psutil.Error:
            continue
        # a gluonbench process with a live parent belongs to someone else (e.g. another checkout's tests)
        if reparented and "gluonbench" in cmd and "pytest" not in cmd:
            orphans.append(f"{p.pid}: {cmd}")
    assert not leftover, f"child processes left running: {leftover}"
    assert not orphans, f"orphaned processes: {orphans}"
    assert _mx_shm() <= before_shm, f"shared memory left: {_mx_shm() - before_shm}"
