import gzip

import numpy as np
import pytest

from gluonbench.data.idx import read_idx, read_image_label_pair, write_idx
from gluonbench.errors import DataError


@pytest.fixture
def images():
    rng = np.random.default_rng(0)
    return rng.integers(0, 255, size=(7, 28, 28), dtype=np.uint8)


def test_round_trip_gz_and_raw(tmp_path, images):
    for name in ("x-idx3-ubyte.gz", "x-idx3-ubyte"):
        write_idx(tmp_path / name, images)
        np.testing.assert_array_equal(read_idx(tmp_path / name, expect_ndim=3, expect_tail=(28, 28)), images)


def test_real_mnist_pair(mnist_dir):
    x, y = read_image_label_pair(mnist_dir / "t10k-images-idx3-ubyte.gz", mnist_dir / "t10k-labels-idx1-ubyte.gz")
    assert x.shape == (10000, 28, 28, 1) and x.dtype == np.uint8
    assert y.shape == (10000,) and y.dtype == np.int32 and set(np.unique(y)) == set(range(10))


def test_truncated_values(tmp_path, images):
    write_idx(tmp_path / "t.gz", images)
    raw = gzip.decompress((tmp_path / "t.gz").read_bytes())
    (tmp_path / "t.gz").write_bytes(gzip.compress(raw[:-100]))
    with pytest.raises(DataError, match=r"t\.gz is truncated"):
        read_idx(tmp_path / "t.gz")


def test_truncated_gzip_stream(tmp_path, images):
    write_idx(tmp_path / "t.gz", images)
    data = (tmp_path / "t.gz").read_bytes()
    (tmp_path / "t.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"t\.gz is a truncated or corrupt gzip file"):
        read_idx(tmp_path / "t.gz")


def test_wrong_magic(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x12\x34\x08\x03" + b"\x00" * 20)
    with pytest.raises(DataError, match=r"bad is not an IDX file \(magic 12340803\)"):
        read_idx(tmp_path / "bad")


def test_empty_file(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    with pytest.raises(DataError, match="not an IDX file"):
        read_idx(tmp_path / "empty")


def test_header_cut_short(tmp_path):
    (tmp_path / "short").write_bytes(b"\x00\x00\x08\x03\x00\x00")
    with pytest.raises(DataError, match="truncated inside its IDX header"):
        read_idx(tmp_path / "short")


def test_longer_than_header(tmp_path, images):
    write_idx(tmp_path / "long", images)
    with open(tmp_path / "long", "ab") as f:
        f.write(b"\x00" * 5)
    with pytest.raises(DataError, match="longer than its header says"):
        read_idx(tmp_path / "long")


def test_wrong_kind_and_mismatched_pair(tmp_path, images):
    write_idx(tmp_path / "img", images)
    write_idx(tmp_path / "lab", np.arange(5, dtype=np.uint8))
    with pytest.raises(DataError, match="expected 1"):
        read_idx(tmp_path / "img", expect_ndim=1)
    with pytest.raises(DataError, match=r"7 images but .* 5 labels"):
        read_image_label_pair(tmp_path / "img", tmp_path / "lab")


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="cannot read"):
        read_idx(tmp_path / "nope.gz")
