"""Point 6: the main job runs with no data folder and no network, from the MNIST copy shipped in the package."""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import REPO

from gluonbench.data import vision
from gluonbench.errors import DataError

FILES = vision.TRAIN_FILES + vision.TEST_FILES


def test_packaged_mnist_is_gluons_and_found_last_before_download(clean_env, mnist_dir):
    folder = vision.locate("mnist")  # no $GLUONBENCH_DATA, empty MXNet cache, offline
    assert folder == vision.PACKAGED / "mnist"
    for f in FILES:
        assert filecmp.cmp(folder / f, mnist_dir / f, shallow=False), f"{f} differs from the real MNIST"
    assert vision.validate(folder) == {"train": 60000, "test": 10000}
    assert type(vision.load("mnist", folder, train=False)).__name__ == "MNIST"  # gluon's own class: SHA-1 match
    # a local copy still wins
    cache = clean_env / "mxnet-home" / "datasets" / "mnist"
    cache.mkdir(parents=True)
    for f in FILES:
        shutil.copy(mnist_dir / f, cache / f)
    assert vision.locate("mnist") == cache


def test_a_packaged_copy_that_fails_the_sha1_list_is_not_used(clean_env, mnist_dir, monkeypatch):
    fake = clean_env / "pkg"
    (fake / "mnist").mkdir(parents=True)
    for f in FILES:
        shutil.copy(mnist_dir / f, fake / "mnist" / f)
    data = bytearray((fake / "mnist" / FILES[3]).read_bytes())
    data[-1] ^= 0xFF
    (fake / "mnist" / FILES[3]).write_bytes(bytes(data))
    monkeypatch.setattr(vision, "PACKAGED", fake)
    with pytest.raises(DataError, match="mnist not found"):
        vision.locate("mnist")


@pytest.mark.slow
def test_main_job_from_an_installed_wheel_with_no_data_and_no_network(clean_env, tmp_path, no_leaks):
    """pip-installed gluonbench (a wheel, not this checkout), no data folder, no network: the sweep runs."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        pytest.skip("unshare -n (a network namespace with no interfaces) is not available here")
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(REPO)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    site = tmp_path / "site"
    (wheel,) = wheels.glob("gluonbench-*.whl")
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    assert (site / "gluonbench" / "data" / "mnist" / "train-images-idx3-ubyte.gz").is_file()
    work = tmp_path / "work"  # not the checkout: `python -m` must import the installed package
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("GLUONBENCH_DATA", "GLUONBENCH_OFFLINE")}
    env.update(PYTHONPATH=str(site), MXNET_HOME=str(tmp_path / "empty-mxnet-home"), PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        ["unshare", "-n", sys.executable, "-m", "gluonbench", "-v", "sweep", "--workers", "0", "--max-batches", "5"],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (runs,) = work.glob("gluonbench-results/*/runs.jsonl")
    (record,) = [json.loads(line) for line in runs.read_text().splitlines()]
    assert record["status"] == "ok" and record["train_samples"] == 5 * 64
    log = next(work.glob("gluonbench-results/*/logs/*.log")).read_text()
    assert f"{site / 'gluonbench' / 'data' / 'mnist'} (packaged copy)" in log
    assert not (tmp_path / "empty-mxnet-home").exists(), "nothing was downloaded"
