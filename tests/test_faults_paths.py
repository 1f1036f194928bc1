"""Faults, class 5 (paths that escape): pack names are names, OUT_DIR stays out of SRC, no silent mixing."""

from __future__ import annotations

import hashlib
import shutil

import pytest
from conftest import assert_one_clear_line


@pytest.fixture
def src(tmp_path, jpeg_dir):
    folder = tmp_path / "src"
    shutil.copytree(jpeg_dir, folder)
    return folder


def _tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("name", ["../x", "a/b", "..", ".hidden", "/abs", "-dash", "x\\y"])
def test_pack_name_is_a_name_never_a_path(cli, src, tmp_path, name):
    out = tmp_path / "out"
    before = _tree(tmp_path)
    proc = cli("pack", str(src), str(out), f"--name={name}")
    assert_one_clear_line(proc, "--name", "plain name")
    assert _tree(tmp_path) == before, "nothing written anywhere"


@pytest.mark.parametrize("inside", ["", "packed", "cat/packed"])
def test_pack_refuses_out_dir_inside_or_equal_to_src(cli, src, inside):
    out = src / inside if inside else src
    before = _tree(src)
    proc = cli("pack", str(src), str(out))
    assert_one_clear_line(proc, "inside the source")
    assert _tree(src) == before, "the source is left as it was"


def test_pack_refuses_a_non_empty_out_dir_without_force(cli, src, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert_one_clear_line(cli("pack", str(src), str(out)), "not empty", "--force")
    assert _tree(out) == ["notes.txt"]
    proc = cli("pack", str(src), str(out), "--force")
    assert proc.returncode == 0, proc.stderr
    assert (out / "notes.txt").read_text() == "mine" and (out / "manifest.json").is_file()
    assert cli("verify", str(out)).returncode == 0


def test_pack_finds_a_jpg_that_is_not_an_image(cli, src, tmp_path):
    bad = next(src.glob("*/*.jpg"))
    bad.write_bytes(b"<html>not found</html>")
    out = tmp_path / "out"
    proc = cli("pack", str(src), str(out))
    assert_one_clear_line(proc, str(bad), "not one")
    assert not out.exists() or not list(out.glob("*.rec")), "no shard is left from the failed pack"


def test_verify_finds_a_record_that_is_not_an_image(cli, src, tmp_path):
    """A shard whose record bytes are not an image (packed by an older gluonbench, or edited) fails verify."""
    from gluonbench.data.recordio import MANIFEST, Manifest, ShardEntry, pack_header
    from gluonbench.env import utc_now

    out = tmp_path / "out"
    assert cli("pack", str(src), str(out)).returncode == 0
    # rewrite the first shard with one record that is text, keeping the manifest consistent
    from gluonbench._mx import mx

    manifest = Manifest.from_json((out / MANIFEST).read_text(), str(out))
    first = manifest.shards[0]
    rec, idx = out / first.rec, out / first.idx
    writer = mx.recordio.MXIndexedRecordIO(str(idx), str(rec), "w")
    writer.write_idx(0, pack_header(0, 0) + b"<html>not found</html>")
    writer.close()
    shard = ShardEntry(
        first.rec, first.idx, 1, rec.stat().st_size, hashlib.sha256(rec.read_bytes()).hexdigest(), idx.stat().st_size
    )
    others = manifest.shards[1:]
    manifest.shards = [shard, *others]
    manifest.records = sum(s.records for s in manifest.shards)
    manifest.bytes = sum(s.bytes for s in manifest.shards)
    manifest.created_utc = utc_now()
    (out / MANIFEST).write_text(manifest.to_json())
    assert_one_clear_line(cli("verify", str(out)), first.rec, "not one")
