"""Pipe-mode channels sharded per worker (ShardedByS3Key): each worker's producer streams only its objects
into its own FIFOs. A channel read shard by shard through real producers, and a dist_sync job on 127.0.0.1
training through ``--source pipe``."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest
from conftest import assert_one_clear_line, session_processes

RECORDS = 384
PER_SHARD = 64  # 6 shards of 64 records: 3 objects, 192 records per worker of 2


def _bmp_folder(mnist_dir: Path, out: Path, n: int) -> int:
    """``n`` real MNIST digits as BMPs (a fixed size each) in class folders; returns one packed record's size."""
    import cv2

    from gluonbench.data.idx import read_image_label_pair
    from gluonbench.data.recordio import frame, pack_header

    x, y = read_image_label_pair(mnist_dir / "train-images-idx3-ubyte.gz", mnist_dir / "train-labels-idx1-ubyte.gz")
    size = 0
    for i in range(n):
        ok, buf = cv2.imencode(".bmp", x[i])
        assert ok
        (out / str(int(y[i]))).mkdir(parents=True, exist_ok=True)
        (out / str(int(y[i])) / f"{i:05d}.bmp").write_bytes(buf.tobytes())
        size = len(frame(pack_header(0, 0) + buf.tobytes()))
    return size


@pytest.fixture(scope="module")
def channels(tmp_path_factory, mnist_dir) -> dict[str, Path]:
    """The same 384 digits packed twice: ``even`` in 6 shards of 64 records, ``uneven`` in 80, 80, 80, 80, 64."""
    from gluonbench.data.recordio import pack

    root = tmp_path_factory.mktemp("pipeshard")
    record = _bmp_folder(mnist_dir, root / "bmp", RECORDS)
    pack(root / "bmp", root / "even", shard_size=PER_SHARD * record, shuffle=True, seed=1)
    pack(root / "bmp", root / "uneven", shard_size=80 * record, shuffle=True, seed=2)
    return {"even": root / "even", "uneven": root / "uneven"}


def _objects(packed: Path) -> list[list[int]]:
    """CRC-32 of every record's image bytes, per data object in stream order (read from the files)."""
    from gluonbench.data.recordio import MANIFEST, Manifest, iter_records, unpack

    manifest = Manifest.from_json((packed / MANIFEST).read_text(), MANIFEST)
    return [[zlib.crc32(unpack(p)[1]) for _, p in iter_records(packed / s.rec)] for s in manifest.shards]


def _read(packed: Path, rank: int, count: int) -> tuple[list[int], object, Path]:
    from gluonbench.sources.pipe import PipeSource

    with PipeSource(str(packed), epochs=1, timeout=20, shard_index=rank, shard_count=count) as src:
        got = [zlib.crc32(body) for body, _ in src.stream(0)]
        fifo_dir = Path(src.stats.channel_dir)
        assert fifo_dir.parent.is_dir()  # the source's private folder; its producer made the FIFOs in fifo_dir
        return got, src.stats, fifo_dir


@pytest.mark.parametrize("count", [2, 3])
def test_a_channel_read_shard_by_shard(channels, count, no_leaks):
    """Worker r of N gets objects i % N == r through its own producer and FIFOs; shards disjoint, union = channel."""
    objects = _objects(channels["even"])
    assert len(objects) == 6 and all(len(o) == PER_SHARD for o in objects)
    seen: list[int] = []
    dirs = set()
    for rank in range(count):
        got, stats, fifo_dir = _read(channels["even"], rank, count)
        want = [crc for i, obj in enumerate(objects) if i % count == rank for crc in obj]
        assert got == want  # exactly its objects, in order, nothing else
        assert (stats.shard_index, stats.shard_count) == (rank, count)
        assert stats.objects == 6 // count and stats.samples == len(want) and stats.epoch_records is None
        assert not fifo_dir.parent.exists()  # removed when the source closed
        dirs.add(fifo_dir)
        seen += got
    assert len(dirs) == count  # no FIFO folder shared between workers
    assert sorted(seen) == sorted(crc for obj in objects for crc in obj)  # disjoint and covering
    assert len(set(seen)) == RECORDS


def test_unequal_shards_are_cut_at_the_smallest(channels, no_leaks):
    """5 objects for 2 workers (224 and 160 records): both read 160 per epoch, so they take equal steps."""
    objects = _objects(channels["uneven"])
    assert [len(o) for o in objects] == [80, 80, 80, 80, 64]
    got0, stats0, _ = _read(channels["uneven"], 0, 2)
    got1, stats1, _ = _read(channels["uneven"], 1, 2)
    assert (stats0.samples, stats1.samples) == (224, 160)
    assert stats0.epoch_records == 160 and stats1.epoch_records is None
    assert got0 == (objects[0] + objects[2] + objects[4])[:160]
    assert got1 == objects[1] + objects[3]


def test_bad_shards_are_refused(channels, tmp_path, no_leaks):
    from gluonbench.errors import DataError, GluonbenchError
    from gluonbench.sources.pipe import PipeSource

    with pytest.raises(GluonbenchError, match=r"rank must lie in 0\.\.1"):
        PipeSource(str(channels["even"]), shard_index=2, shard_count=2)
    with pytest.raises(GluonbenchError, match="go together"):
        PipeSource(str(channels["even"]), shard_index=0)
    with pytest.raises(GluonbenchError, match="outside producer"):
        PipeSource(str(channels["even"]), channel_dir=str(tmp_path), shard_index=0, shard_count=2)
    src = PipeSource(str(channels["even"]), shard_index=6, shard_count=7)
    with pytest.raises(DataError, match=r"shard 6 of 7 is empty.*at most 6 workers"):
        src.open()
    assert src.process is None  # refused before any producer started


def test_a_data_parallel_worker_asks_for_its_shard():
    """ScaleOut hands a pipe workload its rank (no MXNet needed): the producer, not the reader, shards."""
    from gluonbench.pipeline.scale import ScaleOut

    worker = ScaleOut(contexts=["cpu(0)"], kvstore="dist_sync", rank=1, num_workers=3)
    assert worker.workload_options({"mode": "pipe", "uri": "x"}) == {"shard_index": 1, "shard_count": 3}
    assert worker.workload_options({"mode": "file", "uri": "x"}) == {}  # sharded by sample instead
    assert worker.workload_options({"mode": "pipe", "channel_dir": "/opt/ml/input/data"}) == {}  # outside producer
    assert ScaleOut(contexts=["cpu(0)"]).workload_options({"mode": "pipe"}) == {}


def test_channel_dir_in_a_local_dist_job_is_one_line(cli, channels, tmp_path):
    """Two workers on this machine reading one outside channel folder would share its FIFOs."""
    config = tmp_path / "job.toml"
    config.write_text(
        f'workload = "source"\nkvstore = "dist_sync"\nhosts = [2]\nworkers = [0]\n'
        f'[options]\nmode = "pipe"\nuri = "{channels["even"]}"\nchannel_dir = "{tmp_path / "ch"}"\n'
    )
    proc = cli("sweep", "--config", str(config), "--out", str(tmp_path / "out"))
    assert_one_clear_line(proc, "channel_dir", "share one channel's FIFOs")


def test_several_devices_in_one_process_read_the_whole_channel(cli, channels, tmp_path, no_leaks):
    """--devices 2 is one process: no shard, the loader batch is per device times devices, split over both."""
    proc = cli(
        "sweep", "--ctx", "cpu", "--devices", "2", "--kvstore", "local", "--workers", "0",
        "--source", "pipe", "--uri", str(channels["even"]), "--batch-size", "8", "--max-batches", "6",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    (rec,) = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert rec["status"] == "ok" and rec["extra"]["devices"] == ["cpu(0)", "cpu(1)"]
    assert rec["source"]["shard_count"] is None and "shard_samples" not in rec["extra"]
    assert rec["source"]["records_read"] == rec["train_samples"] == 6 * 2 * 8
    assert rec["extra"]["params_equal_on_devices"] is True


def test_more_workers_than_objects_is_one_line(cli, channels, tmp_path, no_leaks):
    """Refused before any process starts: a worker without an object would have nothing to stream."""
    proc = cli(
        "sweep", "--kvstore", "dist_sync", "--hosts", "2,7", "--workers", "0", "--source", "pipe",
        "--uri", str(channels["even"]), "--out", str(tmp_path),
    )  # fmt: skip
    # a local channel's objects are counted before the first line
    assert_one_clear_line(proc, "6 data object(s) for 7 workers", "--hosts", "--shard-size", plan=False)
    assert not list(tmp_path.glob("*/runs.jsonl"))


# -- a dist_sync job through --source pipe -----------------------------------------------------------------


def _listening(port: int) -> bool:
    import psutil

    return any(c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in psutil.net_connections())


@pytest.mark.slow
def test_dist_sync_workers_stream_disjoint_shards(cli, channels, tmp_path, no_leaks):
    """Scheduler, 1 server, 2 workers on 127.0.0.1 train the seed's CNN for 24 steps each through --source pipe
    (12-25 s on the shared 2-core box, depending on the others' load)."""
    proc = cli(
        "sweep", "--kvstore", "dist_sync", "--hosts", "2", "--servers", "1", "--workers", "0",
        "--source", "pipe", "--uri", str(channels["even"]), "--batch-size", "8", "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    recs = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert sorted(r["extra"]["rank"] for r in recs) == [0, 1]
    objects = _objects(channels["even"])
    for r in recs:
        rank, src = r["extra"]["rank"], r["source"]
        assert r["status"] == "ok" and src["mode"] == "pipe"
        assert (src["shard_index"], src["shard_count"]) == (rank, 2)
        assert r["extra"]["shard_objects"] == 3 and r["extra"]["shard_samples"] == 192
        assert src["records_read"] == r["train_samples"] == 192  # 24 steps of 8
        mine = [crc for i, obj in enumerate(objects) if i % 2 == rank for crc in obj]
        assert src["records_crc32"] == sum(mine)  # exactly this worker's records
    # the shards are disjoint and cover the channel: counts and checksums add up to the whole channel's
    assert sum(r["source"]["records_read"] for r in recs) == RECORDS
    assert sum(r["source"]["records_crc32"] for r in recs) == sum(crc for obj in objects for crc in obj)
    # each worker had its own FIFOs, in the job's private TMPDIR; none is left
    fifo_dirs = {r["source"]["channel_dir"] for r in recs}
    assert len(fifo_dirs) == 2 and not any(Path(d).exists() for d in fifo_dirs)
    assert not any(Path(d).parents[1].exists() for d in fifo_dirs)  # the job's TMPDIR is gone with it
    job = recs[0]["extra"]["job"]
    assert job["params_identical"] is True and len({r["extra"]["param_sha256"] for r in recs}) == 1
    assert not _listening(job["port"])
    assert "n/a (no test split)" in proc.stdout + proc.stderr


def _job_processes() -> list:
    """Live node and producer processes started by this test session."""
    return session_processes("gluonbench.distributed.node", "gluonbench stream")


@pytest.mark.slow
def test_killed_pipe_worker_leaves_no_producer_or_fifo(channels, tmp_path, no_leaks):
    """A worker killed mid-run: the job stops, its producer dies with it and its FIFOs go with the job's TMPDIR."""
    import os
    import subprocess
    import sys
    import time

    from conftest import REPO

    proc = subprocess.Popen(
        [sys.executable, "-m", "gluonbench", "sweep", "--kvstore", "dist_sync", "--hosts", "2", "--workers", "0",
         "--source", "pipe", "--uri", str(channels["even"]), "--batch-size", "8", "--epochs", "200",
         "--out", str(tmp_path / "out")],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )  # fmt: skip
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 90:
            producers = [p for p in _job_processes() if "gluonbench stream" in " ".join(p.cmdline())]
            if len(producers) == 2 and list((tmp_path / "out").glob("*/logs/.progress-*")):
                break
            time.sleep(0.2)
        assert len(producers) == 2, "the workers never started their producers"
        assert {"--shard-index 0", "--shard-index 1"} == {
            f"--shard-index {p.cmdline()[p.cmdline().index('--shard-index') + 1]}" for p in producers
        }
        victim = producers[0].parent()
        job_tmp = Path(victim.environ()["TMPDIR"])
        assert job_tmp.is_dir() and list(job_tmp.glob("gluonbench-pipe-*/data"))  # the workers' FIFO folders
        time.sleep(2)  # training
        victim.kill()
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    assert "distributed job stopped" in err and "Traceback" not in err
    assert not job_tmp.exists()  # every worker's FIFOs went with the job
    t0 = time.monotonic()
    while _job_processes() and time.monotonic() - t0 < 5:
        time.sleep(0.2)
    assert _job_processes() == []
