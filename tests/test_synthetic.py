"""The synthetic workload: real files, real reads, calibrated real CPU work, a model of set size."""

import json
import time

import numpy as np
import pytest

from gluonbench.errors import GluonbenchError
from gluonbench.workloads import get_workload, workload_names
from gluonbench.workloads.synthetic import SyntheticKnobs, ensure_files


def test_registered():
    assert "synthetic" in workload_names()


def test_files_are_written_once_and_read_for_real(tmp_path):
    w = get_workload("synthetic", data_dir=tmp_path, samples=128, record_kb=8)
    folder = tmp_path / "synthetic" / SyntheticKnobs(samples=128, record_kb=8).folder_name()
    files = sorted((folder / "train").glob("*.rec"))
    assert len(files) == 128 and all(f.stat().st_size == 8192 for f in files)
    assert len(w.dataset) == 128 and len(w.test_dataset) == 64
    mtime = files[0].stat().st_mtime_ns
    get_workload("synthetic", data_dir=tmp_path, samples=128, record_kb=8)
    assert files[0].stat().st_mtime_ns == mtime, "an existing data set is reused, not rewritten"
    # a sample is the file's bytes: change the file and the sample changes
    x, y = w.dataset[3]
    assert x.shape == (28, 28, 1) and x.dtype == np.uint8 and 0 <= int(y) < 10
    data = bytearray(files[3].read_bytes())
    data[0] = (data[0] + 1) % 256
    files[3].write_bytes(bytes(data))
    assert w.dataset[3][0][0, 0, 0] == data[0]


def test_images_carry_their_label(tmp_path):
    w = get_workload("synthetic", data_dir=tmp_path, samples=200)
    rows = {}
    for i in range(200):
        x, y = w.dataset[i]
        rows.setdefault(int(y), set()).add(int(np.argmax(x[:, :, 0].mean(axis=1))))
    assert all(len(r) == 1 for r in rows.values()), "one bright band row per class"
    assert len({next(iter(r)) for r in rows.values()}) == len(rows), "different rows for different classes"


def test_read_latency_is_waited(tmp_path):
    w = get_workload("synthetic", data_dir=tmp_path, samples=64, read_ms=5)
    t0 = time.perf_counter()
    for i in range(10):
        w.dataset[i]
    assert time.perf_counter() - t0 >= 0.05


def test_cpu_work_is_real_and_calibrated(tmp_path):
    w = get_workload("synthetic", data_dir=tmp_path, samples=64, cpu_ms=4)
    x, y = w.dataset[0]
    t0 = time.thread_time()
    out, label = w.transform(x, y)
    cpu = time.thread_time() - t0
    assert out.shape == (1, 28, 28) and out.dtype == np.float32 and isinstance(label, np.float32)
    # calibrated on this thread's CPU clock: the work is a few ms of CPU time, whatever the load
    assert 0.002 <= cpu <= 0.016, cpu
    assert np.abs(out - x.transpose(2, 0, 1) / 255.0).max() < 1 / 255, "the work only jitters one pixel"


def test_a_given_hash_rate_fixes_the_work_and_pinning_keeps_a_given_one(tmp_path):
    from gluonbench.workloads.synthetic import hash_rounds_per_ms, pin_hash_rate

    w = get_workload("synthetic", data_dir=tmp_path, samples=64, cpu_ms=2, hash_rate=10.5)
    assert w.transform.rounds == 21, "cpu_ms x hash_rate rounds, no calibration"
    assert pin_hash_rate({"cpu_ms": 0}) == {"cpu_ms": 0}, "no CPU work: nothing to pin"
    assert pin_hash_rate({"cpu_ms": "1", "hash_rate": "7"}) == {"cpu_ms": "1", "hash_rate": "7"}
    pinned = pin_hash_rate({"cpu_ms": "1"})
    assert pinned["cpu_ms"] == "1" and pinned["hash_rate"] == round(hash_rounds_per_ms(), 3) > 0


def test_a_sweep_gives_every_run_one_calibration(tmp_path, monkeypatch):
    # each run of a sweep is its own process; calibrated in each, cpu_ms could mean a third more work at one worker
    # count than at another (the CPU's speed moves the calibration): the parent's one figure goes to every run, and
    # --resume keeps it (the runs themselves are stubbed: what is checked is what they are given)
    from gluonbench import api, sweeping
    from gluonbench.config import SweepSettings
    from gluonbench.workloads.synthetic import FACTORY

    given = []
    monkeypatch.setattr(sweeping, "_sweep_locked", lambda store, settings, *a, **k: given.append((store, settings)))
    settings = SweepSettings(workload="synthetic", workers=(0, 1, 2), options={"cpu_ms": 0.2, "samples": 64})
    api.sweep(settings, out=tmp_path / "runs")
    store, first = given[-1]
    rates = {spec.options["hash_rate"] for spec in first.specs()}
    saved = json.loads((store.path / "sweep.json").read_text())["settings"]["options"]
    assert len(rates) == 1 and rates == {saved["hash_rate"]} and saved["hash_rate"] >= 1, (rates, saved)
    api.sweep(resume=store.path)
    assert given[-1][1].options["hash_rate"] == saved["hash_rate"], "resume: the same figure, not a new calibration"
    api.sweep(SweepSettings(workload="mnist", workers=(0,)), out=tmp_path / "runs")
    assert "hash_rate" not in given[-1][1].options, "only a synthetic workload's cpu_ms is pinned"
    # the same workload named by its factory (--pipeline gluonbench.workloads.synthetic:make --pipeline-option ...)
    factory = {"cpu_ms": 0.2, "samples": 64, "data_dir": str(tmp_path / "cache")}
    api.sweep(SweepSettings(pipeline=FACTORY, pipeline_options=factory, workers=(0, 2)), out=tmp_path / "runs")
    assert given[-1][1].pipeline_options["hash_rate"] >= 1 and "hash_rate" not in factory


def test_model_size_follows_width_and_depth(tmp_path):
    from gluonbench._mx import mx, nd

    def params(**knobs):
        w = get_workload("synthetic", data_dir=tmp_path, samples=64, **knobs)
        net = w.make_net()
        net.initialize(mx.init.Xavier(), ctx=mx.cpu())
        assert net(nd.zeros((2, 1, 28, 28))).shape == (2, 10)
        return sum(p.data().size for p in net.collect_params().values())

    small, wide, deep = params(width=16, depth=1), params(width=256, depth=1), params(width=256, depth=3)
    assert small < wide < deep
    assert deep - wide == 2 * (256 * 256 + 256)


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"cpu_ms": -1}, "cpu_ms must be a number >= 0"),
        ({"width": "wide"}, "width='wide' is not a int"),
        ({"bogus": 1}, "unknown synthetic option(s) bogus"),
        ({"samples": 0}, "samples must be a whole number >= 1"),
        ({"cold": "maybe"}, "cold='maybe' is not a true/false"),
        ({"hash_rate": -1}, "hash_rate must be a number >= 0"),
        ({"hash_rate": 1e7}, "hash_rate=1e+07 is outside 1..10^6 rounds a ms; leave it 0 to calibrate"),
        ({"hash_rate": 0.1}, "hash_rate=0.1 is outside 1..10^6 rounds a ms"),
    ],
)
def test_bad_knobs(tmp_path, options, needle):
    with pytest.raises(GluonbenchError) as err:
        get_workload("synthetic", data_dir=tmp_path, **options)
    assert needle in str(err.value)


def test_unwritable_cache_is_a_clear_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(GluonbenchError, match="writable folder"):
        ensure_files(SyntheticKnobs(samples=8), blocker / "sub")


def test_factory_is_a_pipeline_spec_through_the_one_assembly(tmp_path):
    """``--pipeline gluonbench.workloads.synthetic:make`` is the same pipeline as ``--dataset synthetic``."""
    from gluonbench import PipelineSpec, build_pipeline
    from gluonbench.workloads.spec import load_spec

    spec = load_spec("gluonbench.workloads.synthetic:make", {"data_dir": str(tmp_path), "samples": "64", "cpu_ms": 1})
    assert isinstance(spec, PipelineSpec) and spec.name == "synthetic" and len(spec.dataset) == 64
    w = get_workload("synthetic", data_dir=tmp_path, samples=64, cpu_ms=1)
    x_spec, _ = spec.transform(*spec.dataset[5])
    x_work, _ = w.transform(*w.dataset[5])
    assert np.array_equal(x_spec, x_work), "the registered workload is the factory's spec"
    pipe = build_pipeline(spec, num_workers=0, batch_size=16)
    assert pipe.loader.batch_size == 16 and pipe.dataset is spec.dataset
    with pytest.raises(GluonbenchError, match="unknown synthetic option"):
        load_spec("gluonbench.workloads.synthetic:make", {"data_dir": str(tmp_path), "nope": 1})
