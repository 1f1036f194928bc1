"""Sources over a local folder and a real S3 server (moto on 127.0.0.1): File, FastFile, Pipe, and bad input."""

from __future__ import annotations

import collections
import os
from pathlib import Path

import pytest
from conftest import PLAN_LINE, make_unwritable, release, upload_folder

from gluonbench.data import recordio
from gluonbench.data.images import image_folder
from gluonbench.data.s3 import S3Store, parse_s3_uri
from gluonbench.data.store import LocalStore, safe_key
from gluonbench.errors import DataError
from gluonbench.sources import make_source
from gluonbench.sources.base import DataSet
from gluonbench.sources.fastfile import FastFileSource
from gluonbench.sources.file import FileSource


@pytest.fixture(scope="module")
def s3_data(s3_endpoint, jpeg_dir, packed_dir) -> dict[str, str]:
    return {
        "images": upload_folder(jpeg_dir, "s3://gluonbench-test/images", s3_endpoint),
        "packed": upload_folder(packed_dir, "s3://gluonbench-test/packed", s3_endpoint),
    }


def _expected(jpeg_dir: Path) -> collections.Counter:
    """(image bytes, label) of every image in the folder, as a multiset."""
    folder = image_folder(LocalStore(jpeg_dir).list(), str(jpeg_dir))
    return collections.Counter((LocalStore(jpeg_dir).get(o.key), label) for o, label in folder.items)


def test_s3_uri_parsing_and_key_safety():
    assert parse_s3_uri("s3://b/x/y/") == parse_s3_uri("s3://b/x/y")
    assert parse_s3_uri("s3://b").prefix == ""
    for bad in ("../x", "/etc/passwd", "a/../../b", "a\\\\b", "a//b"):
        with pytest.raises(DataError, match="escapes its root"):
            safe_key(bad, "test")


def test_local_and_s3_stores_agree(s3_endpoint, s3_data, packed_dir):
    local, remote = LocalStore(packed_dir), S3Store(s3_data["packed"], s3_endpoint)
    assert [(o.key, o.size) for o in local.list()] == [(o.key, o.size) for o in remote.list()]
    rec = next(o for o in local.list() if o.key.endswith(".rec"))
    assert remote.get(rec.key) == local.get(rec.key)
    assert remote.get_range(rec.key, 100, 5000) == local.get_range(rec.key, 100, 5000) == local.get(rec.key)[100:5000]


@pytest.mark.parametrize("where", ["local", "s3"])
@pytest.mark.parametrize("layout", ["images", "packed"])
@pytest.mark.parametrize("mode", ["file", "fastfile", "pipe"])
def test_every_mode_delivers_every_sample(mode, layout, where, jpeg_dir, packed_dir, s3_data, s3_endpoint, no_leaks):
    uri = s3_data[layout] if where == "s3" else str(jpeg_dir if layout == "images" else packed_dir)
    endpoint = s3_endpoint if where == "s3" else None
    options = {"threads": 3}
    if mode == "pipe":
        options.update(epochs=2, shuffle=True, seed=3, timeout=30)
    with make_source(mode, uri, endpoint, **options) as source:
        stats = source.stats
        assert stats.startup_s > 0 and stats.mode == mode
        epochs = [list(source.stream(e, shuffle=True, seed=3)) for e in range(2)]
        if mode == "file":
            assert stats.copy_s > 0 and stats.bytes_copied > 0 and stats.disk_used >= stats.bytes_copied
            cache = Path(stats.cache_dir)
            assert cache.is_dir() and len(list(cache.rglob("*.*"))) == stats.objects
        if mode == "fastfile":
            assert stats.copy_s == 0 and stats.disk_used == 0 and stats.list_s > 0
    if mode == "file":
        assert not cache.exists(), "a temporary cache is removed on close"
    want = _expected(jpeg_dir)
    for got in epochs:
        if mode == "pipe" and layout == "images":  # raw objects: no label in the stream
            assert collections.Counter(b for b, _ in got) == collections.Counter(b for b, _ in want.elements())
        else:
            assert collections.Counter(got) == want
    assert [b for b, _ in epochs[0]] != [b for b, _ in epochs[1]], "shuffled differently each epoch"


def test_fastfile_lists_first_then_reads_on_demand(s3_endpoint, s3_data):
    source = FastFileSource(s3_data["packed"], s3_endpoint, chunk_bytes=64 * 1024)
    calls = []
    real = source.store.get_range

    def counted(key, start, end):
        calls.append((key, start, end))
        return real(key, start, end)

    source.store.get_range = counted  # instrument the real client's range GETs
    source.open()
    assert calls == [], "open() lists and reads the index; no data object yet"
    n = len(source.dataset.samples)
    data, label = source.read(n // 2)
    ref = source.dataset.samples[n // 2]
    assert calls == [(ref.key, ref.start, ref.end)], "one byte-range GET for one sample"
    assert label >= 0 and data[:2] == b"\xff\xd8", "a JPEG with its label"
    calls.clear()
    list(source.stream(0))
    shards = source.dataset.objects
    assert {c[0] for c in calls} == {o.key for o in shards}
    assert all(end - start <= 64 * 1024 for _, start, end in calls), "shards read in bounded chunks"
    assert sum(end - start for _, start, end in calls) == sum(o.size for o in shards)


def test_file_mode_into_an_unwritable_cache(tmp_path, jpeg_dir):
    folder = make_unwritable(tmp_path / "ro")
    try:
        with pytest.raises(DataError, match=r"cannot write to the cache folder.*cache_dir"):
            FileSource(str(jpeg_dir), cache_dir=folder).open()
    finally:
        release(tmp_path / "ro")


def test_sweep_cli_bad_sources(cli, tmp_path, s3_endpoint, s3_data, jpeg_dir):
    def one_line(proc, *needles):
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr)
        lines = [line for line in proc.stderr.splitlines() if line.strip() and not PLAN_LINE.match(line)]
        assert len(lines) == 1, lines
        for needle in needles:
            assert needle in lines[0], lines[0]

    out = str(tmp_path / "out")
    one_line(cli("sweep", "--source", "fastfile", "--uri", str(tmp_path / "nope"), "--out", out), "does not exist")
    one_line(
        cli("sweep", "--source", "fastfile", "--uri", "s3://gluonbench-test/nothing-here", "--endpoint-url",
            s3_endpoint, "--out", out),
        "s3://gluonbench-test/nothing-here/ holds no objects",
    )  # fmt: skip
    one_line(
        cli("sweep", "--source", "file", "--uri", "s3://no-such-bucket-x/p", "--endpoint-url", s3_endpoint,
            "--out", out),
        "does not exist", "bucket",
    )  # fmt: skip
    one_line(cli("sweep", "--source", "pipe", "--uri", str(jpeg_dir), "--out", out), "gluonbench pack")
    blocked = make_unwritable(tmp_path / "ro")
    try:
        one_line(
            cli("sweep", "--source", "file", "--uri", str(jpeg_dir), "--cache-dir", str(blocked), "--out", out),
            "cannot write to the cache folder",
        )
    finally:
        release(tmp_path / "ro")
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out"), "no run folder for bad input"


def test_dataset_discovery_reads_the_index(packed_dir):
    ds = DataSet.discover(LocalStore(packed_dir))
    manifest = recordio.load_manifest(packed_dir)
    assert ds.kind == "recordio" and len(ds.samples) == manifest.records
    assert [o.key for o in ds.objects] == [s.rec for s in manifest.shards]
    for ref in ds.samples[:5]:
        payload = recordio.parse_record(LocalStore(packed_dir).get_range(ref.key, ref.start, ref.end), "t", ref.start)
        assert recordio.unpack(payload)[0].label >= 0
