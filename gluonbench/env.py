"""Environment metadata stored with every run."""

from __future__ import annotations

import functools
import math
import os
import platform
import shlex
import shutil
import subprocess
import sys
from datetime import UTC, datetime

import psutil

from gluonbench.files import CACHE_ENV, MXNET_CACHE_ENV
from gluonbench.units import MAX_SECONDS
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


# -- the environment a command starts in, checked before MXNet is imported ---------------------------------

MAX_THREADS = 4096
"""The most threads a thread-count variable may ask for (past this, libgomp and MXNet fail or abort natively)."""

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MXNET_CPU_WORKER_NTHREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""Thread counts MXNet, OpenMP and the BLAS libraries read when they load: a bad one aborts natively, or is
ignored without a word, long after the command started."""

ENGINE_TYPES = ("NaiveEngine", "ThreadedEngine", "ThreadedEnginePerDevice")
"""What ``MXNET_ENGINE_TYPE`` may name in MXNet 1.9."""

SWITCHES = {
    "GLUONBENCH_PROGRESS": ("0", "1"),
    "GLUONBENCH_SHM_CHECK": ("0", "1"),
    "GLUONBENCH_PACKAGED_DATA": ("0", "1"),
    "GLUONBENCH_PROFILE_SYNC": ("0", "1"),
    "GLUONBENCH_MXNET_PROFILER": ("0", "1"),
    "GLUONBENCH_OFFLINE": ("1",),
    "GLUONBENCH_MESSAGES": ("flags",),
}
"""Variables that take one of a few words (any other value is not what the user meant: ``GLUONBENCH_OFFLINE=0``
would still be offline, as the variable being set is what counts)."""

SPEC_ENV = "GLUONBENCH_RUN_SPEC"
"""a child process's run spec (JSON), when its command line says :data:`FROM_ENV`"""
FROM_ENV = "@env"
"""the child's argument that stands for the spec in :data:`SPEC_ENV`: a spec (a factory's options, credentials
among them) on a command line is shown to every user by ``ps``; the environment only to the same user"""


def handed_spec(argument: str) -> str:
    """The spec text a child process was handed: ``argument`` itself, or for :data:`FROM_ENV` the environment's
    (popped, so that nothing the child starts inherits it)."""
    return os.environ.pop(SPEC_ENV, "") if argument == FROM_ENV else argument


SECONDS = ("GLUONBENCH_S3_TIMEOUT_S", "GLUONBENCH_STALL_FLOOR_S")
"""Variables holding a duration in seconds."""

FOLDERS = ("GLUONBENCH_DATA", CACHE_ENV)
"""Variables naming a folder gluonbench reads data from or writes its caches to."""


def _thread_count(name: str, raw: str) -> str | None:
    # OMP_NUM_THREADS may list one count per nesting level ("4,2")
    parts = raw.split(",") if name == "OMP_NUM_THREADS" else [raw]
    for part in parts:
        part = part.strip()
        if not part.isdigit() or not part.isascii():
            return f"must be a whole number of threads from 1 to {MAX_THREADS}"
        if not 1 <= int(part[:12]) <= MAX_THREADS or len(part) > 12:
            return f"must be from 1 to {MAX_THREADS} threads"
    return None


def environment_problems(environ: dict[str, str] | None = None) -> list[str]:
    """Each variable of ``environ`` (default: this process's) that gluonbench, MXNet, OpenMP or a BLAS library
    would read and that holds a value they cannot use, as one line naming the variable, its value and the fix."""
    env = dict(os.environ if environ is None else environ)
    problems = []

    def shown(raw: str) -> str:
        return repr(raw if len(raw) <= 40 else raw[:40] + "...")

    for name in THREAD_VARIABLES:
        raw = env.get(name)
        if raw is None or raw == "":
            continue
        why = _thread_count(name, raw)
        if why:
            problems.append(f"{name}={shown(raw)} {why}; set it to a count such as {usable_cores()} or unset it")
    raw = env.get("MXNET_ENGINE_TYPE")
    if raw and raw not in ENGINE_TYPES:
        problems.append(
            f"MXNET_ENGINE_TYPE={shown(raw)} is not an MXNet engine; use one of {', '.join(ENGINE_TYPES)} or unset it"
        )
    for name, allowed in SWITCHES.items():
        raw = env.get(name)
        if raw is not None and raw != "" and raw not in allowed:
            words = " or ".join(allowed)
            problems.append(f"{name}={shown(raw)} must be {words}; set it to {words} or unset it")
    for name in SECONDS:
        raw = env.get(name)
        if raw is None or raw == "":
            continue
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
            problems.append(
                f"{name}={shown(raw)} must be a number of seconds above 0 and at most {MAX_SECONDS:g}; "
                "set it to e.g. 10 or unset it"
            )
    for name in FOLDERS:
        raw = env.get(name)
        if raw is None:
            continue
        if raw == "" or len(raw) > 4096:
            problems.append(f"{name}={shown(raw)} is not a folder path; set it to a folder or unset it")
        elif os.path.exists(raw) and not os.path.isdir(raw):
            problems.append(f"{name}={shown(raw)} is a file, not a folder; set it to a folder or unset it")
    raw = env.get(MXNET_CACHE_ENV)
    if raw and raw != "off" and (len(raw) > 4096 or os.path.isdir(raw)):
        problems.append(f"{MXNET_CACHE_ENV}={shown(raw)} is not a file path; set it to a file, to off, or unset it")
    return problems


def check_environment(environ: dict[str, str] | None = None) -> None:
    """Refuse, before MXNet is imported and before any work, an environment variable that gluonbench, MXNet,
    OpenMP or a BLAS library would read and could not use (``OMP_NUM_THREADS=abc`` aborts natively inside MXNet,
    ``GLUONBENCH_STALL_FLOOR_S=x`` fails mid-run), or, for this process's own environment (``environ`` None), a
    resource limit too low for any command (``ulimit -n 20``, ``-v``, ``-f``): one line naming the first such
    variable or limit and the fix."""
    from gluonbench.errors import GluonbenchError

    problems = environment_problems(environ) + (resource_problems() if environ is None else [])
    if problems:
        more = f" (and {len(problems) - 1} more variable(s))" if len(problems) > 1 else ""
        raise GluonbenchError(problems[0] + more)


def ensure_standard_streams() -> None:
    """Give a closed standard stream (``gluonbench sweep ... >&- 2>&-``, ``<&-``) ``/dev/null`` instead.

    With descriptor 0, 1 or 2 closed, the next file or pipe gluonbench opens would take its number, and a run's
    child process, which inherits 0-2 as its standard streams, would read from or write into it (a records file,
    a lock, the control pipe of a run). Python leaves ``sys.stdout`` and the others None then; they are given
    ``/dev/null`` too, so what cannot be printed is dropped quietly and the exit status still says how it went.
    """
    for fd, name, mode in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY), (2, "stderr", os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, mode)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            if getattr(sys, name) is None:
                setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False, encoding="utf-8"))


MIN_OPEN_FILES = 128
"""Open files a command needs: its records and logs, a run's control pipes, a DataLoader worker's queues and
shared-memory handles (a sweep at 2 workers fails with ``Too many open files`` at ``ulimit -n 20``)."""

MIN_ADDRESS_SPACE = 2 << 30
"""Address space MXNet needs to load and train the smallest workload (its import alone maps about 1.2 GiB; at
``ulimit -v 400000`` it dies of a segmentation fault, natively)."""

MIN_FILE_SIZE = 16 << 20
"""The largest file a command writes (a records file, a report with its plots) stays below this."""


def resource_problems() -> list[str]:
    """Each resource limit of this process too low for any command, as one line naming the limit and the fix."""
    import resource

    problems = []
    for limit, need, what, flag, unit, raise_to in (
        (resource.RLIMIT_NOFILE, MIN_OPEN_FILES, "open files", "ulimit -n", 1, "1024"),
        (resource.RLIMIT_AS, MIN_ADDRESS_SPACE, "address space", "ulimit -v", 1024, "unlimited"),
        (resource.RLIMIT_FSIZE, MIN_FILE_SIZE, "file size", "ulimit -f", 1024, "unlimited"),
    ):
        try:
            soft, _hard = resource.getrlimit(limit)
        except (OSError, ValueError):
            continue
        if soft != resource.RLIM_INFINITY and soft < need:
            needed = f"{need}" if unit == 1 else f"{need // unit} KiB"
            problems.append(
                f"the {what} limit ({flag} {soft // unit}) is below the {needed} gluonbench needs; "
                f"raise it ({flag} {raise_to}) and run again"
            )
    return problems
