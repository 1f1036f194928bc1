"""Pipe mode: SageMaker's FIFO protocol with a real producer process, real FIFOs and every way a stream breaks."""

from __future__ import annotations

import gzip
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gluonbench.data import recordio
from gluonbench.sources.pipe import PipeChannel, PipeError, fifo_path

SIZES = [1, 1000, 300_000, 1_500_000, 7, 2_100_000, 40_000]


@pytest.fixture(scope="module")
def blob_src(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    """A folder of objects of awkward sizes (one byte to beyond the 1 MiB pipe buffer), and their bytes."""
    root = tmp_path_factory.mktemp("blobs")
    rng = random.Random(4)
    objects = {}
    for i, size in enumerate(SIZES):
        key = f"part-{i:02d}.bin"
        objects[key] = rng.randbytes(size)
        (root / key).write_bytes(objects[key])
    return root, objects


@pytest.fixture
def blob_dir(blob_src) -> Path:
    return blob_src[0]


@pytest.fixture
def blobs(blob_src) -> dict[str, bytes]:
    return blob_src[1]


def producer(src: Path | str, channel_dir: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "stream", str(src), "--channel", "train", "--channel-dir",
         str(channel_dir), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def drain(channel: PipeChannel, epoch: int) -> bytes:
    return b"".join(bytes(chunk) for chunk in channel.chunks(epoch))


def test_fifo_protocol_epoch_after_epoch(blobs, blob_dir, tmp_path, no_leaks):
    data_dir = tmp_path / "opt" / "ml" / "input" / "data"  # the SageMaker layout, used as is
    proc = producer(blob_dir, data_dir, "--epochs", "3", "--open-timeout", "30")
    channel = PipeChannel(data_dir, "train", framing="none", timeout=30)
    want = b"".join(blobs[k] for k in sorted(blobs))
    for epoch in range(3):
        path = fifo_path(data_dir, "train", epoch)
        channel._wait_for_fifo(path)
        assert stat.S_ISFIFO(path.stat().st_mode) and stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
        assert drain(channel, epoch) == want  # FullyReplicated, no shuffle: objects concatenated in key order
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert [line.split(":")[0] for line in out.splitlines()] == ["epoch 0", "epoch 1", "epoch 2"]
    assert f"{len(want)} bytes" in out.splitlines()[0]
    assert not data_dir.exists(), "FIFOs and the folder the producer made are removed"


def test_shuffle_sharding_gzip_and_recordio_wrapper(blobs, tmp_path, no_leaks):
    src = tmp_path / "gz"
    src.mkdir()
    for key, data in blobs.items():
        (src / (key + ".gz")).write_bytes(gzip.compress(data, compresslevel=1))
    keys = sorted(k + ".gz" for k in blobs)

    def run(*args: str) -> list[list[bytes]]:
        ch = tmp_path / f"ch{len(os.listdir(tmp_path))}"
        proc = producer(src, ch, "--gzip", "--record-wrapper", "recordio", "--open-timeout", "30", *args)
        channel = PipeChannel(ch, "train", framing="recordio", timeout=30)
        epochs = [list(channel.records(e)) for e in range(2)]
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        return epochs

    plain = [blobs[k[:-3]] for k in keys]
    a = run("--epochs", "2", "--shuffle", "--seed", "5")
    b = run("--epochs", "2", "--shuffle", "--seed", "5")
    assert a == b, "the same seed gives the same order"
    assert a[0] != a[1] and sorted(a[0]) == sorted(a[1]) == sorted(plain), "each epoch a new permutation"
    shards = [run("--epochs", "2", "--shard-index", str(i), "--shard-count", "3")[0] for i in range(3)]
    for i, got in enumerate(shards):
        assert got == plain[i::3], "ShardedByS3Key: object i goes to shard i mod K"


def test_killed_producer_makes_the_consumer_raise(blob_dir, tmp_path, no_leaks):
    ch = tmp_path / "ch"
    proc = producer(blob_dir, ch, "--epochs", "2", "--open-timeout", "30")
    channel = PipeChannel(ch, "train", framing="none", timeout=20, producer=proc)
    chunks = channel.chunks(0)
    next(chunks)  # mid-epoch: the producer is blocked on a full pipe
    proc.kill()
    t0 = time.monotonic()
    with pytest.raises(PipeError, match=r"died mid-epoch.*SIGKILL"):
        for _ in chunks:
            pass
    assert time.monotonic() - t0 < 10
    proc.communicate()


def test_producer_dead_before_the_fifo(tmp_path, no_leaks):
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"])
    proc.wait()
    with pytest.raises(PipeError, match=r"ended \(exit code 3\) before creating"):
        drain(PipeChannel(tmp_path, "train", timeout=30, producer=proc), 0)
    # without the producer's process (as on SageMaker): a timeout, never a hang
    t0 = time.monotonic()
    with pytest.raises(PipeError, match=r"did not appear within 0\.5 s"):
        drain(PipeChannel(tmp_path, "train", timeout=0.5), 0)
    assert time.monotonic() - t0 < 5


def test_hung_producer_times_out_the_consumer(blob_dir, tmp_path, no_leaks):
    ch = tmp_path / "ch"
    proc = producer(blob_dir, ch, "--open-timeout", "30")
    try:
        # the producer is a new Python process, which on a busy machine can take seconds to make its FIFO: the
        # timeout under test starts once the FIFO is there (waiting for it to appear has tests of its own)
        deadline = time.monotonic() + 60
        while not (ch / "train_0").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the producer made no FIFO"
            time.sleep(0.05)
        channel = PipeChannel(ch, "train", framing="none", timeout=3.0)  # no producer handle: SageMaker's view
        chunks = channel.chunks(0)
        got = len(next(chunks))
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            with pytest.raises(PipeError, match=r"no data on .* for 3 s"):
                for chunk in chunks:
                    got += len(chunk)
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        # the consumer closed the FIFO: the producer sees EPIPE, and with no later epoch it ends cleanly
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:  # a failed assertion above: the producer goes with the test
            proc.kill()
            proc.communicate()


def test_consumer_that_stops_mid_epoch(blobs, blob_dir, tmp_path, no_leaks):
    ch = tmp_path / "ch"
    proc = producer(blob_dir, ch, "--epochs", "3", "--open-timeout", "2")
    channel = PipeChannel(ch, "train", framing="none", timeout=30)
    chunks = channel.chunks(0)
    next(chunks)
    chunks.close()  # stop mid-epoch 0: the producer must move on, not block
    assert drain(channel, 1) == b"".join(blobs[k] for k in sorted(blobs))
    # then stop for good: the producer waits at most --open-timeout for epoch 2's reader
    t0 = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - t0 < 15
    assert proc.returncode == 2
    assert "epoch 0:" in out and "incomplete" in out.splitlines()[0]
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "no consumer opened" in lines[0] and "train_2" in lines[0], err
    assert not ch.exists(), "no FIFO left behind"


def test_stalled_consumer_does_not_block_the_producer(blob_dir, tmp_path, no_leaks):
    ch = tmp_path / "ch"
    proc = producer(blob_dir, ch, "--write-timeout", "1", "--open-timeout", "30")
    channel = PipeChannel(ch, "train", timeout=30)
    path = fifo_path(ch, "train", 0)
    channel._wait_for_fifo(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # opened, never read
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        os.close(fd)
    assert proc.returncode == 2 and "stopped reading for 1 s" in err, err
    assert not ch.exists()


def test_packed_shards_stream_as_one_recordio_stream(packed_dir, tmp_path, no_leaks):
    """With no wrapper, concatenated .rec shards are a RecordIO stream of image records (labels included)."""
    ch = tmp_path / "ch"
    proc = producer(packed_dir, ch, "--open-timeout", "30")
    samples = list(PipeChannel(ch, "train", timeout=30).samples(0))
    proc.communicate(timeout=30)
    manifest = recordio.load_manifest(packed_dir)
    want = [recordio.unpack(p) for s in manifest.shards for _, p in recordio.iter_records(packed_dir / s.rec)]
    assert [(b, int(h.label)) for h, b in want] == samples


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--shard-index", "3", "--shard-count", "3"], "--shard-index must be in 0..2"),
        (["--shard-index", "1"], "go together"),
        (["--epochs", "0"], "--epochs must be at least 1"),
        (["--record-wrapper", "zip"], "invalid choice"),
    ],
)
def test_stream_bad_arguments(cli, blob_dir, tmp_path, args, needle):
    proc = cli("stream", str(blob_dir), "--channel", "train", "--channel-dir", str(tmp_path / "ch"), *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "ch").exists()


def test_stream_missing_source(cli, tmp_path):
    proc = cli("stream", str(tmp_path / "nope"), "--channel", "train", "--channel-dir", str(tmp_path / "ch"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "ch").exists()
