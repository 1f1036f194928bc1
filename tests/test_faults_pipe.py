"""Faults, class 2 (orphans) for Pipe mode: a producer killed with SIGKILL blocks nobody."""

from __future__ import annotations

import os
import random
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gluonbench.sources.pipe import PipeChannel, PipeError, fifo_path


@pytest.fixture
def blob_dir(tmp_path) -> Path:
    """Objects larger than the pipe buffer, so a producer is mid-epoch while the reader waits."""
    root = tmp_path / "blobs"
    root.mkdir()
    rng = random.Random(12)
    for i in range(4):
        (root / f"part-{i}.bin").write_bytes(rng.randbytes(1_500_000))
    return root


def _expected(blob_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(blob_dir.iterdir()))


def _producer(src: Path, ch: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "stream", str(src), "--channel", "train", "--channel-dir", str(ch), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _killed_mid_epoch(blob_dir: Path, ch: Path) -> None:
    """Start a producer, read a little of epoch 0, kill -9 it: the FIFO it made stays behind."""
    proc = _producer(blob_dir, ch, "--open-timeout", "30")
    chunks = PipeChannel(ch, "train", framing="none", timeout=20).chunks(0)
    next(chunks)
    proc.kill()
    proc.wait()
    t0 = time.monotonic()
    with pytest.raises(PipeError, match="died mid-epoch"):
        for _ in chunks:
            pass
    assert time.monotonic() - t0 < 10, "a reader without the producer's process still learns it died"


def test_reader_without_the_producer_process_learns_it_was_killed(blob_dir, tmp_path, no_leaks):
    ch = tmp_path / "ch"
    _killed_mid_epoch(blob_dir, ch)
    assert stat.S_ISFIFO(os.lstat(fifo_path(ch, "train", 0)).st_mode), "kill -9 leaves the FIFO (nobody removes it)"


def test_reader_of_a_stale_fifo_times_out_never_hangs(blob_dir, tmp_path, no_leaks):
    ch = tmp_path / "ch"
    _killed_mid_epoch(blob_dir, ch)
    t0 = time.monotonic()
    with pytest.raises(PipeError, match=r"no data on .* for 2 s"):
        for _ in PipeChannel(ch, "train", framing="none", timeout=2).chunks(0):
            pass
    assert time.monotonic() - t0 < 10


def test_next_producer_reuses_the_stale_fifo_for_a_reader_already_waiting(blob_dir, tmp_path, no_leaks):
    """A SageMaker-style reader (plain blocking open) on the stale FIFO gets the restarted producer's epoch."""
    ch = tmp_path / "ch"
    _killed_mid_epoch(blob_dir, ch)
    path = fifo_path(ch, "train", 0)
    got: list[bytes] = []

    def plain_reader() -> None:
        with open(path, "rb") as f:  # blocks until a writer opens the FIFO: the old inode, if it was replaced
            got.append(f.read())

    reader = threading.Thread(target=plain_reader, daemon=True)
    reader.start()
    time.sleep(0.5)  # the reader is blocked in open() on the stale FIFO
    proc = _producer(blob_dir, ch, "--open-timeout", "30")
    try:
        reader.join(60)
        alive = reader.is_alive()
        if alive:  # release the thread before failing
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
            reader.join(10)
        assert not alive, "the waiting reader was left on the replaced FIFO"
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, proc.stderr.read()
    assert got == [_expected(blob_dir)]
    assert not path.exists()
