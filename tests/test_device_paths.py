"""The device paths of a GPU run, exercised on CPU contexts (issue #18, G1-G10).

MXNet treats ``cpu(0)``, ``cpu(1)``, ... as distinct devices: a copy between them is a real
``CopyCPU2CPU`` and a Parameter initialised on one is not initialised on another. So every path a
GPU run takes that does not need CUDA itself runs here on ``cpu(1)``/``cpu(2)``; what only a GPU
proves is in ``tests/test_gpu.py`` (``pytest -m gpu``). Each test names the item it covers.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import raising_budget

import gluonbench
from gluonbench._mx import gluon, mx, nd


class Raw:
    """A small in-memory data set of raw uint8 images (reading is an index)."""

    def __init__(self, n: int, side: int = 8) -> None:
        rng = np.random.default_rng(0)
        self.x = rng.integers(0, 255, size=(n, side, side, 1), dtype=np.uint8)
        self.y = rng.integers(0, 10, size=n)

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self) -> int:
        return len(self.y)


def to_float(x, y):
    return x.astype(np.float32).transpose(2, 0, 1) / 255, np.float32(y)


def small_net() -> gluon.HybridBlock:
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 3, activation="relu"), gluon.nn.Flatten(), gluon.nn.Dense(10))
    return net


def test_g1_deferred_net_on_second_cpu_context(no_leaks):
    """G1: a net set up the usual way (``net.initialize()``: cpu(0), shapes deferred) diagnosed on cpu(1)."""
    net = small_net()
    net.initialize(mx.init.Constant(0.25))
    d = gluonbench.diagnose(Raw(256), to_float, net, batch_size=32, ctx=mx.cpu(1), budget_s=2)
    assert d.verdict in ("preprocessing", "disk_io", "gpu_io", "inconclusive")
    for name, p in net.collect_params().items():
        # put back: the user's contexts, and no weight the probes trained
        assert p.list_ctx() == [mx.cpu(0)], name
        expected = 0.25 if name.endswith("weight") else 0.0
        assert np.allclose(p.data().asnumpy(), expected), f"{name}: trained weights were left in the user's net"


def test_g1_tune_with_deferred_net_on_second_cpu_context(no_leaks):
    """G1 for tune(): the same deferred net searched on cpu(1)."""
    net = small_net()
    net.initialize()
    result = raising_budget(
        lambda b: gluonbench.tune(Raw(256), to_float, net, batch_size=32, ctx=mx.cpu(1), budget_s=b, max_workers=1),
        (10, 20, 40),
    )
    assert result.samples_per_s > 0
    assert all(p.list_ctx() == [mx.cpu(0)] for p in net.collect_params().values())


class HeavyNDArray:
    """A data set whose per-sample transform is NDArray work (async in MXNet's engine, few dispatches)."""

    def __init__(self, n: int = 128, side: int = 160, rounds: int = 6) -> None:
        rng = np.random.default_rng(0)
        self.x = nd.array(rng.integers(0, 255, size=(n, side, side, 1)), dtype="uint8")
        self.y = rng.integers(0, 10, size=n).astype(np.float32)
        self.side, self.rounds = side, rounds

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self) -> int:
        return len(self.y)

    def transform(self, x, y):
        s = self.side
        x = x.astype("float32").reshape((s, s)) / 255
        for _ in range(self.rounds):
            x = nd.dot(x, x) / s
        return x.reshape((1, s, s)), y


def strided_net(ctx) -> gluon.HybridBlock:
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 5, strides=8, activation="relu"), gluon.nn.Flatten(), gluon.nn.Dense(10))
    net.initialize(ctx=ctx)
    net.hybridize()
    return net


def test_g2_zero_worker_ndarray_transform_billed_to_wait():
    """G2: a 0-worker loader's queued NDArray transform is input wait, not copy or compute, on a second context."""
    from gluonbench.engine.loop import run_steps
    from gluonbench.pipeline.stages import ModelStep

    data = HeavyNDArray()
    ds = gluon.data.SimpleDataset(data).transform(data.transform)
    ctx = mx.cpu(1)
    loader_only = run_steps(gluon.data.DataLoader(ds, 32, num_workers=0), ctx, None).split(skip=0)
    # no model: all but the copy dispatch and the final barrier is the loader
    assert loader_only.wait_s > 0.9 * loader_only.total_s, loader_only
    net = strided_net(ctx)
    step = ModelStep(net, gluon.loss.SoftmaxCrossEntropyLoss(), gluon.Trainer(net.collect_params(), "sgd"))
    trained = run_steps(gluon.data.DataLoader(ds, 32, num_workers=0), ctx, step).split(skip=0)
    assert trained.wait_s > 3 * (trained.copy_s + trained.compute_s), trained
    assert trained.total_s == pytest.approx(trained.wait_s + trained.copy_s + trained.compute_s)


def _run_records(out) -> tuple:
    import json

    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir, [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]


def test_g6_one_device_with_a_kvstore_records_that_none_ran(cli, mnist_dir, tmp_path, no_leaks):
    """G6: one device and --kvstore device: MXNet creates no kvstore; the record and report say so."""
    proc = cli(
        "sweep", "--ctx", "cpu", "--kvstore", "device", "--workers", "0", "--max-batches", "8",
        "--data-dir", str(mnist_dir), "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run_dir, (rec,) = _run_records(tmp_path)
    extra = rec["extra"]
    assert extra["kvstore"] is None and extra["kvstore_asked"] == "device"
    assert "no kvstore ran" in extra["kvstore_note"]
    assert "comm_share" not in extra, "a kvstore share of a kvstore that never ran"
    assert "No kvstore ran" in (run_dir / "summary.md").read_text()


def _scale_plan(devices: int, kvstore: str | None):
    from types import SimpleNamespace

    from gluonbench.pipeline.scale import ScaleOut

    return ScaleOut.for_spec(SimpleNamespace(devices=devices, gpus=None, kvstore=kvstore), mx.cpu())


@pytest.mark.parametrize("kvstore", ["local", "device"])
def test_g3_g4_data_parallel_step_as_users_run_it_with_comm_probe(kvstore, monkeypatch, no_leaks):
    """G3: the trained step has no waits (backward overlaps the reduction); the kvstore cost is a paired probe.
    G4: the batch is split from where the loader put it (shared memory), no copy to cpu(0) first."""
    from gluonbench.engine.loop import run_steps
    from gluonbench.pipeline.pipeline import close_loader

    plan = _scale_plan(3, kvstore)
    assert [str(c) for c in plan.contexts] == ["cpu(0)", "cpu(1)", "cpu(2)"]
    net = small_net()
    step = plan.make_step(net, mx.init.Xavier(), gluon.loss.SoftmaxCrossEntropyLoss, 0.1)
    seen = []
    real_split = gluon.utils.split_and_load

    def spy(data, ctx_list, **kw):
        seen.append(data.context.device_type)
        return real_split(data, ctx_list, **kw)

    data = Raw(3 * 32 * 4, side=12)
    ds = gluon.data.SimpleDataset(data).transform(to_float)
    monkeypatch.setattr(gluon.utils, "split_and_load", spy)
    loader = gluon.data.DataLoader(ds, 3 * 32, num_workers=1)
    try:
        times = run_steps(loader, plan.loop_ctx, step)
    finally:
        close_loader(loader)
    monkeypatch.undo()
    assert set(seen) == {"cpu_shared"}, f"G4: the batch was copied to {seen} before the split"
    assert step.kvstore == [], "G3: the trained step waited for backward and the allreduce"
    found = plan.finish(times, net)
    assert found["comm_measure"].startswith("paired probe")
    assert found["comm_probe"]["rounds"] >= 6
    low, high = found["kvstore_step_ms_ci"]
    assert low <= found["kvstore_step_ms"] <= high or found["kvstore_step_ms"] == 0.0
    assert 0 <= found["comm_share"] < 1
    assert found["params_equal_on_devices"] is True, "the probe's updates must not leave the devices apart"
    total = times.split(skip=0)
    assert total.total_s == pytest.approx(total.wait_s + total.copy_s + total.compute_s)


def test_g10_diagnose_on_two_devices_says_what_it_diagnosed(cli, mnist_dir, tmp_path, no_leaks):
    """G10: --diagnose on a 2-device run: the record and report say the diagnosis is one device's pipeline."""
    proc = cli(
        "sweep", "--ctx", "cpu", "--devices", "2", "--kvstore", "local", "--workers", "0", "--max-batches", "8",
        "--diagnose", "--diagnose-budget", "3", "--data-dir", str(mnist_dir), "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run_dir, (rec,) = _run_records(tmp_path)
    scope = rec["extra"]["diagnosis_scope"]
    assert "single-device pipeline" in scope and "was not diagnosed" in scope
    assert rec["extra"]["comm_measure"].startswith("paired probe")
    assert "single-device pipeline" in (run_dir / "summary.md").read_text()


def test_g5_local_dist_workers_get_their_own_gpus(tmp_path):
    """G5: --launcher local with several workers: a slice of --gpus (or of --devices GPUs) per rank, through
    CUDA_VISIBLE_DEVICES (indices or UUIDs), each rank then seeing its GPUs as gpu(0..k-1)."""
    from gluonbench.distributed.launch import Job
    from gluonbench.errors import GluonbenchError
    from gluonbench.pipeline.scale import local_rank_gpus
    from gluonbench.sweeprun.run import RunSpec

    spec = RunSpec(ctx="gpu:0", gpus=[0, 1, 2, 3], devices=4, kvstore="dist_device_sync", hosts=2)
    assert local_rank_gpus(spec, 2) == [["0", "1"], ["2", "3"]]
    uuids = "GPU-a,GPU-b,GPU-c,GPU-d"
    assert local_rank_gpus(spec, 4, visible=uuids) == [["GPU-a"], ["GPU-b"], ["GPU-c"], ["GPU-d"]]
    assert local_rank_gpus(RunSpec(ctx="gpu:2", devices=2, hosts=2), 2) == [["2", "3"], ["4", "5"]]
    assert local_rank_gpus(RunSpec(ctx="cpu", hosts=2), 2) is None
    with pytest.raises(GluonbenchError, match="cannot be split evenly over 4 local workers"):
        local_rank_gpus(RunSpec(ctx="gpu:0", gpus=[0, 1], hosts=4), 4)
    with pytest.raises(GluonbenchError, match="MXNet sees 2 here"):
        local_rank_gpus(RunSpec(ctx="gpu:0", devices=2, hosts=2), 2, have=2)
    with pytest.raises(GluonbenchError, match="CUDA_VISIBLE_DEVICES=5,6 names 2 GPU"):
        local_rank_gpus(spec, 2, visible="5,6")
    # a CPU job's workers are left as they are; a GPU job on this GPU-less machine is refused before any start
    assert (
        Job(RunSpec(ctx="cpu", kvstore="dist_sync", hosts=2), tmp_path, 60).worker_devices()
        == [({}, RunSpec(ctx="cpu", kvstore="dist_sync", hosts=2))] * 2
    )
    from gluonbench._mx import num_gpus

    if num_gpus() < 4:
        with pytest.raises(GluonbenchError, match="MXNet sees"):
            Job(spec, tmp_path, 60).worker_devices()
    else:
        (env0, spec0), (env1, _) = Job(spec, tmp_path, 60).worker_devices()
        assert (env0, env1) == ({"CUDA_VISIBLE_DEVICES": "0,1"}, {"CUDA_VISIBLE_DEVICES": "2,3"})
        assert spec0.gpus == [0, 1] and spec0.ctx == "gpu:0"


def test_g5_too_few_gpus_for_local_workers_is_one_clear_line(cli, tmp_path):
    """G5: refused with one line, exit 2, before any process starts."""
    from conftest import assert_one_clear_line

    proc = cli("sweep", "--ctx", "gpu:0", "--gpus", "0,1", "--kvstore", "dist_sync", "--hosts", "4",
               "--out", str(tmp_path))  # fmt: skip
    assert_one_clear_line(proc, "--gpus 0,1", "4 local workers")


def test_g8_profiler_step_has_a_sync_point(tmp_path, monkeypatch):
    """G8: profiler.step() ends with nd.waitall() by default, so an async step's duration is its work (on cpu(1)
    here as on a GPU); sync=False times the dispatch only."""
    from gluonbench.profiler import hooks
    from gluonbench.profiler.data import load

    x = nd.random.uniform(shape=(700, 700), ctx=mx.cpu(1))
    x.wait_to_read()

    def work():
        y = x
        for _ in range(6):
            y = nd.dot(y, x) / 700
        return y

    monkeypatch.setenv(hooks.PROFILE_ENV, str(tmp_path / "profiler-output"))
    hooks.reset()
    try:
        for sync in (True, False, True, False):
            with hooks.step(sync=sync):
                work()
            nd.waitall()
    finally:
        hooks.reset()
        monkeypatch.delenv(hooks.PROFILE_ENV)
    steps = load(tmp_path).steps
    assert len(steps) == 4
    synced, unsynced = [steps[0].dur_s, steps[2].dur_s], [steps[1].dur_s, steps[3].dur_s]
    assert min(synced) > 3 * max(unsynced), f"the sync point waits for the queued work: {synced} vs {unsynced}"


def test_g7_pinned_memory_knob_and_pinned_ceiling(no_leaks):
    """G7: pin_memory is a knob of diagnose (and tune); the loader pins for the context's GPU, and the
    cached_batch ceiling keeps its batch in the same (pinned) memory as the loader's batches."""
    from gluonbench.diagnosis.measure import measure_first_batch
    from gluonbench.pipeline import Loader, Pipeline
    from gluonbench.pipeline.pipeline import close_loader
    from gluonbench.pipeline.stages import host_memory, pin_device_id

    assert pin_device_id(mx.gpu(3)) == 3 and pin_device_id(mx.cpu(1)) == 0
    assert host_memory(True, mx.gpu(3)) == mx.cpu_pinned(3) and host_memory(False, mx.gpu(3)) == mx.cpu()
    loader = Loader(32, 0, pin_memory=True, pin_device_id=3).make(gluon.data.SimpleDataset(Raw(64)), to_float)
    assert loader._pin_memory and loader._pin_device_id == 3
    close_loader(loader)

    ds = gluon.data.SimpleDataset(Raw(128))
    for pinned, kind in ((True, "cpu_pinned"), (False, "cpu")):
        pipe = Pipeline(dataset=ds, loader=Loader(32, 0, pin_memory=pinned), ctx=mx.cpu(1), transform=to_float)
        running = pipe.open()
        try:
            assert next(iter(running.epoch(0)))[0].context.device_type == kind, "the loader's batches"
        finally:
            running.close()
        first = measure_first_batch(pipe)
        ceiling = pipe.with_host_batch(first)
        assert ceiling.loader.data.context.device_type == kind, "the cached_batch ceiling's batch"
    d = gluonbench.diagnose(Raw(256), to_float, small_net(), batch_size=32, ctx=mx.cpu(1), budget_s=2, pin_memory=True)
    assert d.pipeline["loader"] == "Loader (pin_memory)", "recorded"
    from gluonbench.errors import GluonbenchError

    with pytest.raises(GluonbenchError, match="pin_memory must be True or False"):
        gluonbench.diagnose(Raw(256), to_float, pin_memory="yes")


def test_g9_cuda_visible_devices_mapped_to_nvml():
    """G9: MXNet's gpu(N) is the N-th CUDA_VISIBLE_DEVICES entry (index or UUID), mapped to NVML's numbering."""
    from gluonbench.monitor.gpu import GpuSampler, visible_indices

    uuids = ["GPU-aaaa-0", "GPU-bbbb-1", "GPU-cccc-2", "GPU-dddd-3"]
    assert visible_indices(None, uuids) == [0, 1, 2, 3]
    assert visible_indices("2,3", uuids) == [2, 3]
    assert visible_indices("GPU-dddd-3,GPU-bbbb", uuids) == [3, 1]
    assert visible_indices("cccc", uuids) == [2], "CUDA accepts a UUID without its GPU- prefix"
    assert visible_indices("1,7,2", uuids) == [1], "as CUDA: the list ends at the first entry naming no device"
    assert visible_indices("", uuids) == [] and visible_indices("-1", uuids) == []
    sampler = GpuSampler(uuids=uuids, visible=visible_indices("3,1", uuids))
    assert sampler.gpu_map == {
        "gpu(0)": {"nvml_index": 3, "uuid": "GPU-dddd-3"},
        "gpu(1)": {"nvml_index": 1, "uuid": "GPU-bbbb-1"},
    }
    # before the profiled tree has touched a GPU, the visible ones are sampled, never the others
    assert sampler.devices_for(None) == [3, 1]


@pytest.mark.parametrize("devices", [1, 2])
def test_device_step_split_adds_up_to_wall_time(devices, no_leaks):
    """Wait + copy + compute is the loop's wall time, on cpu(1) and split over cpu(0), cpu(1) (local kvstore)."""
    from time import perf_counter

    from gluonbench.engine.loop import run_steps
    from gluonbench.pipeline.stages import ModelStep

    ds = gluon.data.SimpleDataset(Raw(4 * 64, side=12)).transform(to_float)
    if devices == 1:
        ctx, net = mx.cpu(1), small_net()
        net.initialize(ctx=ctx)
        step = ModelStep(net, gluon.loss.SoftmaxCrossEntropyLoss(), gluon.Trainer(net.collect_params(), "sgd"))
    else:
        plan = _scale_plan(2, "local")
        net = small_net()
        step = plan.make_step(net, mx.init.Xavier(), gluon.loss.SoftmaxCrossEntropyLoss, 0.1)
        ctx = plan.loop_ctx
    loader = iter(gluon.data.DataLoader(ds, 64, num_workers=0))
    t0 = perf_counter()
    times = run_steps(loader, ctx, step)
    wall = perf_counter() - t0
    assert len(times) == 4
    assert times.total() <= wall and times.total() == pytest.approx(wall, rel=0.02, abs=0.02)


@pytest.mark.slow
def test_g2_diagnosis_bills_ndarray_transform_to_wait_on_second_context(no_leaks):
    """G2 as a diagnosis: 0 workers, NDArray transform, cpu(1): the work is input wait, and wait_frac agrees
    with the preprocessing share within 10 points (timing: slow-marked; figures in results/README.md)."""
    data = HeavyNDArray(n=256)
    d = gluonbench.diagnose(data, data.transform, strided_net(mx.cpu(1)), batch_size=32, ctx=mx.cpu(1), budget_s=60)
    full = d.probes["full"].split
    assert full["wait_s"] > 3 * (full["copy_s"] + full["compute_s"]), full
    assert abs(d.wait_frac - d.shares["preprocessing"]) <= 0.10, (d.wait_frac, d.shares)
