"""Environment metadata stored with every run."""

from __future__ import annotations

import functools
import os
import platform
import shlex
import shutil
import subprocess
import sys
from datetime import UTC, datetime

import psutil

from gluonbench.version import __version__


def utc_now() -> str:
    """The current UTC time, to the second, in ISO 8601 (``2026-11-22T15:00:00+00:00``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpus() -> list[str]:
    """GPU names from nvidia-smi, or an empty list."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def _cgroup_cpu_limit() -> float | None:
    """CPUs allowed by the cgroup's quota (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``), or None when unlimited."""
    for quota_path, period_path in (
        ("/sys/fs/cgroup/cpu.max", None),
        ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us"),
    ):
        try:
            with open(quota_path, encoding="utf-8") as f:
                fields = f.read().split()
            if period_path is not None:
                with open(period_path, encoding="utf-8") as f:
                    fields.append(f.read().strip())
        except OSError:
            continue
        if len(fields) >= 2 and fields[0] not in ("max", "-1"):
            try:
                quota, period = float(fields[0]), float(fields[1])
            except ValueError:
                return None
            return quota / period if period > 0 and quota > 0 else None
        return None
    return None


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, capped by a cgroup CPU quota (containers, CI)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = psutil.cpu_count() or 1
    limit = _cgroup_cpu_limit()
    if limit is not None:
        cores = min(cores, max(1, int(limit)))
    return max(1, cores)


@functools.lru_cache(maxsize=1)
def environment() -> dict:
    """Versions, hardware and OS; computed once per process."""
    import numpy

    try:
        from importlib.metadata import version

        mxnet_version = version("mxnet")
    except Exception:
        try:
            from gluonbench._mx import mx

            mxnet_version = mx.__version__
        except Exception:
            mxnet_version = "unknown"
    return {
        "gluonbench": __version__,
        "mxnet": mxnet_version,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "cores_logical": psutil.cpu_count() or 0,
        "cores_physical": psutil.cpu_count(logical=False) or 0,
        "cores_usable": usable_cores(),
        "memory_bytes": psutil.virtual_memory().total,
        "gpus": gpus(),
        "os": platform.platform(),
        "hostname": platform.node(),
        "mxnet_env": {k: v for k, v in os.environ.items() if k.startswith(("MXNET_", "OMP_"))},
    }


def command_line() -> str:
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    if prog == "__main__.py":
        prog = "python -m gluonbench"
    return " ".join([prog] + [shlex.quote(a) for a in sys.argv[1:]])
