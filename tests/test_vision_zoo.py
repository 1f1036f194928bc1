"""Real vision workloads: gluoncv's zoo, the transform presets, image folders and RecordIO without a manifest."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, assert_one_clear_line, with_more_budget

from gluonbench.diagnosis.probes import NAMES
from gluonbench.errors import GluonbenchError
from gluonbench.sweeprun.run import RunSpec, train_and_eval


@pytest.fixture(scope="module")
def im2rec_dirs(tmp_path_factory, jpeg_dir) -> dict[str, Path]:
    """``jpeg_dir`` written as MXNet users have it: MXIndexedRecordIO ``.rec`` + ``.idx`` + im2rec's ``.lst``.

    ``idx``: two shards with ``.idx`` and ``.lst``; ``bare``: the same ``.rec`` files alone;
    ``idx_only``: ``.rec`` + ``.idx`` (no manifest, no list: the class count is unknown).
    """
    from gluonbench._mx import mx
    from gluonbench.data.images import image_folder
    from gluonbench.data.store import LocalStore

    root = tmp_path_factory.mktemp("im2rec")
    layout = image_folder(LocalStore(jpeg_dir).list(), str(jpeg_dir))
    dirs = {name: root / name for name in ("idx", "bare", "idx_only")}
    for d in dirs.values():
        d.mkdir()
    half = len(layout.items) // 2
    for shard, items in enumerate((layout.items[:half], layout.items[half:])):
        stem = dirs["idx"] / f"train-{shard}"
        writer = mx.recordio.MXIndexedRecordIO(f"{stem}.idx", f"{stem}.rec", "w")
        lst = []
        for i, (obj, label) in enumerate(items):
            header = mx.recordio.IRHeader(0, float(label), i, 0)
            writer.write_idx(i, mx.recordio.pack(header, (jpeg_dir / obj.key).read_bytes()))
            lst.append(f"{i}\t{label:.6f}\t{obj.key}")
        writer.close()
        Path(f"{stem}.lst").write_text("\n".join(lst) + "\n")
        shutil.copy(f"{stem}.rec", dirs["bare"])
        shutil.copy(f"{stem}.rec", dirs["idx_only"])
        shutil.copy(f"{stem}.idx", dirs["idx_only"])
    return dirs


# -- the model zoo ---------------------------------------------------------------------------------


def test_unknown_model_is_one_line_with_close_names(cli, jpeg_dir):
    proc = cli(
        "sweep", "--dataset", "imagefolder", "--data-dir", str(jpeg_dir), "--model", "resnet18", "--workers", "0"
    )
    assert_one_clear_line(
        proc, "unknown --model 'resnet18'", "resnet18_v1"
    )  # the zoo: gluoncv imported, before the first line
    proc = cli("diagnose", "--dataset", "imagefolder", "--data-dir", str(jpeg_dir), "--model", "mobilenet_v2")
    assert_one_clear_line(proc, "unknown --model", "mobilenetv2_1.0")
    proc = cli(
        "diagnose", "--dataset", "imagefolder", "--data-dir", str(jpeg_dir), "--model", "ssd_300_vgg16_atrous_voc"
    )
    assert_one_clear_line(proc, "not one of the", "classification models")
    proc = cli("sweep", "--model", "resnet18_v1", "--workers", "0")  # the seed's MNIST takes no zoo model
    assert_one_clear_line(proc, "--model apply to image data", "--dataset imagefolder")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--dataset", "imagefolder", "--data-dir", "/nonexistent/images"], "/nonexistent/images is not a folder"),
        (["--dataset", "imagefolder"], "needs a data set: pass --data-dir DIR"),
        (["--dataset", "imagefolder", "--data-dir", "JPEGS", "--image-size", "2"], "--image-size must be"),
        (["--dataset", "imagefolder", "--data-dir", "JPEGS", "--classes", "3"], "--classes 3 is below the 10 classes"),
        (["--dataset", "mnist", "--preset", "cifar"], "--preset apply to image data"),
    ],
)
def test_vision_bad_input_is_one_line(cli, jpeg_dir, tmp_path, args, needle):
    args = [str(jpeg_dir) if a == "JPEGS" else a for a in args]
    proc = cli("sweep", *args, "--workers", "0", "--out", str(tmp_path / "out"))
    assert_one_clear_line(proc, needle)
    assert not (tmp_path / "out").exists(), "no run folder for bad input"


def test_zoo_models_build_with_random_weights_at_small_sizes():
    from gluonbench._mx import mx, nd
    from gluonbench.workloads import vision_zoo as vz

    names = vz.model_names()
    assert {"resnet18_v1", "resnet50_v1", "mobilenetv2_1.0", "cifar_resnet20_v1", "inceptionv3"} <= set(names)
    assert not [n for n in names if n.startswith(("ssd_", "yolo3", "faster_rcnn", "fcn_", "simple_pose"))]
    assert (vz.default_image_size("resnet50_v1"), vz.default_image_size("cifar_resnet20_v1")) == (224, 32)
    assert (vz.default_image_size("inceptionv3"), vz.default_image_size(None)) == (299, 28)
    for name, size in (("resnet18_v1", 32), ("cifar_resnet20_v1", 32), ("mobilenetv2_0.25", 64)):
        net = vz.make_model(name, classes=7)
        net.initialize(vz.model_init(), ctx=mx.cpu())
        out = net(nd.random.uniform(shape=(2, 3, size, size)))
        assert out.shape == (2, 7), name


# -- stages: raw sample, decode, preset ---------------------------------------------------------------


def test_dataset_returns_raw_bytes_and_decode_and_preset_are_separate_stages(jpeg_dir):
    from gluonbench.workloads import get_workload
    from gluonbench.workloads.vision_zoo import Decode, Preset, imagefolder

    w = imagefolder(data_dir=str(jpeg_dir), model="resnet18_v1", image_size=32, preset="imagenet")
    try:
        data, label = w.dataset[3]
        assert isinstance(data, bytes) and data[:2] == b"\xff\xd8", "dataset[i] is the encoded JPEG, not pixels"
        assert isinstance(w.decode, Decode) and isinstance(w.transform, Preset)
        img, lab = w.decode(data, label)
        assert img.shape[2] == 3 and img.dtype == np.uint8 and img.shape[0] > 100
        x, lab2 = w.transform(img, lab)
        assert x.shape == (3, 32, 32) and x.dtype == np.float32 and lab2 == label
        assert -3 < x.min().asscalar() < 0 < x.max().asscalar() < 3, "normalised with ImageNet's mean and std"
    finally:
        w.close()
    # the registered workload keeps decode as its own pipeline stage, before the preset
    registered = get_workload("imagefolder", data_dir=str(jpeg_dir), image_size=32, preset="cifar")
    try:
        assert isinstance(registered.decode, Decode) and isinstance(registered.transform, Preset)
        x, _ = registered.transform(*registered.decode(*registered.dataset[0]))
        assert x.shape == (3, 32, 32)
    finally:
        registered.close()
    x, _ = Preset("none", 48)(Decode()(data, 0)[0], 0)
    assert x.shape == (3, 48, 48) and 0 <= x.min().asscalar() and x.max().asscalar() <= 1
    with pytest.raises(GluonbenchError, match="unknown preset"):
        Preset("autoaugment", 32)


# -- a short sweep and a diagnosis with a gluoncv model ---------------------------------------------------


def test_short_sweep_with_a_gluoncv_model(cli, jpeg_dir, tmp_path, no_leaks):
    out = tmp_path / "results"
    proc = cli(
        "sweep", "--dataset", "imagefolder", "--data-dir", str(jpeg_dir), "--model", "resnet18_v1",
        "--image-size", "32", "--workers", "0,2", "--max-batches", "3", "--batch-size", "8", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = list(out.iterdir())
    assert run_dir.name.endswith("sweep-imagefolder-resnet18_v1-cpu")
    runs = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert [r["status"] for r in runs] == ["ok", "ok"]
    for r in runs:
        assert r["train_samples"] == 24 and r["steady"]["steps"] == 2 and r["train_s"] > 0
        assert r["source"]["model"] == "resnet18_v1" and r["source"]["preset"] == "imagenet"
        assert r["source"]["image_size"] == 32 and r["source"]["classes"] == 10
    assert runs[1]["system"]["peak_processes"] >= 3, "two DataLoader workers decoded and transformed"


def test_diagnosis_with_a_gluoncv_model_attributes_decode_and_augment_to_preprocessing(jpeg_dir, no_leaks):
    from gluonbench import api

    # a machine busy with other jobs may leave a probe without a finished block in 6 s: measure again with the
    # budget doubled (what is checked below is what the probes swap and that each measured, not how fast)
    d = with_more_budget(
        lambda budget: api.diagnose_workload(
            "imagefolder",
            8,
            0,
            "cpu",
            budget,
            data_dir=str(jpeg_dir),
            options={"model": "mobilenetv2_0.25", "image_size": 32, "preset": "imagenet"},
        ),
        (6.0, 12.0, 24.0),
        lambda d: all(p.blocks for p in d.probes.values() if p.same_as is None),
    )
    assert d.verdict in ("preprocessing", "disk_io", "gpu_io", "inconclusive")
    assert list(d.probes) == list(NAMES)
    assert d.probes["no_preprocess"].same_as is None, "decode + preset are the stages the probe removes"
    assert "Decode" in d.pipeline["decode"] and "Preset" in d.pipeline["transform"]
    assert all(p.samples_per_s > 0 for p in d.probes.values())
    assert abs(sum(d.shares.values()) - 1) < 1e-6 and d.setting["transform"]
    # the loader alone (read + decode + augment) costs real time: its ceiling is finite and measured
    assert d.probes["loader_only"].step_s > 0


def test_no_network_is_attempted(tmp_path, jpeg_dir):
    """Import gluoncv, build a zoo model and train two batches with every socket connection refused."""
    script = textwrap.dedent(
        f"""
        import socket, sys
        attempts = []
        def refuse(self, address, *a, **k):
            attempts.append(address)
            raise OSError("network blocked by the test")
        def refuse_dns(*a, **k):
            attempts.append(a[:2])
            raise OSError("DNS blocked by the test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.getaddrinfo = refuse_dns
        socket.create_connection = lambda address, *a, **k: refuse(None, address)
        from gluonbench.sweeprun.run import RunSpec, train_and_eval
        spec = RunSpec(workload="imagefolder", batch_size=4, max_batches=2, options={{
            "uri": {str(jpeg_dir)!r}, "model": "resnet18_v1", "image_size": 32}})
        result = train_and_eval(spec)
        import gluoncv  # imported by the run
        print(result.status, result.train_samples, len(attempts), attempts)
        sys.exit(0 if result.status == "ok" and not attempts else 1)
        """
    )
    env = {"MXNET_HOME": str(tmp_path / "mxnet-home"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO, env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split()[:3] == ["ok", "8", "0"]
    assert not (tmp_path / "mxnet-home" / "models").exists(), "no weights were fetched or cached"


# -- RecordIO as MXNet users have it (im2rec, MXIndexedRecordIO) -----------------------------------------


def test_verify_and_index_recordio_without_manifest(im2rec_dirs, jpeg_dir, cli):
    from gluonbench.data.store import LocalStore
    from gluonbench.sources.base import DataSet

    n = sum(1 for p in jpeg_dir.rglob("*.jpg"))
    for name in ("idx", "bare", "idx_only"):
        proc = cli("verify", str(im2rec_dirs[name]))
        assert proc.returncode == 0, proc.stderr
        assert f"2 shard(s), {n} records" in proc.stdout
    with_idx = DataSet.discover(LocalStore(im2rec_dirs["idx"]))
    built = DataSet.discover(LocalStore(im2rec_dirs["bare"]))  # no .idx: the index is built by one read
    assert with_idx.kind == built.kind == "recordio"
    assert [(s.key, s.start, s.end) for s in with_idx.samples] == [(s.key, s.start, s.end) for s in built.samples]
    assert with_idx.classes == built.classes == [str(c) for c in range(10)]  # from the .lst / from the scan
    assert DataSet.discover(LocalStore(im2rec_dirs["idx_only"])).classes == []  # unknown: ask for --classes
    # a corrupt .rec without an index is named with the byte offset
    bad = im2rec_dirs["bare"].parent / "bad"
    shutil.copytree(im2rec_dirs["bare"], bad)
    rec = bad / "train-0.rec"
    data = bytearray(rec.read_bytes())
    second = 8 + ((int.from_bytes(data[4:8], "little") & ((1 << 29) - 1)) + 3) // 4 * 4
    data[second : second + 4] = b"JUNK"  # the second record's magic
    rec.write_bytes(bytes(data))
    proc = cli("verify", str(bad))
    assert_one_clear_line(proc, "train-0.rec", f"bad record magic at byte offset {second}")


@pytest.mark.parametrize("mode", ["file", "fastfile", "pipe"])
def test_train_over_im2rec_folders_in_every_mode(mode, im2rec_dirs, jpeg_dir, no_leaks):
    n = sum(1 for p in jpeg_dir.rglob("*.jpg"))
    options = {"mode": mode, "uri": str(im2rec_dirs["bare"]), "image_size": 32, "timeout": 30}
    spec = RunSpec(workload="imagefolder", workers=0 if mode == "pipe" else 2, batch_size=8, epochs=1, options=options)
    result = train_and_eval(spec)
    assert result.status == "ok", result.error
    assert result.train_samples == n and result.source["kind"] == "recordio" and result.source["classes"] == 10
    with pytest.raises(GluonbenchError, match="pass classes N"):
        train_and_eval(
            RunSpec(workload="imagefolder", max_batches=1, options=dict(options, uri=str(im2rec_dirs["idx_only"])))
        )
    if mode != "pipe":
        spec = RunSpec(
            workload="imagefolder",
            max_batches=2,
            batch_size=4,
            options=dict(options, uri=str(im2rec_dirs["idx_only"]), classes=12),
        )
        assert train_and_eval(spec).source["classes"] == 12


def test_seed_cnn_source_workload_reads_an_im2rec_folder(im2rec_dirs, jpeg_dir, cli, tmp_path, no_leaks):
    """``sweep --source fastfile`` no longer refuses a folder without manifest.json."""
    proc = cli(
        "sweep", "--source", "fastfile", "--uri", str(im2rec_dirs["bare"]), "--workers", "0", "--max-batches", "2",
        "--batch-size", "8", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = list((tmp_path / "out").iterdir())
    (run,) = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert run["status"] == "ok" and run["train_samples"] == 16 and run["source"]["kind"] == "recordio"


def test_stream_sends_only_rec_payloads(im2rec_dirs):
    from gluonbench.data.store import LocalStore
    from gluonbench.sources.pipe import data_objects

    keys = [o.key for o in data_objects(LocalStore(im2rec_dirs["idx"]))]
    assert keys == ["train-0.rec", "train-1.rec"], "no .idx or .lst bytes in the RecordIO stream"


# -- seed 004 scaled down, and its configs ------------------------------------------------------------------


def test_seed004_configs_load_through_the_toml_loader():
    from gluonbench.config import SweepSettings, coerce, load_toml

    small = coerce(SweepSettings(), load_toml(REPO / "configs" / "seed004-resnet.toml"), "config").check()
    big = coerce(SweepSettings(), load_toml(REPO / "configs" / "seed004-resnet-p3.2xlarge.toml"), "config").check()
    assert small.workload == "seed004" and small.model == "resnet18_v1" and small.image_size <= 64
    assert small.workers == (0, 1, 2, 3, 4) and small.max_batches
    assert big.model == "resnet50_v1" and big.image_size == 224 and big.ctx == "gpu:0" and big.preset == "imagenet"
    assert big.workload == "imagefolder" and big.classes == 257
    (spec, *_) = small.specs()
    assert spec.options["model"] == "resnet18_v1" and spec.workload == "seed004"


def test_seed004_workload_generates_39kb_jpegs_once_and_packs_them(tmp_path, monkeypatch, no_leaks):
    from gluonbench.workloads.vision_zoo import seed004_data

    monkeypatch.setenv("GLUONBENCH_CACHE", str(tmp_path))
    folder = seed004_data(None, data_mb=1.0, file_kb=39.0)
    sizes = [p.stat().st_size for p in folder.rglob("*.jpg")]
    assert 20 <= len(sizes) <= 30 and 30_000 < np.mean(sizes) < 48_000
    assert seed004_data(None, data_mb=1.0, file_kb=39.0) == folder  # cached
    shards = seed004_data(None, data_mb=1.0, file_kb=39.0, layout="shards")
    assert len(list(shards.glob("*.rec"))) >= 4 and (shards / "manifest.json").is_file()
    options = {"data_mb": 1.0, "layout": "shards", "mode": "fastfile", "image_size": 32}
    result = train_and_eval(RunSpec(workload="seed004", batch_size=8, max_batches=2, options=options))
    assert result.status == "ok" and result.source["model"] == "resnet18_v1" and result.source["kind"] == "recordio"


def test_io_decode_stage_uses_the_preset(cli, tmp_path, mnist_dir, no_leaks):
    out = tmp_path / "out"
    tiny = ["--small", "300KB", "--large", "900KB", "--file-size", "15KB", "--threads", "2", "--epochs", "1"]
    proc = cli("io", *tiny, "--stage", "read", "--preset", "imagenet", "--out", str(out))
    assert_one_clear_line(proc, "--preset applies to --stage decode")
    proc = cli(
        "io", *tiny, "--modes", "fastfile", "--sizes", "small", "--stage", "decode", "--preset", "imagenet",
        "--image-size", "32", "--mnist-dir", str(mnist_dir), "--work-dir", str(tmp_path / "work"), "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = list(out.iterdir())
    rows = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["status"] == "ok" and r["samples_per_s"] > 0 for r in rows)
    settings = json.loads((run_dir / "io.json").read_text())["settings"]
    assert (settings["preset"], settings["image_size"], settings["stage"]) == ("imagenet", 32, "decode")
    md = (run_dir / "io.md").read_text()
    assert "gluonbench io --s3-uri s3://BUCKET/PREFIX" in md, "a local run says how to measure S3"
