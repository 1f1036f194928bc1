"""Scale-out: data-parallel training over several devices (one process) and several processes/hosts
(MXNet's distributed kvstore, ps-lite parameter servers).

* :mod:`gluonbench.pipeline.scale` is the data-parallel step (a ``Step`` for the one timer,
  ``engine.loop.run_steps``) with the kvstore push/pull timed, the per-run ``ScaleOut`` plan and the
  validation of the scale-out settings; :mod:`gluonbench.data.shard` splits a data set rank-strided,
  as ShardedByS3Key;
* :mod:`~gluonbench.distributed.settings` checks what a launch needs on this machine (the hostfile);
* :mod:`~gluonbench.distributed.launch` starts scheduler, servers and workers (``DMLC_*``), locally or
  through MXNet's ``dmlc_tracker`` over ssh, and stops every one of them whatever happens;
* :mod:`gluonbench.report.scaling` aggregates the per-worker records into a scaling table and plot.
"""

from __future__ import annotations

from gluonbench.pipeline.scale import DIST_KVSTORES, KVSTORES, LAUNCHERS, LOCAL_KVSTORES, is_dist

__all__ = ["DIST_KVSTORES", "KVSTORES", "LAUNCHERS", "LOCAL_KVSTORES", "is_dist"]
