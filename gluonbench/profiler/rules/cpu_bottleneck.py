"""CPUBottleneck: the GPU idles while the CPU is saturated."""

from __future__ import annotations

from typing import Any, ClassVar

from gluonbench.profiler.rules.base import SnapshotBottleneck


class CPUBottleneck(SnapshotBottleneck):
    name = "CPUBottleneck"
    description = (
        "Snapshots where some GPU is below gpu_threshold % while some CPU core is above cpu_threshold %; "
        "fires when they exceed threshold % of the snapshots, after patience snapshots."
    )
    recommendation = (
        "The CPU cannot feed the GPU: move preprocessing off the critical path (more DataLoader workers, "
        "thread_pool=True for light transforms, pre-decoded RecordIO), do augmentation on the GPU, or use an "
        "instance with more cores per GPU."
    )
    defaults: ClassVar[dict[str, Any]] = {
        "threshold": 50.0,
        "gpu_threshold": 10.0,
        "cpu_threshold": 90.0,
        "patience": 1000,
    }
    high_dimension = "CPUUtilization"
    high_param = "cpu_threshold"
