"""IOBottleneck: the GPU idles while the CPUs wait for I/O."""

from __future__ import annotations

from typing import Any, ClassVar

from gluonbench.profiler.rules.base import SnapshotBottleneck


class IOBottleneck(SnapshotBottleneck):
    name = "IOBottleneck"
    description = (
        "Snapshots where some GPU is below gpu_threshold % while some core's iowait is above io_threshold %; "
        "fires when they exceed threshold % of the snapshots, after patience snapshots."
    )
    recommendation = (
        "Training waits for storage: pack small files into large RecordIO shards read sequentially, read "
        "through a faster input mode (File/FastFile/Pipe, see gluonbench io), prefetch more batches, or cache "
        "the data set on local NVMe."
    )
    defaults: ClassVar[dict[str, Any]] = {
        "threshold": 50.0,
        "gpu_threshold": 10.0,
        "io_threshold": 50.0,
        "patience": 1000,
    }
    high_dimension = "I/OWaitPercentage"
    high_param = "io_threshold"
