"""GPU runs: skipped where MXNet sees no GPU (the CPU wheel, CI)."""

import json

import pytest

from gluonbench._mx import num_gpus

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(num_gpus() == 0, reason="MXNet sees no GPU")]


def test_sweep_on_gpu(cli, mnist_dir, tmp_path, no_leaks):
    proc = cli(
        "sweep",
        "--ctx",
        "gpu:0",
        "--workers",
        "0,2",
        "--max-batches",
        "50",
        "--data-dir",
        str(mnist_dir),
        "--out",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    runs = [json.loads(line) for line in next(tmp_path.glob("*/runs.jsonl")).read_text().splitlines()]
    for r in runs:
        assert r["status"] == "ok" and r["accuracy"] > 0.3
        assert r["steady"]["copy_s"] > 0, "host-to-device copies are waited for on GPU"
        assert r["env"]["gpus"], "nvidia-smi names the GPU"


# -- issue #18: the invariants a GPU run is held to (the CPU-context versions are in test_device_paths.py) --


def test_g1_deferred_net_on_gpu(no_leaks):
    import numpy as np
    from test_device_paths import Raw, small_net, to_float

    import gluonbench
    from gluonbench._mx import mx

    net = small_net()
    net.initialize(mx.init.Constant(0.25))
    gluonbench.diagnose(Raw(256), to_float, net, batch_size=32, ctx=mx.gpu(0), budget_s=3)
    for name, p in net.collect_params().items():
        assert p.list_ctx() == [mx.cpu(0)], name
        assert np.allclose(p.data().asnumpy(), 0.25 if name.endswith("weight") else 0.0), name


def test_g2_queued_transform_is_wait_not_copy_on_gpu():
    from test_device_paths import HeavyNDArray, strided_net

    from gluonbench._mx import gluon, mx
    from gluonbench.engine.loop import run_steps
    from gluonbench.pipeline.stages import ModelStep

    data = HeavyNDArray()
    ds = gluon.data.SimpleDataset(data).transform(data.transform)
    ctx = mx.gpu(0)
    net = strided_net(ctx)
    step = ModelStep(net, gluon.loss.SoftmaxCrossEntropyLoss(), gluon.Trainer(net.collect_params(), "sgd"))
    split = run_steps(gluon.data.DataLoader(ds, 32, num_workers=0), ctx, step).split(skip=0)
    assert split.wait_s > 3 * split.copy_s, split
    assert split.total_s == pytest.approx(split.wait_s + split.copy_s + split.compute_s)


def test_g3_comm_probe_on_gpus(cli, mnist_dir, tmp_path, no_leaks):
    if num_gpus() < 2:
        pytest.skip("needs 2 GPUs")
    proc = cli("sweep", "--gpus", "0,1", "--kvstore", "device", "--workers", "0", "--max-batches", "30",
               "--data-dir", str(mnist_dir), "--out", str(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (rec,) = [json.loads(line) for line in next(tmp_path.glob("*/runs.jsonl")).read_text().splitlines()]
    extra = rec["extra"]
    assert extra["comm_measure"].startswith("paired probe") and extra["params_equal_on_devices"]
    low, high = extra["kvstore_step_ms_ci"]
    assert low <= high and 0 <= extra["comm_share"] < 1


def test_g6_one_gpu_with_nccl_runs_no_kvstore(cli, mnist_dir, tmp_path, no_leaks):
    proc = cli("sweep", "--gpus", "0", "--kvstore", "nccl", "--workers", "0", "--max-batches", "10",
               "--data-dir", str(mnist_dir), "--out", str(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run_dir = next(p for p in tmp_path.iterdir() if p.is_dir())
    (rec,) = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert rec["extra"]["kvstore"] is None and rec["extra"]["kvstore_asked"] == "nccl"
    assert "No kvstore ran" in (run_dir / "summary.md").read_text()


def test_g7_pinned_for_the_context_gpu():
    from test_device_paths import Raw, to_float

    from gluonbench._mx import gluon, mx
    from gluonbench.pipeline import Loader, Pipeline

    gpu = num_gpus() - 1
    pipe = Pipeline(dataset=gluon.data.SimpleDataset(Raw(64)), loader=Loader(32, 0, pin_memory=True),
                    ctx=mx.gpu(gpu), transform=to_float)  # fmt: skip
    running = pipe.open()
    try:
        batch = next(iter(running.epoch(0)))
    finally:
        running.close()
    assert batch[0].context == mx.cpu_pinned(gpu)
    assert pipe.with_host_batch(batch).loader.data.context == mx.cpu_pinned(gpu)


def test_g8_profiler_step_syncs_on_gpu(tmp_path, monkeypatch):
    from gluonbench._mx import mx, nd
    from gluonbench.profiler import hooks
    from gluonbench.profiler.data import load

    x = nd.random.uniform(shape=(4096, 4096), ctx=mx.gpu(0))
    x.wait_to_read()
    monkeypatch.setenv(hooks.PROFILE_ENV, str(tmp_path / "profiler-output"))
    hooks.reset()
    try:
        for sync in (True, False):
            with hooks.step(sync=sync):
                y = x
                for _ in range(20):
                    y = nd.dot(y, x) / 4096
            nd.waitall()
    finally:
        hooks.reset()
        monkeypatch.delenv(hooks.PROFILE_ENV)
    synced, unsynced = (s.dur_s for s in load(tmp_path).steps)
    assert synced > 3 * unsynced


def test_g9_nvml_map_and_the_gpus_this_process_uses():
    import os

    from gluonbench._mx import mx, nd
    from gluonbench.monitor.gpu import GpuSampler

    sampler = GpuSampler.open()
    try:
        assert "gpu(0)" in sampler.gpu_map, sampler.note
        nd.ones((1024, 1024), ctx=mx.gpu(0)).wait_to_read()
        used = sampler.devices_for([os.getpid()])
        assert sampler.gpu_map["gpu(0)"]["nvml_index"] in used, "gpu(0) is a GPU NVML sees this process on"
        assert set(used) <= set(sampler.visible), "only GPUs this process can see"
        assert sorted(r.index for r in sampler.read([os.getpid()])) == sorted(used)
    finally:
        sampler.close()


def test_every_gpu_here_runs_mxnet_code():
    # the check every GPU command makes (contexts.parse_ctx, --gpus): on a GPU this suite runs on, it passes
    from gluonbench.gpucode import cuda_device, gpu_problem, mxnet_cuda_code

    code = mxnet_cuda_code()
    assert code is not None, "MXNet sees a GPU, so libmxnet.so must hold GPU code"
    for i in range(num_gpus()):
        device = cuda_device(i)
        assert device is not None and code.runs_on(device["cc"]), (device, code.describe())
        assert gpu_problem(i) is None
