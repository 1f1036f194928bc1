"""Validation of the scale-out settings of a sweep (``--devices``, ``--gpus``, ``--kvstore``, ``--hosts``...).

Called from ``SweepSettings.check()``, so the library refuses a bad combination before any run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gluonbench.distributed import DIST_KVSTORES, KVSTORES, LAUNCHERS, is_dist
from gluonbench.errors import GluonbenchError


def check_scale(s: Any) -> None:
    """Raise :class:`GluonbenchError` naming the fix for a bad scale-out setting of ``s`` (a SweepSettings)."""
    if s.kvstore is not None and s.kvstore not in KVSTORES:
        raise GluonbenchError(f"--kvstore {s.kvstore!r} is unknown; choose one of {', '.join(KVSTORES)}")
    if s.devices < 1:
        raise GluonbenchError(f"--devices must be at least 1 (got {s.devices})")
    on_cpu = s.ctx.strip().lower().startswith("cpu")
    if s.gpus is not None:
        if not s.gpus:
            raise GluonbenchError("--gpus names no GPU; e.g. --gpus 0,1,2,3")
        if on_cpu:
            raise GluonbenchError("--gpus goes with a GPU context; drop --ctx cpu (or use --ctx cpu --devices N)")
        if s.devices not in (1, len(s.gpus)):
            raise GluonbenchError(f"--devices {s.devices} disagrees with --gpus {','.join(map(str, s.gpus))}; give one")
    if s.kvstore == "nccl" and on_cpu:
        raise GluonbenchError("--kvstore nccl needs GPUs (--gpus 0,1,...); on CPU use local or device")
    dist = is_dist(s.kvstore)
    if any(h < 1 for h in s.hosts):
        raise GluonbenchError(f"--hosts must be at least 1 (got {','.join(map(str, s.hosts))})")
    if s.servers < 1:
        raise GluonbenchError(f"--servers must be at least 1 (got {s.servers})")
    if not dist and (s.hosts != (1,) or s.servers != 1 or s.launcher != "local" or s.hostfile):
        raise GluonbenchError(
            f"--hosts, --servers, --launcher and --hostfile need a distributed kvstore: add --kvstore "
            f"{DIST_KVSTORES[0]} (or {', '.join(DIST_KVSTORES[1:])})"
        )
    if s.launcher not in LAUNCHERS:
        raise GluonbenchError(f"--launcher {s.launcher!r} is unknown; choose local or ssh")
    if s.launcher == "ssh":
        if not s.hostfile:
            raise GluonbenchError("--launcher ssh needs --hostfile FILE (one host[:port] per line)")
    elif s.hostfile:
        raise GluonbenchError("--hostfile goes with --launcher ssh; --launcher local runs every process here")
    if s.port is not None and not 1024 <= s.port <= 65535:
        raise GluonbenchError(f"--port {s.port} is out of range; use 1024..65535 (or leave it out: a free one)")
    if s.diagnose_rank is None or s.diagnose_rank < 0:
        raise GluonbenchError(f"--diagnose-rank must be 0 or more (got {s.diagnose_rank})")
    if s.diagnose_rank and not (dist and s.diagnose):
        raise GluonbenchError("--diagnose-rank goes with --diagnose and a dist_* kvstore")
    if dist and s.diagnose and s.diagnose_rank >= min(s.hosts):
        raise GluonbenchError(
            f"--diagnose-rank {s.diagnose_rank}: the smallest job has {min(s.hosts)} worker(s) "
            f"(ranks 0..{min(s.hosts) - 1}); choose one of those"
        )


def check_launch(s: Any) -> None:
    """What must hold on this machine when a distributed sweep starts (a config stays portable without it)."""
    if s.launcher == "ssh":
        path = Path(s.hostfile)
        if not path.is_file():
            raise GluonbenchError(f"--hostfile {s.hostfile} does not exist; write one host[:port] per line")
        hosts = [ln.split()[0] for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
        if not hosts:
            raise GluonbenchError(f"--hostfile {s.hostfile} names no host; write one host[:port] per line")
