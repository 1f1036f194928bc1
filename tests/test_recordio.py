"""RecordIO: MXNet-exact framing, pack + verify, MXNet's own readers, and every way a shard can be bad."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct

import numpy as np
import pytest
from conftest import assert_one_clear_line, make_unreadable

from gluonbench.data import recordio
from gluonbench.data.idx import read_image_label_pair, write_idx
from gluonbench.data.store import LocalStore
from gluonbench.errors import DataError
from gluonbench.sources.base import DataSet
from gluonbench.sources.fastfile import FastFileSource

PAYLOADS = [
    b"abcd" + recordio.MAGIC_BYTES + b"efgh" + recordio.MAGIC_BYTES,  # split twice, ends on the magic
    recordio.MAGIC_BYTES + b"xy",
    b"q" * 5,
    b"ab" + recordio.MAGIC_BYTES + b"cd",  # unaligned magic: not split
    bytes(range(256)) * 40,
    b"",
]


def test_framing_is_byte_identical_to_mxnet_and_parses_back(tmp_path):
    from gluonbench._mx import mx

    path = tmp_path / "t.rec"
    writer = mx.recordio.MXRecordIO(str(path), "w")
    for p in PAYLOADS:
        writer.write(p)
    writer.close()
    raw = path.read_bytes()
    assert raw == b"".join(recordio.frame(p) for p in PAYLOADS)
    # fed one byte at a time, records spanning every possible chunk boundary
    parser = recordio.RecordParser("t.rec")
    got = [r for i in range(len(raw)) for r in parser.feed(raw[i : i + 1])]
    parser.finish()
    assert got == PAYLOADS
    reader = mx.recordio.MXRecordIO(str(path), "r")
    assert [reader.read() for _ in PAYLOADS] == PAYLOADS


def test_pack_verify_and_mxnet_reads_the_shards(tmp_path, jpeg_dir, cli):
    from gluonbench._mx import gluon, mx

    out = tmp_path / "out"
    proc = cli("pack", str(jpeg_dir), str(out), "--shard-size", "200KB")
    assert proc.returncode == 0, proc.stderr
    assert "packed" in proc.stdout and "shard(s)" in proc.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    files = sorted(p for p in jpeg_dir.rglob("*.jpg"))
    assert manifest["records"] == len(files) and len(manifest["shards"]) >= 3
    assert manifest["classes"] == sorted(p.name for p in jpeg_dir.iterdir())
    for s in manifest["shards"]:
        rec = out / s["rec"]
        assert rec.name.startswith("images-") and rec.stat().st_size == s["bytes"] <= 200_000
        assert hashlib.sha256(rec.read_bytes()).hexdigest() == s["sha256"]
    assert sum(s["bytes"] for s in manifest["shards"]) == manifest["bytes"]
    assert not list(out.glob(".pack-*")), "no temporary folder left"

    proc = cli("verify", str(out))
    assert proc.returncode == 0 and "ok:" in proc.stdout, proc.stderr

    # MXNet's own readers, unchanged: each record is the original file's bytes behind an IRHeader
    by_id = {i: p for i, p in enumerate(sorted(files, key=lambda p: p.relative_to(jpeg_dir).as_posix()))}
    first = out / manifest["shards"][0]["rec"]
    reader = mx.recordio.MXIndexedRecordIO(str(first.with_suffix(".idx")), str(first), "r")
    for key in reader.keys:
        header, body = mx.recordio.unpack(reader.read_idx(key))
        assert header.id == key and body == by_id[key].read_bytes()
        assert manifest["classes"][int(header.label)] == by_id[key].parent.name
    reader.close()
    ds = gluon.data.vision.ImageRecordDataset(str(first))
    img, label = ds[0]
    assert img.shape[2] == 3 and img.shape[0] > 28 and 0 <= label < 10
    it = mx.io.ImageRecordIter(
        path_imgrec=str(first), path_imgidx=str(first.with_suffix(".idx")), data_shape=(3, 32, 32),
        batch_size=4, resize=32,
    )  # fmt: skip
    batch = next(iter(it))
    assert batch.data[0].shape == (4, 3, 32, 32)


def test_pack_idx_dataset_is_lossless(tmp_path, mnist_dir):
    from gluonbench._mx import mx

    x, y = read_image_label_pair(mnist_dir / "train-images-idx3-ubyte.gz", mnist_dir / "train-labels-idx1-ubyte.gz")
    src = tmp_path / "tiny-mnist"
    src.mkdir()
    write_idx(src / "train-images-idx3-ubyte.gz", x[:50, :, :, 0])
    write_idx(src / "train-labels-idx1-ubyte.gz", y[:50].astype(np.uint8))
    result = recordio.pack(src, tmp_path / "rec", shard_size=10_000)
    assert result.manifest.records == 50 and result.manifest.name == "tiny-mnist-train"
    recordio.verify(tmp_path / "rec")
    seen = 0
    for s in result.manifest.shards:
        for _, payload in recordio.iter_records(tmp_path / "rec" / s.rec):
            header, body = recordio.unpack(payload)
            img = mx.image.imdecode(body, flag=0).asnumpy()[:, :, 0]
            assert np.array_equal(img, x[header.id, :, :, 0]) and header.label == y[header.id]
            seen += 1
    assert seen == 50


def test_shuffle_is_seeded(tmp_path, jpeg_dir):
    def order(seed, name):
        r = recordio.pack(jpeg_dir, tmp_path / name, shard_size=10**9, shuffle=True, seed=seed)
        return [recordio.unpack(p)[0].id for _, p in recordio.iter_records(tmp_path / name / r.manifest.shards[0].rec)]

    a, b, c = order(1, "a"), order(1, "b"), order(2, "c")
    assert a == b != c and sorted(a) == sorted(c) == list(range(len(a)))


# -- bad input: one line, exit 2, nothing half-written --


def test_pack_missing_source(cli, tmp_path):
    assert_one_clear_line(cli("pack", str(tmp_path / "nope"), str(tmp_path / "out")), "does not exist")
    assert not (tmp_path / "out").exists()


def test_pack_class_folder_without_images(cli, tmp_path, jpeg_dir):
    src = tmp_path / "src"
    shutil.copytree(jpeg_dir, src)
    (src / "empty-class").mkdir()
    (src / "empty-class" / "notes.txt").write_text("no images here")
    assert_one_clear_line(cli("pack", str(src), str(tmp_path / "out")), "class folder 'empty-class'", "holds no images")
    assert not (tmp_path / "out").exists()


def test_pack_unreadable_file_leaves_nothing(cli, tmp_path, jpeg_dir):
    src = tmp_path / "src"
    shutil.copytree(jpeg_dir, src)
    victim = sorted(src.rglob("*.jpg"))[-1]
    make_unreadable(victim)
    out = tmp_path / "out"
    assert_one_clear_line(cli("pack", str(src), str(out)), "cannot read", victim.name)
    assert not out.exists() or not any(out.iterdir()), list(out.iterdir())


def test_pack_refuses_a_packed_folder(cli, tmp_path, packed_dir, jpeg_dir):
    out = tmp_path / "out"
    shutil.copytree(packed_dir, out)
    assert_one_clear_line(cli("pack", str(jpeg_dir), str(out)), "already holds a packed data set")


def _corrupt_copy(packed_dir, tmp_path):
    out = tmp_path / "bad"
    shutil.copytree(packed_dir, out)
    manifest = recordio.load_manifest(out)
    return out, manifest, out / manifest.shards[1].rec


def test_corrupt_rec_names_shard_and_offset(cli, tmp_path, packed_dir):
    out, manifest, rec = _corrupt_copy(packed_dir, tmp_path)
    offsets = sorted(off for _, off in recordio.parse_index((out / manifest.shards[1].idx).read_text(), "idx"))
    data = bytearray(rec.read_bytes())
    data[offsets[2] : offsets[2] + 4] = b"JUNK"  # the third record's magic
    rec.write_bytes(bytes(data))
    assert_one_clear_line(cli("verify", str(out)), rec.name, f"byte offset {offsets[2]}", "bad record magic")
    # a reader meets the same error while streaming
    source = FastFileSource(str(out))
    source.open()
    with pytest.raises(DataError, match=rf"{rec.name}.*byte offset {offsets[2]}"):
        list(source.stream(0))


def test_truncated_rec_names_shard_and_offset(cli, tmp_path, packed_dir):
    out, manifest, rec = _corrupt_copy(packed_dir, tmp_path)
    offsets = sorted(off for _, off in recordio.parse_index((out / manifest.shards[1].idx).read_text(), "idx"))
    rec.write_bytes(rec.read_bytes()[: offsets[-1] + 100])  # cut inside the last record
    assert_one_clear_line(cli("verify", str(out)), rec.name, "truncated", f"byte offset {offsets[-1]}")
    with pytest.raises(DataError, match="truncated"):
        DataSet.discover(LocalStore(out))  # the manifest's size no longer matches


def test_idx_pointing_past_the_end(cli, tmp_path, packed_dir):
    out, manifest, rec = _corrupt_copy(packed_dir, tmp_path)
    idx = out / manifest.shards[1].idx
    lines = idx.read_text().splitlines()
    key = lines[-1].split("\t")[0]
    lines[-1] = f"{key}\t{rec.stat().st_size + 4096}"
    idx.write_text("\n".join(lines) + "\n")
    assert_one_clear_line(cli("verify", str(out)), idx.name, "points past the end")
    with pytest.raises(DataError, match="points past the end"):
        DataSet.discover(LocalStore(out))


def test_manifest_entry_escaping_its_root(cli, tmp_path, packed_dir):
    out, _, _ = _corrupt_copy(packed_dir, tmp_path)
    data = json.loads((out / "manifest.json").read_text())
    data["shards"][0]["rec"] = "../../etc/passwd"
    (out / "manifest.json").write_text(json.dumps(data))
    assert_one_clear_line(cli("verify", str(out)), "escapes its root", "../../etc/passwd")
    with pytest.raises(DataError, match="escapes its root"):
        DataSet.discover(LocalStore(out))


def test_label_outside_the_classes_is_caught(tmp_path, packed_dir):
    out, _manifest, rec = _corrupt_copy(packed_dir, tmp_path)
    data = bytearray(rec.read_bytes())
    struct.pack_into("<f", data, 8 + 4, 99.0)  # first record's header label
    rec.write_bytes(bytes(data))
    with pytest.raises(DataError, match="label 99"):
        recordio.verify(out)
