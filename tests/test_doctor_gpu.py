"""gluonbench doctor on a GPU: the GPU check against NVML, pinned memory, and the H2D ceilings."""

from __future__ import annotations

import pytest

from gluonbench._mx import num_gpus

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(num_gpus() == 0, reason="MXNet sees no GPU")]


def test_gpu_check_sees_the_gpus_nvml_sees_and_pins_memory():
    from gluonbench.doctor.checks import DoctorSettings, check_gpu

    c = check_gpu(DoctorSettings(ctx="gpu:0"))
    assert c.status in ("ok", "warn"), c
    assert c.data["nvml_gpus"] >= 1 and c.data["mxnet_gpus"] == num_gpus()
    assert c.data.get("pinned_alloc") is True
    assert "driver" in c.figure and "CUDA" in c.figure


def test_h2d_ceilings_pinned_is_at_least_pageable(tmp_path, monkeypatch):
    from gluonbench.doctor.ceilings import measure_ceilings

    monkeypatch.setenv("GLUONBENCH_CACHE", str(tmp_path))
    c = measure_ceilings(None, gpu=0)
    assert c.h2d_pageable.value > 0 and c.h2d_pinned.value > 0
    # pinned memory skips the staging copy: it is not slower than pageable (10 % allowance for noise)
    assert c.h2d_pinned.value >= 0.9 * c.h2d_pageable.value, (c.h2d_pinned, c.h2d_pageable)
    assert measure_ceilings(None, gpu=0).cached
