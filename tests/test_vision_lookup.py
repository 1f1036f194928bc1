"""Data-set look-up order, Debian's Fashion-MNIST, and clear errors for bad files."""

import shutil

import numpy as np
import pytest

from gluonbench.data import vision
from gluonbench.errors import DataError

FILES = vision.TRAIN_FILES + vision.TEST_FILES


def _copy(src, dst):
    dst.mkdir(parents=True, exist_ok=True)
    for f in FILES:
        shutil.copy(src / f, dst / f)
    return dst


def test_data_dir_wins(clean_env, mnist_dir, monkeypatch):
    monkeypatch.setenv("GLUONBENCH_DATA", str(clean_env / "elsewhere"))
    assert vision.locate("mnist", mnist_dir) == mnist_dir


def test_env_then_cache_order(clean_env, mnist_dir, monkeypatch):
    env_copy = _copy(mnist_dir, clean_env / "gbdata" / "mnist")
    cache_copy = _copy(mnist_dir, clean_env / "mxnet-home" / "datasets" / "mnist")
    monkeypatch.setenv("GLUONBENCH_DATA", str(clean_env / "gbdata"))
    assert vision.locate("mnist") == env_copy
    monkeypatch.delenv("GLUONBENCH_DATA")
    assert vision.locate("mnist") == cache_copy


def test_offline_error_says_where_it_looked(clean_env, monkeypatch):
    monkeypatch.setenv("GLUONBENCH_DATA", str(clean_env / "gbdata"))
    monkeypatch.setenv("GLUONBENCH_PACKAGED_DATA", "0")  # the copy shipped in the package would be found
    with pytest.raises(DataError) as err:
        vision.locate("mnist")
    msg = str(err.value)
    assert str(clean_env / "gbdata" / "mnist") in msg
    assert str(clean_env / "mxnet-home" / "datasets" / "mnist") in msg
    assert "train-images-idx3-ubyte.gz" in msg and "data_dir" in msg and "--data-dir" not in msg
    assert "\n" not in msg


def test_data_dir_missing_files(clean_env, mnist_dir):
    partial = clean_env / "partial"
    partial.mkdir()
    shutil.copy(mnist_dir / "train-images-idx3-ubyte.gz", partial)
    with pytest.raises(DataError, match=r"lacks train-labels-idx1-ubyte\.gz, t10k-images"):
        vision.locate("mnist", partial)


def test_debian_fashion_mnist_found_and_loaded_without_download(clean_env, fashion_dir):
    folder = vision.locate("fashion-mnist")
    assert folder == fashion_dir
    assert vision.validate(folder) == {"train": 60000, "test": 10000}
    ds = vision.load("fashion-mnist", folder, train=False)
    # Debian's gzip bytes differ from gluon's SHA-1 list: loaded through the IDX reader, same sample layout
    assert type(ds).__name__ == "_IdxImageDataset"
    data, label = ds[0]
    assert data.shape == (28, 28, 1) and data.dtype == np.uint8 and isinstance(label, np.int32)
    assert not (clean_env / "mxnet-home").exists(), "nothing may be downloaded"


def test_real_mnist_loads_through_gluon(mnist_dir):
    ds = vision.load("mnist", mnist_dir, train=False)
    assert type(ds).__name__ == "MNIST" and len(ds) == 10000
    data, label = ds[0]
    assert data.shape == (28, 28, 1) and int(label) == 7


def test_corrupt_file_named(clean_env, mnist_dir):
    bad = _copy(mnist_dir, clean_env / "bad")
    data = (bad / "t10k-labels-idx1-ubyte.gz").read_bytes()
    (bad / "t10k-labels-idx1-ubyte.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"t10k-labels-idx1-ubyte\.gz is a truncated or corrupt gzip"):
        vision.validate(bad)


def test_unknown_dataset():
    with pytest.raises(DataError, match="unknown data set 'cifar'"):
        vision.locate("cifar")
