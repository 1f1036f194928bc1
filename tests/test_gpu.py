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
