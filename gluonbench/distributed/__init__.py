"""Scale-out: data-parallel training over several devices (one process) and several processes/hosts
(MXNet's distributed kvstore, ps-lite parameter servers).

* :mod:`~gluonbench.distributed.settings` validates the scale-out settings (kvstore, devices, hosts);
* :mod:`~gluonbench.distributed.step` is the data-parallel step (a ``Step`` for the one timer,
  ``engine.loop.run_steps``) with the kvstore push/pull timed, and the per-run ``ScaleOut`` plan;
* :mod:`~gluonbench.distributed.shard` splits a data set rank-strided, as ShardedByS3Key;
* :mod:`~gluonbench.distributed.launch` starts scheduler, servers and workers (``DMLC_*``), locally or
  through MXNet's ``dmlc_tracker`` over ssh, and stops every one of them whatever happens;
* :mod:`~gluonbench.distributed.report` aggregates the per-worker records into a scaling table and plot.
"""

from __future__ import annotations

DIST_KVSTORES = ("dist_sync", "dist_device_sync", "dist_async")
LOCAL_KVSTORES = ("local", "device", "nccl")
KVSTORES = LOCAL_KVSTORES + DIST_KVSTORES
LAUNCHERS = ("local", "ssh")


def is_dist(kvstore: str | None) -> bool:
    """True for MXNet's distributed kvstore types (``dist_*``)."""
    return bool(kvstore) and str(kvstore).startswith("dist")
